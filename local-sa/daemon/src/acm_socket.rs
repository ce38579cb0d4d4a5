//! The ibacm door's sockets: Unix stream sockets carrying ibacm's client
//! protocol ([`local_sa_core::doors::acm::wire`]). Each connection gets a reader
//! task (whole messages in, as [`AcmEvent`]s for the driver) and a writer
//! task (replies out, from its [`Outbox`]), under the doors' limits, like
//! the local API's. A message whose length cannot frame it closes its
//! connection; every other message gets a reply.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::rc::{Rc, Weak};

use smol::channel::Sender;
use tracing::{debug, info};

use crate::connection::{Conn, Outbox, ReadEnd, admit, read_frame};
use crate::doors::SharedDoors;
use crate::listener::Listener;
use local_sa_core::doors::acm::wire;
use local_sa_core::request::ConnId;

/// What happened on an ibacm socket.
#[derive(Debug)]
pub(crate) enum AcmEvent {
    /// A connection opened: where its replies go.
    Opened { conn: ConnId, outbox: Outbox },
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
        doors: SharedDoors,
        events: Sender<AcmEvent>,
    ) {
        loop {
            let (conn, stream) = self.listener.accept(&ids).await;
            let Some((stream, outbox, writer)) = admit(&doors, stream, crate::doors::ACM_DOOR)
            else {
                continue;
            };
            if events
                .send(AcmEvent::Opened { conn, outbox })
                .await
                .is_err()
            {
                return;
            }
            debug!(conn, "ibacm connection opened");
            let Some(ex) = ex.upgrade() else { return };
            ex.spawn(writer).detach();
            ex.spawn(read_messages(conn, stream, events.clone()))
                .detach();
        }
    }
}

async fn read_messages(conn: ConnId, stream: Rc<Conn>, events: Sender<AcmEvent>) {
    let mut first = true;
    loop {
        let mut header = [0u8; wire::HEADER_LEN];
        let body_len =
            |h: &[u8; wire::HEADER_LEN]| wire::message_len(h).map(|n| n - wire::HEADER_LEN);
        let body = match read_frame(&stream, &mut header, body_len, first).await {
            Ok(body) => body,
            Err(ReadEnd::Unframeable(e)) => {
                debug!(conn, error = %e, "closing an ibacm connection whose message cannot be framed");
                break;
            }
            Err(ReadEnd::Closed | ReadEnd::Cut) => break,
        };
        first = false;
        let mut message = Vec::with_capacity(wire::HEADER_LEN + body.len());
        message.extend_from_slice(&header);
        message.extend_from_slice(&body);
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
