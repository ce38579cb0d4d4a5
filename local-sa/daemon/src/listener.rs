//! A listening Unix stream socket of one of the doors (the local API, the
//! ibacm protocol): bound by the daemon, or inherited through systemd
//! socket activation. A socket the daemon bound is removed when it stops;
//! an inherited one belongs to systemd and is left in place.

use std::cell::Cell;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use smol::Async;
use tracing::warn;

use local_sa_core::request::ConnId;

/// A listening socket.
#[derive(Debug)]
pub(crate) struct Listener {
    socket: Async<UnixListener>,
    /// Where it listens, for logs.
    label: String,
    /// The socket file to remove on drop (bound here, not inherited).
    file: Option<PathBuf>,
}

impl Listener {
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
            socket: Async::new(listener)?,
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
            socket: Async::new(listener)?,
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
    pub(crate) async fn accept(&self, ids: &Cell<ConnId>) -> (ConnId, Async<UnixStream>) {
        loop {
            match self.socket.accept().await {
                Ok((stream, _)) => {
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
