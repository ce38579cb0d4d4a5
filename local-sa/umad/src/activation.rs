//! Sockets inherited through systemd socket activation: `LISTEN_PID`,
//! `LISTEN_FDS` and `LISTEN_FDNAMES` as `sd_listen_fds_with_names(3)`
//! reads them, each descriptor classified the way ibacm classifies its
//! own (`sd_is_socket`): a listening Unix stream socket, a netlink
//! socket, or something else.

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys::activation as sys;

/// What kind of socket an inherited descriptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    /// A Unix stream socket that listens (`ListenStream=/path`).
    UnixListener,
    /// A connected Unix stream socket (a client connection the service
    /// manager kept across a restart).
    UnixStream,
    /// A connected TCP socket (the same, from a TCP door).
    TcpStream,
    /// A netlink socket (`ListenNetlink=`), of this protocol.
    Netlink {
        /// Its protocol (`NETLINK_RDMA` is 20), when the kernel tells.
        protocol: Option<i32>,
    },
    /// A datagram socket of any family (a socketpair end in tests).
    Datagram,
    /// Anything else.
    Other,
}

/// One inherited descriptor.
#[derive(Debug)]
pub struct Inherited {
    /// The descriptor, now owned.
    pub fd: OwnedFd,
    /// Its name from `LISTEN_FDNAMES` (systemd's `FileDescriptorName=`,
    /// by default the socket unit's name), or `unknown`.
    pub name: String,
    /// What it is.
    pub kind: SocketKind,
}

/// Why the inherited descriptors could not be taken.
#[derive(Debug)]
pub struct ActivationError(String);

impl fmt::Display for ActivationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "socket activation: {}", self.0)
    }
}

impl std::error::Error for ActivationError {}

/// The most descriptors taken: above what local-sa's unit lets the
/// descriptor store keep (`FileDescriptorStoreMax=`, kept ibacm clients
/// included), and a bound on a hostile environment.
const MAX_FDS: usize = 8192;

/// Takes the descriptors systemd passed, if `LISTEN_PID` names this
/// process; none otherwise. `vars` reads an environment variable (the
/// process environment in the daemon).
pub fn take_inherited(
    vars: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Inherited>, ActivationError> {
    let Some(pid) = vars("LISTEN_PID") else {
        return Ok(Vec::new());
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        // Meant for another process (a parent that did not unset it).
        return Ok(Vec::new());
    }
    let count = vars("LISTEN_FDS")
        .ok_or_else(|| ActivationError("LISTEN_PID is set but LISTEN_FDS is not".into()))?;
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| ActivationError(format!("LISTEN_FDS={count:?} is not a count")))?;
    if count > MAX_FDS {
        return Err(ActivationError(format!(
            "LISTEN_FDS={count}: more than {MAX_FDS} descriptors"
        )));
    }
    let names: Vec<String> = vars("LISTEN_FDNAMES")
        .map(|n| n.split(':').map(str::to_owned).collect())
        .unwrap_or_default();
    (0..count)
        .map(|i| {
            let raw = sys::FIRST_FD + i as i32;
            let fd = sys::take(raw).map_err(|e| {
                ActivationError(format!("inherited descriptor {raw} is not usable: {e}"))
            })?;
            let kind = match sys::socket_kind(fd.as_raw_fd()) {
                Ok((libc::AF_UNIX, libc::SOCK_STREAM, true)) => SocketKind::UnixListener,
                Ok((libc::AF_UNIX, libc::SOCK_STREAM, false)) => SocketKind::UnixStream,
                Ok((libc::AF_INET | libc::AF_INET6, libc::SOCK_STREAM, false)) => {
                    SocketKind::TcpStream
                }
                Ok((libc::AF_NETLINK, _, _)) => SocketKind::Netlink {
                    protocol: protocol(&fd),
                },
                Ok((_, libc::SOCK_DGRAM, _)) => SocketKind::Datagram,
                _ => SocketKind::Other,
            };
            Ok(Inherited {
                fd,
                name: names
                    .get(i)
                    .filter(|n| !n.is_empty())
                    .cloned()
                    .unwrap_or_else(|| "unknown".into()),
                kind,
            })
        })
        .collect()
}

/// A netlink socket's protocol (`SO_PROTOCOL`).
fn protocol(fd: &OwnedFd) -> Option<i32> {
    sys::protocol(fd.as_raw_fd()).ok()
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn nothing_is_taken_without_our_pid() {
        let none = take_inherited(|_| None).unwrap();
        assert!(none.is_empty());
        let other = take_inherited(|k| match k {
            "LISTEN_PID" => Some("1".into()),
            "LISTEN_FDS" => Some("2".into()),
            _ => None,
        })
        .unwrap();
        assert!(other.is_empty(), "LISTEN_PID names another process");
    }

    #[test]
    fn bad_counts_are_refused_with_the_reason() {
        let me = std::process::id().to_string();
        let e = take_inherited(|k| match k {
            "LISTEN_PID" => Some(me.clone()),
            "LISTEN_FDS" => Some("many".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(e.to_string().contains("not a count"), "{e}");
        let e = take_inherited(|k| match k {
            "LISTEN_PID" => Some(me.clone()),
            "LISTEN_FDS" => Some("100000".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
    }

    #[test]
    fn a_listening_unix_socket_is_classified() {
        let dir = std::env::temp_dir().join(format!("umad-activation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).unwrap();
        let kind = sys::socket_kind(l.as_raw_fd()).unwrap();
        assert_eq!(kind, (libc::AF_UNIX, libc::SOCK_STREAM, true));
        let (a, _b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        assert_eq!(sys::socket_kind(a.as_raw_fd()).unwrap().1, libc::SOCK_DGRAM);
        // A kept TCP client: connected, not listening.
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(tcp.local_addr().unwrap()).unwrap();
        assert_eq!(
            sys::socket_kind(client.as_raw_fd()).unwrap(),
            (libc::AF_INET, libc::SOCK_STREAM, false)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
