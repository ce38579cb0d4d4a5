//! The socket the kernel's RDMA_NL_LS queries arrive on: a NETLINK_RDMA
//! socket joined to the local service group, or one inherited (systemd's
//! `ListenNetlink=rdma 4`, or any datagram socket standing in for it in
//! tests). Replies go back with a plain `send`, so both work the same.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::sys::netlink as sys;

/// The kernel door's socket, non-blocking.
#[derive(Debug)]
pub struct NetlinkSocket {
    fd: OwnedFd,
}

impl NetlinkSocket {
    /// Opens a NETLINK_RDMA socket and joins RDMA_NL_GROUP_LS. On a kernel
    /// without NETLINK_RDMA this fails with "protocol not supported".
    pub fn open() -> io::Result<Self> {
        Ok(Self {
            fd: sys::open_rdma_ls()?,
        })
    }

    /// Uses an inherited datagram socket.
    pub fn inherited(fd: OwnedFd) -> io::Result<Self> {
        sys::set_nonblocking(fd.as_fd())?;
        Ok(Self { fd })
    }

    /// One datagram into `buf`: its length (cut to `buf`), or
    /// `WouldBlock`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        sys::recv(self.fd.as_fd(), buf)
    }

    /// Sends one datagram (to the kernel, for a netlink socket).
    pub fn send(&self, datagram: &[u8]) -> io::Result<usize> {
        sys::send(self.fd.as_fd(), datagram)
    }
}

impl AsFd for NetlinkSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixDatagram;

    use super::*;

    #[test]
    fn a_datagram_socket_stands_in_for_the_kernels() {
        let (ours, kernel) = UnixDatagram::pair().unwrap();
        let s = NetlinkSocket::inherited(OwnedFd::from(ours)).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(
            s.recv(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock,
            "non-blocking"
        );
        kernel.send(b"query").unwrap();
        assert_eq!(s.recv(&mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"query");
        s.send(b"reply").unwrap();
        assert_eq!(kernel.recv(&mut buf).unwrap(), 5);
    }

    #[test]
    fn opening_the_kernels_socket_works_or_says_why() {
        match NetlinkSocket::open() {
            Ok(_) => {}
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }
}
