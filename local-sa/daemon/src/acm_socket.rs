//! The ibacm door's sockets: Unix stream sockets carrying ibacm's client
//! protocol ([`local_sa_core::acm::wire`]). Each connection gets a reader
//! task (whole messages in, as [`AcmEvent`]s for the driver) and a writer
//! task (replies out, from a bounded queue), like the local API's. A
//! message whose length cannot frame it closes its connection; every other
//! message gets a reply.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::rc::{Rc, Weak};

use bytes::Bytes;
use smol::Async;
use smol::channel::{self, Sender};
use smol::io::AsyncReadExt;
use tracing::{debug, info};

use crate::api::{CONNECTION_QUEUE, write_frames};
use crate::listener::Listener;
use local_sa_core::acm::wire;
use local_sa_core::request::ConnId;

/// What happened on an ibacm socket.
#[derive(Debug)]
pub(crate) enum AcmEvent {
    /// A connection opened: where its replies go.
    Opened { conn: ConnId, writer: Sender<Bytes> },
    /// A whole message.
    Message { conn: ConnId, message: Vec<u8> },
    /// The connection closed.
    Closed { conn: ConnId },
}

/// One listening socket.
#[derive(Debug)]
pub(crate) struct AcmListener {
    listener: Listener,
}

impl AcmListener {
    /// Binds `path`, mode 0666 like ibacm's (see [`Listener::bind`]).
    pub(crate) fn bind(path: &Path) -> io::Result<Self> {
        Ok(Self::new(Listener::bind(path, 0o666, None)?))
    }

    /// Serves on `listener`.
    pub(crate) fn new(listener: Listener) -> Self {
        info!(socket = %listener.label(), "ibacm protocol listening");
        Self { listener }
    }

    /// Accepts connections for ever, numbering them from `ids`, spawning
    /// their tasks on `ex` and reporting everything on `events`.
    pub(crate) async fn serve(
        self,
        ex: Weak<smol::LocalExecutor<'static>>,
        ids: Rc<Cell<ConnId>>,
        events: Sender<AcmEvent>,
    ) {
        loop {
            let (conn, stream) = self.listener.accept(&ids).await;
            let (tx, rx) = channel::bounded(CONNECTION_QUEUE);
            if events
                .send(AcmEvent::Opened { conn, writer: tx })
                .await
                .is_err()
            {
                return;
            }
            debug!(conn, "ibacm connection opened");
            let Some(ex) = ex.upgrade() else { return };
            let stream = Rc::new(stream);
            ex.spawn(write_frames(Rc::clone(&stream), rx)).detach();
            ex.spawn(read_messages(conn, stream, events.clone()))
                .detach();
        }
    }
}

async fn read_messages(
    conn: ConnId,
    stream: Rc<Async<std::os::unix::net::UnixStream>>,
    events: Sender<AcmEvent>,
) {
    let mut stream = &*stream;
    loop {
        let mut header = [0u8; wire::HEADER_LEN];
        if stream.read_exact(&mut header).await.is_err() {
            break;
        }
        let len = match wire::message_len(&header) {
            Ok(n) => n,
            Err(e) => {
                debug!(conn, error = %e, "closing an ibacm connection whose message cannot be framed");
                break;
            }
        };
        let mut message = vec![0u8; len];
        message[..wire::HEADER_LEN].copy_from_slice(&header);
        if stream
            .read_exact(&mut message[wire::HEADER_LEN..])
            .await
            .is_err()
        {
            break;
        }
        if events
            .send(AcmEvent::Message { conn, message })
            .await
            .is_err()
        {
            return;
        }
    }
    let _ = events.send(AcmEvent::Closed { conn }).await;
}
