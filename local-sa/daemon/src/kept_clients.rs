//! ibacm clients kept across a restart, a crash included. librdmacm opens
//! its ibacm socket once per process and never reconnects, so without this
//! every restart of local-sa (an upgrade, `systemctl restart`, a crash)
//! would quietly turn off acceleration for every process already running.
//!
//! Under a service manager with a descriptor store (systemd:
//! `FileDescriptorStoreMax=` in the unit), each ibacm client connection
//! open for a second is handed to the store (`FDSTORE=1`,
//! `FDNAME=acm-client-N`, N its slot: short ones such as `ib_acme`'s
//! never cost the manager a message), and a ledger goes with them: a memory file
//! (`FDNAME=acm-ledger`) with one byte per slot saying whether that
//! client is between messages (idle) or in the middle of one (busy: bytes
//! of a request read, or its answer not yet written). The byte turns busy
//! before every read from the socket and idle once everything read is
//! answered and written, so it is right however the process ends.
//!
//! At the next start the manager passes everything back (`LISTEN_FDS`,
//! [`crate::activation`]). Idle clients are served as if just accepted, on
//! their old slots; busy ones are closed, so that their process sees the
//! end at once and falls back rather than wait for an answer nobody will
//! send (librdmacm's read has no time-out). A connection that closes is
//! shut down (which makes the store drop its copy) and removed from the
//! store by name. The kernel door's socket is stored once, at start,
//! under `FDNAME=netlink`.

use std::cell::Cell;
use std::os::fd::{AsFd as _, OwnedFd};
use std::rc::{Rc, Weak};

use smol::channel::Sender;
use tracing::{info, warn};

use crate::client_store::{ClientStore, KEPT_CLIENT, KeptSlot, Passed, let_go, slot_name};
use crate::connection::Keeping;
use crate::door_limits::SharedDoors;
use crate::door_socket::{DoorEvent, DoorSpec, open_connection};
use crate::driver::{Driver, Sink};
use crate::service_manager::Notifier;
use crate::stream::Stream;
use local_sa_core::request::ConnId;

impl Driver {
    /// As the daemon exits: the ibacm clients in the middle of a request
    /// are closed (their processes fall back at once); the others stay in
    /// the manager's store for the next local-sa.
    pub(crate) fn keep_clients(&mut self) {
        let (Some(store), Some(acm)) = (&self.client_store, self.acm_door) else {
            return;
        };
        let (mut kept, mut closed) = (0, 0);
        for (conn, c) in &self.connections {
            let Sink::Stream(outbox) = &c.sink else {
                continue;
            };
            if c.door != acm || !outbox.is_kept() {
                continue;
            }
            if outbox.between_messages() && !self.doors[acm].is_waiting(*conn) {
                kept += 1;
            } else {
                outbox.close();
                closed += 1;
            }
        }
        store.leave();
        info!(
            kept,
            closed,
            "ibacm clients left with the service manager, to be served again by the next local-sa; those in the middle of a request closed"
        );
    }
}

/// What a connection is opened with: the connection numbers, the doors'
/// account, and where door events go.
pub(crate) type Opening = (Rc<Cell<ConnId>>, SharedDoors, Sender<DoorEvent>);

/// At start: serves the ibacm clients a previous local-sa kept through the
/// ibacm door (`door`; without one, or without a store now, they close),
/// keeping them stored.
pub(crate) fn take_back(
    passed: Passed,
    store: Option<&Rc<ClientStore>>,
    door: Option<DoorSpec>,
    ex: &Rc<smol::LocalExecutor<'static>>,
    opening: Opening,
    notifier: &Notifier,
) {
    let (Some(store), Some(door)) = (store, door) else {
        return close_all(passed, notifier);
    };
    let (back, closed) = store.reclaim(passed.numbered);
    if closed > 0 {
        info!(
            closed,
            "kept ibacm clients that were in the middle of a request when the last local-sa ended are closed (they fall back)"
        );
    }
    // An older local-sa kept these at its exit, idle: stored again under
    // slots of their own.
    let mut clients: Vec<(Option<KeptSlot>, OwnedFd)> =
        back.into_iter().map(|(k, fd)| (Some(k), fd)).collect();
    if !passed.unnumbered.is_empty() {
        for fd in passed.unnumbered {
            clients.push((store.keep(fd.as_fd(), true), fd));
        }
        store.forget_unnumbered();
    }
    if !clients.is_empty() {
        ex.spawn(adopt(clients, Rc::downgrade(ex), opening, door))
            .detach();
    }
}

/// Closes the kept clients this local-sa cannot serve (no ibacm door, or
/// no store to keep them in), and takes them out of the store.
fn close_all(passed: Passed, notifier: &Notifier) {
    let count = passed.numbered.len() + passed.unnumbered.len();
    if count == 0 {
        return;
    }
    warn!(
        clients = count,
        "ibacm clients were kept for this local-sa, but it serves no ibacm door or has no descriptor store; closing them"
    );
    let numbered = passed
        .numbered
        .into_iter()
        .map(|(slot, fd)| (slot_name(slot), fd));
    let unnumbered = passed
        .unnumbered
        .into_iter()
        .map(|fd| (KEPT_CLIENT.to_owned(), fd));
    for (name, fd) in numbered.chain(unnumbered) {
        let_go(notifier, &name, fd);
    }
}

/// Serves the ibacm clients a previous local-sa kept through the ibacm
/// door `door`, as if just accepted.
async fn adopt(
    clients: Vec<(Option<KeptSlot>, OwnedFd)>,
    ex: Weak<smol::LocalExecutor<'static>>,
    (ids, doors, events): Opening,
    door: DoorSpec,
) {
    let count = clients.len();
    for (kept, fd) in clients {
        let stream = match Stream::adopt(fd) {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "a kept ibacm client cannot be served; closing it");
                continue;
            }
        };
        let Some(ex) = ex.upgrade() else { return };
        let conn = ids.get();
        ids.set(conn + 1);
        let keeping = kept.map_or(Keeping::No, Keeping::Slot);
        if open_connection(&ex, &doors, &events, door, conn, stream, keeping)
            .await
            .is_err()
        {
            return;
        }
    }
    info!(
        count,
        "serving the ibacm clients the previous local-sa kept"
    );
}
