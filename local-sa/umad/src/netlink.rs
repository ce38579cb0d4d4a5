//! The socket the kernel's RDMA_NL_LS queries arrive on: a NETLINK_RDMA
//! socket joined to the local service group, or one inherited (systemd's
//! `ListenNetlink=rdma 4`, or any datagram socket standing in for it in
//! tests). Replies go back without an address (to the socket's default
//! destination: the kernel), so both work the same; datagrams move in
//! batches, several per system call.
//!
//! Each datagram comes with who sent it, from the address the kernel
//! gives (not the header the sender writes): the kernel itself is port 0
//! of a netlink socket; a stand-in socket is trusted only when it is
//! connected, since a connected datagram socket receives from its peer
//! alone.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::sys::netlink as sys;

/// The kernel door's socket, non-blocking.
#[derive(Debug)]
pub struct NetlinkSocket {
    fd: OwnedFd,
    /// What the socket is, which decides who can write to it.
    kind: SocketKind,
}

/// What kind of socket the door reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SocketKind {
    /// A netlink socket: every datagram names its sender's port.
    Netlink,
    /// A connected datagram socket (a socketpair in tests): only its peer
    /// can write to it.
    ConnectedStandIn,
    /// Any other socket: anyone who can reach it can write to it.
    Unverified,
}

/// Who sent a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramSender {
    /// The kernel (netlink port 0), or the peer of a connected stand-in.
    Kernel,
    /// A process: a netlink sender with this port ID (usually its PID).
    Process(u32),
    /// A sender whose address proves nothing (an unconnected stand-in
    /// socket, a family other than netlink).
    Unknown,
}

impl DatagramSender {
    /// The sender of a datagram with source address `source` on a socket
    /// of `kind`.
    fn of(kind: SocketKind, source: sys::SourceAddress) -> Self {
        match (kind, source.netlink_port) {
            (SocketKind::Netlink, Some(0)) => Self::Kernel,
            (SocketKind::Netlink, Some(port)) => Self::Process(port),
            (SocketKind::ConnectedStandIn, _) => Self::Kernel,
            _ => Self::Unknown,
        }
    }

    /// Whether the kernel sent it.
    pub fn is_kernel(self) -> bool {
        self == Self::Kernel
    }
}

/// One datagram read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Its length, cut to the buffer (0 for an empty datagram, which is
    /// not end-of-file: a datagram socket has none).
    pub len: usize,
    /// Who sent it.
    pub from: DatagramSender,
}

impl NetlinkSocket {
    /// Opens a NETLINK_RDMA socket and joins RDMA_NL_GROUP_LS. On a kernel
    /// without NETLINK_RDMA this fails with "protocol not supported".
    pub fn open() -> io::Result<Self> {
        Ok(Self {
            fd: sys::open_rdma_ls()?,
            kind: SocketKind::Netlink,
        })
    }

    /// Uses an inherited datagram socket.
    pub fn inherited(fd: OwnedFd) -> io::Result<Self> {
        sys::set_nonblocking(fd.as_fd())?;
        let kind = if sys::socket_family(fd.as_fd())? == libc::AF_NETLINK as libc::sa_family_t {
            SocketKind::Netlink
        } else if sys::is_connected(fd.as_fd()) {
            SocketKind::ConnectedStandIn
        } else {
            SocketKind::Unverified
        };
        Ok(Self { fd, kind })
    }

    /// Whether what arrives on the socket can come from the kernel at
    /// all: false for a stand-in socket anyone can write to, whose every
    /// datagram is then [`DatagramSender::Unknown`].
    pub fn can_verify_senders(&self) -> bool {
        self.kind != SocketKind::Unverified
    }

    /// One datagram into `buf` and who sent it, or `WouldBlock`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Datagram> {
        let slot = buf.len();
        self.recv_many(buf, slot)?
            .pop()
            .ok_or_else(|| io::ErrorKind::WouldBlock.into())
    }

    /// Every datagram waiting, up to [`NetlinkSocket::BATCH`], in one
    /// system call: datagram `i` is in the `i`th `slot`-byte piece of
    /// `buf` (cut to it). `WouldBlock` when none is waiting.
    pub fn recv_many(&self, buf: &mut [u8], slot: usize) -> io::Result<Vec<Datagram>> {
        let got = sys::recv_many(self.fd.as_fd(), buf, slot)?;
        Ok(got
            .into_iter()
            .map(|(len, source)| Datagram {
                len,
                from: DatagramSender::of(self.kind, source),
            })
            .collect())
    }

    /// Datagrams [`NetlinkSocket::recv_many`] and
    /// [`NetlinkSocket::send_many`] move per call at most.
    pub const BATCH: usize = sys::BATCH;

    /// Sends up to [`NetlinkSocket::BATCH`] datagrams in one system call:
    /// how many went (the first ones), or `WouldBlock` when none could.
    pub fn send_many(&self, datagrams: &[&[u8]]) -> io::Result<usize> {
        sys::send_many(self.fd.as_fd(), datagrams)
    }

    /// Sends one datagram (to the kernel, for a netlink socket).
    pub fn send(&self, datagram: &[u8]) -> io::Result<usize> {
        self.send_many(&[datagram]).map(|_| datagram.len())
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
        let got = s.recv(&mut buf).unwrap();
        assert_eq!(
            got,
            Datagram {
                len: 5,
                from: DatagramSender::Kernel
            },
            "a connected stand-in's peer is the only one who can write"
        );
        assert_eq!(&buf[..5], b"query");
        kernel.send(b"").unwrap();
        assert_eq!(s.recv(&mut buf).unwrap().len, 0, "an empty datagram");
        // Several at once, each in its slot, cut to it; and back.
        for d in [&b"one"[..], b"", b"a datagram longer than its slot"] {
            kernel.send(d).unwrap();
        }
        let mut slots = [0u8; 3 * 8];
        let got = s.recv_many(&mut slots, 8).unwrap();
        let lens: Vec<usize> = got.iter().map(|r| r.len).collect();
        assert_eq!(lens, [3, 0, 8]);
        assert!(got.iter().all(|r| r.from == DatagramSender::Kernel));
        assert_eq!(&slots[..3], b"one");
        assert_eq!(&slots[16..24], b"a datagr");
        assert_eq!(
            s.recv_many(&mut slots, 8).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        assert_eq!(s.send_many(&[b"r1", b"r2"]).unwrap(), 2);
        assert_eq!(kernel.recv(&mut buf).unwrap(), 2);
        assert_eq!(kernel.recv(&mut buf).unwrap(), 2);
        s.send(b"reply").unwrap();
        assert_eq!(kernel.recv(&mut buf).unwrap(), 5);
    }

    #[test]
    fn only_port_zero_of_a_netlink_socket_is_the_kernel() {
        let netlink = |port| sys::SourceAddress {
            family: libc::AF_NETLINK as libc::sa_family_t,
            netlink_port: Some(port),
        };
        let unnamed = sys::SourceAddress {
            family: libc::AF_UNSPEC as libc::sa_family_t,
            netlink_port: None,
        };
        assert_eq!(
            DatagramSender::of(SocketKind::Netlink, netlink(0)),
            DatagramSender::Kernel
        );
        assert_eq!(
            DatagramSender::of(SocketKind::Netlink, netlink(4242)),
            DatagramSender::Process(4242)
        );
        assert_eq!(
            DatagramSender::of(SocketKind::Netlink, unnamed),
            DatagramSender::Unknown
        );
        assert_eq!(
            DatagramSender::of(SocketKind::ConnectedStandIn, unnamed),
            DatagramSender::Kernel
        );
        assert_eq!(
            DatagramSender::of(SocketKind::Unverified, unnamed),
            DatagramSender::Unknown
        );
        assert_eq!(
            DatagramSender::of(SocketKind::Unverified, netlink(0)),
            DatagramSender::Unknown,
            "only a netlink socket's addresses are the kernel's word"
        );
    }

    #[test]
    fn an_unconnected_stand_in_cannot_tell_who_writes() {
        let dir = std::env::temp_dir().join(format!("nl-stand-in-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let ours = UnixDatagram::bind(&dir).unwrap();
        let s = NetlinkSocket::inherited(OwnedFd::from(ours)).unwrap();
        assert!(!s.can_verify_senders());
        let anyone = UnixDatagram::unbound().unwrap();
        anyone.send_to(b"query", &dir).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(s.recv(&mut buf).unwrap().from, DatagramSender::Unknown);
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn opening_the_kernels_socket_works_or_says_why() {
        match NetlinkSocket::open() {
            Ok(_) => {}
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }
}
