//! What both ends of an RMPP transfer share: its settings and segment
//! geometry, where it stands, and the control MADs (ACK, STOP, ABORT).

use core::time::Duration;

use zerocopy::{FromZeros, IntoBytes};

use crate::header::{MAD_LEN, MadBuf};
use crate::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};

/// SA data bytes carried by one segment.
pub const SEGMENT_DATA_LEN: usize = MAD_LEN - SaMadHeader::LEN;

/// RMPP payload bytes of one segment as PayloadLength counts them: the SA
/// header and the data.
pub const SEGMENT_PAYLOAD_LEN: u32 =
    (MAD_LEN - crate::header::MadHeader::LEN - RmppHeader::LEN) as u32;

/// The SA header's share of each segment's PayloadLength.
pub(super) const SA_HEADER_LEN: u32 = crate::header::SaHeader::LEN as u32;

/// Timers and limits of one transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmppConfig {
    /// Segments a receiver opens each time its window edge is reached
    /// (the kernel uses 64).
    pub window: u32,
    /// How long a sender waits for an ACK before resending (kernel: 2 s).
    pub ack_timeout: Duration,
    /// Resends without progress before a sender gives up with ABORT TMR.
    pub max_retries: u32,
    /// Longest a receive may go without progress (its first segment, or
    /// new data in order) before ABORT T2L: the IBA's and the kernel's
    /// 40 s, counted from the last progress so that a large transfer over
    /// a slow or lossy path is not cut while it moves.
    pub total_timeout: Duration,
    /// Longest a receive may take in all, progress or not (ABORT T2L):
    /// bounds a sender that trickles.
    pub max_duration: Duration,
    /// How long a finished receiver stays to re-ACK duplicates (10 s).
    pub linger: Duration,
    /// Largest payload, in SA data bytes, a receiver accepts; a larger
    /// transfer is stopped with ResX.
    pub max_data_len: usize,
    /// SA data bytes per segment: 200 (the IBA's, the default), or fewer on
    /// a transport that delivers only part of each MAD (the simulator's
    /// umad2sim hands over the first 224 bytes of every MAD it receives,
    /// so its segments carry 168). Both ends of a transfer must agree.
    /// Values outside 1..=200 are taken as 200.
    pub segment_data_len: usize,
}

impl Default for RmppConfig {
    fn default() -> Self {
        Self {
            window: 64,
            ack_timeout: Duration::from_secs(2),
            max_retries: 3,
            total_timeout: Duration::from_secs(40),
            max_duration: Duration::from_secs(600),
            linger: Duration::from_secs(10),
            max_data_len: 64 << 20,
            segment_data_len: SEGMENT_DATA_LEN,
        }
    }
}

impl RmppConfig {
    /// SA data bytes per segment, within 1..=200.
    pub fn segment_data(&self) -> usize {
        if (1..=SEGMENT_DATA_LEN).contains(&self.segment_data_len) {
            self.segment_data_len
        } else {
            SEGMENT_DATA_LEN
        }
    }

    /// PayloadLength of a full segment: the SA header and the data.
    fn segment_payload(&self) -> u32 {
        SA_HEADER_LEN + self.segment_data() as u32
    }

    /// Number of segments for `data_len` bytes of SA data (at least one).
    pub fn segment_count(&self, data_len: usize) -> usize {
        data_len.div_ceil(self.segment_data()).max(1)
    }

    /// The PayloadLength of segment `n` (1-based) of a `data_len`-byte
    /// transfer, or `None` if the transfer is too long for 32-bit fields.
    pub fn payload_length(&self, n: u32, data_len: usize) -> Option<u32> {
        let segments = self.segment_count(data_len);
        let count = u32::try_from(segments).ok()?;
        let pad = u32::try_from(segments * self.segment_data() - data_len).ok()?;
        if n == count {
            Some(self.segment_payload() - pad)
        } else if n == 1 {
            count.checked_mul(self.segment_payload())?.checked_sub(pad)
        } else {
            Some(0)
        }
    }

    /// A transfer that fits one segment, as one MAD at its exact length: the
    /// headers with RMPP DATA, Active|First|Last, SegmentNumber 1 and
    /// PayloadLength 20 + data, then the data. `None` if the data needs
    /// more than one segment (use a [`super::Sender`]).
    ///
    /// Nothing about such a transfer needs remembering: the receiver
    /// completes it on this one MAD, and its ACK can be ignored. Sending it
    /// at its exact length (the wire pads to 256 bytes anyway) lets clients
    /// that count records by length, as saquery does where no kernel RMPP
    /// runs, count right.
    pub fn single_segment(&self, header: &SaMadHeader, data: &[u8]) -> Option<bytes::Bytes> {
        if data.len() > self.segment_data() {
            return None;
        }
        let mut h = *header;
        let paylen = self.payload_length(1, data.len())?;
        let flags = RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST;
        h.rmpp = RmppHeader::new(RmppType::DATA, flags, RmppStatus::NORMAL, 1, paylen);
        let mut out = bytes::BytesMut::with_capacity(SaMadHeader::LEN + data.len());
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        Some(out.freeze())
    }
}

/// Where a transfer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferState {
    /// Segments or ACKs are still expected.
    Active,
    /// Every segment was delivered (sender: acknowledged; receiver:
    /// reassembled; it may still re-ACK duplicates until its linger ends).
    Complete,
    /// The transfer ended without completing.
    Aborted {
        /// The RMPP status of the ABORT or STOP that ended it.
        status: RmppStatus,
        /// True when the peer ended it, false when this side did.
        by_peer: bool,
    },
}

/// Number of segments for `data_len` bytes of SA data at the IBA's 200
/// bytes per segment (at least one).
pub fn segment_count(data_len: usize) -> usize {
    RmppConfig::default().segment_count(data_len)
}

/// The PayloadLength of segment `n` (1-based) of a `data_len`-byte
/// transfer at the IBA's segment size, or `None` if the transfer is too
/// long for 32-bit fields.
pub fn payload_length(n: u32, data_len: usize) -> Option<u32> {
    RmppConfig::default().payload_length(n, data_len)
}

/// [`RmppConfig::single_segment`] at the IBA's segment size.
pub fn single_segment(header: &SaMadHeader, data: &[u8]) -> Option<bytes::Bytes> {
    RmppConfig::default().single_segment(header, data)
}

/// A control MAD (ACK, STOP or ABORT) answering `header`: the same headers
/// with the response bit flipped, RMPP version 1, Active, and the given
/// type, status and data words; no data.
pub(super) fn control_mad(
    header: &SaMadHeader,
    rmpp_type: RmppType,
    status: RmppStatus,
    data1: u32,
    data2: u32,
) -> MadBuf {
    let mut h = *header;
    h.mad.set_method(h.mad.method().toggle_response());
    h.rmpp = RmppHeader::new(rmpp_type, RmppFlags::ACTIVE, status, data1, data2);
    let mut mad = MadBuf::new_zeroed();
    mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
    mad
}

#[cfg(test)]
mod geometry_tests {
    use super::*;

    #[test]
    fn payload_lengths_follow_the_kernel() {
        // One full segment.
        assert_eq!(segment_count(200), 1);
        assert_eq!(payload_length(1, 200), Some(220));
        // 1000 PathRecords: 64000 bytes, 320 segments, no pad.
        assert_eq!(segment_count(64_000), 320);
        assert_eq!(payload_length(1, 64_000), Some(64_000 + 20 * 320));
        assert_eq!(payload_length(2, 64_000), Some(0));
        assert_eq!(payload_length(320, 64_000), Some(220));
        // Three PathRecords: 192 bytes, pad 8, single segment.
        assert_eq!(payload_length(1, 192), Some(212));
        // Four: 256 bytes over two segments, pad 144.
        assert_eq!(payload_length(1, 256), Some(2 * 220 - 144));
        assert_eq!(payload_length(2, 256), Some(220 - 144));
        // Empty GetTableResp: one segment, PayloadLength 20.
        assert_eq!(segment_count(0), 1);
        assert_eq!(payload_length(1, 0), Some(20));
    }

    #[test]
    fn a_single_segment_is_complete_for_a_receiver() {
        use super::super::receiver::Receiver;
        let header = SaMadHeader::new_zeroed();
        let mad = single_segment(&header, &[9; 64]).unwrap();
        assert_eq!(mad.len(), SaMadHeader::LEN + 64);
        let now = std::time::Instant::now();
        let mut r = Receiver::new(RmppConfig::default(), now);
        r.handle_segment(now, &mad);
        assert_eq!(r.state(), TransferState::Complete);
        assert_eq!(&r.take_message().unwrap()[SaMadHeader::LEN..], &[9; 64]);
        assert!(single_segment(&header, &[0; 201]).is_none());
        assert_eq!(
            single_segment(&header, &[]).unwrap().len(),
            SaMadHeader::LEN
        );
    }
}
