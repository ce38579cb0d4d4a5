//! LinearForwardingTableRecord (attribute 0x0015, 72 bytes): 64 entries of a
//! switch's linear forwarding table.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// LinearForwardingTableRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// BlockNum.
    pub const BLOCK: M = M::bit(1);
}

/// LinearForwardingTableRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct LftRecord {
    lid: U16,
    block: U16,
    reserved: [u8; 4],
    ports: [u8; 64],
}

const _: () = assert!(size_of::<LftRecord>() == 72);

impl SaRecord for LftRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::LINEAR_FORWARDING_TABLE_RECORD;
}

impl LftRecord {
    field_accessors! {
        /// LID of the switch.
        be lid, set_lid: lid => u16;
        /// Block number: the entries are for LIDs block × 64 onwards.
        be block, set_block: block => u16;
        /// The output port for each of the block's 64 LIDs.
        copy ports, set_ports: ports => [u8; 64];
    }
}
