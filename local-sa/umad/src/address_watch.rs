//! This host's interfaces and IP addresses changing, as the kernel
//! announces it on rtnetlink (the link and IPv4/IPv6 address groups), so
//! that the addresses each endpoint owns follow `ip addr add` and `ip link
//! add ib0.8001` within a moment, without a restart.
//!
//! The messages are not parsed: any one means "read the interfaces
//! again" ([`crate::ipoib`]), which is simpler than applying each change
//! and cannot drift from what `getifaddrs` and sysfs say. Messages from
//! anyone but the kernel (netlink port 0) are ignored; an overrun socket
//! (ENOBUFS: changes were lost) counts as a change.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::sys::netlink as sys;

/// A non-blocking rtnetlink socket joined to the link and address groups.
#[derive(Debug)]
pub struct AddressWatch {
    fd: OwnedFd,
}

/// How many bytes of each message are read: none is parsed.
const SLOT: usize = 512;

impl AddressWatch {
    /// Opens the socket.
    pub fn open() -> io::Result<Self> {
        Ok(Self {
            fd: sys::open_route_events()?,
        })
    }

    /// Reads every message waiting: whether the kernel announced a change
    /// (or lost some: the socket overran). `WouldBlock` when nothing was
    /// waiting.
    pub fn take_changes(&self) -> io::Result<bool> {
        let mut buf = vec![0u8; SLOT * sys::BATCH];
        let mut changed = false;
        let mut read_any = false;
        loop {
            match sys::recv_many(self.fd.as_fd(), &mut buf, SLOT) {
                Ok(got) if got.is_empty() => break,
                Ok(got) => {
                    read_any = true;
                    changed |= got.iter().any(|(_, from)| from.netlink_port == Some(0));
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    read_any = true;
                    changed = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && read_any => break,
                Err(e) => return Err(e),
            }
        }
        Ok(changed)
    }
}

impl AsFd for AddressWatch {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_without_privilege_and_reads_without_blocking() {
        // Every Linux kernel has NETLINK_ROUTE; joining its groups needs
        // no privilege. Nothing waiting is WouldBlock, not an error (a
        // change made meanwhile by another process is a change).
        let watch = AddressWatch::open().unwrap();
        if let Err(e) = watch.take_changes() {
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        }
    }
}
