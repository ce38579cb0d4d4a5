//! The netlink socket of the kernel's RDMA local service, and plain
//! datagram I/O on it in batches (recvmmsg, sendmmsg), or on any datagram
//! socket standing in for it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `NETLINK_RDMA` (`linux/netlink.h`).
const NETLINK_RDMA: libc::c_int = 20;
/// `RDMA_NL_GROUP_LS` (`rdma/rdma_netlink.h`).
const RDMA_NL_GROUP_LS: u32 = 3;

/// A non-blocking NETLINK_RDMA socket joined to the local service group:
/// it receives what the kernel multicasts to RDMA_NL_GROUP_LS, and `send`
/// without an address goes to the kernel.
pub(crate) fn open_rdma_ls() -> io::Result<OwnedFd> {
    open(NETLINK_RDMA, 1 << (RDMA_NL_GROUP_LS - 1))
}

/// `RTMGRP_LINK`, `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV6_IFADDR`
/// (`linux/rtnetlink.h`).
const ROUTE_GROUPS: u32 = 0x1 | 0x10 | 0x100;

/// A non-blocking NETLINK_ROUTE socket joined to the link and address
/// groups: the kernel sends it a message whenever an interface or an IP
/// address comes or goes.
pub(crate) fn open_route_events() -> io::Result<OwnedFd> {
    open(libc::NETLINK_ROUTE, ROUTE_GROUPS)
}

/// A non-blocking netlink socket of `protocol`, bound to the multicast
/// `groups` (a bit mask).
fn open(protocol: libc::c_int, groups: u32) -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers; a negative result is an error
    // and nothing is owned.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            protocol,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socket() just returned this descriptor; nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_nl is plain data; all zeros is a valid value.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = groups;
    // SAFETY: `addr` is a valid sockaddr_nl for the duration of the call
    // and the length given is its size.
    let rc = unsafe {
        libc::bind(
            owned.as_raw_fd(),
            (&raw const addr).cast::<libc::sockaddr>(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(owned)
}

/// Makes `fd` non-blocking.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL changes the descriptor's status flags, no memory.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Where a datagram came from, as `recvfrom` gives it: the address
/// family, and for a netlink sender its port ID (0 is the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SourceAddress {
    pub(crate) family: libc::sa_family_t,
    pub(crate) netlink_port: Option<u32>,
}

/// The sender's address the kernel wrote into `addr` (`len` bytes of it).
fn source_address(addr: &libc::sockaddr_storage, len: usize) -> SourceAddress {
    // An unnamed sender (a socketpair's peer) leaves the length 0 and the
    // family unset.
    let family = if len >= size_of::<libc::sa_family_t>() {
        addr.ss_family
    } else {
        libc::AF_UNSPEC as libc::sa_family_t
    };
    let netlink_port = (family == libc::AF_NETLINK as libc::sa_family_t
        && len >= size_of::<libc::sockaddr_nl>())
    .then(|| {
        // SAFETY: the kernel filled a sockaddr_nl (family AF_NETLINK, the
        // length checked); sockaddr_storage is large and aligned enough.
        let nl = unsafe { &*std::ptr::from_ref(addr).cast::<libc::sockaddr_nl>() };
        nl.nl_pid
    });
    SourceAddress {
        family,
        netlink_port,
    }
}

/// Datagrams one [`recv_many`] or [`send_many`] call moves at most.
pub(crate) const BATCH: usize = 32;

/// Receives up to [`BATCH`] datagrams waiting on `fd` in one call, each
/// into its own `slot`-byte piece of `buf` (cut to it): their lengths and
/// senders, in order; `WouldBlock` when none is waiting.
pub(crate) fn recv_many(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    slot: usize,
) -> io::Result<Vec<(usize, SourceAddress)>> {
    let slot = slot.max(1);
    let count = (buf.len() / slot).min(BATCH);
    if count == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: sockaddr_storage, iovec and mmsghdr are plain data; all
    // zeros is a valid value of each.
    let mut addrs: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (i, piece) in buf.chunks_exact_mut(slot).take(count).enumerate() {
        iovs[i] = libc::iovec {
            iov_base: piece.as_mut_ptr().cast(),
            iov_len: slot,
        };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = (&raw mut addrs[i]).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &raw mut iovs[i];
        h.msg_iovlen = 1;
    }
    // SAFETY: the first `count` entries of `msgs` point at `count` valid
    // iovecs over disjoint `slot`-byte pieces of `buf` and at `count`
    // sockaddr_storage buffers, all of which outlive the call; the kernel
    // writes at most what each names.
    let n = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let received = (0..n as usize)
        .map(|i| {
            let len = (msgs[i].msg_len as usize).min(slot);
            let addr_len = msgs[i].msg_hdr.msg_namelen as usize;
            (len, source_address(&addrs[i], addr_len))
        })
        .collect();
    Ok(received)
}

/// Sends `datagrams` (at most [`BATCH`] of them) to the socket's default
/// destination in one call: how many went (the first ones), or
/// `WouldBlock` when none could.
pub(crate) fn send_many(fd: BorrowedFd<'_>, datagrams: &[&[u8]]) -> io::Result<usize> {
    let count = datagrams.len().min(BATCH);
    // SAFETY: iovec and mmsghdr are plain data; all zeros is a valid
    // value of each (no address: the default destination).
    let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (i, d) in datagrams.iter().take(count).enumerate() {
        iovs[i] = libc::iovec {
            iov_base: d.as_ptr().cast_mut().cast(),
            iov_len: d.len(),
        };
        msgs[i].msg_hdr.msg_iov = &raw mut iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the first `count` entries of `msgs` point at `count` iovecs
    // over the datagrams, which outlive the call; the kernel only reads
    // them (and writes `msg_len`).
    let n = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// The socket's own address family (`getsockname`).
pub(crate) fn socket_family(fd: BorrowedFd<'_>) -> io::Result<libc::sa_family_t> {
    // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `addr` is valid for writes of `len` bytes for the call.
    let rc = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&raw mut addr).cast::<libc::sockaddr>(),
            &raw mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(addr.ss_family)
}

/// Whether the socket is connected to a peer (`getpeername` succeeds).
pub(crate) fn is_connected(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `addr` is valid for writes of `len` bytes for the call.
    let rc = unsafe {
        libc::getpeername(
            fd.as_raw_fd(),
            (&raw mut addr).cast::<libc::sockaddr>(),
            &raw mut len,
        )
    };
    rc == 0
}
