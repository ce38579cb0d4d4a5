//! The sending side of an RMPP transfer.

use std::time::Instant;

use bytes::Bytes;
use zerocopy::{FromZeros, IntoBytes};

use super::transfer::{RmppConfig, TransferState, control_mad};
use crate::header::MadBuf;
use crate::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};

/// The payload needs more segments than a 32-bit SegmentNumber can count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferTooLong {
    /// The payload's length in bytes.
    pub data_len: usize,
}

impl core::fmt::Display for TransferTooLong {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} bytes do not fit one RMPP transfer", self.data_len)
    }
}

impl std::error::Error for TransferTooLong {}

/// Sends one SA payload as RMPP DATA segments and follows the receiver's
/// ACKs.
///
/// Drive it with [`Sender::poll_transmit`] after creating it and after every
/// [`Sender::handle_control`] and [`Sender::handle_timeout`]; wake it at
/// [`Sender::poll_timeout`].
#[derive(Debug, Clone)]
pub struct Sender {
    header: SaMadHeader,
    data: Bytes,
    config: RmppConfig,
    segments: u32,
    /// Next segment to put on the wire.
    next: u32,
    /// Highest segment the receiver has acknowledged contiguously.
    last_ack: u32,
    /// Highest segment the receiver allows.
    window_last: u32,
    retries_left: u32,
    deadline: Instant,
    pending_control: Option<MadBuf>,
    state: TransferState,
}

impl Sender {
    /// Prepares to send `data` (the SA data, without headers) under the 56
    /// header bytes `header`, which every segment repeats with its own RMPP
    /// header. The first segment goes out on the first `poll_transmit`.
    pub fn new(
        header: SaMadHeader,
        data: Bytes,
        config: RmppConfig,
        now: Instant,
    ) -> Result<Self, TransferTooLong> {
        let segments = u32::try_from(config.segment_count(data.len()))
            .ok()
            .filter(|_| config.payload_length(1, data.len()).is_some())
            .ok_or(TransferTooLong {
                data_len: data.len(),
            })?;
        Ok(Self {
            header,
            data,
            config,
            segments,
            next: 1,
            last_ack: 0,
            window_last: 1,
            retries_left: config.max_retries,
            deadline: now + config.ack_timeout,
            pending_control: None,
            state: TransferState::Active,
        })
    }

    /// Where the transfer stands.
    pub fn state(&self) -> TransferState {
        self.state
    }

    /// Number of segments of the transfer.
    pub fn segment_count(&self) -> u32 {
        self.segments
    }

    /// Segments the receiver has acknowledged, in order.
    pub fn acknowledged(&self) -> u32 {
        self.last_ack
    }

    /// The next MAD to put on the wire: a DATA segment inside the window, or
    /// an ABORT this side decided to send.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<MadBuf> {
        if let Some(mad) = self.pending_control.take() {
            return Some(mad);
        }
        if self.state != TransferState::Active {
            return None;
        }
        let sendable = self.window_last.min(self.segments);
        if self.next > sendable {
            return None;
        }
        let mad = self.segment(self.next);
        self.next += 1;
        if self.next > sendable {
            // The window is on the wire: now wait for its ACK.
            self.deadline = now + self.config.ack_timeout;
        }
        Some(mad)
    }

    /// When [`Sender::handle_timeout`] must next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        (self.state == TransferState::Active).then_some(self.deadline)
    }

    /// Resends from the last acknowledged segment if the ACK is overdue, or
    /// aborts with TMR when the retries are used up.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state != TransferState::Active || now < self.deadline {
            return;
        }
        if self.retries_left == 0 {
            self.abort(RmppStatus::TMR);
            return;
        }
        self.retries_left -= 1;
        self.next = self.last_ack + 1;
        // Probe with at least one segment even if the receiver closed its
        // window, as the kernel does.
        self.window_last = self.window_last.max(self.next);
        self.deadline = now + self.config.ack_timeout;
    }

    /// Handles an ACK, STOP or ABORT from the receiver. MADs that are not
    /// active RMPP are ignored.
    pub fn handle_control(&mut self, now: Instant, mad: &[u8]) {
        let Ok((header, _)) = SaMadHeader::parse(mad) else {
            return;
        };
        let rmpp = &header.rmpp;
        if !rmpp.is_active() || self.state != TransferState::Active {
            return;
        }
        if rmpp.version() != RmppHeader::VERSION {
            self.abort_answering(header, RmppStatus::UNSUPPORTED_VERSION);
            return;
        }
        match rmpp.rmpp_type() {
            RmppType::ACK => self.handle_ack(now, header),
            RmppType::STOP if rmpp.status() == RmppStatus::RESX => {
                self.state = TransferState::Aborted {
                    status: RmppStatus::RESX,
                    by_peer: true,
                };
            }
            RmppType::ABORT if rmpp.status().is_abort_status() => {
                self.state = TransferState::Aborted {
                    status: rmpp.status(),
                    by_peer: true,
                };
            }
            RmppType::STOP | RmppType::ABORT => {
                self.abort_answering(header, RmppStatus::ILLEGAL_STATUS);
            }
            // A DATA segment is not addressed to a sender.
            RmppType::DATA => {}
            _ => self.abort_answering(header, RmppStatus::BAD_TYPE),
        }
    }

    fn handle_ack(&mut self, now: Instant, header: &SaMadHeader) {
        let rmpp = &header.rmpp;
        let seg = rmpp.segment_number();
        let new_window = rmpp.new_window_last();
        if rmpp.status() != RmppStatus::NORMAL {
            return self.abort_answering(header, RmppStatus::ILLEGAL_STATUS);
        }
        if new_window < seg {
            return self.abort_answering(header, RmppStatus::W2S);
        }
        if seg > self.segments || seg > self.window_last {
            return self.abort_answering(header, RmppStatus::S2B);
        }
        if new_window < self.window_last || seg < self.last_ack {
            return; // an old ACK, overtaken by a later one
        }
        if seg > self.last_ack {
            self.last_ack = seg;
            self.retries_left = self.config.max_retries;
            self.deadline = now + self.config.ack_timeout;
        }
        self.window_last = new_window;
        self.next = self.next.max(self.last_ack + 1);
        if self.last_ack == self.segments {
            self.state = TransferState::Complete;
        }
    }

    /// Ends the transfer from this side with an ABORT built from our headers.
    fn abort(&mut self, status: RmppStatus) {
        // The receiver expects control MADs with the response bit of its
        // own ACKs, i.e. flipped relative to our DATA.
        self.pending_control = Some(control_mad(
            &self.header_for_control(),
            RmppType::ABORT,
            status,
            0,
            0,
        ));
        self.state = TransferState::Aborted {
            status,
            by_peer: false,
        };
    }

    /// Ends the transfer answering a bad control MAD from the receiver.
    fn abort_answering(&mut self, received: &SaMadHeader, status: RmppStatus) {
        self.pending_control = Some(control_mad(received, RmppType::ABORT, status, 0, 0));
        self.state = TransferState::Aborted {
            status,
            by_peer: false,
        };
    }

    /// Our headers with the method flipped, so that [`control_mad`] (which
    /// flips it back) produces an ABORT with the method of our DATA.
    fn header_for_control(&self) -> SaMadHeader {
        let mut h = self.header;
        h.mad.set_method(h.mad.method().toggle_response());
        h
    }

    /// Builds DATA segment `n` (1-based).
    fn segment(&self, n: u32) -> MadBuf {
        let mut flags = RmppFlags::ACTIVE;
        if n == 1 {
            flags = flags | RmppFlags::FIRST;
        }
        if n == self.segments {
            flags = flags | RmppFlags::LAST;
        }
        let paylen = self.config.payload_length(n, self.data.len()).unwrap_or(0);
        let mut h = self.header;
        h.rmpp = RmppHeader::new(RmppType::DATA, flags, RmppStatus::NORMAL, n, paylen);

        let mut mad = MadBuf::new_zeroed();
        mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
        let size = self.config.segment_data();
        let start = (n as usize - 1) * size;
        let end = (start + size).min(self.data.len());
        if let Some(chunk) = self.data.get(start..end) {
            mad[SaMadHeader::LEN..SaMadHeader::LEN + chunk.len()].copy_from_slice(chunk);
        }
        mad
    }
}
