//! ibacm clients kept across a restart. librdmacm opens its ibacm socket
//! once per process and never reconnects, so without this every restart
//! of local-sa (an upgrade, `systemctl restart`) would quietly turn off
//! acceleration for every process already running.
//!
//! At a clean exit, under a service manager with a descriptor store
//! (systemd: `FileDescriptorStoreMax=` in the unit), local-sa hands it
//! every ibacm client connection that is between messages
//! (`FDSTORE=1`, `FDNAME=acm-client`), and the kernel door's socket if
//! local-sa owns it (`FDNAME=netlink`). A connection in the middle of a
//! message, or owed an answer, is closed instead: a kept client must never
//! wait for an answer that nobody will send. At the next start the
//! manager passes them back (`LISTEN_FDS`, [`crate::activation`]); they
//! are served as if just accepted, and the store is emptied, to be filled
//! again at the next exit. A crash keeps nothing: the old process cannot
//! tell which of its clients had a question in flight.

use std::cell::Cell;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::rc::{Rc, Weak};

use smol::Async;
use smol::channel::Sender;
use tracing::{info, warn};

use crate::door_limits::SharedDoors;
use crate::door_socket::{DoorEvent, DoorSpec, open_connection};
use crate::driver::{Driver, Sink};
use crate::service_manager::Notifier;
use crate::stream::Stream;
use local_sa_core::request::ConnId;

/// The store's name for a kept ibacm client connection.
pub(crate) const KEPT_CLIENT: &str = "acm-client";
/// The store's name for the kernel door's socket.
pub(crate) const KEPT_NETLINK: &str = "netlink";

impl Driver {
    /// At exit: hands the service manager's store the ibacm clients that
    /// are between messages and the kernel door's socket if this process
    /// owns it; the other clients close as the daemon exits.
    pub(crate) fn keep_clients(&mut self) {
        let room = self.notifier.store_room();
        let Some(acm) = self.acm_door.filter(|_| room > 0) else {
            return;
        };
        let mut kept: Vec<BorrowedFd<'_>> = Vec::new();
        let mut closed = 0;
        for (conn, c) in &self.connections {
            let Sink::Stream(outbox) = &c.sink else {
                continue;
            };
            if c.door != acm {
                continue;
            }
            let idle = outbox.between_messages() && !self.doors[acm].is_waiting(*conn);
            match outbox.unix_socket() {
                Some(fd) if idle && kept.len() < room => kept.push(fd),
                _ => closed += 1,
            }
        }
        let netlink = self.kept_netlink.as_ref().map(|s| s.get_ref().as_fd());
        let stored = self
            .notifier
            .store(KEPT_CLIENT, &kept)
            .and_then(|()| match netlink {
                Some(fd) => self.notifier.store(KEPT_NETLINK, &[fd]),
                None => Ok(()),
            });
        match stored {
            Ok(()) => info!(
                kept = kept.len(),
                closed,
                netlink = netlink.is_some(),
                "ibacm clients left with the service manager, to be served again by the next local-sa; those in the middle of a request closed"
            ),
            Err(e) => {
                warn!(error = %e, "cannot hand the ibacm clients to the service manager; they close")
            }
        }
    }
}

/// What a connection is opened with: the connection numbers, the doors'
/// account, and where door events go.
pub(crate) type Opening = (Rc<Cell<ConnId>>, SharedDoors, Sender<DoorEvent>);

/// At start: serves the ibacm clients a previous local-sa kept (`fds`)
/// through the ibacm door (`door`; without one they close), and empties
/// the manager's store, which this process's own exit fills again.
pub(crate) fn take_back(
    fds: Vec<OwnedFd>,
    door: Option<DoorSpec>,
    ex: &Rc<smol::LocalExecutor<'static>>,
    (ids, doors, events): Opening,
    notifier: &Notifier,
) {
    if !fds.is_empty() {
        match door {
            Some(door) => ex
                .spawn(adopt(fds, Rc::downgrade(ex), ids, doors, events, door))
                .detach(),
            None => warn!(
                clients = fds.len(),
                "ibacm clients were kept for this local-sa, but it serves no ibacm door; closing them"
            ),
        }
    }
    notifier.forget_stored(KEPT_CLIENT);
    notifier.forget_stored(KEPT_NETLINK);
}

/// Serves the ibacm clients a previous local-sa kept (`fds`) through the
/// ibacm door `door`, as if just accepted, numbered from `ids`.
async fn adopt(
    fds: Vec<OwnedFd>,
    ex: Weak<smol::LocalExecutor<'static>>,
    ids: Rc<Cell<ConnId>>,
    doors: SharedDoors,
    events: Sender<DoorEvent>,
    door: DoorSpec,
) {
    let count = fds.len();
    for fd in fds {
        let stream = match Async::new(UnixStream::from(fd)) {
            Ok(s) => Stream::Unix(s),
            Err(e) => {
                warn!(error = %e, "a kept ibacm client cannot be served; closing it");
                continue;
            }
        };
        let Some(ex) = ex.upgrade() else { return };
        let conn = ids.get();
        ids.set(conn + 1);
        if open_connection(&ex, &doors, &events, door, conn, stream)
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
