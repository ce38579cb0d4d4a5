use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32, U64},
};

use crate::codes::{AttributeId, MadStatus, Method, MgmtClass};
use crate::error::ParseError;

/// Size of every MAD on an InfiniBand wire, in bytes.
pub const MAD_LEN: usize = 256;

/// One MAD as it travels on the wire.
pub type MadBuf = [u8; MAD_LEN];

/// MAD common header (24 bytes), common to every management class.
#[derive(Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MadHeader {
    base_version: u8,
    mgmt_class: u8,
    class_version: u8,
    method: u8,
    status: U16,
    class_specific: U16,
    transaction_id: U64,
    attribute_id: U16,
    reserved: U16,
    attribute_modifier: U32,
}

const _: () = assert!(size_of::<MadHeader>() == MadHeader::LEN);

impl MadHeader {
    /// Size on the wire.
    pub const LEN: usize = 24;

    /// The only BaseVersion of InfiniBand MADs.
    pub const BASE_VERSION: u8 = 1;

    /// A request header: BaseVersion 1, status 0, the given class, version,
    /// method, TransactionID and attribute.
    pub fn new(
        class: MgmtClass,
        class_version: u8,
        method: Method,
        transaction_id: u64,
        attribute_id: AttributeId,
        attribute_modifier: u32,
    ) -> Self {
        Self {
            base_version: Self::BASE_VERSION,
            mgmt_class: class.0,
            class_version,
            method: method.0,
            status: U16::ZERO,
            class_specific: U16::ZERO,
            transaction_id: U64::new(transaction_id),
            attribute_id: U16::new(attribute_id.0),
            reserved: U16::ZERO,
            attribute_modifier: U32::new(attribute_modifier),
        }
    }

    /// Reads the header at the start of `bytes`; returns it and the rest.
    pub fn parse(bytes: &[u8]) -> Result<(&Self, &[u8]), ParseError> {
        super::view::view_prefix(bytes, "MAD header")
    }

    field_accessors! {
        /// BaseVersion (1 for every InfiniBand MAD).
        copy base_version, set_base_version: base_version => u8;
        /// Management class.
        code8 mgmt_class, set_mgmt_class: mgmt_class => MgmtClass;
        /// ClassVersion (2 for Subnet Administration).
        copy class_version, set_class_version: class_version => u8;
        /// Method, response bit included.
        code8 method, set_method: method => Method;
        /// Status.
        code status, set_status: status => MadStatus;
        /// ClassSpecific (unused by the SA).
        be class_specific, set_class_specific: class_specific => u16;
        /// TransactionID. For requests sent through umad the kernel replaces
        /// the upper 32 bits with the agent's ID: match on the lower 32.
        be transaction_id, set_transaction_id: transaction_id => u64;
        /// AttributeID.
        code attribute_id, set_attribute_id: attribute_id => AttributeId;
        /// AttributeModifier.
        be attribute_modifier, set_attribute_modifier: attribute_modifier => u32;
    }

    /// The part of the TransactionID that survives the kernel's rewrite of
    /// a request's upper 32 bits.
    pub fn transaction_id_low(&self) -> u32 {
        // Truncation is the point: the low 32 bits are the caller's.
        self.transaction_id.get() as u32
    }

    /// Checks BaseVersion 1 and, for the SA class, ClassVersion 2.
    pub fn check_versions(&self) -> Result<(), ParseError> {
        if self.base_version != Self::BASE_VERSION {
            return Err(ParseError::BadBaseVersion(self.base_version));
        }
        let class = self.mgmt_class();
        if class == MgmtClass::SUBN_ADM && self.class_version != MgmtClass::SA_CLASS_VERSION {
            return Err(ParseError::BadClassVersion {
                class,
                version: self.class_version,
            });
        }
        Ok(())
    }
}

impl core::fmt::Debug for MadHeader {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MadHeader")
            .field("base_version", &self.base_version)
            .field("mgmt_class", &self.mgmt_class())
            .field("class_version", &self.class_version)
            .field("method", &self.method())
            .field("status", &self.status())
            .field(
                "transaction_id",
                &format_args!("{:#x}", self.transaction_id()),
            )
            .field("attribute_id", &self.attribute_id())
            .field(
                "attribute_modifier",
                &format_args!("{:#x}", self.attribute_modifier()),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// First 24 bytes of saquery's ClassPortInfo Get request.
    const GET_CPI: [u8; 24] = [
        0x01, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x56, 0x8c, 0x42,
        0x77, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let (h, rest) = MadHeader::parse(&GET_CPI).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.base_version(), 1);
        assert_eq!(h.mgmt_class(), MgmtClass::SUBN_ADM);
        assert_eq!(h.class_version(), 2);
        assert_eq!(h.method(), Method::GET);
        assert_eq!(h.status(), MadStatus::OK);
        assert_eq!(h.transaction_id(), 0x568c_4277);
        assert_eq!(h.attribute_id(), AttributeId::CLASS_PORT_INFO);
        h.check_versions().unwrap();
    }

    #[test]
    fn construct() {
        let h = MadHeader::new(
            MgmtClass::SUBN_ADM,
            2,
            Method::GET,
            0x568c_4277,
            AttributeId::CLASS_PORT_INFO,
            0,
        );
        assert_eq!(h.as_bytes(), &GET_CPI);
    }

    #[test]
    fn impossible_len() {
        assert_eq!(
            MadHeader::parse(&GET_CPI[..23]).unwrap_err(),
            ParseError::Truncated {
                what: "MAD header",
                need: 24,
                have: 23
            }
        );
    }

    #[test]
    fn version_checks() {
        let mut h = MadHeader::read_from_bytes(&GET_CPI[..]).unwrap();
        h.set_class_version(1);
        assert_eq!(
            h.check_versions(),
            Err(ParseError::BadClassVersion {
                class: MgmtClass::SUBN_ADM,
                version: 1
            })
        );
        h.set_base_version(2);
        assert_eq!(h.check_versions(), Err(ParseError::BadBaseVersion(2)));
    }
}
