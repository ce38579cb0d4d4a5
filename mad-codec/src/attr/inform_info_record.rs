//! InformInfoRecord (attribute 0x00F3, 60 bytes, sent at a 64-byte stride).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use super::inform_info::InformInfo;
use crate::codes::AttributeId;
use crate::records::SaRecord;
use crate::types::Gid;

/// InformInfoRecord component-mask bits. Bits 3–15 select the fields of the
/// embedded InformInfo; OpenSM honours only bits 0 and 1 in queries.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// SubscriberGID.
    pub const SUBSCRIBER_GID: M = M::bit(0);
    /// Enum.
    pub const ENUM: M = M::bit(1);
    /// InformInfo.GID.
    pub const GID: M = M::bit(3);
    /// InformInfo.LIDRangeBegin.
    pub const LID_RANGE_BEGIN: M = M::bit(4);
    /// InformInfo.LIDRangeEnd.
    pub const LID_RANGE_END: M = M::bit(5);
    /// InformInfo.IsGeneric.
    pub const IS_GENERIC: M = M::bit(7);
    /// InformInfo.Subscribe.
    pub const SUBSCRIBE: M = M::bit(8);
    /// InformInfo.Type.
    pub const TYPE: M = M::bit(9);
    /// InformInfo.TrapNumber / DeviceID.
    pub const TRAP_NUMBER: M = M::bit(10);
    /// InformInfo.QPN.
    pub const QPN: M = M::bit(11);
    /// InformInfo.RespTimeValue.
    pub const RESP_TIME_VALUE: M = M::bit(13);
    /// InformInfo.ProducerType / VendorID.
    pub const PRODUCER_TYPE: M = M::bit(15);
}

/// InformInfoRecord as it is on the wire: who subscribed, and to what.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct InformInfoRecord {
    subscriber_gid: Gid,
    enumeration: U16,
    reserved: [u8; 6],
    inform_info: InformInfo,
}

const _: () = assert!(size_of::<InformInfoRecord>() == 60);

impl SaRecord for InformInfoRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::INFORM_INFO_RECORD;
}

impl InformInfoRecord {
    field_accessors! {
        /// GID of the subscribing port.
        copy subscriber_gid, set_subscriber_gid: subscriber_gid => Gid;
        /// Enum: distinguishes records of one subscriber (OpenSM: always 0).
        be enumeration, set_enumeration: enumeration => u16;
        /// The subscription.
        copy inform_info, set_inform_info: inform_info => InformInfo;
    }
}
