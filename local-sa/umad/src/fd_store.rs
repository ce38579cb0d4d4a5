//! Open descriptors handed to the service manager to keep across a
//! restart: sd_notify(3)'s `FDSTORE=1` with `FDNAME=`, the descriptors
//! attached to the datagram (SCM_RIGHTS); systemd passes them back at the
//! next start like sockets it activates (`LISTEN_FDS`, `LISTEN_FDNAMES`).
//! Receiving such datagrams is here too, for a stand-in service manager.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::{SocketAddr, UnixDatagram};

use crate::sys::fd_passing as sys;

/// The most descriptors one datagram carries.
pub const MAX_PER_MESSAGE: usize = sys::MAX_FDS;

/// Sends `state` (sd_notify lines) with `fds` (at most
/// [`MAX_PER_MESSAGE`]) from `socket` to the manager at `to`.
pub fn send_with_fds(
    socket: &UnixDatagram,
    to: &SocketAddr,
    state: &str,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    sys::send(socket, to, state.as_bytes(), fds)
}

/// Receives one datagram into `buf`: its length and the descriptors it
/// carried, now this process's.
pub fn recv_with_fds(socket: &UnixDatagram, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    sys::recv(socket, buf)
}

/// Whether a stored descriptor's socket has hung up (its connection
/// ended): systemd lets such descriptors go from its store.
pub fn hung_up(fd: BorrowedFd<'_>) -> io::Result<bool> {
    sys::hung_up(fd)
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsFd as _;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn a_descriptor_sent_is_the_same_socket_received() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manager");
        let manager = UnixDatagram::bind(&path).unwrap();
        let (mut kept, mut peer) = UnixStream::pair().unwrap();
        let from = UnixDatagram::unbound().unwrap();
        let to = SocketAddr::from_pathname(&path).unwrap();
        send_with_fds(&from, &to, "FDSTORE=1\nFDNAME=x", &[kept.as_fd()]).unwrap();
        let mut buf = [0u8; 64];
        let (n, fds) = recv_with_fds(&manager, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"FDSTORE=1\nFDNAME=x");
        assert_eq!(fds.len(), 1);
        let mut received = UnixStream::from(fds.into_iter().next().unwrap());
        received.write_all(b"hello").unwrap();
        let mut got = [0u8; 5];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
        kept.write_all(b"!").unwrap();
        assert!(!hung_up(kept.as_fd()).unwrap());
        kept.shutdown(std::net::Shutdown::Both).unwrap();
        assert!(hung_up(kept.as_fd()).unwrap(), "shut down");
        // A datagram without descriptors carries none.
        send_with_fds(&from, &to, "FDSTOREREMOVE=1", &[]).unwrap();
        let (_, none) = recv_with_fds(&manager, &mut buf).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn an_abstract_address_is_reached_too() {
        use std::os::linux::net::SocketAddrExt as _;
        let name = format!("local-sa-fd-test-{}", std::process::id());
        let to = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let manager = UnixDatagram::bind_addr(&to).unwrap();
        let from = UnixDatagram::unbound().unwrap();
        let (a, _b) = UnixStream::pair().unwrap();
        send_with_fds(&from, &to, "FDSTORE=1", &[a.as_fd()]).unwrap();
        let mut buf = [0u8; 16];
        let (_, fds) = recv_with_fds(&manager, &mut buf).unwrap();
        assert_eq!(fds.len(), 1);
    }
}
