//! The ibacm door's sockets: Unix stream sockets carrying ibacm's client
//! protocol ([`local_sa_core::acm::wire`]). Each connection gets a reader
//! task (whole messages in, as [`AcmEvent`]s for the driver) and a writer
//! task (replies out, from a bounded queue), like the local API's. A
//! message whose length cannot frame it closes its connection; every other
//! message gets a reply.

use std::cell::Cell;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use bytes::Bytes;
use smol::Async;
use smol::channel::{self, Sender};
use smol::io::AsyncReadExt;
use tracing::{debug, info, warn};

use crate::api::{CONNECTION_QUEUE, write_frames};
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
    listener: Async<UnixListener>,
    path: PathBuf,
}

impl AcmListener {
    /// Binds `path`, mode 0666 like ibacm's. A stale socket file there is
    /// replaced; one that a live server (ibacm, another local-sa) answers
    /// on is left alone and refused with `AddrInUse`.
    pub(crate) fn bind(path: &Path) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another server (ibacm, or another local-sa) answers on it",
            ));
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
        info!(socket = %path.display(), "ibacm protocol listening");
        Ok(Self {
            listener: Async::new(listener)?,
            path: path.to_owned(),
        })
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
            let stream = match self.listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    warn!(socket = %self.path.display(), error = %e, "accepting an ibacm connection failed");
                    smol::Timer::after(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let conn = ids.get();
            ids.set(conn + 1);
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

impl Drop for AcmListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
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
