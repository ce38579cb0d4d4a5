//! The netlink socket of the kernel's RDMA local service, and plain
//! datagram I/O on it (or on any datagram socket standing in for it).

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
    // SAFETY: socket() takes no pointers; a negative result is an error
    // and nothing is owned.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            NETLINK_RDMA,
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
    addr.nl_groups = 1 << (RDMA_NL_GROUP_LS - 1);
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

/// Receives one datagram into `buf`: its length (cut to `buf`) and its
/// sender's address.
pub(crate) fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, SourceAddress)> {
    // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes, and `addr`
    // for `len` bytes, for the call; the kernel writes at most `len`.
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            0,
            (&raw mut addr).cast::<libc::sockaddr>(),
            &raw mut len,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // An unnamed sender (a socketpair's peer) leaves the length 0 and the
    // family unset.
    let family = if len as usize >= size_of::<libc::sa_family_t>() {
        addr.ss_family
    } else {
        libc::AF_UNSPEC as libc::sa_family_t
    };
    let netlink_port = (family == libc::AF_NETLINK as libc::sa_family_t
        && len as usize >= size_of::<libc::sockaddr_nl>())
    .then(|| {
        // SAFETY: the kernel filled a sockaddr_nl (family AF_NETLINK, the
        // length checked); sockaddr_storage is large and aligned enough.
        let nl = unsafe { &*(&raw const addr).cast::<libc::sockaddr_nl>() };
        nl.nl_pid
    });
    Ok((
        n as usize,
        SourceAddress {
            family,
            netlink_port,
        },
    ))
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

/// Sends `buf` as one datagram to the socket's default destination.
pub(crate) fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the call.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
