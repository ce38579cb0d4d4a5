//! LinkRecord (attribute 0x0020, 6 bytes, sent at an 8-byte stride): one
//! link of the fabric, from a port to its neighbour.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// LinkRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// FromLID.
    pub const FROM_LID: M = M::bit(0);
    /// FromPort.
    pub const FROM_PORT: M = M::bit(1);
    /// ToPort.
    pub const TO_PORT: M = M::bit(2);
    /// ToLID.
    pub const TO_LID: M = M::bit(3);
}

/// LinkRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct LinkRecord {
    from_lid: U16,
    from_port: u8,
    to_port: u8,
    to_lid: U16,
}

const _: () = assert!(size_of::<LinkRecord>() == 6);

impl SaRecord for LinkRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::LINK_RECORD;
}

impl LinkRecord {
    field_accessors! {
        /// LID of the node the link leaves (a switch's port 0 LID).
        be from_lid, set_from_lid: from_lid => u16;
        /// Port number the link leaves by.
        copy from_port, set_from_port: from_port => u8;
        /// Port number the link arrives at.
        copy to_port, set_to_port: to_port => u8;
        /// LID of the node the link arrives at.
        be to_lid, set_to_lid: to_lid => u16;
    }
}
