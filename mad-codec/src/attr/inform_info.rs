//! InformInfo (attribute 0x0003, 36 bytes): a subscription to Notices.

use zerocopy::{
    FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32},
};

use crate::bits::{BitField, get_u24, put_u24};
use crate::codes::{AttributeId, ProducerType, TrapNumber};
use crate::records::SaRecord;
use crate::types::Gid;

/// InformInfo as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct InformInfo {
    gid: Gid,
    lid_range_begin: U16,
    lid_range_end: U16,
    reserved: U16,
    is_generic: u8,
    subscribe: u8,
    notice_type: U16,
    trap_number: U16,
    qpn_resp_time: U32,
    reserved2: u8,
    producer_type: [u8; 3],
}

const _: () = assert!(size_of::<InformInfo>() == 36);

impl SaRecord for InformInfo {
    const ATTRIBUTE_ID: AttributeId = AttributeId::INFORM_INFO;
}

/// Bits 31..8 of bytes 28–31.
const QPN: BitField = BitField::new(8, 24);
/// Bits 4..0 of bytes 28–31.
const RESP_TIME: BitField = BitField::new(0, 5);

impl InformInfo {
    /// LIDRangeBegin meaning "every LID".
    pub const ALL_LIDS: u16 = 0xFFFF;
    /// Type meaning "every type".
    pub const ALL_TYPES: u16 = 0xFFFF;

    field_accessors! {
        /// GID of the Notice issuer to filter on (0 = use the LID range).
        copy gid, set_gid: gid => Gid;
        /// LIDRangeBegin (0xFFFF = all).
        be lid_range_begin, set_lid_range_begin: lid_range_begin => u16;
        /// LIDRangeEnd.
        be lid_range_end, set_lid_range_end: lid_range_end => u16;
        /// IsGeneric as sent (1 = generic, 0 = vendor).
        copy is_generic, set_is_generic: is_generic => u8;
        /// Subscribe as sent (1 = subscribe, 0 = unsubscribe; OpenSM
        /// rejects anything else).
        copy subscribe, set_subscribe: subscribe => u8;
        /// Notice type to match (0xFFFF = all).
        be notice_type, set_notice_type: notice_type => u16;
        /// TrapNumber (generic) to match (0xFFFF = all).
        code trap_number, set_trap_number: trap_number => TrapNumber;
        /// DeviceID (vendor), the same field as TrapNumber.
        be device_id, set_device_id: trap_number => u16;
    }

    bit_accessors! {
        /// QPN (24 bits) that Reports go to.
        be qpn, set_qpn: qpn_resp_time[QPN] => u32;
        /// RespTimeValue (5 bits).
        be resp_time_value, set_resp_time_value: qpn_resp_time[RESP_TIME] => u8;
    }

    /// The whole QPN/RespTimeValue word, which OpenSM compares as one when
    /// it looks up a subscription to remove.
    pub fn qpn_resp_time_word(&self) -> u32 {
        self.qpn_resp_time.get()
    }

    /// ProducerType (generic) to match (0xFFFFFF = all).
    pub fn producer_type(&self) -> ProducerType {
        ProducerType(get_u24(self.producer_type))
    }

    /// Sets [`Self::producer_type`] (24 bits).
    pub fn set_producer_type(&mut self, producer: ProducerType) {
        self.producer_type = put_u24(producer.0);
    }

    /// VendorID (vendor notices), the same field as ProducerType.
    pub fn vendor_id(&self) -> u32 {
        get_u24(self.producer_type)
    }
}

impl core::fmt::Debug for InformInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&InformInfoRepr::parse(self), f)
    }
}

/// InformInfo with every field unpacked. Fields keep their raw values
/// (`is_generic`, `subscribe`) because an unsubscribe must repeat the
/// subscription exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(missing_docs)] // One field per InformInfo field of the same name.
pub struct InformInfoRepr {
    pub gid: Gid,
    pub lid_range_begin: u16,
    pub lid_range_end: u16,
    pub is_generic: u8,
    pub subscribe: u8,
    pub notice_type: u16,
    /// TrapNumber for generic subscriptions, DeviceID for vendor ones.
    pub trap_number: u16,
    pub qpn: u32,
    pub resp_time_value: u8,
    /// ProducerType for generic subscriptions, VendorID for vendor ones.
    pub producer_type: u32,
}

impl InformInfoRepr {
    /// A generic subscription to `trap` (`TrapNumber::ALL` for every trap)
    /// from any LID, notice type and producer, for the subscriber's QP
    /// `qpn`; `subscribe` false gives its unsubscribe. OpenSM removes a
    /// subscription only when every field repeats it, RespTimeValue and QPN
    /// included.
    pub fn generic_subscription(
        trap: TrapNumber,
        subscribe: bool,
        qpn: u32,
        resp_time_value: u8,
    ) -> Self {
        Self {
            gid: Gid::ZERO,
            lid_range_begin: InformInfo::ALL_LIDS,
            lid_range_end: 0,
            is_generic: 1,
            subscribe: u8::from(subscribe),
            notice_type: InformInfo::ALL_TYPES,
            trap_number: trap.0,
            qpn,
            resp_time_value,
            producer_type: ProducerType::ALL.0,
        }
    }

    /// Unpacks a wire record.
    pub fn parse(w: &InformInfo) -> Self {
        Self {
            gid: w.gid(),
            lid_range_begin: w.lid_range_begin(),
            lid_range_end: w.lid_range_end(),
            is_generic: w.is_generic(),
            subscribe: w.subscribe(),
            notice_type: w.notice_type(),
            trap_number: w.device_id(),
            qpn: w.qpn(),
            resp_time_value: w.resp_time_value(),
            producer_type: w.vendor_id(),
        }
    }

    /// Packs into `w`, leaving reserved bits as they are.
    pub fn emit(&self, w: &mut InformInfo) {
        w.set_gid(self.gid);
        w.set_lid_range_begin(self.lid_range_begin);
        w.set_lid_range_end(self.lid_range_end);
        w.set_is_generic(self.is_generic);
        w.set_subscribe(self.subscribe);
        w.set_notice_type(self.notice_type);
        w.set_device_id(self.trap_number);
        w.set_qpn(self.qpn);
        w.set_resp_time_value(self.resp_time_value);
        w.set_producer_type(ProducerType(self.producer_type));
    }

    /// A fresh wire record (reserved bits zero).
    pub fn to_wire(&self) -> InformInfo {
        let mut w = InformInfo::new_zeroed();
        self.emit(&mut w);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_to_trap_65_from_all_lids() {
        let repr = InformInfoRepr {
            gid: Gid::ZERO,
            lid_range_begin: InformInfo::ALL_LIDS,
            lid_range_end: 0,
            is_generic: 1,
            subscribe: 1,
            notice_type: InformInfo::ALL_TYPES,
            trap_number: TrapNumber::GID_OUT_OF_SERVICE.0,
            qpn: 1,
            resp_time_value: 19,
            producer_type: ProducerType::ALL.0,
        };
        let w = repr.to_wire();
        let b = w.as_bytes();
        assert_eq!(&b[16..18], &[0xFF, 0xFF]);
        assert_eq!(&b[22..28], &[1, 1, 0xFF, 0xFF, 0x00, 65]);
        assert_eq!(&b[28..32], &[0x00, 0x00, 0x01, 19]);
        assert_eq!(&b[33..36], &[0xFF, 0xFF, 0xFF]);
        assert_eq!(w.trap_number(), TrapNumber::GID_OUT_OF_SERVICE);
        assert_eq!(w.producer_type(), ProducerType::ALL);
        assert_eq!(w.qpn_resp_time_word(), 0x0000_0113);
        assert_eq!(InformInfoRepr::parse(&w), repr);
    }
}
