//! SMInfoRecord (attribute 0x0018, 25 bytes, sent at a 32-byte stride): a
//! subnet manager's SMInfo, by its port's LID.

use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32, U64},
};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// SMInfoRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
}

/// SMInfoRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct SmInfoRecord {
    lid: U16,
    reserved: U16,
    guid: U64,
    sm_key: U64,
    act_count: U32,
    priority_state: u8,
}

const _: () = assert!(size_of::<SmInfoRecord>() == 25);

impl SaRecord for SmInfoRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::SM_INFO_RECORD;
}

impl SmInfoRecord {
    field_accessors! {
        /// LID of the SM's port.
        be lid, set_lid: lid => u16;
        /// SMInfo.GUID: the SM's port GUID.
        be guid, set_guid: guid => u64;
        /// SMInfo.SM_Key (OpenSM shows it only to a trusted requester).
        be sm_key, set_sm_key: sm_key => u64;
        /// SMInfo.ActCount: counts the SM's activity.
        be act_count, set_act_count: act_count => u32;
    }

    /// SMInfo.Priority (bits 7..4).
    pub fn priority(&self) -> u8 {
        self.priority_state >> 4
    }

    /// SMInfo.SMState (bits 3..0): 0 not active, 1 discovering, 2 standby,
    /// 3 master.
    pub fn state(&self) -> u8 {
        self.priority_state & 0x0F
    }
}
