//! The service manager's descriptor store as local-sa uses it to keep
//! ibacm clients across a restart or a crash ([`crate::kept_clients`]
//! says why and how): the clients' store names, their slots, and the
//! ledger (a memory file kept in the store with them) whose byte per slot
//! says whether that client is between messages.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;

use tracing::warn;

use crate::service_manager::Notifier;
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
pub(crate) fn slot_name(slot: usize) -> String {
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

/// Closes a kept client's socket `fd`, stored as `name`, and takes it out
/// of the store: shut down, since the store's copy would keep it open.
/// (shutdown(2) is the same call for a TCP client's socket.)
pub(crate) fn let_go(notifier: &Notifier, name: &str, fd: OwnedFd) {
    let _ = UnixStream::from(fd).shutdown(std::net::Shutdown::Both);
    notifier.forget_stored(name);
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
    /// Lasting connections not kept: no slot left, or the manager did not
    /// take them.
    not_kept: Cell<u64>,
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
            .nonblocking_clone()
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
            not_kept: Cell::new(0),
        }))
    }

    /// Hands a client's socket to the store, its ledger byte saying
    /// whether it is `idle` (between messages): its slot, or `None` when
    /// the store is full or refuses it (it is served all the same, just
    /// not kept).
    pub(crate) fn keep(self: &Rc<Self>, fd: BorrowedFd<'_>, idle: bool) -> Option<KeptSlot> {
        let Some(slot) = self.free.borrow_mut().pop() else {
            self.not_kept.set(self.not_kept.get() + 1);
            return None;
        };
        self.ledger.set(slot, if idle { IDLE } else { BUSY });
        if let Err(e) = self.notifier.store(&slot_name(slot), &[fd]) {
            self.not_kept.set(self.not_kept.get() + 1);
            self.free_slot(slot);
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
                let_go(&self.notifier, &slot_name(slot), fd);
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

    /// Marks `slot` free in the ledger and for the next client.
    fn free_slot(&self, slot: usize) {
        self.ledger.set(slot, FREE);
        self.free.borrow_mut().push(slot);
    }

    /// `name value` pairs, as the stats file lists them: clients in the
    /// store now, and lasting ones it could not take.
    pub(crate) fn fields(&self) -> [(&'static str, u64); 2] {
        let kept = self.ledger.len() - self.free.borrow().len();
        [
            ("acm_clients_kept", kept as u64),
            ("acm_clients_not_kept", self.not_kept.get()),
        ]
    }

    /// Takes the clients an older local-sa stored unnumbered out of the
    /// store (they are stored again under slots).
    pub(crate) fn forget_unnumbered(&self) {
        self.notifier.forget_stored(KEPT_CLIENT);
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
        self.store.notifier.forget_stored(&slot_name(self.slot));
        self.store.free_slot(self.slot);
    }
}

/// The clients the service manager passed back, by store name.
#[derive(Debug, Default)]
pub(crate) struct Passed {
    /// Numbered ones, by slot.
    pub(crate) numbered: Vec<(usize, OwnedFd)>,
    /// An older local-sa's unnumbered ones.
    pub(crate) unnumbered: Vec<OwnedFd>,
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
        let idle_slot = store.keep(idle.as_fd(), true).unwrap();
        let busy_slot = store.keep(busy.as_fd(), false).unwrap();
        let names: Vec<String> = received(&socket).into_iter().map(|m| m.0).collect();
        assert_eq!(
            names,
            [
                format!("FDSTORE=1\nFDNAME={}", slot_name(idle_slot.slot)),
                format!("FDSTORE=1\nFDNAME={}", slot_name(busy_slot.slot)),
            ]
        );
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
        let slot = store.keep(a.as_fd(), true).unwrap();
        let (b, _peer_b) = UnixStream::pair().unwrap();
        assert!(
            store.keep(b.as_fd(), true).is_none(),
            "one place for clients"
        );
        assert_eq!(
            store.fields(),
            [("acm_clients_kept", 1), ("acm_clients_not_kept", 1)]
        );
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
