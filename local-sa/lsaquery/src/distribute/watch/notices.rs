//! The notices that tell the watch the fabric changed — a switch port's
//! link up or down (trap 128), a port in or out of service (64, 65).
//!
//! Heard through this node's local-sa where one runs: its local API
//! subscribes for the watch, and since local-sa holds those subscriptions
//! for itself, the master keeps none more for it. A task reads them and
//! hands them over a channel, so that the watch can wait on them beside
//! its timers.
//!
//! On a node without local-sa the watch subscribes at the master SA
//! itself, its session's agent receiving the Reports (answered as they
//! come, [`crate::client`]), and ends its subscriptions when it ends. The
//! master's own node is such a node: OpenSM's SA agent takes Get, Set,
//! GetTable and Delete, not Reports. Where another agent holds the port's
//! Reports the watch says so and follows the master's activity alone.

use std::path::{Path, PathBuf};

use mad_codec::{TrapDetails, TrapNumber};
use smol::channel::{Receiver, Sender};
use tracing::warn;
use umad::port::PortFacts;

use crate::local_api::Connection;
use crate::registration::{inform_info, set_subscription};
use crate::session::Session;
use crate::stop::Stop;
use local_sa_core::request::Request;

/// The traps the watch follows.
const TRAPS: [TrapNumber; 3] = [
    TrapNumber::GID_IN_SERVICE,
    TrapNumber::GID_OUT_OF_SERVICE,
    TrapNumber::LINK_STATE_CHANGE,
];

/// What the notice task hands over.
#[derive(Debug)]
pub(super) enum Heard {
    /// A notice: what it says.
    Notice(TrapDetails),
    /// The connection to local-sa ended; the watch goes on with its
    /// interval alone.
    Lost(String),
}

/// The local API socket of this node's local-sa the watch listens at:
/// `api_socket` (`--api-socket`), else the port's.
pub(super) fn socket(api_socket: Option<&Path>, port: &PortFacts) -> PathBuf {
    api_socket.map_or_else(
        || crate::local_api::default_socket(&port.ca, port.port),
        Path::to_path_buf,
    )
}

/// Whether a local-sa answers at the watch's local API socket (else the
/// watch subscribes at the master itself, and its agent must take the
/// Reports).
pub(crate) fn local_sa_reachable(api_socket: Option<&Path>, port: &PortFacts) -> bool {
    std::os::unix::net::UnixStream::connect(socket(api_socket, port)).is_ok()
}

/// Subscribes at the master SA the session asks, as this port, to every
/// trap the watch follows; an error if the SA refuses or does not answer.
pub(super) async fn subscribe_at_master(session: &mut Session) -> Result<(), Stop> {
    for trap in TRAPS {
        set_subscription(session, trap, true).await?;
    }
    Ok(())
}

/// Ends the subscriptions [`subscribe_at_master`] made (the master would
/// otherwise keep sending this port Reports nobody answers).
pub(super) async fn unsubscribe_at_master(session: &mut Session) {
    for trap in TRAPS {
        if let Err(e) = set_subscription(session, trap, false).await {
            warn!(
                trap = trap.0,
                "could not end the subscription at the master: {}", e.message
            );
        }
    }
}

/// Subscribes through the local API at `socket` and starts the task that
/// forwards every notice; an error if local-sa cannot be reached or
/// refuses.
pub(super) async fn listen(socket: &Path) -> Result<Receiver<Heard>, Stop> {
    let mut conn = Connection::open(socket, false)?;
    for trap in TRAPS {
        conn.call(&Request::Inform(inform_info(trap, true))).await?;
    }
    let (tx, rx) = smol::channel::bounded(1024);
    smol::spawn(forward(conn, tx)).detach();
    Ok(rx)
}

async fn forward(mut conn: Connection, tx: Sender<Heard>) {
    loop {
        let heard = match conn.next_notice().await {
            Ok(n) => Heard::Notice(n.details()),
            Err(e) => Heard::Lost(e.message),
        };
        let lost = matches!(heard, Heard::Lost(_));
        // A full channel drops the notice: one is as good as many, the
        // watch re-reads everything.
        if tx.try_send(heard).is_err() && tx.is_closed() || lost {
            return;
        }
    }
}
