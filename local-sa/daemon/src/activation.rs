//! Sockets systemd passed (socket activation, or its descriptor store),
//! sorted by door: a listening Unix socket named `api`
//! (`FileDescriptorName=api`) serves the local API; every other listening
//! Unix socket serves the ibacm protocol (as ibacm's own `ibacm.socket`
//! passes them, unnamed); connected Unix or TCP sockets named
//! `acm-client-N` (or `acm-client`) are ibacm clients a previous local-sa
//! left with the
//! store, and the memory file `acm-ledger` says which of them were
//! between messages ([`crate::kept_clients`]); a netlink socket (or, for
//! tests, a datagram socket) is the kernel door's.

use std::os::fd::OwnedFd;

use tracing::warn;

use crate::client_store::{KEPT_LEDGER, KEPT_NETLINK, Passed, slot_of};
use crate::listener::Listener;
use umad::activation::{Inherited, SocketKind, take_inherited};

/// The inherited sockets, by door.
#[derive(Debug, Default)]
pub(crate) struct Activated {
    /// The local API's socket.
    pub(crate) api: Option<Listener>,
    /// The ibacm protocol's sockets.
    pub(crate) acm: Vec<Listener>,
    /// The kernel door's socket, and whether it came from the descriptor
    /// store (not from a socket unit, which passes it again anyway).
    pub(crate) netlink: Option<OwnedFd>,
    /// Whether that socket came from the descriptor store.
    pub(crate) netlink_kept: bool,
    /// ibacm clients kept across a restart.
    pub(crate) acm_clients: Passed,
    /// The kept clients' ledger.
    pub(crate) acm_ledger: Option<OwnedFd>,
}

/// Takes the sockets systemd passed to this process, if any.
pub(crate) fn activated() -> Result<Activated, String> {
    let inherited = take_inherited(|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    let mut out = Activated::default();
    for Inherited { fd, name, kind } in inherited {
        match kind {
            SocketKind::UnixListener => {
                let listener = Listener::inherited(fd)
                    .map_err(|e| format!("cannot use the inherited socket {name:?}: {e}"))?;
                if name == "api" && out.api.is_none() {
                    out.api = Some(listener);
                } else {
                    out.acm.push(listener);
                }
            }
            SocketKind::UnixStream | SocketKind::TcpStream => match slot_of(&name) {
                Ok(Some(slot)) => out.acm_clients.numbered.push((slot, fd)),
                Ok(None) => out.acm_clients.unnumbered.push(fd),
                Err(()) => warn!(
                    name,
                    "an inherited connected socket is not a kept ibacm client; closing it"
                ),
            },
            SocketKind::Other if name == KEPT_LEDGER && out.acm_ledger.is_none() => {
                out.acm_ledger = Some(fd);
            }
            SocketKind::Netlink { .. } | SocketKind::Datagram if out.netlink.is_none() => {
                out.netlink_kept = name == KEPT_NETLINK;
                out.netlink = Some(fd);
            }
            SocketKind::Netlink { .. } | SocketKind::Datagram => {
                warn!(name, "a second inherited netlink socket; closing it");
            }
            SocketKind::Other => warn!(
                name,
                "an inherited descriptor is neither a listening socket nor a kept client; closing it"
            ),
        }
    }
    Ok(out)
}
