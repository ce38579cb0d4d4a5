//! The receiving side of an RMPP transfer.

use std::collections::BTreeMap;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use zerocopy::IntoBytes;

use super::transfer::{RmppConfig, SA_HEADER_LEN, TransferState, control_mad};
use crate::header::MadBuf;
use crate::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};

/// Reassembles one SA payload from RMPP DATA segments, acknowledging them.
///
/// Create it for a transfer's first segment, feed it every segment of that
/// transfer with [`Receiver::handle_segment`], send what
/// [`Receiver::poll_transmit`] returns, and wake it at
/// [`Receiver::poll_timeout`]. Once [`Receiver::state`] is
/// [`TransferState::Complete`], [`Receiver::take_message`] yields the whole
/// MAD: the first segment's 56 header bytes and the data.
#[derive(Debug, Clone)]
pub struct Receiver {
    config: RmppConfig,
    /// Headers of the first segment; ACKs copy them.
    header: Option<SaMadHeader>,
    /// Contiguous data received so far.
    data: BytesMut,
    /// Highest segment received contiguously.
    last_contiguous: u32,
    /// Highest segment the sender may send.
    window_last: u32,
    /// Segments received ahead of a gap, all inside the window.
    early: BTreeMap<u32, (Bytes, RmppFlags, u32)>,
    /// PayloadLength of the first segment (0 = not announced).
    first_payload_length: u32,
    /// Segment number and total data length, once the Last segment is seen.
    last: Option<(u32, usize)>,
    /// When the receiver was created: the total time limit counts from it.
    started: Instant,
    deadline: Instant,
    ack_due: bool,
    pending_control: Option<MadBuf>,
    message_taken: bool,
    state: TransferState,
}

impl Receiver {
    /// A receiver waiting for the first segment of a transfer.
    pub fn new(config: RmppConfig, now: Instant) -> Self {
        Self {
            config,
            header: None,
            data: BytesMut::new(),
            last_contiguous: 0,
            window_last: 0,
            early: BTreeMap::new(),
            first_payload_length: 0,
            last: None,
            started: now,
            deadline: now + config.total_timeout.min(config.max_duration),
            ack_due: false,
            pending_control: None,
            message_taken: false,
            state: TransferState::Active,
        }
    }

    /// Where the transfer stands.
    pub fn state(&self) -> TransferState {
        self.state
    }

    /// True once the first segment has been accepted.
    pub fn has_started(&self) -> bool {
        self.header.is_some()
    }

    /// Bytes of SA data held, early segments included.
    pub fn buffered_len(&self) -> usize {
        self.data.len() + self.early.values().map(|(b, _, _)| b.len()).sum::<usize>()
    }

    /// Bytes of memory the receiver holds for data: the reassembly buffer's
    /// capacity and the early segments. Grows with what arrives, never with
    /// what the first segment announces.
    pub fn memory(&self) -> usize {
        self.data.capacity() + self.early.values().map(|(b, _, _)| b.len()).sum::<usize>()
    }

    /// Handles one MAD of the transfer: a DATA segment, or an ABORT from the
    /// sender. Anything else addressed to a receiver is ignored or, if it
    /// breaks the protocol, answered with an ABORT.
    pub fn handle_segment(&mut self, now: Instant, mad: &[u8]) {
        let Ok((header, body)) = SaMadHeader::parse(mad) else {
            return;
        };
        let rmpp = &header.rmpp;
        if !rmpp.is_active() {
            return;
        }
        if matches!(self.state, TransferState::Aborted { .. }) {
            return;
        }
        if rmpp.version() != RmppHeader::VERSION {
            return self.abort(header, RmppStatus::UNSUPPORTED_VERSION);
        }
        match rmpp.rmpp_type() {
            RmppType::DATA => self.handle_data(now, header, body),
            RmppType::ABORT => {
                if self.state == TransferState::Active {
                    self.state = TransferState::Aborted {
                        status: rmpp.status(),
                        by_peer: true,
                    };
                }
            }
            // ACK and STOP travel towards a sender, not a receiver.
            RmppType::ACK | RmppType::STOP => {}
            _ => self.abort(header, RmppStatus::BAD_TYPE),
        }
    }

    fn handle_data(&mut self, now: Instant, header: &SaMadHeader, body: &[u8]) {
        if self.state == TransferState::Complete {
            self.ack_due = true; // the final ACK was lost: repeat it
            return;
        }
        let rmpp = &header.rmpp;
        let seg = rmpp.segment_number();
        let first_flag = rmpp.flags().contains(RmppFlags::FIRST);
        if rmpp.status() != RmppStatus::NORMAL {
            return self.abort(header, RmppStatus::ILLEGAL_STATUS);
        }
        if (seg == 1) != first_flag {
            return self.abort(header, RmppStatus::INCONSISTENT_FIRST);
        }
        if seg != 0 && seg <= self.last_contiguous {
            self.ack_due = true; // a duplicate: repeat where we stand
            return;
        }
        if self.header.is_none() {
            if seg != 1 {
                return; // the middle of a transfer we never saw start
            }
            self.start(header);
            if self.state != TransferState::Active {
                return;
            }
        }
        if seg == 0 || seg > self.window_last {
            return; // outside the window: the sender will resend
        }
        if let Some((last_seg, _)) = self.last
            && seg > last_seg
        {
            return self.abort(header, RmppStatus::INCONSISTENT_LAST);
        }
        let chunk = segment_data(body, self.config.segment_data());
        let flags = rmpp.flags();
        let paylen = rmpp.payload_length();
        if flags.contains(RmppFlags::LAST) && !self.note_last(header, seg, paylen) {
            return;
        }
        if seg == self.last_contiguous + 1 {
            self.append(chunk);
            while let Some((bytes, _, _)) = self.early.remove(&(self.last_contiguous + 1)) {
                self.append(bytes);
            }
            // Progress: the time without progress counts from now.
            self.deadline =
                (now + self.config.total_timeout).min(self.started + self.config.max_duration);
        } else {
            self.early.insert(seg, (chunk, flags, paylen));
        }
        if self.buffered_len()
            > self
                .config
                .max_data_len
                .saturating_add(self.config.segment_data())
        {
            return self.stop_resources(header);
        }
        self.after_progress(now);
    }

    /// Accepts the first segment: keeps its headers, checks the announced
    /// size and opens the window.
    fn start(&mut self, header: &SaMadHeader) {
        self.header = Some(*header);
        self.first_payload_length = header.rmpp.payload_length();
        let announced = announced_data_len(self.first_payload_length, &self.config);
        if announced > self.config.max_data_len {
            return self.stop_resources(header);
        }
        // Nothing is reserved for the announced size: a sender that
        // announces 64 MB and stops after one segment costs one segment.
        self.window_last = 1 + self.config.window.max(1);
        self.ack_due = true;
    }

    /// Records the Last segment `seg` and checks its PayloadLength against
    /// the first segment's. Returns false after aborting.
    fn note_last(&mut self, header: &SaMadHeader, seg: u32, paylen: u32) -> bool {
        let size = self.config.segment_data();
        if !(SA_HEADER_LEN..=SA_HEADER_LEN + size as u32).contains(&paylen) {
            self.abort(header, RmppStatus::INCONSISTENT_LAST);
            return false;
        }
        let total = (seg as usize - 1) * size + (paylen - SA_HEADER_LEN) as usize;
        let expected_first = (total as u64) + u64::from(SA_HEADER_LEN) * u64::from(seg);
        if self.first_payload_length != 0 && u64::from(self.first_payload_length) != expected_first
        {
            self.abort(header, RmppStatus::INCONSISTENT_LAST);
            return false;
        }
        if self.early.keys().any(|&k| k > seg) {
            self.abort(header, RmppStatus::INCONSISTENT_LAST);
            return false;
        }
        self.last = Some((seg, total));
        true
    }

    fn append(&mut self, chunk: Bytes) {
        self.data.put_slice(&chunk);
        self.last_contiguous += 1;
    }

    /// Completes the transfer or opens the next window when due.
    fn after_progress(&mut self, now: Instant) {
        if let Some((last_seg, total)) = self.last
            && self.last_contiguous == last_seg
        {
            self.data.truncate(total);
            self.state = TransferState::Complete;
            self.deadline = now + self.config.linger;
            self.ack_due = true;
            return;
        }
        if self.last_contiguous == self.window_last {
            self.window_last = self.window_last.saturating_add(self.config.window.max(1));
            self.ack_due = true;
        }
    }

    /// The next MAD to send: an ACK where one is due, or an ABORT/STOP.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<MadBuf> {
        if let Some(mad) = self.pending_control.take() {
            return Some(mad);
        }
        if !std::mem::take(&mut self.ack_due) {
            return None;
        }
        let header = self.header.as_ref()?;
        Some(control_mad(
            header,
            RmppType::ACK,
            RmppStatus::NORMAL,
            self.last_contiguous,
            self.window_last,
        ))
    }

    /// When [`Receiver::handle_timeout`] must next be called: the time
    /// limit (without progress, or in all) while active, the end of the
    /// linger once complete.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            TransferState::Active | TransferState::Complete => Some(self.deadline),
            TransferState::Aborted { .. } => None,
        }
    }

    /// Aborts with T2L when the transfer has gone too long without
    /// progress, or taken too long in all. Returns true
    /// when the receiver is finished with (aborted, or complete and done
    /// lingering) and can be dropped.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        match self.state {
            TransferState::Active if now >= self.deadline => {
                if let Some(header) = self.header {
                    self.abort(&header, RmppStatus::T2L);
                } else {
                    self.state = TransferState::Aborted {
                        status: RmppStatus::T2L,
                        by_peer: false,
                    };
                }
                true
            }
            TransferState::Complete => now >= self.deadline,
            TransferState::Active => false,
            TransferState::Aborted { .. } => true,
        }
    }

    /// The reassembled MAD (headers of the first segment, then exactly the
    /// transfer's data), once, after completion.
    pub fn take_message(&mut self) -> Option<Bytes> {
        if self.state != TransferState::Complete || self.message_taken {
            return None;
        }
        let header = self.header.as_ref()?;
        self.message_taken = true;
        let data = std::mem::take(&mut self.data);
        let mut out = BytesMut::with_capacity(SaMadHeader::LEN + data.len());
        out.put_slice(header.as_bytes());
        out.put_slice(&data);
        Some(out.freeze())
    }

    /// Ends the transfer with STOP (ResX) because the receiving side ran
    /// out of room for it (its own limits, not this transfer's fault), and
    /// drops what it held. Does nothing once the transfer has ended.
    pub fn stop_for_resources(&mut self) {
        if self.state != TransferState::Active {
            return;
        }
        match self.header {
            Some(header) => self.stop_resources(&header),
            None => {
                self.state = TransferState::Aborted {
                    status: RmppStatus::RESX,
                    by_peer: false,
                }
            }
        }
    }

    /// Ends the transfer with ABORT (T2L) because the receiving side
    /// stopped waiting for it (its own time limit, shorter than RMPP's),
    /// so that the sender stops sending. Does nothing once it has ended.
    pub fn give_up(&mut self) {
        if self.state != TransferState::Active {
            return;
        }
        match self.header {
            Some(header) => self.abort(&header, RmppStatus::T2L),
            None => {
                self.state = TransferState::Aborted {
                    status: RmppStatus::T2L,
                    by_peer: false,
                }
            }
        }
    }

    /// The STOP (ResX) that refuses the transfer `first_segment` starts,
    /// for a receiver that will not take it at all (too many transfers
    /// already). `None` unless `first_segment` is an RMPP DATA segment
    /// with the First flag.
    #[must_use]
    pub fn refusal(first_segment: &[u8]) -> Option<MadBuf> {
        let (header, _) = SaMadHeader::parse(first_segment).ok()?;
        let rmpp = &header.rmpp;
        let starts = rmpp.is_active()
            && rmpp.rmpp_type() == RmppType::DATA
            && rmpp.flags().contains(RmppFlags::FIRST);
        starts.then(|| control_mad(header, RmppType::STOP, RmppStatus::RESX, 0, 0))
    }

    fn abort(&mut self, header: &SaMadHeader, status: RmppStatus) {
        self.end(header, RmppType::ABORT, status);
    }

    fn stop_resources(&mut self, header: &SaMadHeader) {
        self.end(header, RmppType::STOP, RmppStatus::RESX);
    }

    fn end(&mut self, header: &SaMadHeader, rmpp_type: RmppType, status: RmppStatus) {
        self.pending_control = Some(control_mad(header, rmpp_type, status, 0, 0));
        self.state = TransferState::Aborted {
            status,
            by_peer: false,
        };
        self.data = BytesMut::new();
        self.early.clear();
        self.ack_due = false;
    }
}

/// The data part of one segment: its first `size` bytes after the headers
/// (200, or fewer on a transport that cuts MADs), padded with zeros when a
/// sender did not pad its MAD to full size.
fn segment_data(body: &[u8], size: usize) -> Bytes {
    let n = body.len().min(size);
    let mut chunk = BytesMut::with_capacity(size);
    chunk.put_slice(&body[..n]);
    chunk.put_bytes(0, size - n);
    chunk.freeze()
}

/// The data length a first segment's PayloadLength announces (0 when not
/// announced): PayloadLength = data + 20 × segments.
fn announced_data_len(first_payload_length: u32, config: &RmppConfig) -> usize {
    // Each segment adds at most 20 + its data to PayloadLength.
    let per_segment = SA_HEADER_LEN + config.segment_data() as u32;
    let segments = first_payload_length.div_ceil(per_segment);
    first_payload_length.saturating_sub(segments * SA_HEADER_LEN) as usize
}
