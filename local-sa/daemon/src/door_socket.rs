//! The doors' sockets: one listener type for every stream door (the local
//! API's per port, the ibacm protocol's), whose connections are read by
//! the door's own [`Framing`] and written from an [`FrameQueue`], under the
//! doors' limits ([`crate::door_limits`]); and the events all doors' sockets —
//! the kernel door's datagrams included — send the driver on one channel.
//!
//! A door is a core service ([`local_sa_core::doors::Door`]); adding one
//! takes its wire module and service in the core and a socket here.

use std::cell::Cell;
use std::rc::{Rc, Weak};

use bytes::Bytes;
use smol::channel::Sender;
use tracing::debug;

use crate::client_store::ClientStore;
use crate::connection::{Conn, FrameQueue, FrameReader, KEEP_AFTER, Keeping, ReadEnd, admit};
use crate::door_limits::SharedDoors;
use crate::listener::Listener;
use crate::stream::Stream;
use local_sa_core::doors::DatagramSender;
use local_sa_core::doors::Framing;
use local_sa_core::quota::LocalUser;
use local_sa_core::request::ConnId;

/// A door's index in the driver's table.
pub(crate) type DoorId = usize;

/// What happened at a door's socket.
#[derive(Debug)]
pub(crate) enum DoorEvent {
    /// A connection opened: where its messages go, and whose it is.
    Opened {
        door: DoorId,
        conn: ConnId,
        outbox: FrameQueue,
        user: LocalUser,
    },
    /// A whole message.
    Message { conn: ConnId, bytes: Vec<u8> },
    /// A header that cannot frame a message; reading stopped.
    Unframeable { conn: ConnId },
    /// The connection closed.
    Closed { conn: ConnId },
    /// A datagram on a datagram door's socket, and who sent it.
    Datagram {
        door: DoorId,
        from: DatagramSender,
        bytes: Bytes,
    },
}

/// A listening socket of a stream door.
#[derive(Debug)]
pub(crate) struct StreamListener {
    listener: Listener,
    door: DoorId,
    /// The door's name, for logs and the connection counters.
    name: &'static str,
    framing: Framing,
    /// Where its connections are kept across a restart, if they are.
    store: Option<Rc<ClientStore>>,
}

impl StreamListener {
    /// Serves door `door` (named `name`, framed by `framing`) on
    /// `listener`.
    pub(crate) fn new(
        listener: Listener,
        door: DoorId,
        name: &'static str,
        framing: Framing,
    ) -> Self {
        Self {
            listener,
            door,
            name,
            framing,
            store: None,
        }
    }

    /// Its connections go to `store` as they open, to be kept across a
    /// restart.
    pub(crate) fn kept_in(mut self, store: Option<Rc<ClientStore>>) -> Self {
        self.store = store;
        self
    }

    /// Accepts connections for ever, numbering them from `ids` (shared by
    /// every door), spawning their tasks on `ex` and reporting everything
    /// on `events`.
    pub(crate) async fn serve(
        self,
        ex: Weak<smol::LocalExecutor<'static>>,
        ids: Rc<Cell<ConnId>>,
        doors: SharedDoors,
        events: Sender<DoorEvent>,
    ) {
        loop {
            let (conn, stream) = self.listener.accept(&ids).await;
            let Some(ex) = ex.upgrade() else { return };
            let door = (self.door, self.name, self.framing);
            let keeping = match &self.store {
                Some(store) => Keeping::Store(Rc::clone(store)),
                None => Keeping::No,
            };
            if open_connection(&ex, &doors, &events, door, conn, stream, keeping)
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// A door: its number, its name (for logs and the connection counters)
/// and how its messages are framed.
pub(crate) type DoorSpec = (DoorId, &'static str, Framing);

/// Serves connection `conn` on `stream` through `door`, if the limits
/// admit it (a refused one is counted, logged and closed): tells the
/// driver, and spawns its reader and writer on `ex`. `Err` when the
/// driver is gone.
pub(crate) async fn open_connection(
    ex: &smol::LocalExecutor<'static>,
    doors: &SharedDoors,
    events: &Sender<DoorEvent>,
    (door, name, framing): DoorSpec,
    conn: ConnId,
    stream: Stream,
    keeping: Keeping,
) -> Result<(), ()> {
    let (kept, store) = match keeping {
        Keeping::No => (None, None),
        Keeping::Store(store) => (None, Some(store)),
        Keeping::Slot(slot) => (Some(slot), None),
    };
    let Some((stream, outbox, writer)) = admit(doors, stream, name, kept) else {
        return Ok(());
    };
    let uid = stream.admission.user;
    let user = LocalUser {
        uid,
        privileged: umad::process::is_admin(uid),
    };
    let opened = DoorEvent::Opened {
        door,
        conn,
        outbox,
        user,
    };
    events.send(opened).await.map_err(|_| ())?;
    debug!(conn, door = name, "connection opened");
    ex.spawn(writer).detach();
    if let Some(store) = store {
        ex.spawn(keep_when_lasting(Rc::downgrade(&stream), store))
            .detach();
    }
    ex.spawn(read_messages(conn, framing, stream, events.clone()))
        .detach();
    Ok(())
}

/// Hands connection `conn` to `store` once it has lasted [`KEEP_AFTER`]
/// (nothing if it has closed by then).
async fn keep_when_lasting(conn: Weak<Conn>, store: Rc<ClientStore>) {
    smol::Timer::after(KEEP_AFTER).await;
    if let Some(conn) = conn.upgrade() {
        conn.keep_in(&store);
    }
}

/// Reads `stream`'s messages as `framing` frames them until it closes or
/// a header cannot frame one.
async fn read_messages(
    conn: ConnId,
    framing: Framing,
    stream: Rc<Conn>,
    events: Sender<DoorEvent>,
) {
    let mut reader = FrameReader::new(&stream);
    let end = loop {
        match reader
            .next(&stream, framing.header_len, framing.body_len)
            .await
        {
            Ok(bytes) => {
                stream.owe();
                if events
                    .send(DoorEvent::Message { conn, bytes })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(ReadEnd::Unframeable(reason)) => {
                debug!(
                    conn,
                    door = stream.door,
                    reason = %reason,
                    "a message that cannot be framed"
                );
                break DoorEvent::Unframeable { conn };
            }
            Err(ReadEnd::Closed | ReadEnd::Cut) => break DoorEvent::Closed { conn },
        }
    };
    let _ = events.send(end).await;
}
