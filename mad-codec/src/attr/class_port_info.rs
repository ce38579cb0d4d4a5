//! ClassPortInfo (attribute 0x0001, 72 bytes): what an SA supports and
//! where it redirects and sends traps.

use core::time::Duration;

use zerocopy::{
    FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32},
};

use crate::bits::BitField;
use crate::codes::AttributeId;
use crate::records::SaRecord;
use crate::types::Gid;

/// CapabilityMask bits (bytes 2–3) for the SA class.
pub mod cap {
    /// IsTrapSupported.
    pub const IS_TRAP_SUPPORTED: u16 = 1 << 0;
    /// IsSubnGetSetNoticeSupported.
    pub const IS_SUBN_GET_SET_NOTICE_SUPPORTED: u16 = 1 << 1;
    /// CapabilityMask2 is valid.
    pub const CAP_MASK2_PRESENT: u16 = 1 << 2;
    /// IsSubnOptRecSupported.
    pub const IS_SUBN_OPT_REC_SUPPORTED: u16 = 1 << 8;
    /// IsUDMulticastSupported.
    pub const IS_UD_MULTICAST_SUPPORTED: u16 = 1 << 9;
    /// IsMultiPathSupported.
    pub const IS_MULTI_PATH_SUPPORTED: u16 = 1 << 10;
    /// IsReinitSupported.
    pub const IS_REINIT_SUPPORTED: u16 = 1 << 11;
    /// IsPortInfoCapMaskMatchSupported.
    pub const IS_PORT_INFO_CAP_MASK_MATCH_SUPPORTED: u16 = 1 << 13;
}

/// CapabilityMask2 bits (27 bits of bytes 4–7) for the SA class.
pub mod cap2 {
    /// QoS supported.
    pub const QOS_SUPPORTED: u32 = 1 << 1;
    /// Reverse-path P_Key.
    pub const REVERSE_PATH_PKEY_MEMBER_SUPPORTED: u32 = 1 << 2;
    /// MulticastFDBTop.
    pub const MCAST_TOP_SUPPORTED: u32 = 1 << 3;
    /// HierarchyInfo.
    pub const HIERARCHY_INFO_SUPPORTED: u32 = 1 << 4;
    /// Alias GUIDs.
    pub const ALIAS_GUID_SUPPORTED: u32 = 1 << 5;
    /// Full PortInfoRecord.
    pub const FULL_PORT_INFO_REC_SUPPORTED: u32 = 1 << 6;
    /// Extended speeds.
    pub const EXTENDED_SPEEDS_SUPPORTED: u32 = 1 << 7;
    /// Multicast ServiceRecords.
    pub const MCAST_SERVICE_REC_SUPPORTED: u32 = 1 << 8;
    /// PortInfo CapabilityMask2 match.
    pub const PORT_INFO_CAP_MASK2_MATCH_SUPPORTED: u32 = 1 << 10;
    /// SendOnlyFullMember joins (read by the kernel's RDMA CM and IPoIB).
    pub const SEND_ONLY_FULL_MEMBER_SUPPORTED: u32 = 1 << 12;
    /// 2x link width.
    pub const LINK_WIDTH_2X_SUPPORTED: u32 = 1 << 13;
    /// HDR.
    pub const LINK_SPEED_HDR_SUPPORTED: u32 = 1 << 15;
    /// NDR.
    pub const LINK_SPEED_NDR_SUPPORTED: u32 = 1 << 17;
}

/// ClassPortInfo as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct ClassPortInfo {
    base_version: u8,
    class_version: u8,
    capability_mask: U16,
    cap_mask2_resp_time: U32,
    redirect_gid: Gid,
    redirect_tc_sl_fl: U32,
    redirect_lid: U16,
    redirect_pkey: U16,
    redirect_qp: U32,
    redirect_qkey: U32,
    trap_gid: Gid,
    trap_tc_sl_fl: U32,
    trap_lid: U16,
    trap_pkey: U16,
    trap_hl_qp: U32,
    trap_qkey: U32,
}

const _: () = assert!(size_of::<ClassPortInfo>() == 72);

impl SaRecord for ClassPortInfo {
    const ATTRIBUTE_ID: AttributeId = AttributeId::CLASS_PORT_INFO;
}

/// Bits 31..5 of bytes 4–7.
const CAP_MASK2: BitField = BitField::new(5, 27);
/// Bits 4..0 of bytes 4–7.
const RESP_TIME: BitField = BitField::new(0, 5);
/// Bits 31..24 of a TC/SL/FL word.
const TCLASS: BitField = BitField::new(24, 8);
/// Bits 23..20 of a TC/SL/FL word.
const SL: BitField = BitField::new(20, 4);
/// Bits 19..0 of a TC/SL/FL word.
const FLOW_LABEL: BitField = BitField::new(0, 20);
/// Bits 31..24 of the TrapHL/TrapQP word.
const HOP_LIMIT: BitField = BitField::new(24, 8);
/// Bits 23..0 of a QP word.
const QP: BitField = BitField::new(0, 24);

impl ClassPortInfo {
    field_accessors! {
        /// BaseVersion.
        copy base_version, set_base_version: base_version => u8;
        /// ClassVersion.
        copy class_version, set_class_version: class_version => u8;
        /// CapabilityMask (see [`cap`]).
        be capability_mask, set_capability_mask: capability_mask => u16;
        /// RedirectGID.
        copy redirect_gid, set_redirect_gid: redirect_gid => Gid;
        /// RedirectLID (0 = no redirect).
        be redirect_lid, set_redirect_lid: redirect_lid => u16;
        /// RedirectP_Key.
        be redirect_pkey, set_redirect_pkey: redirect_pkey => u16;
        /// RedirectQ_Key.
        be redirect_qkey, set_redirect_qkey: redirect_qkey => u32;
        /// TrapGID.
        copy trap_gid, set_trap_gid: trap_gid => Gid;
        /// TrapLID.
        be trap_lid, set_trap_lid: trap_lid => u16;
        /// TrapP_Key.
        be trap_pkey, set_trap_pkey: trap_pkey => u16;
        /// TrapQ_Key.
        be trap_qkey, set_trap_qkey: trap_qkey => u32;
    }

    bit_accessors! {
        /// CapabilityMask2 (27 bits, see [`cap2`]).
        be capability_mask2, set_capability_mask2: cap_mask2_resp_time[CAP_MASK2] => u32;
        /// RespTimeValue (5 bits): responses take at most 4.096 µs × 2^value.
        be resp_time_value, set_resp_time_value: cap_mask2_resp_time[RESP_TIME] => u8;
        /// RedirectTC.
        be redirect_tclass, set_redirect_tclass: redirect_tc_sl_fl[TCLASS] => u8;
        /// RedirectSL.
        be redirect_sl, set_redirect_sl: redirect_tc_sl_fl[SL] => u8;
        /// RedirectFL.
        be redirect_flow_label, set_redirect_flow_label: redirect_tc_sl_fl[FLOW_LABEL] => u32;
        /// RedirectQP (24 bits).
        be redirect_qp, set_redirect_qp: redirect_qp[QP] => u32;
        /// TrapTC.
        be trap_tclass, set_trap_tclass: trap_tc_sl_fl[TCLASS] => u8;
        /// TrapSL.
        be trap_sl, set_trap_sl: trap_tc_sl_fl[SL] => u8;
        /// TrapFL.
        be trap_flow_label, set_trap_flow_label: trap_tc_sl_fl[FLOW_LABEL] => u32;
        /// TrapHL.
        be trap_hop_limit, set_trap_hop_limit: trap_hl_qp[HOP_LIMIT] => u8;
        /// TrapQP (24 bits).
        be trap_qp, set_trap_qp: trap_hl_qp[QP] => u32;
    }

    /// The response time RespTimeValue stands for: 4.096 µs × 2^value.
    pub fn resp_time(&self) -> Duration {
        resp_time_value_to_duration(self.resp_time_value())
    }
}

/// 4.096 µs × 2^`value` (value is 5 bits, so at most about 2.4 hours).
pub fn resp_time_value_to_duration(value: u8) -> Duration {
    Duration::from_nanos(4096u64 << (value & 0x1F))
}

/// The smallest RespTimeValue whose time is at least `d` (capped at 31), the
/// rule OpenSM uses to advertise its transaction timeout.
pub fn duration_to_resp_time_value(d: Duration) -> u8 {
    (0..31u8)
        .find(|v| resp_time_value_to_duration(*v) >= d)
        .unwrap_or(31)
}

impl core::fmt::Debug for ClassPortInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&ClassPortInfoRepr::parse(self), f)
    }
}

/// ClassPortInfo with every field unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)] // One field per ClassPortInfo field of the same name.
pub struct ClassPortInfoRepr {
    pub base_version: u8,
    pub class_version: u8,
    pub capability_mask: u16,
    pub capability_mask2: u32,
    pub resp_time_value: u8,
    pub redirect_gid: Gid,
    pub redirect_tclass: u8,
    pub redirect_sl: u8,
    pub redirect_flow_label: u32,
    pub redirect_lid: u16,
    pub redirect_pkey: u16,
    pub redirect_qp: u32,
    pub redirect_qkey: u32,
    pub trap_gid: Gid,
    pub trap_tclass: u8,
    pub trap_sl: u8,
    pub trap_flow_label: u32,
    pub trap_lid: u16,
    pub trap_pkey: u16,
    pub trap_hop_limit: u8,
    pub trap_qp: u32,
    pub trap_qkey: u32,
}

impl ClassPortInfoRepr {
    /// Unpacks a wire record.
    pub fn parse(w: &ClassPortInfo) -> Self {
        Self {
            base_version: w.base_version(),
            class_version: w.class_version(),
            capability_mask: w.capability_mask(),
            capability_mask2: w.capability_mask2(),
            resp_time_value: w.resp_time_value(),
            redirect_gid: w.redirect_gid(),
            redirect_tclass: w.redirect_tclass(),
            redirect_sl: w.redirect_sl(),
            redirect_flow_label: w.redirect_flow_label(),
            redirect_lid: w.redirect_lid(),
            redirect_pkey: w.redirect_pkey(),
            redirect_qp: w.redirect_qp(),
            redirect_qkey: w.redirect_qkey(),
            trap_gid: w.trap_gid(),
            trap_tclass: w.trap_tclass(),
            trap_sl: w.trap_sl(),
            trap_flow_label: w.trap_flow_label(),
            trap_lid: w.trap_lid(),
            trap_pkey: w.trap_pkey(),
            trap_hop_limit: w.trap_hop_limit(),
            trap_qp: w.trap_qp(),
            trap_qkey: w.trap_qkey(),
        }
    }

    /// Packs into a fresh wire record (reserved bits zero).
    pub fn to_wire(&self) -> ClassPortInfo {
        let mut w = ClassPortInfo::new_zeroed();
        w.set_base_version(self.base_version);
        w.set_class_version(self.class_version);
        w.set_capability_mask(self.capability_mask);
        w.set_capability_mask2(self.capability_mask2);
        w.set_resp_time_value(self.resp_time_value);
        w.set_redirect_gid(self.redirect_gid);
        w.set_redirect_tclass(self.redirect_tclass);
        w.set_redirect_sl(self.redirect_sl);
        w.set_redirect_flow_label(self.redirect_flow_label);
        w.set_redirect_lid(self.redirect_lid);
        w.set_redirect_pkey(self.redirect_pkey);
        w.set_redirect_qp(self.redirect_qp);
        w.set_redirect_qkey(self.redirect_qkey);
        w.set_trap_gid(self.trap_gid);
        w.set_trap_tclass(self.trap_tclass);
        w.set_trap_sl(self.trap_sl);
        w.set_trap_flow_label(self.trap_flow_label);
        w.set_trap_lid(self.trap_lid);
        w.set_trap_pkey(self.trap_pkey);
        w.set_trap_hop_limit(self.trap_hop_limit);
        w.set_trap_qp(self.trap_qp);
        w.set_trap_qkey(self.trap_qkey);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_time_value_rule_matches_opensm() {
        // OpenSM's default transaction_timeout of 200 ms advertises 16.
        assert_eq!(duration_to_resp_time_value(Duration::from_millis(200)), 16);
        assert_eq!(
            resp_time_value_to_duration(16),
            Duration::from_nanos(4096 << 16)
        );
        assert_eq!(
            duration_to_resp_time_value(Duration::from_secs(100_000)),
            31
        );
    }

    #[test]
    fn capability_mask2_and_resp_time_share_a_word() {
        let mut w = ClassPortInfo::new_zeroed();
        w.set_capability_mask2(0xB5E8);
        w.set_resp_time_value(0x10);
        assert_eq!(&w.as_bytes()[4..8], &[0x00, 0x16, 0xBD, 0x10]);
        assert_eq!(w.capability_mask2(), 0xB5E8);
    }
}
