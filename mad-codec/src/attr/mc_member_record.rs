//! MCMemberRecord (attribute 0x0038, 52 bytes, sent at a 56-byte stride).

use zerocopy::{
    FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32},
};

use super::path_record::{SELECTED_VALUE, SELECTOR};
use crate::bits::BitField;
use crate::codes::AttributeId;
use crate::records::SaRecord;
use crate::types::{Gid, JoinState, Mtu, Rate, Selector};

/// MCMemberRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// MGID.
    pub const MGID: M = M::bit(0);
    /// PortGID.
    pub const PORT_GID: M = M::bit(1);
    /// Q_Key.
    pub const QKEY: M = M::bit(2);
    /// MLID.
    pub const MLID: M = M::bit(3);
    /// MTUSelector.
    pub const MTU_SELECTOR: M = M::bit(4);
    /// MTU.
    pub const MTU: M = M::bit(5);
    /// TClass.
    pub const TCLASS: M = M::bit(6);
    /// P_Key.
    pub const PKEY: M = M::bit(7);
    /// RateSelector.
    pub const RATE_SELECTOR: M = M::bit(8);
    /// Rate.
    pub const RATE: M = M::bit(9);
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: M = M::bit(10);
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: M = M::bit(11);
    /// SL.
    pub const SL: M = M::bit(12);
    /// FlowLabel.
    pub const FLOW_LABEL: M = M::bit(13);
    /// HopLimit.
    pub const HOP_LIMIT: M = M::bit(14);
    /// Scope.
    pub const SCOPE: M = M::bit(15);
    /// JoinState.
    pub const JOIN_STATE: M = M::bit(16);
    /// ProxyJoin.
    pub const PROXY_JOIN: M = M::bit(17);

    /// What every join and leave must carry (else ERR_REQ_INSUFFICIENT_COMPONENTS).
    pub const JOIN: M = M(MGID.0 | PORT_GID.0 | JOIN_STATE.0);
    /// What creating a group needs on OpenSM (0x130C7).
    pub const CREATE: M = M(JOIN.0 | QKEY.0 | TCLASS.0 | PKEY.0 | FLOW_LABEL.0 | SL.0);
}

/// MCMemberRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct McMemberRecord {
    mgid: Gid,
    port_gid: Gid,
    qkey: U32,
    mlid: U16,
    mtu: u8,
    tclass: u8,
    pkey: U16,
    rate: u8,
    packet_life: u8,
    sl_flow_hop: U32,
    scope_join_state: u8,
    proxy_join: u8,
    reserved: [u8; 2],
}

const _: () = assert!(size_of::<McMemberRecord>() == 52);

impl SaRecord for McMemberRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::MC_MEMBER_RECORD;
}

/// Bits 31..28 of bytes 44–47.
const SL: BitField = BitField::new(28, 4);
/// Bits 27..8 of bytes 44–47.
const FLOW_LABEL: BitField = BitField::new(8, 20);
/// Bits 7..0 of bytes 44–47.
const HOP_LIMIT: BitField = BitField::new(0, 8);
/// Bits 7..4 of byte 48.
const SCOPE: BitField = BitField::new(4, 4);
/// Bits 3..0 of byte 48.
const JOIN_STATE: BitField = BitField::new(0, 4);
/// Bit 7 of byte 49, per the IBA, the kernel and libibmad (OpenSM's own
/// structure puts it elsewhere and never reads it).
const PROXY_JOIN: BitField = BitField::new(7, 1);

impl McMemberRecord {
    field_accessors! {
        /// Multicast GID.
        copy mgid, set_mgid: mgid => Gid;
        /// The member port's GID.
        copy port_gid, set_port_gid: port_gid => Gid;
        /// Q_Key.
        be qkey, set_qkey: qkey => u32;
        /// Multicast LID.
        be mlid, set_mlid: mlid => u16;
        /// Traffic class.
        copy tclass, set_tclass: tclass => u8;
        /// P_Key.
        be pkey, set_pkey: pkey => u16;
    }

    bit_accessors! {
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
        /// PacketLifeTime.
        u8 packet_life, set_packet_life: packet_life[SELECTED_VALUE] => u8;
        /// Service level.
        be sl, set_sl: sl_flow_hop[SL] => u8;
        /// FlowLabel (20 bits).
        be flow_label, set_flow_label: sl_flow_hop[FLOW_LABEL] => u32;
        /// HopLimit.
        be hop_limit, set_hop_limit: sl_flow_hop[HOP_LIMIT] => u8;
        /// Scope (4 bits).
        u8 scope, set_scope: scope_join_state[SCOPE] => u8;
        /// ProxyJoin (bit 7 of byte 49).
        u8 proxy_join, set_proxy_join: proxy_join[PROXY_JOIN] => bool;
    }

    /// JoinState (4 bits).
    pub fn join_state(&self) -> JoinState {
        // JOIN_STATE is four bits wide.
        JoinState(JOIN_STATE.get(u32::from(self.scope_join_state)) as u8)
    }

    /// Sets [`Self::join_state`], keeping Scope.
    pub fn set_join_state(&mut self, state: JoinState) {
        let byte = JOIN_STATE.set(u32::from(self.scope_join_state), u32::from(state.0));
        // JOIN_STATE lies inside the byte.
        self.scope_join_state = byte as u8;
    }

    /// Byte 49 as sent; OpenSM echoes it unchanged in join responses.
    pub fn proxy_join_byte(&self) -> u8 {
        self.proxy_join
    }
}

impl core::fmt::Debug for McMemberRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&McMemberRecordRepr::parse(self), f)
    }
}

/// MCMemberRecord with every field unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)] // One field per MCMemberRecord field of the same name.
pub struct McMemberRecordRepr {
    pub mgid: Gid,
    pub port_gid: Gid,
    pub qkey: u32,
    pub mlid: u16,
    pub mtu_selector: Selector,
    pub mtu: Mtu,
    pub tclass: u8,
    pub pkey: u16,
    pub rate_selector: Selector,
    pub rate: Rate,
    pub packet_life_selector: Selector,
    pub packet_life: u8,
    pub sl: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub scope: u8,
    pub join_state: JoinState,
    pub proxy_join: bool,
}

impl McMemberRecordRepr {
    /// Unpacks a wire record.
    pub fn parse(w: &McMemberRecord) -> Self {
        Self {
            mgid: w.mgid(),
            port_gid: w.port_gid(),
            qkey: w.qkey(),
            mlid: w.mlid(),
            mtu_selector: w.mtu_selector(),
            mtu: w.mtu(),
            tclass: w.tclass(),
            pkey: w.pkey(),
            rate_selector: w.rate_selector(),
            rate: w.rate(),
            packet_life_selector: w.packet_life_selector(),
            packet_life: w.packet_life(),
            sl: w.sl(),
            flow_label: w.flow_label(),
            hop_limit: w.hop_limit(),
            scope: w.scope(),
            join_state: w.join_state(),
            proxy_join: w.proxy_join(),
        }
    }

    /// Packs into `w`, leaving reserved bits as they are.
    pub fn emit(&self, w: &mut McMemberRecord) {
        w.set_mgid(self.mgid);
        w.set_port_gid(self.port_gid);
        w.set_qkey(self.qkey);
        w.set_mlid(self.mlid);
        w.set_mtu_selector(self.mtu_selector);
        w.set_mtu(self.mtu);
        w.set_tclass(self.tclass);
        w.set_pkey(self.pkey);
        w.set_rate_selector(self.rate_selector);
        w.set_rate(self.rate);
        w.set_packet_life_selector(self.packet_life_selector);
        w.set_packet_life(self.packet_life);
        w.set_sl(self.sl);
        w.set_flow_label(self.flow_label);
        w.set_hop_limit(self.hop_limit);
        w.set_scope(self.scope);
        w.set_join_state(self.join_state);
        w.set_proxy_join(self.proxy_join);
    }

    /// A fresh wire record (reserved bits zero).
    pub fn to_wire(&self) -> McMemberRecord {
        let mut w = McMemberRecord::new_zeroed();
        self.emit(&mut w);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPoIB broadcast group as OpenSM 3.3.23 answered `saquery -g`.
    const IPOIB_BROADCAST: [u8; 52] = [
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, // MGID
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // PortGID (untrusted query)
        0x00, 0x00, 0x0b, 0x1b, 0xc0, 0x00, 0x84, 0x00, // Q_Key, MLID, MTU, TClass
        0xff, 0xff, 0x83, 0x92, // P_Key, Rate, PacketLifeTime
        0x00, 0x00, 0x00, 0x00, // SL, FlowLabel, HopLimit
        0x20, 0x00, 0x00, 0x00, // Scope|JoinState, ProxyJoin, reserved
    ];

    #[test]
    fn deconstruct() {
        let r = McMemberRecord::ref_from_bytes(&IPOIB_BROADCAST[..]).unwrap();
        assert_eq!(r.mgid().to_string(), "ff12:401b:ffff::ffff:ffff");
        assert_eq!(r.qkey(), 0x0b1b);
        assert_eq!(r.mlid(), 0xc000);
        assert_eq!(
            (r.mtu_selector(), r.mtu()),
            (Selector::Exactly, Mtu::MTU_2048)
        );
        assert_eq!(r.rate(), Rate::GBPS_10);
        assert_eq!(r.packet_life(), 18);
        assert_eq!(r.scope(), 2);
        assert_eq!(r.join_state(), JoinState::NONE);
        assert!(!r.proxy_join());
    }

    #[test]
    fn repr_round_trip_is_byte_exact() {
        let r = McMemberRecord::ref_from_bytes(&IPOIB_BROADCAST[..]).unwrap();
        assert_eq!(
            McMemberRecordRepr::parse(r).to_wire().as_bytes(),
            &IPOIB_BROADCAST
        );
    }

    #[test]
    fn scope_and_join_state_share_a_byte() {
        let mut w = McMemberRecord::new_zeroed();
        w.set_scope(0x2);
        w.set_join_state(JoinState::FULL_MEMBER | JoinState::SEND_ONLY_NON_MEMBER);
        assert_eq!(w.as_bytes()[48], 0x25);
        w.set_join_state(JoinState::NON_MEMBER);
        assert_eq!(w.as_bytes()[48], 0x22);
        w.set_proxy_join(true);
        assert_eq!(w.as_bytes()[49], 0x80);
        w.set_sl(0xF);
        w.set_flow_label(1);
        assert_eq!(&w.as_bytes()[44..48], &[0xF0, 0x00, 0x01, 0x00]);
    }
}
