//! MulticastForwardingTableRecord (attribute 0x0017, 72 bytes): 32 entries
//! of 16 ports each of a switch's multicast forwarding table.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// MulticastForwardingTableRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// Position.
    pub const POSITION: M = M::bit(1);
    /// BlockNum.
    pub const BLOCK: M = M::bit(3);
}

/// MulticastForwardingTableRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct MftRecord {
    lid: U16,
    position_block: U16,
    reserved: [u8; 4],
    port_masks: [U16; 32],
}

const _: () = assert!(size_of::<MftRecord>() == 72);

impl SaRecord for MftRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::MULTICAST_FORWARDING_TABLE_RECORD;
}

impl MftRecord {
    field_accessors! {
        /// LID of the switch.
        be lid, set_lid: lid => u16;
    }

    /// Position (bits 15..12): which 16 ports the masks cover.
    pub fn position(&self) -> u8 {
        (self.position_block.get() >> 12) as u8
    }

    /// BlockNum (bits 8..0): the entries are for MLIDs 0xC000 + block × 32
    /// onwards.
    pub fn block(&self) -> u16 {
        self.position_block.get() & 0x01FF
    }

    /// Sets [`Self::position`] and [`Self::block`].
    pub fn set_position_block(&mut self, position: u8, block: u16) {
        self.position_block
            .set(u16::from(position & 0x0F) << 12 | (block & 0x01FF));
    }

    /// The port mask of each of the block's 32 MLIDs.
    pub fn port_masks(&self) -> [u16; 32] {
        self.port_masks.map(|m| m.get())
    }
}
