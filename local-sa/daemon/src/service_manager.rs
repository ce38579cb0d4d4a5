//! Telling systemd how the service is doing (`Type=notify`): READY=1 once
//! every socket is bound and each port has its first table, STATUS= lines
//! a `systemctl status` shows, WATCHDOG=1 pings while the driver's loop
//! runs, STOPPING=1 at shutdown. The protocol is sd_notify(3)'s: datagrams
//! of `NAME=value` lines to the Unix socket `$NOTIFY_SOCKET` names (a
//! path, or `@name` for an abstract one). Without `$NOTIFY_SOCKET` (not
//! under systemd) every call does nothing.

use std::os::fd::BorrowedFd;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

use tracing::{debug, warn};

/// Where the service manager listens, and how often it wants pings.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    /// The socket to send from, and the manager's address.
    target: Option<(UnixDatagram, SocketAddr)>,
    /// Half the manager's watchdog time-out: how often to ping.
    watchdog: Option<Duration>,
    /// How many descriptors its store keeps for this service (`FDSTORE`,
    /// set by systemd 254 and later from `FileDescriptorStoreMax=`;
    /// unknown before, when the unit's setting decides).
    store_max: Option<usize>,
}

impl Notifier {
    /// The notifier the environment asks for (`NOTIFY_SOCKET`,
    /// `WATCHDOG_USEC`, `WATCHDOG_PID`).
    pub(crate) fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok(), std::process::id())
    }

    /// The notifier `var` describes, for process `pid`.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>, pid: u32) -> Self {
        let Some(socket) = var("NOTIFY_SOCKET") else {
            return Self::default();
        };
        let target = match address(&socket).and_then(|addr| {
            UnixDatagram::unbound()
                .map(|s| (s, addr))
                .map_err(|e| e.to_string())
        }) {
            Ok(target) => Some(target),
            Err(why) => {
                warn!(socket, %why, "cannot notify the service manager");
                None
            }
        };
        // A watchdog meant for another process (a wrapper's) is not ours.
        let for_us = var("WATCHDOG_PID").is_none_or(|p| p.trim() == pid.to_string());
        let watchdog = var("WATCHDOG_USEC")
            .and_then(|u| u.trim().parse::<u64>().ok())
            .filter(|u| *u > 0 && for_us)
            .map(|u| Duration::from_micros(u) / 2);
        let store_max = var("FDSTORE").map(|n| n.trim().parse().unwrap_or(0));
        Self {
            target,
            watchdog,
            store_max,
        }
    }

    /// Another notifier to the same manager, on a socket of its own whose
    /// sends never block: a manager slow to read fails them instead of
    /// stalling the daemon (what is sent per connection must not wait).
    pub(crate) fn nonblocking_clone(&self) -> std::io::Result<Self> {
        let target = match &self.target {
            Some((_, addr)) => {
                let socket = UnixDatagram::unbound()?;
                socket.set_nonblocking(true)?;
                Some((socket, addr.clone()))
            }
            None => None,
        };
        Ok(Self {
            target,
            watchdog: self.watchdog,
            store_max: self.store_max,
        })
    }

    /// How many descriptors the manager's store may keep: none without a
    /// manager or with `FDSTORE=0`.
    pub(crate) fn store_room(&self) -> usize {
        match (&self.target, self.store_max) {
            (None, _) => 0,
            (Some(_), Some(n)) => n,
            (Some(_), None) => usize::MAX,
        }
    }

    /// Hands `fds` to the manager's store under `name` (FDSTORE=1), in as
    /// many messages as they need.
    pub(crate) fn store(&self, name: &str, fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
        let Some((socket, addr)) = &self.target else {
            return Ok(());
        };
        for chunk in fds.chunks(umad::fd_store::MAX_PER_MESSAGE) {
            let state = format!("FDSTORE=1\nFDNAME={name}");
            umad::fd_store::send_with_fds(socket, addr, &state, chunk)?;
        }
        Ok(())
    }

    /// Empties the manager's store of what is kept under `name`. A
    /// failure is only logged at debug level: a socket's own hang-up makes
    /// systemd let it go too.
    pub(crate) fn forget_stored(&self, name: &str) {
        let Some((socket, addr)) = &self.target else {
            return;
        };
        let state = format!("FDSTOREREMOVE=1\nFDNAME={name}");
        if let Err(e) = socket.send_to_addr(state.as_bytes(), addr) {
            debug!(state, error = %e, "cannot tell the service manager");
        }
    }

    /// How often the manager wants WATCHDOG=1, if it does.
    pub(crate) fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog
    }

    /// Sends `state` (`NAME=value` lines) to the manager, if there is one.
    pub(crate) fn notify(&self, state: &str) {
        let Some((socket, addr)) = &self.target else {
            return;
        };
        match socket.send_to_addr(state.as_bytes(), addr) {
            Ok(_) => debug!(state, "told the service manager"),
            Err(e) => warn!(state, error = %e, "cannot notify the service manager"),
        }
    }

    /// READY=1, with a status line.
    pub(crate) fn ready(&self, status: &str) {
        self.notify(&format!("READY=1\nSTATUS={}", one_line(status)));
    }

    /// A status line for `systemctl status`.
    pub(crate) fn status(&self, status: &str) {
        self.notify(&format!("STATUS={}", one_line(status)));
    }
}

/// The address `NOTIFY_SOCKET` names.
fn address(socket: &str) -> Result<SocketAddr, String> {
    if let Some(name) = socket.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt as _;
        return SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string());
    }
    if !socket.starts_with('/') {
        return Err("not a Unix socket path or @abstract name (vsock is not supported)".into());
    }
    SocketAddr::from_pathname(socket).map_err(|e| e.to_string())
}

/// `text` without line breaks, which would end the STATUS= line.
fn one_line(text: &str) -> String {
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn datagrams_reach_the_socket_the_environment_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let manager = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::from_vars(vars(&[("NOTIFY_SOCKET", path.to_str().unwrap())]), 1);
        n.ready("serving\n2 ports");
        let mut buf = [0; 256];
        let len = manager.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=serving 2 ports");
        assert_eq!(n.watchdog_interval(), None);
    }

    #[test]
    fn an_abstract_socket_is_reached_too() {
        use std::os::linux::net::SocketAddrExt as _;
        let name = format!("local-sa-test-{}", std::process::id());
        let manager =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let at = format!("@{name}");
        Notifier::from_vars(vars(&[("NOTIFY_SOCKET", &at)]), 1).status("up");
        let mut buf = [0; 64];
        let len = manager.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"STATUS=up");
    }

    #[test]
    fn the_watchdog_is_pinged_twice_per_time_out_and_only_for_this_process() {
        let n = Notifier::from_vars(
            vars(&[
                ("NOTIFY_SOCKET", "/nonexistent"),
                ("WATCHDOG_USEC", "3000000"),
            ]),
            7,
        );
        assert_eq!(n.watchdog_interval(), Some(Duration::from_millis(1500)));
        n.notify("WATCHDOG=1"); // to nobody: a warning, not a failure
        let other = Notifier::from_vars(
            vars(&[
                ("NOTIFY_SOCKET", "/nonexistent"),
                ("WATCHDOG_USEC", "3000000"),
                ("WATCHDOG_PID", "8"),
            ]),
            7,
        );
        assert_eq!(other.watchdog_interval(), None);
        assert_eq!(Notifier::from_vars(vars(&[]), 7).watchdog_interval(), None);
        assert!(address("vsock:2:1").is_err());
    }
}
