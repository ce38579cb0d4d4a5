//! PathRecord (attribute 0x0035, 64 bytes).

use zerocopy::{
    FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32, U64},
};

use crate::bits::BitField;
use crate::codes::AttributeId;
use crate::records::SaRecord;
use crate::types::{Gid, Mtu, Rate, Selector};

/// PathRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// ServiceID, upper bits (OpenSM needs both ServiceID bits or neither).
    pub const SERVICE_ID_MSB: M = M::bit(0);
    /// ServiceID, lower bits.
    pub const SERVICE_ID_LSB: M = M::bit(1);
    /// Both ServiceID bits.
    pub const SERVICE_ID: M = M(SERVICE_ID_MSB.0 | SERVICE_ID_LSB.0);
    /// DGID.
    pub const DGID: M = M::bit(2);
    /// SGID.
    pub const SGID: M = M::bit(3);
    /// DLID.
    pub const DLID: M = M::bit(4);
    /// SLID.
    pub const SLID: M = M::bit(5);
    /// RawTraffic.
    pub const RAW_TRAFFIC: M = M::bit(6);
    /// Reserved bits 30..28 of the flow word.
    pub const RESERVED: M = M::bit(7);
    /// FlowLabel.
    pub const FLOW_LABEL: M = M::bit(8);
    /// HopLimit.
    pub const HOP_LIMIT: M = M::bit(9);
    /// TClass.
    pub const TCLASS: M = M::bit(10);
    /// Reversible.
    pub const REVERSIBLE: M = M::bit(11);
    /// NumbPath.
    pub const NUMB_PATH: M = M::bit(12);
    /// P_Key.
    pub const PKEY: M = M::bit(13);
    /// QoSClass.
    pub const QOS_CLASS: M = M::bit(14);
    /// SL.
    pub const SL: M = M::bit(15);
    /// MTUSelector.
    pub const MTU_SELECTOR: M = M::bit(16);
    /// MTU.
    pub const MTU: M = M::bit(17);
    /// RateSelector.
    pub const RATE_SELECTOR: M = M::bit(18);
    /// Rate.
    pub const RATE: M = M::bit(19);
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: M = M::bit(20);
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: M = M::bit(21);
    /// Preference.
    pub const PREFERENCE: M = M::bit(22);
}

/// PathRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct PathRecord {
    service_id: U64,
    dgid: Gid,
    sgid: Gid,
    dlid: U16,
    slid: U16,
    raw_flow_hop: U32,
    tclass: u8,
    reversible_numb_path: u8,
    pkey: U16,
    qos_class_sl: U16,
    mtu: u8,
    rate: u8,
    packet_life: u8,
    preference: u8,
    reserved: [u8; 6],
}

const _: () = assert!(size_of::<PathRecord>() == 64);

impl SaRecord for PathRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::PATH_RECORD;
}

/// Bit 31 of the flow word.
const RAW_TRAFFIC: BitField = BitField::new(31, 1);
/// Bits 27..8 of the flow word.
const FLOW_LABEL: BitField = BitField::new(8, 20);
/// Bits 7..0 of the flow word.
const HOP_LIMIT: BitField = BitField::new(0, 8);
/// Bit 7 of byte 49.
const REVERSIBLE: BitField = BitField::new(7, 1);
/// Bits 6..0 of byte 49.
const NUMB_PATH: BitField = BitField::new(0, 7);
/// Bits 15..4 of bytes 52–53.
const QOS_CLASS: BitField = BitField::new(4, 12);
/// Bits 3..0 of bytes 52–53.
const SL: BitField = BitField::new(0, 4);
/// Bits 7..6 of the MTU, Rate and PacketLifeTime bytes.
pub(crate) const SELECTOR: BitField = BitField::new(6, 2);
/// Bits 5..0 of the MTU, Rate and PacketLifeTime bytes.
pub(crate) const SELECTED_VALUE: BitField = BitField::new(0, 6);

impl PathRecord {
    field_accessors! {
        /// ServiceID.
        be service_id, set_service_id: service_id => u64;
        /// Destination GID.
        copy dgid, set_dgid: dgid => Gid;
        /// Source GID.
        copy sgid, set_sgid: sgid => Gid;
        /// Destination LID.
        be dlid, set_dlid: dlid => u16;
        /// Source LID.
        be slid, set_slid: slid => u16;
        /// Traffic class.
        copy tclass, set_tclass: tclass => u8;
        /// P_Key, membership bit included.
        be pkey, set_pkey: pkey => u16;
        /// Preference (kernel headers only; OpenSM ignores it).
        copy preference, set_preference: preference => u8;
    }

    bit_accessors! {
        /// RawTraffic.
        be raw_traffic, set_raw_traffic: raw_flow_hop[RAW_TRAFFIC] => bool;
        /// FlowLabel (20 bits).
        be flow_label, set_flow_label: raw_flow_hop[FLOW_LABEL] => u32;
        /// HopLimit.
        be hop_limit, set_hop_limit: raw_flow_hop[HOP_LIMIT] => u8;
        /// Reversible.
        u8 reversible, set_reversible: reversible_numb_path[REVERSIBLE] => bool;
        /// NumbPath (7 bits): how many paths a GetTable may return.
        u8 numb_path, set_numb_path: reversible_numb_path[NUMB_PATH] => u8;
        /// QoS class (12 bits).
        be qos_class, set_qos_class: qos_class_sl[QOS_CLASS] => u16;
        /// Service level (4 bits).
        be sl, set_sl: qos_class_sl[SL] => u8;
        /// MTUSelector.
        u8 mtu_selector, set_mtu_selector: mtu[SELECTOR] => Selector;
        /// MTU.
        u8 mtu, set_mtu: mtu[SELECTED_VALUE] => Mtu;
        /// RateSelector.
        u8 rate_selector, set_rate_selector: rate[SELECTOR] => Selector;
        /// Rate.
        u8 rate, set_rate: rate[SELECTED_VALUE] => Rate;
        /// PacketLifeTimeSelector.
        u8 packet_life_selector, set_packet_life_selector: packet_life[SELECTOR] => Selector;
        /// PacketLifeTime (6 bits, 4.096 µs × 2^value).
        u8 packet_life, set_packet_life: packet_life[SELECTED_VALUE] => u8;
    }

    /// Bytes 58–63, reserved.
    pub fn reserved(&self) -> [u8; 6] {
        self.reserved
    }
}

impl core::fmt::Debug for PathRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&PathRecordRepr::parse(self), f)
    }
}

/// PathRecord with every field unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)] // One field per PathRecord field of the same name.
pub struct PathRecordRepr {
    pub service_id: u64,
    pub dgid: Gid,
    pub sgid: Gid,
    pub dlid: u16,
    pub slid: u16,
    pub raw_traffic: bool,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub tclass: u8,
    pub reversible: bool,
    pub numb_path: u8,
    pub pkey: u16,
    pub qos_class: u16,
    pub sl: u8,
    pub mtu_selector: Selector,
    pub mtu: Mtu,
    pub rate_selector: Selector,
    pub rate: Rate,
    pub packet_life_selector: Selector,
    pub packet_life: u8,
    pub preference: u8,
}

impl PathRecordRepr {
    /// Unpacks a wire record.
    pub fn parse(w: &PathRecord) -> Self {
        Self {
            service_id: w.service_id(),
            dgid: w.dgid(),
            sgid: w.sgid(),
            dlid: w.dlid(),
            slid: w.slid(),
            raw_traffic: w.raw_traffic(),
            flow_label: w.flow_label(),
            hop_limit: w.hop_limit(),
            tclass: w.tclass(),
            reversible: w.reversible(),
            numb_path: w.numb_path(),
            pkey: w.pkey(),
            qos_class: w.qos_class(),
            sl: w.sl(),
            mtu_selector: w.mtu_selector(),
            mtu: w.mtu(),
            rate_selector: w.rate_selector(),
            rate: w.rate(),
            packet_life_selector: w.packet_life_selector(),
            packet_life: w.packet_life(),
            preference: w.preference(),
        }
    }

    /// Packs into `w`, leaving its reserved bytes as they are. Values wider
    /// than their field are truncated to it.
    pub fn emit(&self, w: &mut PathRecord) {
        w.set_service_id(self.service_id);
        w.set_dgid(self.dgid);
        w.set_sgid(self.sgid);
        w.set_dlid(self.dlid);
        w.set_slid(self.slid);
        w.set_raw_traffic(self.raw_traffic);
        w.set_flow_label(self.flow_label);
        w.set_hop_limit(self.hop_limit);
        w.set_tclass(self.tclass);
        w.set_reversible(self.reversible);
        w.set_numb_path(self.numb_path);
        w.set_pkey(self.pkey);
        w.set_qos_class(self.qos_class);
        w.set_sl(self.sl);
        w.set_mtu_selector(self.mtu_selector);
        w.set_mtu(self.mtu);
        w.set_rate_selector(self.rate_selector);
        w.set_rate(self.rate);
        w.set_packet_life_selector(self.packet_life_selector);
        w.set_packet_life(self.packet_life);
        w.set_preference(self.preference);
    }

    /// A fresh wire record (reserved bytes zero).
    pub fn to_wire(&self) -> PathRecord {
        let mut w = PathRecord::new_zeroed();
        self.emit(&mut w);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record OpenSM 3.3.23 returned for `saquery --src-to-dst 1:2`.
    const RECORD: [u8; 64] = [
        0, 0, 0, 0, 0, 0, 0, 0, // ServiceID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, // DGID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 1, // SGID
        0x00, 0x02, 0x00, 0x01, // DLID, SLID
        0, 0, 0, 0, // RawTraffic, FlowLabel, HopLimit
        0x00, 0x80, 0xff, 0xff, // TClass, Reversible|NumbPath, P_Key
        0x00, 0x00, 0x83, 0x83, // QoSClass|SL, MTU, Rate
        0x92, 0x00, 0, 0, 0, 0, 0, 0, // PacketLifeTime, Preference, reserved
    ];

    #[test]
    fn deconstruct() {
        let r = PathRecord::ref_from_bytes(&RECORD[..]).unwrap();
        assert_eq!(r.dgid().to_string(), "fe80::20:0");
        assert_eq!(r.sgid().to_string(), "fe80::10:1");
        assert_eq!((r.dlid(), r.slid()), (2, 1));
        assert!(r.reversible());
        assert_eq!(r.numb_path(), 0);
        assert_eq!(r.pkey(), 0xffff);
        assert_eq!(
            (r.mtu_selector(), r.mtu()),
            (Selector::Exactly, Mtu::MTU_1024)
        );
        assert_eq!(
            (r.rate_selector(), r.rate()),
            (Selector::Exactly, Rate::GBPS_10)
        );
        assert_eq!(
            (r.packet_life_selector(), r.packet_life()),
            (Selector::Exactly, 18)
        );
    }

    #[test]
    fn repr_round_trip_is_byte_exact() {
        let r = PathRecord::ref_from_bytes(&RECORD[..]).unwrap();
        let repr = PathRecordRepr::parse(r);
        assert_eq!(repr.to_wire().as_bytes(), &RECORD);
    }

    #[test]
    fn packed_fields_do_not_disturb_each_other() {
        let mut w = PathRecord::new_zeroed();
        w.set_raw_traffic(true);
        w.set_flow_label(0xF_FFFF);
        w.set_hop_limit(0x40);
        w.set_qos_class(0xABC);
        w.set_sl(0xD);
        w.set_reversible(true);
        w.set_numb_path(0x7F);
        assert_eq!(&w.as_bytes()[44..48], &[0x8F, 0xFF, 0xFF, 0x40]);
        assert_eq!(&w.as_bytes()[52..54], &[0xAB, 0xCD]);
        assert_eq!(w.as_bytes()[49], 0xFF);
        w.set_flow_label(0);
        assert!(w.raw_traffic());
        assert_eq!(w.hop_limit(), 0x40);
        w.set_sl(0);
        assert_eq!(w.qos_class(), 0xABC);
    }
}
