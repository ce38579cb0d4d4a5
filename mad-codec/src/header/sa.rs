use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U64},
};

use super::mad::MadHeader;
use super::rmpp::RmppHeader;
use crate::error::ParseError;
use crate::types::ComponentMask;

/// SA header (20 bytes, MAD bytes 36–55).
#[derive(Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SaHeader {
    sm_key: U64,
    attribute_offset: U16,
    reserved: U16,
    component_mask: U64,
}

const _: () = assert!(size_of::<SaHeader>() == SaHeader::LEN);

impl SaHeader {
    /// Size on the wire.
    pub const LEN: usize = 20;

    /// An SA header.
    pub fn new(sm_key: u64, attribute_offset: u16, component_mask: ComponentMask) -> Self {
        Self {
            sm_key: U64::new(sm_key),
            attribute_offset: U16::new(attribute_offset),
            reserved: U16::ZERO,
            component_mask: U64::new(component_mask.0),
        }
    }

    field_accessors! {
        /// SM_Key: 0 for untrusted requests; responses always carry 0.
        be sm_key, set_sm_key: sm_key => u64;
        /// AttributeOffset: distance between records in 8-byte units.
        be attribute_offset, set_attribute_offset: attribute_offset => u16;
    }

    /// ComponentMask.
    pub fn component_mask(&self) -> ComponentMask {
        ComponentMask(self.component_mask.get())
    }

    /// Sets [`Self::component_mask`].
    pub fn set_component_mask(&mut self, mask: ComponentMask) {
        self.component_mask.set(mask.0);
    }
}

impl core::fmt::Debug for SaHeader {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SaHeader")
            .field("sm_key", &format_args!("{:#x}", self.sm_key()))
            .field("attribute_offset", &self.attribute_offset())
            .field("component_mask", &self.component_mask())
            .finish()
    }
}

/// The first 56 bytes of every SA MAD: MAD, RMPP and SA headers. RMPP
/// repeats all of it in every segment.
#[derive(
    Clone, Copy, PartialEq, Eq, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct SaMadHeader {
    /// MAD common header.
    pub mad: MadHeader,
    /// RMPP header.
    pub rmpp: RmppHeader,
    /// SA header.
    pub sa: SaHeader,
}

const _: () = assert!(size_of::<SaMadHeader>() == SaMadHeader::LEN);

impl SaMadHeader {
    /// Size on the wire: where SA data starts.
    pub const LEN: usize = MadHeader::LEN + RmppHeader::LEN + SaHeader::LEN;

    /// Reads the headers at the start of `bytes`; returns them and the data.
    pub fn parse(bytes: &[u8]) -> Result<(&Self, &[u8]), ParseError> {
        super::view::view_prefix(bytes, "SA MAD header")
    }

    /// Reads the headers for in-place editing.
    pub fn parse_mut(bytes: &mut [u8]) -> Result<(&mut Self, &mut [u8]), ParseError> {
        let have = bytes.len();
        Self::mut_from_prefix(bytes)
            .map_err(|_| crate::error::truncated("SA MAD header", Self::LEN, have))
    }
}
