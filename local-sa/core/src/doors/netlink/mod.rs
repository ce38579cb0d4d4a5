//! The kernel door: the kernel's RDMA_NL_LS netlink queries ([`wire`]) —
//! PathRecords for rdma_cm, IPoIB, SRP, iSER and NVMe-oF, and IP-to-GID
//! lookups — answered by the SA agents from the same cache as MADs.

pub mod service;
pub mod wire;

pub use service::{
    KERNEL_DEFAULT_TIMEOUT, KERNEL_TIMEOUT_RANGE, KernelPort, NetlinkConfig, NetlinkCounters,
    NetlinkService, clamp_kernel_timeout,
};
