use core::{fmt, ops};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U32};

use crate::bits::BitField;
use crate::error::ParseError;

wire_code! {
    /// RMPPType (RMPP header byte 1).
    pub struct RmppType(u8) {
        /// Not an RMPP packet.
        NONE = 0,
        /// A data segment.
        DATA = 1,
        /// An acknowledgement, opening the window.
        ACK = 2,
        /// The receiver stops the transfer (it may resume later).
        STOP = 3,
        /// Either side aborts the transfer.
        ABORT = 4,
    }
}

wire_code! {
    /// RMPPStatus (RMPP header byte 3).
    pub struct RmppStatus(u8) {
        /// Normal.
        NORMAL = 0,
        /// Resources exhausted (STOP only).
        RESX = 1,
        /// Total time too long.
        T2L = 118,
        /// Inconsistent Last flag and PayloadLength.
        INCONSISTENT_LAST = 119,
        /// Inconsistent First flag and SegmentNumber.
        INCONSISTENT_FIRST = 120,
        /// Bad RMPPType.
        BAD_TYPE = 121,
        /// NewWindowLast too small.
        W2S = 122,
        /// SegmentNumber too big.
        S2B = 123,
        /// Illegal status.
        ILLEGAL_STATUS = 124,
        /// Unsupported RMPPVersion.
        UNSUPPORTED_VERSION = 125,
        /// Too many retries.
        TMR = 126,
        /// Unspecified error.
        UNSPECIFIED = 127,
    }
}

impl RmppStatus {
    /// True for the statuses an ABORT may carry (118..=127).
    pub const fn is_abort_status(self) -> bool {
        matches!(self.0, 118..=127)
    }
}

/// RMPPFlags (RMPP header byte 2, bits 2..0).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmppFlags(pub u8);

impl RmppFlags {
    /// No flag.
    pub const NONE: Self = Self(0);
    /// The RMPP header is in use.
    pub const ACTIVE: Self = Self(0x1);
    /// First segment of a transfer.
    pub const FIRST: Self = Self(0x2);
    /// Last segment of a transfer.
    pub const LAST: Self = Self(0x4);

    /// True when every flag of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl ops::BitOr for RmppFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl fmt::Debug for RmppFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RmppFlags({}{}{})",
            if self.contains(Self::ACTIVE) {
                "A"
            } else {
                "-"
            },
            if self.contains(Self::FIRST) { "F" } else { "-" },
            if self.contains(Self::LAST) { "L" } else { "-" },
        )
    }
}

/// RMPP header (12 bytes, MAD bytes 24–35).
#[derive(Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RmppHeader {
    version: u8,
    rmpp_type: u8,
    resp_time_flags: u8,
    status: u8,
    data1: U32,
    data2: U32,
}

const _: () = assert!(size_of::<RmppHeader>() == RmppHeader::LEN);

/// RRespTime: bits 7..3 of byte 2.
const RESP_TIME: BitField = BitField::new(3, 5);
/// RMPPFlags: bits 2..0 of byte 2.
const FLAGS: BitField = BitField::new(0, 3);

impl RmppHeader {
    /// Size on the wire.
    pub const LEN: usize = 12;

    /// The RMPPVersion defined by the IBA.
    pub const VERSION: u8 = 1;

    /// RRespTime value meaning "no time given".
    pub const NO_RESP_TIME: u8 = 0x1F;

    /// An RMPP header of version 1 with RRespTime "none".
    pub fn new(
        rmpp_type: RmppType,
        flags: RmppFlags,
        status: RmppStatus,
        data1: u32,
        data2: u32,
    ) -> Self {
        let mut h = Self {
            version: Self::VERSION,
            rmpp_type: rmpp_type.0,
            resp_time_flags: 0,
            status: status.0,
            data1: U32::new(data1),
            data2: U32::new(data2),
        };
        h.set_resp_time(Self::NO_RESP_TIME);
        h.set_flags(flags);
        h
    }

    /// Reads the header at the start of `bytes`; returns it and the rest.
    pub fn parse(bytes: &[u8]) -> Result<(&Self, &[u8]), ParseError> {
        super::view::view_prefix(bytes, "RMPP header")
    }

    field_accessors! {
        /// RMPPVersion.
        copy version, set_version: version => u8;
        /// RMPPType.
        code8 rmpp_type, set_rmpp_type: rmpp_type => RmppType;
        /// RMPPStatus.
        code8 status, set_status: status => RmppStatus;
        /// Data1: SegmentNumber in DATA and ACK packets.
        be segment_number, set_segment_number: data1 => u32;
        /// Data2: PayloadLength in DATA packets.
        be payload_length, set_payload_length: data2 => u32;
        /// Data2: NewWindowLast in ACK packets.
        be new_window_last, set_new_window_last: data2 => u32;
    }

    bit_accessors! {
        /// RRespTime (5 bits; 0x1F = none given).
        u8 resp_time, set_resp_time: resp_time_flags[RESP_TIME] => u8;
    }

    /// RMPPFlags.
    pub fn flags(&self) -> RmppFlags {
        // FLAGS is three bits wide.
        RmppFlags(FLAGS.get(u32::from(self.resp_time_flags)) as u8)
    }

    /// Sets [`Self::flags`], keeping RRespTime.
    pub fn set_flags(&mut self, flags: RmppFlags) {
        // FLAGS lies inside the byte.
        self.resp_time_flags = FLAGS.set(u32::from(self.resp_time_flags), u32::from(flags.0)) as u8;
    }

    /// True when the Active flag is set, i.e. the MAD is part of an RMPP
    /// exchange.
    pub fn is_active(&self) -> bool {
        self.flags().contains(RmppFlags::ACTIVE)
    }
}

impl fmt::Debug for RmppHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RmppHeader")
            .field("version", &self.version)
            .field("type", &self.rmpp_type())
            .field("resp_time", &self.resp_time())
            .field("flags", &self.flags())
            .field("status", &self.status())
            .field("data1", &self.data1.get())
            .field("data2", &self.data2.get())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construct_and_deconstruct() {
        let h = RmppHeader::new(
            RmppType::DATA,
            RmppFlags::ACTIVE | RmppFlags::FIRST,
            RmppStatus::NORMAL,
            1,
            420,
        );
        assert_eq!(
            h.as_bytes(),
            &[0x01, 0x01, 0xFB, 0x00, 0, 0, 0, 1, 0, 0, 0x01, 0xA4]
        );
        let (v, _) = RmppHeader::parse(h.as_bytes()).unwrap();
        assert_eq!(v.rmpp_type(), RmppType::DATA);
        assert_eq!(v.resp_time(), 0x1F);
        assert!(v.flags().contains(RmppFlags::FIRST));
        assert!(!v.flags().contains(RmppFlags::LAST));
        assert_eq!(v.segment_number(), 1);
        assert_eq!(v.payload_length(), 420);
    }

    #[test]
    fn flags_keep_resp_time() {
        let mut h = RmppHeader::new(RmppType::ACK, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
        h.set_resp_time(3);
        h.set_flags(RmppFlags::ACTIVE | RmppFlags::LAST);
        assert_eq!(h.resp_time(), 3);
        assert_eq!(h.flags(), RmppFlags::ACTIVE | RmppFlags::LAST);
    }

    #[test]
    fn opensm_kernel_rmpp_header() {
        // OpenSM writes GetTableResp with only Active set and leaves the rest
        // to the kernel; under the simulator that is what arrives.
        let bytes = [0x00, 0x00, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
        let (h, _) = RmppHeader::parse(&bytes).unwrap();
        assert!(h.is_active());
        assert_eq!(h.version(), 0);
        assert_eq!(h.rmpp_type(), RmppType::NONE);
    }
}
