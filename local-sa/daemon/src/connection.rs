//! One local connection of either door: its socket with its place in the
//! doors' account ([`crate::door_limits`]), the queue of frames going out with
//! the bytes in it, and reading frames in under the limits.
//!
//! Frames go out through an [`FrameQueue`]: the driver queues, a writer task
//! writes. A connection that lets more than its share pile up is not
//! reading; closing it shuts the socket, which ends both tasks at once and
//! frees the queue, however little the peer reads.

use std::cell::{Cell, OnceCell};
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use smol::channel::{self, Receiver, Sender};

use crate::client_store::{ClientStore, KeptSlot};
use crate::door_limits::{Admission, Cut, Receiving, SharedDoors};
use crate::stream::Stream;

/// Bytes read from a socket at a time while a frame arrives: memory grows
/// with what came, not with what the frame's length announced.
const READ_CHUNK: usize = 64 << 10;

/// Bytes read at a time while reads come back short: a client asking one
/// question at a time (librdmacm) sends a few hundred bytes, and the
/// buffer is zeroed before each read.
const FIRST_READ: usize = 4 << 10;

/// A connection's socket and its place in the account (given back when the
/// last task lets go of it, as the socket closes).
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: Stream,
    pub(crate) admission: Admission,
    /// Which door, for logs.
    pub(crate) door: &'static str,
    /// Bytes read from the socket that the reader has not passed on yet:
    /// 0 between messages.
    pub(crate) held: Cell<usize>,
    /// Bytes queued to go out.
    queued: Cell<usize>,
    /// Messages passed on whose answers are not written yet (the ibacm
    /// door answers each message with one frame).
    owed: Cell<usize>,
    /// Its place in the service manager's store, once it is kept there.
    kept: OnceCell<KeptSlot>,
}

/// Whether a new connection goes to the service manager's store
/// ([`crate::kept_clients`]).
#[derive(Debug)]
pub(crate) enum Keeping {
    /// Not kept.
    No,
    /// Handed to this store once it has lasted [`KEEP_AFTER`], if there
    /// is room then.
    Store(Rc<ClientStore>),
    /// Kept already, in this slot (a client taken back at start).
    Slot(KeptSlot),
}

/// How long a connection must last before it goes to the store: the
/// short ones (`ib_acme`, `lsaquery --resolve`) never cost the service
/// manager a message; librdmacm's, open for its process's life, are kept.
pub(crate) const KEEP_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Drop for Conn {
    fn drop(&mut self) {
        // The store holds a copy of a kept socket: only shutting it makes
        // the peer see the end (and the store let its copy go).
        if self.kept.get().is_some_and(|k| !k.staying()) {
            self.stream.shutdown();
        }
    }
}

impl Conn {
    /// Whether nothing of a request is read but unanswered, and nothing
    /// of an answer is left to write.
    fn between_messages(&self) -> bool {
        self.queued.get() == 0 && self.held.get() == 0 && self.owed.get() == 0
    }

    /// A kept connection's ledger byte says idle once it is between
    /// messages.
    fn settle_kept(&self) {
        if let Some(k) = self.kept.get()
            && self.between_messages()
        {
            k.idle();
        }
    }

    /// Hands the connection to `store`, if it is not kept yet and the
    /// store has room.
    pub(crate) fn keep_in(&self, store: &Rc<ClientStore>) {
        if self.kept.get().is_some() {
            return;
        }
        if let Some(slot) = store.keep(self.stream.fd(), self.between_messages()) {
            let _ = self.kept.set(slot);
        }
    }

    /// A message was passed on, to be answered.
    pub(crate) fn owe(&self) {
        self.owed.set(self.owed.get() + 1);
    }

    /// Counts `cut` against this connection's user and logs it.
    pub(crate) fn note(&self, cut: Cut) {
        let doors = self.admission.doors();
        doors.borrow_mut().note(cut, self.admission.user, self.door);
    }

    fn shutdown(&self) {
        self.stream.shutdown();
    }
}

/// A connection a door's listener accepted, if the limits admit it: its
/// socket with its place in the account, its outbox, and its writer task
/// to spawn. `None` when refused (counted and logged; the socket closes
/// as it drops).
/// `kept`: its place in the store, if it is kept already.
pub(crate) fn admit(
    doors: &SharedDoors,
    stream: Stream,
    door: &'static str,
    kept: Option<KeptSlot>,
) -> Option<(Rc<Conn>, FrameQueue, impl Future<Output = ()> + use<>)> {
    let Some(admission) = Admission::new(doors, stream.peer_uid(), door) else {
        if kept.is_some() {
            // The store's copy would keep it open.
            stream.shutdown();
        }
        return None;
    };
    let kept = kept.map_or_else(OnceCell::new, OnceCell::from);
    let conn = Rc::new(Conn {
        stream,
        admission,
        door,
        held: Cell::new(0),
        queued: Cell::new(0),
        owed: Cell::new(0),
        kept,
    });
    let (outbox, writer) = FrameQueue::new(&conn);
    Some((conn, outbox, writer))
}

/// Where the driver queues a connection's outgoing frames.
#[derive(Debug)]
pub(crate) struct FrameQueue {
    tx: Sender<Bytes>,
    conn: Rc<Conn>,
}

impl FrameQueue {
    /// An outbox for `conn`, and its writer task to spawn.
    pub(crate) fn new(conn: &Rc<Conn>) -> (Self, impl Future<Output = ()> + use<>) {
        let (tx, rx) = channel::unbounded();
        let writer = write_frames(Rc::clone(conn), rx);
        let outbox = Self {
            tx,
            conn: Rc::clone(conn),
        };
        (outbox, writer)
    }

    /// Queues `frame`; false when the connection already has its share of
    /// bytes waiting (it does not read: the caller closes it).
    pub(crate) fn push(&self, frame: Bytes) -> bool {
        let limit = self.conn.admission.doors().borrow().limits().queued_out;
        let queued = &self.conn.queued;
        let total = queued.get() + frame.len();
        if total > limit && queued.get() > 0 {
            self.conn.note(Cut::SlowReader);
            return false;
        }
        queued.set(total);
        self.tx.try_send(frame).is_ok()
    }

    /// Whether the connection is between messages: nothing of a request
    /// read but not answered, nothing of an answer left to write.
    pub(crate) fn between_messages(&self) -> bool {
        self.conn.between_messages()
    }

    /// Whether the connection is in the service manager's store.
    pub(crate) fn is_kept(&self) -> bool {
        self.conn.kept.get().is_some()
    }

    /// Closes the connection at once: both its tasks end and what was
    /// queued goes.
    pub(crate) fn close(&self) {
        self.tx.close();
        self.conn.shutdown();
    }

    /// Closes the connection once what is queued has been written (an
    /// error frame that explains the close, say).
    pub(crate) fn finish(&self) {
        self.tx.close();
    }
}

/// Bytes of queued frames the writer puts into one write at most.
const WRITE_BATCH: usize = 64 << 10;

/// Writes `frames` to the connection until either ends: every frame
/// queued by the time the writer runs goes out in one write (up to
/// [`WRITE_BATCH`]), so that answers to pipelined requests cost one
/// system call between them.
async fn write_frames(conn: Rc<Conn>, frames: Receiver<Bytes>) {
    let stream = &conn.stream;
    let queued = &conn.queued;
    let mut batch = Vec::new();
    while let Ok(frame) = frames.recv().await {
        let mut count = 1;
        let written = match frames.try_recv() {
            // One frame: as it is.
            Err(_) => stream.write_all(&frame).await,
            Ok(second) => {
                batch.clear();
                batch.extend_from_slice(&frame);
                batch.extend_from_slice(&second);
                count = 2;
                while batch.len() < WRITE_BATCH
                    && let Ok(more) = frames.try_recv()
                {
                    batch.extend_from_slice(&more);
                    count += 1;
                }
                stream.write_all(&batch).await
            }
        };
        let len = if batch.is_empty() {
            frame.len()
        } else {
            batch.len()
        };
        queued.set(queued.get().saturating_sub(len));
        conn.owed.set(conn.owed.get().saturating_sub(count));
        batch.clear();
        if written.is_err() {
            break;
        }
        conn.settle_kept();
    }
    // The queue closed (the daemon let the connection go) or the peer did:
    // drop what is still queued, and shut the socket so that the reader
    // sees the end too.
    frames.close();
    while let Ok(frame) = frames.try_recv() {
        queued.set(queued.get().saturating_sub(frame.len()));
    }
    conn.shutdown();
}

/// Why reading a connection's frames ended.
#[derive(Debug)]
pub(crate) enum ReadEnd<E> {
    /// The peer closed, or the socket failed.
    Closed,
    /// The header announces a length that cannot be.
    Unframeable(E),
    /// Counted and logged already: too slow, or over the memory limit.
    Cut,
}

/// Reads a connection's frames: as many bytes as the socket has at a time
/// (up to [`READ_CHUNK`]), cut into whole frames, so that a client that
/// pipelines its requests costs one read for many. A new connection's
/// first bytes must come within the first-frame time; after that the
/// connection may stay silent as long as it likes, but a frame it has
/// started must finish within the frame time. The bytes held count
/// against the shared budget.
pub(crate) struct FrameReader {
    buf: Vec<u8>,
    /// Where the next frame starts in `buf`.
    start: usize,
    /// When the frame at `start` began to arrive, if it has.
    started: Option<Instant>,
    first: bool,
    account: Receiving,
    /// How much the next read asks for: [`FIRST_READ`], doubled after
    /// each read that filled it, up to [`READ_CHUNK`].
    chunk: usize,
}

impl FrameReader {
    pub(crate) fn new(conn: &Conn) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            started: None,
            first: true,
            account: Receiving::new(conn.admission.doors()),
            chunk: FIRST_READ,
        }
    }

    /// The next whole frame: `header_len` bytes, then as many more as
    /// `body_len` says the header announces.
    pub(crate) async fn next<E>(
        &mut self,
        conn: &Conn,
        header_len: usize,
        body_len: impl Fn(&[u8]) -> Result<usize, E>,
    ) -> Result<Vec<u8>, ReadEnd<E>> {
        let limits = conn.admission.doors().borrow().limits();
        loop {
            let held = &self.buf[self.start..];
            if held.len() >= header_len {
                let len =
                    header_len + body_len(&held[..header_len]).map_err(ReadEnd::Unframeable)?;
                if held.len() >= len {
                    let frame = held[..len].to_vec();
                    self.consume(len);
                    conn.held.set(self.buf.len() - self.start);
                    return Ok(frame);
                }
            }
            let deadline = match self.started {
                Some(t) => Some(t + limits.frame_time),
                None if self.first => Some(Instant::now() + limits.first_frame_time),
                None => None,
            };
            let read = self.fill(conn);
            let n = match deadline {
                Some(at) => {
                    match with_deadline(at.saturating_duration_since(Instant::now()), read).await {
                        Some(n) => n?,
                        None => {
                            conn.note(Cut::SlowSender);
                            return Err(ReadEnd::Cut);
                        }
                    }
                }
                None => read.await?,
            };
            conn.held.set(self.buf.len() - self.start);
            if n > 0 && self.started.is_none() {
                self.started = Some(Instant::now());
                self.first = false;
            }
        }
    }

    /// Reads what the socket has, up to `chunk` bytes, once it has
    /// something: an idle connection holds no buffer and no budget.
    async fn fill<E>(&mut self, conn: &Conn) -> Result<usize, ReadEnd<E>> {
        loop {
            conn.stream.readable().await.map_err(|_| ReadEnd::Closed)?;
            let chunk = self.chunk;
            if !self.account.grow(chunk) {
                conn.note(Cut::Memory);
                return Err(ReadEnd::Cut);
            }
            let at = self.buf.len();
            self.buf.resize(at + chunk, 0);
            if let Some(k) = conn.kept.get() {
                // Whatever this read takes must be answered before the
                // connection can be kept through a crash.
                k.busy();
            }
            let read = conn.stream.read(&mut self.buf[at..]);
            let n = read.as_ref().map_or(0, |n| *n);
            self.buf.truncate(at + n);
            self.account.shrink(chunk - n);
            self.chunk = if n == chunk {
                (chunk * 2).min(READ_CHUNK)
            } else {
                FIRST_READ
            };
            match read {
                Ok(0) => return Err(ReadEnd::Closed),
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => conn.settle_kept(),
                Err(_) => return Err(ReadEnd::Closed),
            }
        }
    }

    /// Drops the first `len` bytes held (a frame taken).
    fn consume(&mut self, len: usize) {
        self.start += len;
        self.account.shrink(len);
        if self.start == self.buf.len() {
            // Nothing held: the memory goes back too.
            self.buf = Vec::new();
            self.start = 0;
            self.started = None;
        } else {
            // The next frame has begun.
            self.started = Some(Instant::now());
            if self.start >= READ_CHUNK {
                self.buf.drain(..self.start);
                self.start = 0;
            }
        }
    }
}

/// `future`'s output, or `None` if `limit` passes first.
async fn with_deadline<T>(
    limit: std::time::Duration,
    future: impl Future<Output = T>,
) -> Option<T> {
    smol::future::or(async { Some(future.await) }, async {
        smol::Timer::after(limit).await;
        None
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    use super::*;
    use crate::door_limits::{DoorLimits, Doors, SharedDoors};

    fn quick() -> DoorLimits {
        DoorLimits {
            frame_time: Duration::from_millis(100),
            first_frame_time: Duration::from_millis(100),
            partial_in: 100_000,
            queued_out: 10_000,
            ..DoorLimits::default()
        }
    }

    /// A connection admitted under `doors`, and the peer's end.
    fn connection(doors: &SharedDoors) -> (Rc<Conn>, UnixStream) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let stream = Stream::Unix(smol::Async::new(ours).unwrap());
        let admission = Admission::new(doors, stream.peer_uid(), "test").unwrap();
        let conn = Conn {
            stream,
            admission,
            held: Cell::new(0),
            queued: Cell::new(0),
            owed: Cell::new(0),
            kept: OnceCell::new(),
            door: "test",
        };
        (Rc::new(conn), theirs)
    }

    /// Frames of a 4-byte length and that many bytes.
    async fn next(reader: &mut FrameReader, conn: &Conn) -> Result<Vec<u8>, ReadEnd<()>> {
        let len = |h: &[u8]| Ok(u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize);
        reader.next(conn, 4, len).await.map(|f| f[4..].to_vec())
    }

    fn read(reader: &mut FrameReader, conn: &Conn) -> Result<Vec<u8>, ReadEnd<()>> {
        smol::block_on(next(reader, conn))
    }

    #[test]
    fn pipelined_frames_arrive_whole_and_in_order() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        let mut reader = FrameReader::new(&conn);
        peer.write_all(&[0, 0, 0, 3, 7, 8, 9, 0, 0, 0, 1, 4, 0, 0])
            .unwrap();
        assert_eq!(read(&mut reader, &conn).ok(), Some(vec![7, 8, 9]));
        assert_eq!(read(&mut reader, &conn).ok(), Some(vec![4]));
        // The third frame's header arrives in two pieces.
        peer.write_all(&[0, 2, 5, 6]).unwrap();
        assert_eq!(read(&mut reader, &conn).ok(), Some(vec![5, 6]));
        assert_eq!(doors.borrow().partial_in_held(), 0, "nothing held after");
    }

    #[test]
    fn a_silent_new_connection_and_a_stalled_frame_are_cut() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, _peer) = connection(&doors);
        let mut reader = FrameReader::new(&conn);
        assert!(matches!(read(&mut reader, &conn), Err(ReadEnd::Cut)));
        // Once a connection has spoken it may stay silent...
        let (conn, mut peer) = connection(&doors);
        let mut reader = FrameReader::new(&conn);
        peer.write_all(&[0, 0, 0, 1, 9]).unwrap();
        assert_eq!(read(&mut reader, &conn).ok(), Some(vec![9]));
        let waiting = smol::block_on(async {
            smol::future::or(async { Some(next(&mut reader, &conn).await) }, async {
                smol::Timer::after(Duration::from_millis(300)).await;
                None
            })
            .await
        });
        assert!(waiting.is_none(), "no time limit between frames");
        // ...but a frame it starts must finish in time.
        peer.write_all(&[0, 0, 0, 100, 1, 2]).unwrap();
        assert!(matches!(read(&mut reader, &conn), Err(ReadEnd::Cut)));
        assert_eq!(doors.borrow().counters().slow_senders, 2);
    }

    #[test]
    fn frames_being_received_cannot_pass_the_memory_budget() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        let mut reader = FrameReader::new(&conn);
        // Announces 1 MiB against a budget of 100 KB and sends 100 KB: cut
        // at the budget, and nothing stays counted.
        peer.write_all(&(1u32 << 20).to_be_bytes()).unwrap();
        peer.write_all(&[0u8; 100_000]).unwrap();
        assert!(matches!(read(&mut reader, &conn), Err(ReadEnd::Cut)));
        assert_eq!(doors.borrow().counters().refused_memory, 1);
        drop(reader);
        assert_eq!(doors.borrow().partial_in_held(), 0);
        let (conn, mut peer) = connection(&doors);
        let mut reader = FrameReader::new(&conn);
        peer.write_all(&[0, 0, 0, 2, 1, 2]).unwrap();
        assert_eq!(read(&mut reader, &conn).ok(), Some(vec![1, 2]));
    }

    #[test]
    fn a_peer_that_does_not_read_is_refused_and_its_queue_freed_on_close() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        let (outbox, writer) = FrameQueue::new(&conn);
        let ex = smol::LocalExecutor::new();
        let writer = ex.spawn(writer);
        // Far more than the socket buffer and the 10 KB share: the peer
        // never reads.
        let frame = Bytes::from(vec![0u8; 1000]);
        let mut queued = 0;
        smol::block_on(ex.run(async {
            while outbox.push(frame.clone()) {
                queued += 1;
                // Let the writer fill the socket buffer.
                smol::future::yield_now().await;
            }
        }));
        assert!(queued > 10, "{queued} frames taken before the refusal");
        assert_eq!(doors.borrow().counters().slow_readers, 1);
        outbox.close();
        smol::block_on(ex.run(writer));
        assert_eq!(conn.queued.get(), 0, "the queue is freed");
        drop((outbox, conn));
        assert_eq!(doors.borrow().counters().connections, 0);
        let mut rest = Vec::new();
        let _ = peer.read_to_end(&mut rest);
    }
}
