//! ibacm clients kept across a restart, a crash included. librdmacm opens
//! its ibacm socket once per process and never reconnects, so without this
//! every restart of local-sa (an upgrade, `systemctl restart`, a crash)
//! would quietly turn off acceleration for every process already running.
//!
//! Under a service manager with a descriptor store (systemd:
//! `FileDescriptorStoreMax=` in the unit), each ibacm client connection is
//! handed to the store as it opens (`FDSTORE=1`, `FDNAME=acm-client-N`,
//! N its slot), and a ledger goes with them: a memory file
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

use std::cell::{Cell, RefCell};
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
use umad::shared_memory::SharedBytes;

/// The store's name for a kept ibacm client: `acm-client-N` for the
/// client in slot N; alone, a client an older local-sa kept at its exit
/// (idle by construction).
pub(crate) const KEPT_CLIENT: &str = "acm-client";
/// The store's name for the ledger of the kept clients' states.
pub(crate) const KEPT_LEDGER: &str = "acm-ledger";
/// The store's name for the kernel door's socket.
pub(crate) const KEPT_NETLINK: &str = "netlink";

/// The most clients kept: with the ledger and the kernel door's socket,
/// what the unit's `FileDescriptorStoreMax=4097` holds.
const MAX_SLOTS: usize = 4095;

/// A slot's state in the ledger.
const FREE: u8 = 0;
const IDLE: u8 = 1;
const BUSY: u8 = 2;

/// The store name of the client in `slot`.
fn slot_name(slot: usize) -> String {
    format!("{KEPT_CLIENT}-{slot}")
}

/// What a kept client's store name says: its slot, or `None` for an older
/// local-sa's unnumbered one. `Err` for a name that is not a kept client's.
pub(crate) fn slot_of(name: &str) -> Result<Option<usize>, ()> {
    if name == KEPT_CLIENT {
        return Ok(None);
    }
    let n = name
        .strip_prefix(KEPT_CLIENT)
        .and_then(|n| n.strip_prefix('-'))
        .ok_or(())?;
    n.parse().map(Some).map_err(|_| ())
}

/// The service manager's store of ibacm clients, and their ledger.
#[derive(Debug)]
pub(crate) struct ClientStore {
    notifier: Notifier,
    ledger: SharedBytes,
    free: RefCell<Vec<usize>>,
    /// Set at a clean exit: what is stored then stays stored.
    leaving: Cell<bool>,
    /// Whether a failure to store was logged already.
    warned: Cell<bool>,
}

impl ClientStore {
    /// The store, under a service manager with room in its store for
    /// clients: with the ledger a previous local-sa left (`kept`), or a new
    /// one handed to the store. `None` without a manager, without room, or
    /// when the ledger cannot be made or stored (logged).
    pub(crate) fn open(notifier: &Notifier, kept: Option<OwnedFd>) -> Option<Rc<Self>> {
        // The ledger and the kernel door's socket take two places.
        let room = notifier.store_room().saturating_sub(2).min(MAX_SLOTS);
        if room == 0 {
            return None;
        }
        let notifier = notifier
            .try_clone()
            .inspect_err(|e| warn!(error = %e, "cannot keep ibacm clients across a restart"))
            .ok()?;
        let reopened = kept.map(SharedBytes::open).and_then(|l| {
            l.inspect_err(|e| warn!(error = %e, "the kept clients' ledger cannot be read; every kept client is closed"))
                .ok()
        });
        let ledger = match reopened {
            Some(ledger) => ledger,
            None => {
                let made = SharedBytes::create("local-sa-acm-clients", room).and_then(|ledger| {
                    notifier.store(KEPT_LEDGER, &[ledger.as_fd()])?;
                    Ok(ledger)
                });
                match made {
                    Ok(ledger) => ledger,
                    Err(e) => {
                        warn!(error = %e, "cannot give the service manager a ledger of ibacm clients; they are not kept across a restart");
                        return None;
                    }
                }
            }
        };
        let free = (0..ledger.len()).rev().collect();
        Some(Rc::new(Self {
            notifier,
            ledger,
            free: RefCell::new(free),
            leaving: Cell::new(false),
            warned: Cell::new(false),
        }))
    }

    /// Hands a newly opened client's socket to the store: its slot, or
    /// `None` when the store is full or refuses it (it is served all the
    /// same, just not kept).
    pub(crate) fn keep(self: &Rc<Self>, fd: BorrowedFd<'_>) -> Option<KeptSlot> {
        let slot = self.free.borrow_mut().pop()?;
        self.ledger.set(slot, IDLE);
        if let Err(e) = self.notifier.store(&slot_name(slot), &[fd]) {
            self.ledger.set(slot, FREE);
            self.free.borrow_mut().push(slot);
            if !self.warned.replace(true) {
                warn!(error = %e, "the service manager does not take an ibacm client; it is not kept across a restart (logged once)");
            }
            return None;
        }
        Some(KeptSlot {
            store: Rc::clone(self),
            slot,
        })
    }

    /// Sorts the clients a previous local-sa kept: those whose ledger byte
    /// says idle are given back with their slots, to be served; the
    /// others (busy, or slots this ledger does not have) are shut and
    /// removed from the store. Every slot not given back is free.
    pub(crate) fn reclaim(
        self: &Rc<Self>,
        kept: Vec<(usize, OwnedFd)>,
    ) -> (Vec<(KeptSlot, OwnedFd)>, usize) {
        let mut taken = vec![false; self.ledger.len()];
        let mut back = Vec::new();
        let mut closed = 0;
        for (slot, fd) in kept {
            if self.ledger.get(slot) == Some(IDLE) && !taken[slot] {
                taken[slot] = true;
                let store = Rc::clone(self);
                back.push((KeptSlot { store, slot }, fd));
            } else {
                let _ = UnixStream::from(fd).shutdown(std::net::Shutdown::Both);
                self.notifier.forget_stored(&slot_name(slot));
                closed += 1;
            }
        }
        let mut free = Vec::new();
        for slot in (0..taken.len()).rev().filter(|s| !taken[*s]) {
            self.ledger.set(slot, FREE);
            free.push(slot);
        }
        *self.free.borrow_mut() = free;
        (back, closed)
    }

    /// At a clean exit: what is stored stays stored for the next local-sa.
    pub(crate) fn leave(&self) {
        self.leaving.set(true);
    }
}

/// A client's place in the store: its ledger byte, and its entry, removed
/// when the connection closes (except at a clean exit, when it stays).
#[derive(Debug)]
pub(crate) struct KeptSlot {
    store: Rc<ClientStore>,
    slot: usize,
}

impl KeptSlot {
    /// Bytes of a request are about to be read.
    pub(crate) fn busy(&self) {
        self.store.ledger.set(self.slot, BUSY);
    }

    /// Everything read is answered and written.
    pub(crate) fn idle(&self) {
        self.store.ledger.set(self.slot, IDLE);
    }

    /// Whether the daemon is exiting cleanly, leaving its clients kept:
    /// their sockets must not be shut as they drop.
    pub(crate) fn staying(&self) -> bool {
        self.store.leaving.get()
    }
}

impl Drop for KeptSlot {
    fn drop(&mut self) {
        if self.store.leaving.get() {
            return;
        }
        self.store.ledger.set(self.slot, FREE);
        self.store.notifier.forget_stored(&slot_name(self.slot));
        self.store.free.borrow_mut().push(self.slot);
    }
}

impl Driver {
    /// At a clean exit: the ibacm clients in the middle of a request are
    /// closed (their processes fall back at once); the others stay in the
    /// manager's store for the next local-sa.
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

/// The clients the service manager passed back, by store name.
#[derive(Debug, Default)]
pub(crate) struct Passed {
    /// Numbered ones, by slot.
    pub(crate) numbered: Vec<(usize, OwnedFd)>,
    /// An older local-sa's unnumbered ones.
    pub(crate) unnumbered: Vec<OwnedFd>,
}

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
            clients.push((store.keep(fd.as_fd()), fd));
        }
        store.notifier.forget_stored(KEPT_CLIENT);
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
        // The store's copy would keep it open.
        let _ = UnixStream::from(fd).shutdown(std::net::Shutdown::Both);
        notifier.forget_stored(&name);
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
        let keeping = kept.map_or(
            crate::connection::Keeping::No,
            crate::connection::Keeping::Slot,
        );
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

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::os::unix::net::UnixDatagram;

    use super::*;

    /// A stand-in manager's socket, and a notifier to it whose store keeps
    /// `room` descriptors.
    fn manager(dir: &std::path::Path, room: &str) -> (UnixDatagram, Notifier) {
        let path = dir.join("notify");
        let socket = UnixDatagram::bind(&path).unwrap();
        socket.set_nonblocking(true).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let vars = move |k: &str| match k {
            "NOTIFY_SOCKET" => Some(path.clone()),
            "FDSTORE" => Some(room.to_owned()),
            _ => None,
        };
        (socket, Notifier::from_vars(vars, 1))
    }

    /// What the manager received: each message and its descriptors.
    fn received(socket: &UnixDatagram) -> Vec<(String, Vec<OwnedFd>)> {
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok((n, fds)) = umad::fd_store::recv_with_fds(socket, &mut buf) {
            out.push((String::from_utf8_lossy(&buf[..n]).into_owned(), fds));
        }
        out
    }

    #[test]
    fn after_a_crash_the_idle_clients_come_back_and_the_busy_ones_are_closed() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, notifier) = manager(dir.path(), "8");
        let store = ClientStore::open(&notifier, None).unwrap();
        let mut stored = received(&socket);
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].0, "FDSTORE=1\nFDNAME=acm-ledger");
        let ledger = stored.remove(0).1.remove(0);

        let (idle, idle_peer) = UnixStream::pair().unwrap();
        let (busy, mut busy_peer) = UnixStream::pair().unwrap();
        let idle_slot = store.keep(idle.as_fd()).unwrap();
        let busy_slot = store.keep(busy.as_fd()).unwrap();
        let names: Vec<String> = received(&socket).into_iter().map(|m| m.0).collect();
        assert_eq!(
            names,
            [
                format!("FDSTORE=1\nFDNAME={}", slot_name(idle_slot.slot)),
                format!("FDSTORE=1\nFDNAME={}", slot_name(busy_slot.slot)),
            ]
        );
        busy_slot.busy();
        let slots = (idle_slot.slot, busy_slot.slot);
        // A crash: nothing is dropped, nothing more is said.
        std::mem::forget((idle_slot, busy_slot, store));

        let next = ClientStore::open(&notifier, Some(ledger)).unwrap();
        assert!(received(&socket).is_empty(), "the kept ledger is used");
        let (back, closed) = next.reclaim(vec![(slots.0, idle.into()), (slots.1, busy.into())]);
        assert_eq!((back.len(), closed), (1, 1));
        assert_eq!(back[0].0.slot, slots.0);
        let mut end = [0u8; 1];
        assert_eq!(
            busy_peer.read(&mut end).unwrap(),
            0,
            "the busy one sees the end"
        );
        let said: Vec<String> = received(&socket).into_iter().map(|m| m.0).collect();
        assert_eq!(
            said,
            [format!("FDSTOREREMOVE=1\nFDNAME={}", slot_name(slots.1))]
        );

        // The one given back closes: taken out of the store, slot freed.
        drop(back);
        let said: Vec<String> = received(&socket).into_iter().map(|m| m.0).collect();
        assert_eq!(
            said,
            [format!("FDSTOREREMOVE=1\nFDNAME={}", slot_name(slots.0))]
        );
        assert_eq!(
            next.free.borrow().len(),
            6,
            "8 places, less the ledger's and netlink's"
        );
        drop(idle_peer);
    }

    #[test]
    fn at_a_clean_exit_the_store_keeps_what_it_has() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, notifier) = manager(dir.path(), "3");
        let store = ClientStore::open(&notifier, None).unwrap();
        let (a, _peer) = UnixStream::pair().unwrap();
        let slot = store.keep(a.as_fd()).unwrap();
        let (b, _peer_b) = UnixStream::pair().unwrap();
        assert!(store.keep(b.as_fd()).is_none(), "one place for clients");
        store.leave();
        drop(slot);
        let said: Vec<String> = received(&socket).into_iter().map(|m| m.0).collect();
        assert_eq!(
            said.len(),
            2,
            "the ledger and the client, nothing removed: {said:?}"
        );
        // Without room for a client there is no store at all.
        let other = tempfile::tempdir().unwrap();
        let (_, small) = manager(other.path(), "2");
        assert!(ClientStore::open(&small, None).is_none());
    }

    #[test]
    fn kept_clients_are_named_by_slot() {
        assert_eq!(slot_of(&slot_name(17)), Ok(Some(17)));
        assert_eq!(slot_of("acm-client"), Ok(None));
        assert_eq!(slot_of("acm-client-x"), Err(()));
        assert_eq!(slot_of("acm-clients"), Err(()));
        assert_eq!(slot_of("api"), Err(()));
    }
}
