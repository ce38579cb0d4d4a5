//! GUIDInfoRecord (attribute 0x0030, 72 bytes): eight of a port's GUIDs
//! (its own and alias GUIDs).

use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U64},
};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// GUIDInfoRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// BlockNum.
    pub const BLOCK: M = M::bit(1);
}

/// GUIDInfoRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct GuidInfoRecord {
    lid: U16,
    block: u8,
    reserved: [u8; 5],
    guids: [U64; 8],
}

const _: () = assert!(size_of::<GuidInfoRecord>() == 72);

impl SaRecord for GuidInfoRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::GUID_INFO_RECORD;
}

impl GuidInfoRecord {
    field_accessors! {
        /// LID of the port.
        be lid, set_lid: lid => u16;
        /// Block number: GUIDs block × 8 onwards.
        copy block, set_block: block => u8;
    }

    /// The block's eight GUIDs (0 for an unused entry).
    pub fn guids(&self) -> [u64; 8] {
        self.guids.map(|g| g.get())
    }

    /// Sets [`Self::guids`].
    pub fn set_guids(&mut self, guids: [u64; 8]) {
        self.guids = guids.map(U64::new);
    }
}
