//! Notice (attribute 0x0002, 80 bytes): what a Report delivers, with typed
//! data details for the traps local-sa cares about.

use zerocopy::{
    FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16,
};

use crate::bits::{BitField, get_u24, put_u24};
use crate::codes::{AttributeId, NoticeType, ProducerType, TrapNumber};
use crate::records::SaRecord;
use crate::types::Gid;

/// Notice as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Notice {
    generic_type: u8,
    producer_type: [u8; 3],
    trap_number: U16,
    issuer_lid: U16,
    toggle_count: U16,
    data_details: [u8; DATA_DETAILS_LEN],
    issuer_gid: Gid,
}

/// Size of DataDetails (Notice bytes 10–63).
pub const DATA_DETAILS_LEN: usize = 54;

const _: () = assert!(size_of::<Notice>() == 80);

impl SaRecord for Notice {
    const ATTRIBUTE_ID: AttributeId = AttributeId::NOTICE;
}

/// Bit 7 of byte 0.
const IS_GENERIC: BitField = BitField::new(7, 1);
/// Bits 6..0 of byte 0.
const TYPE: BitField = BitField::new(0, 7);
/// Bit 15 of bytes 8–9.
const TOGGLE: BitField = BitField::new(15, 1);
/// Bits 14..0 of bytes 8–9.
const COUNT: BitField = BitField::new(0, 15);

impl Notice {
    field_accessors! {
        /// TrapNumber (generic notices).
        code trap_number, set_trap_number: trap_number => TrapNumber;
        /// DeviceID (vendor notices), the same field as TrapNumber.
        be device_id, set_device_id: trap_number => u16;
        /// LID of the port that issued the notice.
        be issuer_lid, set_issuer_lid: issuer_lid => u16;
        /// DataDetails (bytes 10–63), raw.
        copy data_details, set_data_details: data_details => [u8; DATA_DETAILS_LEN];
        /// GID of the issuer.
        copy issuer_gid, set_issuer_gid: issuer_gid => Gid;
    }

    bit_accessors! {
        /// IsGeneric.
        u8 is_generic, set_is_generic: generic_type[IS_GENERIC] => bool;
        /// NoticeToggle.
        be toggle, set_toggle: toggle_count[TOGGLE] => bool;
        /// NoticeCount (15 bits).
        be count, set_count: toggle_count[COUNT] => u16;
    }

    /// Type (7 bits).
    pub fn notice_type(&self) -> NoticeType {
        // TYPE is seven bits wide.
        NoticeType(TYPE.get(u32::from(self.generic_type)) as u8)
    }

    /// Sets [`Self::notice_type`], keeping IsGeneric.
    pub fn set_notice_type(&mut self, t: NoticeType) {
        // TYPE lies inside the byte.
        self.generic_type = TYPE.set(u32::from(self.generic_type), u32::from(t.0)) as u8;
    }

    /// ProducerType (generic notices, 24 bits).
    pub fn producer_type(&self) -> ProducerType {
        ProducerType(get_u24(self.producer_type))
    }

    /// Sets [`Self::producer_type`].
    pub fn set_producer_type(&mut self, p: ProducerType) {
        self.producer_type = put_u24(p.0);
    }

    /// VendorID (vendor notices), the same field as ProducerType.
    pub fn vendor_id(&self) -> u32 {
        get_u24(self.producer_type)
    }

    /// The data details decoded for this notice's trap number.
    pub fn details(&self) -> TrapDetails {
        TrapDetails::decode(self.is_generic(), self.trap_number(), &self.data_details)
    }
}

impl core::fmt::Debug for Notice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Notice")
            .field("is_generic", &self.is_generic())
            .field("type", &self.notice_type())
            .field("producer_type", &self.producer_type())
            .field("trap_number", &self.trap_number())
            .field("issuer_lid", &self.issuer_lid())
            .field("toggle", &self.toggle())
            .field("count", &self.count())
            .field("details", &self.details())
            .field("issuer_gid", &self.issuer_gid())
            .finish()
    }
}

/// The data details of a generic notice, by trap number. Offsets in the
/// comments are from the start of the Notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapDetails {
    /// Trap 64: the port with this GID (bytes 16–31) is in service.
    GidInService {
        /// The port's GID.
        gid: Gid,
    },
    /// Trap 65: the port with this GID went out of service.
    GidOutOfService {
        /// The port's GID.
        gid: Gid,
    },
    /// Trap 66: multicast group created.
    McGroupCreated {
        /// The group's MGID.
        mgid: Gid,
    },
    /// Trap 67: multicast group deleted.
    McGroupDeleted {
        /// The group's MGID.
        mgid: Gid,
    },
    /// Trap 128: link state change at a switch (LIDADDR at bytes 10–11).
    LinkStateChange {
        /// LID of the switch.
        lid: u16,
    },
    /// Trap 144: local changes at a port.
    LocalChanges {
        /// LIDADDR (bytes 12–13).
        lid: u16,
        /// OtherLocalChanges (byte 15, bit 0).
        other_local_changes: bool,
        /// The new CapabilityMask (bytes 16–19).
        capability_mask: u32,
        /// ChangeFlags (bytes 20–21): NodeDescription, LinkWidthEnabled,
        /// LinkSpeedEnabled, SM priority, HierarchyInfo, CapabilityMask2.
        change_flags: u16,
        /// The new CapabilityMask2 (bytes 22–23).
        capability_mask2: u16,
    },
    /// Trap 145: SystemImageGUID changed.
    SystemImageGuidChanged {
        /// LIDADDR (bytes 12–13).
        lid: u16,
        /// The new SystemImageGUID (bytes 16–23).
        system_image_guid: u64,
    },
    /// A vendor notice, or a trap whose details this crate does not decode;
    /// the raw bytes are in [`Notice::data_details`].
    Other,
}

/// Where the GID of traps 64–67 sits inside DataDetails (Notice bytes 16–31).
const DETAILS_GID: core::ops::Range<usize> = 6..22;

impl TrapDetails {
    /// Decodes `details` (Notice bytes 10–63) for a trap.
    pub fn decode(is_generic: bool, trap: TrapNumber, d: &[u8; DATA_DETAILS_LEN]) -> Self {
        let u16_at = |i: usize| u16::from_be_bytes([d[i], d[i + 1]]);
        let gid = || {
            let mut g = [0; 16];
            g.copy_from_slice(&d[DETAILS_GID]);
            Gid(g)
        };
        if !is_generic {
            return Self::Other;
        }
        match trap {
            TrapNumber::GID_IN_SERVICE => Self::GidInService { gid: gid() },
            TrapNumber::GID_OUT_OF_SERVICE => Self::GidOutOfService { gid: gid() },
            TrapNumber::MC_GROUP_CREATED => Self::McGroupCreated { mgid: gid() },
            TrapNumber::MC_GROUP_DELETED => Self::McGroupDeleted { mgid: gid() },
            TrapNumber::LINK_STATE_CHANGE => Self::LinkStateChange { lid: u16_at(0) },
            TrapNumber::LOCAL_CHANGES => Self::LocalChanges {
                lid: u16_at(2),
                other_local_changes: d[5] & 1 != 0,
                capability_mask: u32::from_be_bytes([d[6], d[7], d[8], d[9]]),
                change_flags: u16_at(10),
                capability_mask2: u16_at(12),
            },
            TrapNumber::SYSTEM_IMAGE_GUID_CHANGED => Self::SystemImageGuidChanged {
                lid: u16_at(2),
                system_image_guid: u64::from_be_bytes([
                    d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
                ]),
            },
            _ => Self::Other,
        }
    }

    /// The trap number these details belong to (`None` for [`Self::Other`]).
    pub fn trap_number(&self) -> Option<TrapNumber> {
        Some(match self {
            Self::GidInService { .. } => TrapNumber::GID_IN_SERVICE,
            Self::GidOutOfService { .. } => TrapNumber::GID_OUT_OF_SERVICE,
            Self::McGroupCreated { .. } => TrapNumber::MC_GROUP_CREATED,
            Self::McGroupDeleted { .. } => TrapNumber::MC_GROUP_DELETED,
            Self::LinkStateChange { .. } => TrapNumber::LINK_STATE_CHANGE,
            Self::LocalChanges { .. } => TrapNumber::LOCAL_CHANGES,
            Self::SystemImageGuidChanged { .. } => TrapNumber::SYSTEM_IMAGE_GUID_CHANGED,
            Self::Other => return None,
        })
    }

    /// Writes the fields into `d`, leaving every other byte as it is.
    pub fn encode(&self, d: &mut [u8; DATA_DETAILS_LEN]) {
        let mut put = |at: usize, bytes: &[u8]| d[at..at + bytes.len()].copy_from_slice(bytes);
        match *self {
            Self::GidInService { gid }
            | Self::GidOutOfService { gid }
            | Self::McGroupCreated { mgid: gid }
            | Self::McGroupDeleted { mgid: gid } => put(DETAILS_GID.start, &gid.0),
            Self::LinkStateChange { lid } => put(0, &lid.to_be_bytes()),
            Self::LocalChanges {
                lid,
                other_local_changes,
                capability_mask,
                change_flags,
                capability_mask2,
            } => {
                put(2, &lid.to_be_bytes());
                put(5, &[u8::from(other_local_changes)]);
                put(6, &capability_mask.to_be_bytes());
                put(10, &change_flags.to_be_bytes());
                put(12, &capability_mask2.to_be_bytes());
            }
            Self::SystemImageGuidChanged {
                lid,
                system_image_guid,
            } => {
                put(2, &lid.to_be_bytes());
                put(6, &system_image_guid.to_be_bytes());
            }
            Self::Other => {}
        }
    }
}

/// Notice with every field unpacked. DataDetails stay raw so that reserved
/// bytes (which OpenSM leaves uninitialised) survive a round trip; use
/// [`NoticeRepr::details`] for the typed view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // One field per Notice field of the same name.
pub struct NoticeRepr {
    pub is_generic: bool,
    pub notice_type: NoticeType,
    /// ProducerType (generic) or VendorID (vendor), 24 bits.
    pub producer_type: u32,
    /// TrapNumber (generic) or DeviceID (vendor).
    pub trap_number: u16,
    pub issuer_lid: u16,
    pub toggle: bool,
    pub count: u16,
    pub data_details: [u8; DATA_DETAILS_LEN],
    pub issuer_gid: Gid,
}

impl NoticeRepr {
    /// A generic notice for `details`, with zero reserved bytes.
    pub fn generic(
        notice_type: NoticeType,
        producer: ProducerType,
        details: TrapDetails,
        issuer_lid: u16,
        issuer_gid: Gid,
    ) -> Self {
        let mut data_details = [0; DATA_DETAILS_LEN];
        details.encode(&mut data_details);
        Self {
            is_generic: true,
            notice_type,
            producer_type: producer.0,
            trap_number: details.trap_number().map_or(0, |t| t.0),
            issuer_lid,
            toggle: false,
            count: 0,
            data_details,
            issuer_gid,
        }
    }

    /// Unpacks a wire notice.
    pub fn parse(w: &Notice) -> Self {
        Self {
            is_generic: w.is_generic(),
            notice_type: w.notice_type(),
            producer_type: w.vendor_id(),
            trap_number: w.device_id(),
            issuer_lid: w.issuer_lid(),
            toggle: w.toggle(),
            count: w.count(),
            data_details: w.data_details(),
            issuer_gid: w.issuer_gid(),
        }
    }

    /// The typed data details.
    pub fn details(&self) -> TrapDetails {
        TrapDetails::decode(
            self.is_generic,
            TrapNumber(self.trap_number),
            &self.data_details,
        )
    }

    /// Packs into a fresh wire notice.
    pub fn to_wire(&self) -> Notice {
        let mut w = Notice::new_zeroed();
        w.set_is_generic(self.is_generic);
        w.set_notice_type(self.notice_type);
        w.set_producer_type(ProducerType(self.producer_type));
        w.set_device_id(self.trap_number);
        w.set_issuer_lid(self.issuer_lid);
        w.set_toggle(self.toggle);
        w.set_count(self.count);
        w.set_data_details(self.data_details);
        w.set_issuer_gid(self.issuer_gid);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(details: TrapDetails) {
        let sm_gid = Gid::new(Gid::DEFAULT_PREFIX, 0x20);
        let repr = NoticeRepr::generic(
            NoticeType::SUBNET_MANAGEMENT,
            ProducerType::CLASS_MANAGER,
            details,
            1,
            sm_gid,
        );
        let wire = repr.to_wire();
        assert_eq!(wire.details(), details);
        assert_eq!(NoticeRepr::parse(&wire), repr);
        assert_eq!(wire.as_bytes()[0], 0x83);
        assert_eq!(&wire.as_bytes()[1..4], &[0, 0, 4]);
    }

    #[test]
    fn every_typed_trap_round_trips() {
        let gid = Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0001);
        round_trip(TrapDetails::GidInService { gid });
        round_trip(TrapDetails::GidOutOfService { gid });
        round_trip(TrapDetails::McGroupCreated { mgid: gid });
        round_trip(TrapDetails::McGroupDeleted { mgid: gid });
        round_trip(TrapDetails::LinkStateChange { lid: 7 });
        round_trip(TrapDetails::LocalChanges {
            lid: 9,
            other_local_changes: true,
            capability_mask: 0x0251_0a68,
            change_flags: 0x21,
            capability_mask2: 0x10,
        });
        round_trip(TrapDetails::SystemImageGuidChanged {
            lid: 3,
            system_image_guid: 0xdead_beef,
        });
    }

    #[test]
    fn trap_65_gid_sits_at_bytes_16_to_31() {
        let gid = Gid::new(Gid::DEFAULT_PREFIX, 0x11);
        let repr = NoticeRepr::generic(
            NoticeType::SUBNET_MANAGEMENT,
            ProducerType::CLASS_MANAGER,
            TrapDetails::GidOutOfService { gid },
            1,
            Gid::ZERO,
        );
        let wire = repr.to_wire();
        assert_eq!(&wire.as_bytes()[4..6], &[0, 65]);
        assert_eq!(&wire.as_bytes()[16..32], &gid.0);
    }

    #[test]
    fn vendor_notices_are_not_decoded() {
        let mut wire = Notice::new_zeroed();
        wire.set_device_id(64);
        assert_eq!(wire.details(), TrapDetails::Other);
    }
}
