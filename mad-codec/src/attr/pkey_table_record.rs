//! P_KeyTableRecord (attribute 0x0033, 72 bytes): 32 entries of a port's
//! P_Key table. OpenSM answers only a trusted requester (SM_Key).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// P_KeyTableRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// BlockNum.
    pub const BLOCK: M = M::bit(1);
    /// PortNum.
    pub const PORT: M = M::bit(2);
}

/// P_KeyTableRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct PkeyTableRecord {
    lid: U16,
    block: U16,
    port: u8,
    reserved: [u8; 3],
    pkeys: [U16; 32],
}

const _: () = assert!(size_of::<PkeyTableRecord>() == 72);

impl SaRecord for PkeyTableRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::PKEY_TABLE_RECORD;
}

impl PkeyTableRecord {
    field_accessors! {
        /// LID of the port (a switch's port 0 LID).
        be lid, set_lid: lid => u16;
        /// Block number: entries block × 32 onwards.
        be block, set_block: block => u16;
        /// Port number (switches; reserved for adapters).
        copy port, set_port: port => u8;
    }

    /// The block's 32 P_Keys (membership bit included).
    pub fn pkeys(&self) -> [u16; 32] {
        self.pkeys.map(|p| p.get())
    }

    /// Sets [`Self::pkeys`].
    pub fn set_pkeys(&mut self, pkeys: [u16; 32]) {
        self.pkeys = pkeys.map(U16::new);
    }
}
