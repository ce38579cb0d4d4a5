//! The kernel's user_mad ABI (`include/uapi/rdma/ib_user_mad.h`) as plain
//! data: the 64-byte header that precedes every MAD read from or written to
//! `/dev/infiniband/umadN`, and the agent registration request.
//!
//! The first five words and `pkey_index` are in host byte order, the
//! address fields in network byte order, exactly as the kernel defines
//! them.

use zerocopy::byteorder::{native_endian, network_endian};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// `struct ib_user_mad_hdr` with the P_Key index (what ENABLE_PKEY selects).
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct UserMadHeader {
    pub(crate) agent_id: native_endian::U32,
    pub(crate) status: native_endian::U32,
    pub(crate) timeout_ms: native_endian::U32,
    pub(crate) retries: native_endian::U32,
    pub(crate) length: native_endian::U32,
    pub(crate) qpn: network_endian::U32,
    pub(crate) qkey: network_endian::U32,
    pub(crate) lid: network_endian::U16,
    pub(crate) sl: u8,
    pub(crate) path_bits: u8,
    pub(crate) grh_present: u8,
    pub(crate) gid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) gid: [u8; 16],
    pub(crate) flow_label: network_endian::U32,
    pub(crate) pkey_index: native_endian::U16,
    pub(crate) reserved: [u8; 6],
}

/// Size of [`UserMadHeader`]: where the MAD starts in a umad buffer once
/// P_Key mode is on.
pub(crate) const USER_MAD_HEADER_LEN: usize = 64;

const _: () = assert!(size_of::<UserMadHeader>() == USER_MAD_HEADER_LEN);

/// Which header precedes MADs on a umad descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderLayout {
    /// The 64-byte header with `pkey_index`, which the kernel uses after
    /// `IB_USER_MAD_ENABLE_PKEY`.
    WithPkeyIndex,
    /// The 56-byte header of the original ABI, without `pkey_index`.
    ///
    /// The simulator's preload (umad2sim) always speaks this one to a
    /// process that does not itself use libibumad: it sizes the header with
    /// libibumad's `umad_size()`, which is 56 until that library has
    /// enabled P_Key mode in the same process, and it answers
    /// ENABLE_PKEY with success without changing anything.
    Legacy,
}

impl HeaderLayout {
    /// Bytes before the MAD.
    pub fn header_len(self) -> usize {
        match self {
            Self::WithPkeyIndex => USER_MAD_HEADER_LEN,
            Self::Legacy => USER_MAD_HEADER_LEN - 8,
        }
    }
}

/// `struct ib_user_mad_reg_req` (IB_USER_MAD_REGISTER_AGENT). It is a C
/// struct with natural alignment: 27 bytes of fields and one byte of tail
/// padding, made explicit here.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub(crate) struct RegisterAgentRequest {
    /// Out: the agent ID the kernel assigned.
    pub(crate) id: u32,
    /// Methods this agent receives as unsolicited requests, one bit each.
    pub(crate) method_mask: [u32; 4],
    pub(crate) qpn: u8,
    pub(crate) mgmt_class: u8,
    pub(crate) mgmt_class_version: u8,
    pub(crate) oui: [u8; 3],
    pub(crate) rmpp_version: u8,
    pub(crate) padding: u8,
}

const _: () = assert!(size_of::<RegisterAgentRequest>() == 28);

impl RegisterAgentRequest {
    /// Sets the bit for `method` in the method mask: bit *n* of the
    /// 128-bit mask is bit *n* % 32 of word *n* / 32, the kernel's
    /// `bitmap_from_arr32` layout.
    pub(crate) fn add_method(&mut self, method: u8) {
        let bit = usize::from(method & 0x7F);
        self.method_mask[bit / 32] |= 1 << (bit % 32);
    }
}

const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;
const IB_IOCTL_MAGIC: u64 = 0x1b;

const fn ioc(dir: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | (IB_IOCTL_MAGIC << 8) | nr
}

/// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
pub(crate) const IB_USER_MAD_REGISTER_AGENT: u64 = ioc(
    IOC_READ | IOC_WRITE,
    1,
    size_of::<RegisterAgentRequest>() as u64,
);
/// `_IOW(0x1b, 2, __u32)`.
pub(crate) const IB_USER_MAD_UNREGISTER_AGENT: u64 = ioc(IOC_WRITE, 2, 4);
/// `_IO(0x1b, 3)`.
pub(crate) const IB_USER_MAD_ENABLE_PKEY: u64 = ioc(0, 3, 0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        assert_eq!(IB_USER_MAD_REGISTER_AGENT, 0xC01C_1B01);
        assert_eq!(IB_USER_MAD_UNREGISTER_AGENT, 0x4004_1B02);
        assert_eq!(IB_USER_MAD_ENABLE_PKEY, 0x1B03);
    }

    #[test]
    fn method_mask_bits() {
        let mut r = RegisterAgentRequest::default();
        r.add_method(0x01);
        r.add_method(0x12);
        r.add_method(0x15);
        assert_eq!(
            r.method_mask,
            [(1 << 1) | (1 << 0x12) | (1 << 0x15), 0, 0, 0]
        );
        assert_eq!(r.as_bytes().len(), 28);
    }

    #[test]
    fn layouts() {
        assert_eq!(HeaderLayout::WithPkeyIndex.header_len(), 64);
        assert_eq!(HeaderLayout::Legacy.header_len(), 56);
    }

    #[test]
    fn header_field_offsets() {
        let mut h = UserMadHeader::default();
        h.lid.set(0x1234);
        h.pkey_index.set(1);
        let b = h.as_bytes();
        assert_eq!(&b[28..30], &[0x12, 0x34], "lid at 28, big-endian");
        assert_eq!(
            b[56..58],
            1u16.to_ne_bytes(),
            "pkey_index at 56, host order"
        );
        assert_eq!(
            HeaderLayout::Legacy.header_len(),
            56,
            "the legacy header ends where pkey_index starts"
        );
    }
}
