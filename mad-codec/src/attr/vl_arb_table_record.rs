//! VLArbitrationTableRecord (attribute 0x0036, 72 bytes): one block of 32
//! (VL, weight) entries of a port's VL arbitration table.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// VLArbitrationTableRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// OutputPortNum.
    pub const OUT_PORT: M = M::bit(1);
    /// BlockNum.
    pub const BLOCK: M = M::bit(2);
}

/// VLArbitrationTableRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct VlArbTableRecord {
    lid: U16,
    port: u8,
    block: u8,
    reserved: [u8; 4],
    /// (VL in the low 4 bits of the first byte, weight) pairs.
    entries: [[u8; 2]; 32],
}

const _: () = assert!(size_of::<VlArbTableRecord>() == 72);

impl SaRecord for VlArbTableRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::VL_ARBITRATION_TABLE_RECORD;
}

impl VlArbTableRecord {
    field_accessors! {
        /// LID of the port (a switch's port 0 LID).
        be lid, set_lid: lid => u16;
        /// Output port number.
        copy port, set_port: port => u8;
        /// Block: 1 and 2 the low-priority table, 3 and 4 the high.
        copy block, set_block: block => u8;
    }

    /// The block's 32 entries as (VL, weight).
    pub fn entries(&self) -> [(u8, u8); 32] {
        self.entries.map(|[vl, weight]| (vl & 0x0F, weight))
    }
}
