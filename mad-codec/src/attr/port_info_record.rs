//! PortInfoRecord (attribute 0x0012, 68 bytes, sent at a 72-byte stride): a
//! port's PortInfo, by LID and port number.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// PortInfoRecord component-mask bits (those naming the record; bits 3
/// onwards select PortInfo's own fields in order).
pub mod mask {
    use crate::types::ComponentMask as M;

    /// EndportLID.
    pub const LID: M = M::bit(0);
    /// PortNum.
    pub const PORT: M = M::bit(1);
    /// Options.
    pub const OPTIONS: M = M::bit(2);
    /// PortInfo.CapabilityMask (with attribute modifier bit 31 set, OpenSM
    /// matches ports having every bit of the template's mask).
    pub const CAPABILITY_MASK: M = M::bit(7);
}

/// PortInfoRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct PortInfoRecord {
    lid: U16,
    port: u8,
    options: u8,
    port_info: [u8; 64],
}

const _: () = assert!(size_of::<PortInfoRecord>() == 68);

impl SaRecord for PortInfoRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::PORT_INFO_RECORD;
}

impl PortInfoRecord {
    field_accessors! {
        /// LID of the port (a switch's port 0 LID).
        be lid, set_lid: lid => u16;
        /// Port number.
        copy port, set_port: port => u8;
        /// Options (bit 0: extended PortInfo wanted).
        copy options, set_options: options => u8;
        /// PortInfo, raw (read its fields with [`Self::port_info_field`]).
        copy port_info, set_port_info: port_info => [u8; 64];
    }

    /// A PortInfo field by the specification's bit numbering: `width` bits
    /// (at most 64) from bit `offset`, bit 0 being the top bit of byte 0.
    /// Bits past the end of PortInfo read as 0.
    pub fn port_info_field(&self, offset: usize, width: usize) -> u64 {
        (offset..offset + width.min(64)).fold(0u64, |acc, bit| {
            let byte = self.port_info.get(bit / 8).copied().unwrap_or(0);
            acc << 1 | u64::from(byte >> (7 - bit % 8) & 1)
        })
    }

    /// PortInfo.LID: the port's base LID.
    pub fn base_lid(&self) -> u16 {
        self.port_info_field(128, 16) as u16
    }

    /// PortInfo.MasterSMLID.
    pub fn master_sm_lid(&self) -> u16 {
        self.port_info_field(144, 16) as u16
    }

    /// PortInfo.CapabilityMask.
    pub fn capability_mask(&self) -> u32 {
        self.port_info_field(160, 32) as u32
    }

    /// Sets [`Self::capability_mask`].
    pub fn set_capability_mask(&mut self, mask: u32) {
        self.port_info[20..24].copy_from_slice(&mask.to_be_bytes());
    }

    /// PortInfo.GIDPrefix: the subnet prefix of the port's GIDs.
    pub fn gid_prefix(&self) -> u64 {
        self.port_info_field(64, 64)
    }

    /// PortInfo.LinkWidthActive (1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x).
    pub fn link_width_active(&self) -> u8 {
        self.port_info_field(248, 8) as u8
    }

    /// PortInfo.PortState (1 Down, 2 Init, 3 Armed, 4 Active).
    pub fn port_state(&self) -> u8 {
        self.port_info_field(260, 4) as u8
    }

    /// PortInfo.LMC: the port answers to 2^LMC LIDs from its base LID.
    pub fn lmc(&self) -> u8 {
        self.port_info_field(277, 3) as u8
    }

    /// PortInfo.LinkSpeedActive (1: 2.5, 2: 5, 4: 10 Gb/s per lane).
    pub fn link_speed_active(&self) -> u8 {
        self.port_info_field(280, 4) as u8
    }

    /// PortInfo.MTUCap (the MTU code: 1 = 256 … 5 = 4096).
    pub fn mtu_cap(&self) -> u8 {
        self.port_info_field(332, 4) as u8
    }

    /// PortInfo.SubnetTimeOut (5 bits: 4.096 µs × 2^value).
    pub fn subnet_timeout(&self) -> u8 {
        self.port_info_field(411, 5) as u8
    }

    /// PortInfo.CapabilityMask2.
    pub fn capability_mask2(&self) -> u16 {
        self.port_info_field(480, 16) as u16
    }

    /// PortInfo.LinkSpeedExtActive (1: 14, 2: 25, 4: 50 Gb/s per lane).
    pub fn link_speed_ext_active(&self) -> u8 {
        self.port_info_field(496, 4) as u8
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::FromZeros;

    use super::*;

    #[test]
    fn fields_are_read_by_the_specification_s_bit_numbers() {
        let mut r = PortInfoRecord::new_zeroed();
        let mut pi = [0u8; 64];
        pi[16..18].copy_from_slice(&0x1234u16.to_be_bytes());
        pi[32] = 0x24; // LinkSpeedSupported 2, PortState 4 (Active)
        pi[57..60].copy_from_slice(&[0x01, 0x02, 0x03]); // LinkRoundTripLatency
        r.set_port_info(pi);
        r.set_capability_mask(0x0251_0A6A);
        assert_eq!(r.base_lid(), 0x1234);
        assert_eq!(r.port_info_field(256, 4), 2);
        assert_eq!(r.port_info_field(260, 4), 4);
        assert_eq!(r.port_info_field(456, 24), 0x010203);
        assert_eq!(r.capability_mask(), 0x0251_0A6A);
        assert_eq!(r.port_info_field(508, 8), 0, "past the end reads 0");
    }

    /// The bytes of a PortInfo that ibsim gives a host's port, as OpenSM
    /// leaves it (LID 2, LMC 1, 4x QDR, FDR active), read field by field.
    #[test]
    fn the_fields_a_path_is_computed_from() {
        let mut pi = [0u8; 64];
        pi[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        pi[16..18].copy_from_slice(&2u16.to_be_bytes());
        pi[31] = 0x02; // LinkWidthActive 4x
        pi[32] = 0x74; // LinkSpeedSupported 7, PortState Active
        pi[34] = 0x01; // LMC 1
        pi[35] = 0x47; // LinkSpeedActive 10 Gb/s, LinkSpeedEnabled 7
        pi[41] = 0x14; // InitTypeReply 1, MTUCap 2048
        pi[51] = 0xF2; // ClientReregister, trap suppression, SubnetTimeOut 18
        pi[60..62].copy_from_slice(&0x0030u16.to_be_bytes());
        pi[62] = 0x17; // LinkSpeedExtActive 14 Gb/s, supported 7
        let mut r = PortInfoRecord::new_zeroed();
        r.set_port_info(pi);
        assert_eq!(r.gid_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(r.base_lid(), 2);
        assert_eq!(r.link_width_active(), 2);
        assert_eq!(r.port_state(), 4);
        assert_eq!(r.lmc(), 1);
        assert_eq!(r.link_speed_active(), 4);
        assert_eq!(r.mtu_cap(), 4);
        assert_eq!(r.subnet_timeout(), 18);
        assert_eq!(r.capability_mask2(), 0x0030);
        assert_eq!(r.link_speed_ext_active(), 1);
    }
}
