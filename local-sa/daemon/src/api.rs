//! The local API server: a Unix socket whose connections carry
//! [`local_sa_core::doors::api`] frames. Each connection gets a reader task
//! (frames in, as [`ApiEvent`]s for the driver) and a writer task (frames
//! out, from its [`Outbox`]), under the doors' limits ([`crate::doors`]). A
//! client that does not read its answers and notices lets its queue grow
//! past its share and is disconnected; whatever it held is released like
//! that of any closed connection. Bad frames get an error frame and never
//! touch another connection.

use std::rc::Rc;

use smol::channel::Sender;
use tracing::{debug, info};

use crate::connection::{Conn, Outbox, ReadEnd, admit, read_frame};
use crate::doors::SharedDoors;
use crate::listener::Listener;

use local_sa_core::doors::api::{Frame, FrameError, api_error, decode_request};
use local_sa_core::quota::LocalUser;
use local_sa_core::request::{ConnId, Request};

/// What happened on the API socket.
#[derive(Debug)]
pub(crate) enum ApiEvent {
    /// A connection opened: where its frames go, and whose it is.
    Opened {
        conn: ConnId,
        outbox: Outbox,
        user: LocalUser,
    },
    /// A request, for the agent of port `agent`.
    Request {
        conn: ConnId,
        agent: usize,
        id: u32,
        request: Request,
    },
    /// A frame that could not be taken: answer with this API error.
    Bad {
        conn: ConnId,
        id: u32,
        status: u16,
        close: bool,
    },
    /// The connection closed.
    Closed { conn: ConnId },
}

/// The listening socket of one port's local API.
#[derive(Debug)]
pub(crate) struct ApiServer {
    listener: Listener,
    /// The served port whose agent its requests go to.
    agent: usize,
}

impl ApiServer {
    /// Serves port `agent`'s API on `listener`.
    pub(crate) fn new(listener: Listener, agent: usize) -> Self {
        Self { listener, agent }
    }

    /// Where it listens.
    pub(crate) fn label(&self) -> &str {
        self.listener.label()
    }

    /// Accepts connections for ever, numbering them from `ids` (shared
    /// with the other doors), spawning their tasks on `ex` and reporting
    /// everything on `events`.
    pub(crate) async fn serve(
        self,
        ex: std::rc::Weak<smol::LocalExecutor<'static>>,
        ids: Rc<std::cell::Cell<ConnId>>,
        doors: SharedDoors,
        events: Sender<ApiEvent>,
    ) {
        loop {
            let (conn, stream) = self.listener.accept(&ids).await;
            let Some((stream, outbox, writer)) = admit(&doors, stream, crate::doors::API_DOOR)
            else {
                continue;
            };
            let uid = stream.admission.user;
            let user = LocalUser {
                uid,
                privileged: umad::process::is_admin(uid),
            };
            let opened = ApiEvent::Opened { conn, outbox, user };
            if events.send(opened).await.is_err() {
                return;
            }
            debug!(conn, "local API connection opened");
            let Some(ex) = ex.upgrade() else { return };
            ex.spawn(writer).detach();
            ex.spawn(read_frames(conn, self.agent, stream, events.clone()))
                .detach();
        }
    }
}

async fn read_frames(conn: ConnId, agent: usize, stream: Rc<Conn>, events: Sender<ApiEvent>) {
    let mut first = true;
    loop {
        let mut len = [0u8; 4];
        let announced = |h: &[u8; 4]| Frame::announced(*h);
        let rest = match read_frame(&stream, &mut len, announced, first).await {
            Ok(rest) => rest,
            Err(ReadEnd::Unframeable(_)) => {
                let _ = events
                    .send(ApiEvent::Bad {
                        conn,
                        id: 0,
                        status: api_error::LENGTH,
                        close: true,
                    })
                    .await;
                break;
            }
            Err(ReadEnd::Closed | ReadEnd::Cut) => break,
        };
        first = false;
        let id = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let event = match Frame::decode(&rest) {
            Ok(frame) => match decode_request(&frame) {
                Ok(request)
                    if request.is_admin() && !umad::process::is_admin(stream.admission.user) =>
                {
                    debug!(
                        conn,
                        uid = stream.admission.user,
                        "a cache-control request from a user who is neither root nor local-sa's: refused"
                    );
                    ApiEvent::Bad {
                        conn,
                        id,
                        status: api_error::DENIED,
                        close: false,
                    }
                }
                Ok(request) => ApiEvent::Request {
                    conn,
                    agent,
                    id,
                    request,
                },
                Err(status) => ApiEvent::Bad {
                    conn,
                    id,
                    status,
                    close: false,
                },
            },
            Err(FrameError::Version(_)) => ApiEvent::Bad {
                conn,
                id,
                status: api_error::VERSION,
                close: false,
            },
            Err(FrameError::Length(_)) => ApiEvent::Bad {
                conn,
                id,
                status: api_error::LENGTH,
                close: true,
            },
        };
        if events.send(event).await.is_err() {
            return;
        }
    }
    let _ = events.send(ApiEvent::Closed { conn }).await;
}

/// Logs where `port`'s API listens.
pub(crate) fn announce(server: &ApiServer, mode: u32, port: &umad::port::PortFacts) {
    info!(%port, socket = %server.label(), mode = format_args!("{mode:o}"), "local API listening");
}
