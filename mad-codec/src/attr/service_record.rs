//! ServiceRecord (attribute 0x0031, 176 bytes).

use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32, U64},
};

use super::text::{nul_padded_text, put_nul_padded};
use crate::codes::AttributeId;
use crate::records::SaRecord;
use crate::types::Gid;

/// ServiceRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// ServiceID.
    pub const SERVICE_ID: M = M::bit(0);
    /// ServiceGID.
    pub const SERVICE_GID: M = M::bit(1);
    /// ServiceP_Key.
    pub const SERVICE_PKEY: M = M::bit(2);
    /// ServiceLease.
    pub const SERVICE_LEASE: M = M::bit(4);
    /// ServiceKey.
    pub const SERVICE_KEY: M = M::bit(5);
    /// ServiceName.
    pub const SERVICE_NAME: M = M::bit(6);

    /// ServiceData8\[i\] (i < 16).
    pub const fn data8(i: u32) -> M {
        M::bit(7 + (i & 15))
    }
    /// ServiceData16\[i\] (i < 8).
    pub const fn data16(i: u32) -> M {
        M::bit(23 + (i & 7))
    }
    /// ServiceData32\[i\] (i < 4).
    pub const fn data32(i: u32) -> M {
        M::bit(31 + (i & 3))
    }
    /// ServiceData64\[i\] (i < 2).
    pub const fn data64(i: u32) -> M {
        M::bit(35 + (i & 1))
    }
}

/// ServiceRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct ServiceRecord {
    service_id: U64,
    service_gid: Gid,
    service_pkey: U16,
    reserved: U16,
    service_lease: U32,
    service_key: [u8; 16],
    service_name: [u8; 64],
    data8: [u8; 16],
    data16: [U16; 8],
    data32: [U32; 4],
    data64: [U64; 2],
}

const _: () = assert!(size_of::<ServiceRecord>() == 176);

/// Where ServiceData8 starts; the four data fields run to the end.
const DATA_OFFSET: usize = 112;

impl SaRecord for ServiceRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::SERVICE_RECORD;
}

impl ServiceRecord {
    /// ServiceLease meaning "never expires".
    pub const INFINITE_LEASE: u32 = 0xFFFF_FFFF;

    field_accessors! {
        /// ServiceID.
        be service_id, set_service_id: service_id => u64;
        /// GID of the port offering the service.
        copy service_gid, set_service_gid: service_gid => Gid;
        /// ServiceP_Key.
        be service_pkey, set_service_pkey: service_pkey => u16;
        /// ServiceLease in seconds (0xFFFFFFFF = infinite).
        be service_lease, set_service_lease: service_lease => u32;
        /// ServiceKey.
        copy service_key, set_service_key: service_key => [u8; 16];
        /// ServiceName, raw (NUL padded).
        copy service_name_bytes, set_service_name_bytes: service_name => [u8; 64];
        /// ServiceData8.
        copy data8, set_data8: data8 => [u8; 16];
    }

    /// ServiceName up to its first NUL, with invalid UTF-8 replaced.
    pub fn service_name(&self) -> String {
        nul_padded_text(&self.service_name)
    }

    /// Sets ServiceName, truncated to 64 bytes and NUL padded.
    pub fn set_service_name(&mut self, name: &str) {
        put_nul_padded(&mut self.service_name, name);
    }

    /// ServiceData16.
    pub fn data16(&self) -> [u16; 8] {
        self.data16.map(|v| v.get())
    }

    /// Sets [`Self::data16`].
    pub fn set_data16(&mut self, data: [u16; 8]) {
        self.data16 = data.map(U16::new);
    }

    /// ServiceData32.
    pub fn data32(&self) -> [u32; 4] {
        self.data32.map(|v| v.get())
    }

    /// Sets [`Self::data32`].
    pub fn set_data32(&mut self, data: [u32; 4]) {
        self.data32 = data.map(U32::new);
    }

    /// ServiceData64.
    pub fn data64(&self) -> [u64; 2] {
        self.data64.map(|v| v.get())
    }

    /// Sets [`Self::data64`].
    pub fn set_data64(&mut self, data: [u64; 2]) {
        self.data64 = data.map(U64::new);
    }

    /// ServiceData8, 16, 32 and 64 as the 64 bytes they are on the wire
    /// (the multi-byte fields in network order): for records that carry
    /// opaque data across all four.
    pub fn data_bytes(&self) -> [u8; 64] {
        let mut out = [0; 64];
        out.copy_from_slice(&self.as_bytes()[DATA_OFFSET..]);
        out
    }

    /// Sets all four ServiceData fields from their 64 wire bytes.
    pub fn set_data_bytes(&mut self, data: &[u8; 64]) {
        self.as_mut_bytes()[DATA_OFFSET..].copy_from_slice(data);
    }
}

impl core::fmt::Debug for ServiceRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServiceRecord")
            .field("service_id", &format_args!("{:#x}", self.service_id()))
            .field("service_gid", &self.service_gid())
            .field("service_pkey", &format_args!("{:#x}", self.service_pkey()))
            .field("service_lease", &self.service_lease())
            .field("service_name", &self.service_name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::FromZeros;

    use super::*;

    #[test]
    fn name_and_data_arrays() {
        let mut r = ServiceRecord::new_zeroed();
        r.set_service_name("local-sa test service");
        r.set_data16([1, 2, 3, 4, 5, 6, 7, 0xFFFF]);
        r.set_data64([u64::MAX, 7]);
        assert_eq!(r.service_name(), "local-sa test service");
        assert_eq!(&r.as_bytes()[48..53], b"local");
        assert_eq!(&r.as_bytes()[142..144], &[0xFF, 0xFF]);
        assert_eq!(r.data64(), [u64::MAX, 7]);
        let long = "x".repeat(100);
        r.set_service_name(&long);
        assert_eq!(r.service_name().len(), 64);
    }

    #[test]
    fn data_bytes_span_the_four_data_fields() {
        let mut r = ServiceRecord::new_zeroed();
        r.set_data16([0x0102, 0, 0, 0, 0, 0, 0, 0]);
        r.set_data64([0, 0x0A0B]);
        let d = r.data_bytes();
        assert_eq!(&d[16..18], &[1, 2], "ServiceData16[0], network order");
        assert_eq!(&d[62..64], &[0x0A, 0x0B], "ServiceData64[1]'s low bytes");
        let mut all = [0u8; 64];
        all[0] = 0xEE;
        all[63] = 0x77;
        r.set_data_bytes(&all);
        assert_eq!(r.data8()[0], 0xEE);
        assert_eq!(r.data64()[1], 0x77);
        assert_eq!(r.service_name(), "", "nothing before the data moved");
    }
}
