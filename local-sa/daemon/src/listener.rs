//! A listening stream socket of one of the doors (the local API, the
//! ibacm protocol): a Unix socket bound by the daemon or inherited through
//! systemd socket activation, or a TCP socket (the ibacm door in ibacm's
//! `loop` and `open` server modes). A Unix socket the daemon bound is
//! removed when it stops; an inherited one belongs to systemd and is left
//! in place.

use std::cell::Cell;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use smol::Async;
use tracing::warn;

use local_sa_core::request::ConnId;

use crate::stream::Stream;

/// A listening socket.
#[derive(Debug)]
pub(crate) struct Listener {
    socket: Socket,
    /// Where it listens, for logs.
    label: String,
    /// The socket file to remove on drop (bound here, not inherited).
    file: Option<PathBuf>,
}

/// What listens.
#[derive(Debug)]
enum Socket {
    Unix(Async<UnixListener>),
    Tcp(Async<TcpListener>),
}

impl Listener {
    /// Listens for TCP connections on `addr`.
    pub(crate) fn bind_tcp(addr: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let label = format!("TCP {}", listener.local_addr()?);
        Ok(Self {
            socket: Socket::Tcp(Async::new(listener)?),
            label,
            file: None,
        })
    }

    /// The address it listens on, if it is a TCP socket.
    pub(crate) fn tcp_addr(&self) -> Option<SocketAddr> {
        match &self.socket {
            Socket::Tcp(l) => l.get_ref().local_addr().ok(),
            Socket::Unix(_) => None,
        }
    }

    /// Binds `path` with file mode `mode` and, if given, group `gid`. A
    /// stale socket file there is replaced; one that a live server answers
    /// on is left alone and refused with `AddrInUse`.
    pub(crate) fn bind(path: &Path, mode: u32, gid: Option<u32>) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another server (ibacm, or another local-sa) answers on it",
            ));
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(path)?;
        let this = Self {
            socket: Socket::Unix(Async::new(listener)?),
            label: path.display().to_string(),
            file: Some(path.to_owned()),
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        if gid.is_some() {
            std::os::unix::fs::chown(path, None, gid)?;
        }
        Ok(this)
    }

    /// A listening socket systemd passed (already bound, with the mode
    /// and owner its unit gave it).
    pub(crate) fn inherited(fd: OwnedFd) -> io::Result<Self> {
        let listener = UnixListener::from(fd);
        let label = match listener.local_addr() {
            Ok(a) => a
                .as_pathname()
                .map_or_else(|| "an unnamed socket".into(), |p| p.display().to_string()),
            Err(_) => "an unnamed socket".into(),
        };
        Ok(Self {
            socket: Socket::Unix(Async::new(listener)?),
            label: format!("{label} (from systemd)"),
            file: None,
        })
    }

    /// Where it listens.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The next connection, numbered from `ids` (shared by every door, so
    /// that a number names one connection daemon-wide). Accept errors
    /// (out of descriptors, say) are logged and retried after a pause.
    pub(crate) async fn accept(&self, ids: &Cell<ConnId>) -> (ConnId, Stream) {
        loop {
            let accepted = match &self.socket {
                Socket::Unix(l) => l.accept().await.map(|(s, _)| Stream::Unix(s)),
                Socket::Tcp(l) => l.accept().await.map(|(s, _)| Stream::Tcp(s)),
            };
            match accepted {
                Ok(stream) => {
                    let conn = ids.get();
                    ids.set(conn + 1);
                    return (conn, stream);
                }
                Err(e) => {
                    warn!(socket = %self.label, error = %e, "accepting a connection failed");
                    smol::Timer::after(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(path) = &self.file {
            let _ = std::fs::remove_file(path);
        }
    }
}
