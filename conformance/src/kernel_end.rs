//! The kernel's end of local-sa's RDMA_NL_LS door on machines whose kernel
//! has no NETLINK_RDMA: local-sa inherits one end of a datagram
//! socketpair as its `netlink` socket, and a test speaks the kernel's
//! bytes on the other, as `sa_query.c` and `addr.c` would.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// The kernel's end: sends a message and reads the reply.
pub struct Kernel(pub UnixDatagram);

impl Kernel {
    /// A socketpair: local-sa's end (to pass as its `netlink` socket),
    /// and the kernel's, whose reads give up after `patience`.
    pub fn pair(patience: Duration) -> (OwnedFd, Self) {
        let (ours, kernel) = UnixDatagram::pair().expect("a socketpair");
        kernel
            .set_read_timeout(Some(patience))
            .expect("a read time-out");
        (OwnedFd::from(ours), Self(kernel))
    }

    /// Sends `message` and returns the next datagram local-sa sends.
    pub fn ask(&self, message: &[u8]) -> Vec<u8> {
        self.0.send(message).expect("local-sa's end is open");
        self.reply()
    }

    /// The next datagram local-sa sends.
    pub fn reply(&self) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let n = self.0.recv(&mut buf).expect("a reply within the time-out");
        buf.truncate(n);
        buf
    }
}
