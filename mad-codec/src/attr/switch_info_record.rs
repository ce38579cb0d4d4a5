//! SwitchInfoRecord (attribute 0x0014, 24 bytes): a switch's SwitchInfo, by
//! its LID.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// SwitchInfoRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
}

/// SwitchInfoRecord as it is on the wire (SwitchInfo as OpenSM sends it:
/// 20 bytes, MulticastFDBTop last).
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct SwitchInfoRecord {
    lid: U16,
    reserved: U16,
    linear_fdb_cap: U16,
    random_fdb_cap: U16,
    multicast_fdb_cap: U16,
    linear_fdb_top: U16,
    default_port: u8,
    default_multicast_primary_port: u8,
    default_multicast_not_primary_port: u8,
    life_state: u8,
    lids_per_port: U16,
    partition_enforcement_cap: U16,
    flags: u8,
    reserved2: u8,
    multicast_fdb_top: U16,
}

const _: () = assert!(size_of::<SwitchInfoRecord>() == 24);

impl SaRecord for SwitchInfoRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::SWITCH_INFO_RECORD;
}

impl SwitchInfoRecord {
    field_accessors! {
        /// LID of the switch (its port 0).
        be lid, set_lid: lid => u16;
        /// LinearFDBCap: linear forwarding table entries it has.
        be linear_fdb_cap, set_linear_fdb_cap: linear_fdb_cap => u16;
        /// RandomFDBCap.
        be random_fdb_cap, set_random_fdb_cap: random_fdb_cap => u16;
        /// MulticastFDBCap.
        be multicast_fdb_cap, set_multicast_fdb_cap: multicast_fdb_cap => u16;
        /// LinearFDBTop: the highest LID in use in the linear table.
        be linear_fdb_top, set_linear_fdb_top: linear_fdb_top => u16;
        /// DefaultPort.
        copy default_port, set_default_port: default_port => u8;
        /// DefaultMulticastPrimaryPort.
        copy default_multicast_primary_port, set_default_multicast_primary_port: default_multicast_primary_port => u8;
        /// DefaultMulticastNotPrimaryPort.
        copy default_multicast_not_primary_port, set_default_multicast_not_primary_port: default_multicast_not_primary_port => u8;
        /// LifeTimeValue (bits 7..3), PortStateChange (2), OptimizedSLtoVLMappingProgramming (1..0).
        copy life_state, set_life_state: life_state => u8;
        /// LIDsPerPort.
        be lids_per_port, set_lids_per_port: lids_per_port => u16;
        /// PartitionEnforcementCap.
        be partition_enforcement_cap, set_partition_enforcement_cap: partition_enforcement_cap => u16;
        /// Inbound/outbound enforcement, raw filtering, EnhancedPort0 and more, as bits.
        copy flags, set_flags: flags => u8;
        /// MulticastFDBTop (meaningful when the SA's ClassPortInfo says so).
        be multicast_fdb_top, set_multicast_fdb_top: multicast_fdb_top => u16;
    }
}
