//! One local connection of either door: its socket with its place in the
//! doors' account ([`crate::doors`]), the queue of frames going out with
//! the bytes in it, and reading frames in under the limits.
//!
//! Frames go out through an [`Outbox`]: the driver queues, a writer task
//! writes. A connection that lets more than its share pile up is not
//! reading; closing it shuts the socket, which ends both tasks at once and
//! frees the queue, however little the peer reads.

use std::cell::Cell;
use std::os::unix::net::UnixStream;
use std::rc::Rc;

use bytes::Bytes;
use smol::Async;
use smol::channel::{self, Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};

use crate::doors::{Admission, Cut, Receiving, SharedDoors};

/// Bytes read from a socket at a time while a frame arrives: memory grows
/// with what came, not with what the frame's length announced.
const READ_CHUNK: usize = 64 << 10;

/// A connection's socket and its place in the account (given back when the
/// last task lets go of it, as the socket closes).
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: Async<UnixStream>,
    pub(crate) admission: Admission,
    /// Which door, for logs.
    pub(crate) door: &'static str,
}

impl Conn {
    /// Counts `cut` against this connection's user and logs it.
    pub(crate) fn note(&self, cut: Cut) {
        let doors = self.admission.doors();
        doors.borrow_mut().note(cut, self.admission.user, self.door);
    }

    fn shutdown(&self) {
        let _ = self.stream.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// A connection a door's listener accepted, if the limits admit it: its
/// socket with its place in the account, its outbox, and its writer task
/// to spawn. `None` when refused (counted and logged; the socket closes
/// as it drops).
pub(crate) fn admit(
    doors: &SharedDoors,
    stream: Async<UnixStream>,
    door: &'static str,
) -> Option<(Rc<Conn>, Outbox, impl Future<Output = ()> + use<>)> {
    let admission = Admission::new(doors, stream.get_ref(), door)?;
    let conn = Rc::new(Conn {
        stream,
        admission,
        door,
    });
    let (outbox, writer) = Outbox::new(&conn);
    Some((conn, outbox, writer))
}

/// Where the driver queues a connection's outgoing frames.
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: Sender<Bytes>,
    queued: Rc<Cell<usize>>,
    conn: Rc<Conn>,
}

impl Outbox {
    /// An outbox for `conn`, and its writer task to spawn.
    pub(crate) fn new(conn: &Rc<Conn>) -> (Self, impl Future<Output = ()> + use<>) {
        let (tx, rx) = channel::unbounded();
        let queued = Rc::new(Cell::new(0));
        let writer = write_frames(Rc::clone(conn), rx, Rc::clone(&queued));
        let outbox = Self {
            tx,
            queued,
            conn: Rc::clone(conn),
        };
        (outbox, writer)
    }

    /// Queues `frame`; false when the connection already has its share of
    /// bytes waiting (it does not read: the caller closes it).
    pub(crate) fn push(&self, frame: Bytes) -> bool {
        let limit = self.conn.admission.doors().borrow().limits().queued_out;
        let queued = self.queued.get() + frame.len();
        if queued > limit && self.queued.get() > 0 {
            self.conn.note(Cut::SlowReader);
            return false;
        }
        self.queued.set(queued);
        self.tx.try_send(frame).is_ok()
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

/// Writes `frames` to the connection until either ends.
async fn write_frames(conn: Rc<Conn>, frames: Receiver<Bytes>, queued: Rc<Cell<usize>>) {
    let mut stream = &conn.stream;
    while let Ok(frame) = frames.recv().await {
        let written = stream.write_all(&frame).await;
        queued.set(queued.get().saturating_sub(frame.len()));
        if written.is_err() {
            break;
        }
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

/// Reads one frame: `header_len` bytes, then as many more as `body_len`
/// says the header announces; returns the whole frame. The first byte may
/// take as long as it takes (unless `first`: a new connection's first
/// frame must start in time); the rest must arrive within the frame time,
/// and the bytes held meanwhile count against the shared budget.
pub(crate) async fn read_frame<E>(
    conn: &Conn,
    header_len: usize,
    body_len: impl FnOnce(&[u8]) -> Result<usize, E>,
    first: bool,
) -> Result<Vec<u8>, ReadEnd<E>> {
    let mut frame = vec![0u8; header_len.max(1)];
    let limits = conn.admission.doors().borrow().limits();
    let mut stream = &conn.stream;
    let start = stream.read_exact(&mut frame[..1]);
    let started = if first {
        with_deadline(limits.first_frame_time, start).await
    } else {
        Some(start.await)
    };
    match started {
        None => {
            conn.note(Cut::SlowSender);
            return Err(ReadEnd::Cut);
        }
        Some(Err(_)) => return Err(ReadEnd::Closed),
        Some(Ok(())) => {}
    }
    let rest = async {
        stream
            .read_exact(&mut frame[1..])
            .await
            .map_err(|_| ReadEnd::Closed)?;
        let len = header_len + body_len(&frame).map_err(ReadEnd::Unframeable)?;
        let mut account = Receiving::new(conn.admission.doors());
        while frame.len() < len {
            let n = (len - frame.len()).min(READ_CHUNK);
            if !account.grow(n) {
                conn.note(Cut::Memory);
                return Err(ReadEnd::Cut);
            }
            let at = frame.len();
            frame.resize(at + n, 0);
            stream
                .read_exact(&mut frame[at..])
                .await
                .map_err(|_| ReadEnd::Closed)?;
        }
        Ok(frame)
    };
    match with_deadline(limits.frame_time, rest).await {
        Some(result) => result,
        None => {
            conn.note(Cut::SlowSender);
            Err(ReadEnd::Cut)
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
    use std::time::Duration;

    use super::*;
    use crate::doors::{DoorLimits, Doors, SharedDoors};

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
        let admission = Admission::new(doors, &ours, "test").unwrap();
        let conn = Conn {
            stream: Async::new(ours).unwrap(),
            admission,
            door: "test",
        };
        (Rc::new(conn), theirs)
    }

    /// Frames of a 4-byte length and that many bytes.
    async fn next(conn: &Conn, first: bool) -> Result<Vec<u8>, ReadEnd<()>> {
        let len = |h: &[u8]| Ok(u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize);
        read_frame(conn, 4, len, first)
            .await
            .map(|f| f[4..].to_vec())
    }

    fn read(conn: &Conn, first: bool) -> Result<Vec<u8>, ReadEnd<()>> {
        smol::block_on(next(conn, first))
    }

    #[test]
    fn a_frame_arrives_whole() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        peer.write_all(&[0, 0, 0, 3, 7, 8, 9]).unwrap();
        assert_eq!(read(&conn, true).ok(), Some(vec![7, 8, 9]));
    }

    #[test]
    fn a_silent_new_connection_and_a_stalled_frame_are_cut() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, _peer) = connection(&doors);
        assert!(matches!(read(&conn, true), Err(ReadEnd::Cut)));
        // Once a connection has spoken it may stay silent...
        let (conn, mut peer) = connection(&doors);
        let waiting = smol::block_on(async {
            smol::future::or(async { Some(next(&conn, false).await) }, async {
                smol::Timer::after(Duration::from_millis(300)).await;
                None
            })
            .await
        });
        assert!(waiting.is_none(), "no time limit between frames");
        // ...but a frame it starts must finish in time.
        peer.write_all(&[0, 0, 0, 100, 1, 2]).unwrap();
        assert!(matches!(read(&conn, false), Err(ReadEnd::Cut)));
        assert_eq!(doors.borrow().counters().slow_senders, 2);
    }

    #[test]
    fn frames_being_received_cannot_pass_the_memory_budget() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        // Announces 1 MiB against a budget of 100 KB and sends 100 KB: cut
        // at the budget, and nothing stays counted.
        peer.write_all(&(1u32 << 20).to_be_bytes()).unwrap();
        peer.write_all(&[0u8; 100_000]).unwrap();
        assert!(matches!(read(&conn, true), Err(ReadEnd::Cut)));
        assert_eq!(doors.borrow().counters().refused_memory, 1);
        let (conn, mut peer) = connection(&doors);
        peer.write_all(&[0, 0, 0, 2, 1, 2]).unwrap();
        assert_eq!(read(&conn, true).ok(), Some(vec![1, 2]));
    }

    #[test]
    fn a_peer_that_does_not_read_is_refused_and_its_queue_freed_on_close() {
        let doors = Doors::shared(quick(), 1 << 20);
        let (conn, mut peer) = connection(&doors);
        let (outbox, writer) = Outbox::new(&conn);
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
        assert_eq!(outbox.queued.get(), 0, "the queue is freed");
        drop((outbox, conn));
        assert_eq!(doors.borrow().counters().connections, 0);
        let mut rest = Vec::new();
        let _ = peer.read_to_end(&mut rest);
    }
}
