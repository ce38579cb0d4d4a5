//! The notices that tell the watch the fabric changed — a switch port's
//! link up or down (trap 128), a port in or out of service (64, 65) —
//! heard through this node's local-sa: its local API subscribes for the
//! watch, and since local-sa holds those subscriptions for itself, the
//! master keeps none more for it. A task reads them and hands them over a
//! channel, so that the watch can wait on them beside its timers.

use std::path::Path;

use mad_codec::{TrapDetails, TrapNumber};
use smol::channel::{Receiver, Sender};

use crate::local_api::Connection;
use crate::registration::inform_info;
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

/// What a notice says, for the event's cause.
pub(super) fn describe(details: &TrapDetails) -> String {
    match details {
        TrapDetails::LinkStateChange { lid } => format!("trap 128 from LID {lid}"),
        TrapDetails::GidInService { gid } => format!("trap 64 for {gid}"),
        TrapDetails::GidOutOfService { gid } => format!("trap 65 for {gid}"),
        other => other
            .trap_number()
            .map_or_else(|| "a notice".to_owned(), |t| format!("trap {}", t.0)),
    }
}
