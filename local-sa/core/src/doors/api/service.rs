//! The local API door's logic: whole frames from a connection become
//! requests for the agent of the port this socket serves, or error
//! frames; the agent's replies become answer and notice frames. Which
//! user a connection is decides whether it may use the administrators'
//! requests (cache control) and whose limits its registrations count
//! against.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use tracing::debug;

use super::wire::{Frame, FrameError, api_error, decode_request, error_frame, reply_frames};
use crate::doors::{Door, Framing, Input, Output, Unframeable};
use crate::quota::LocalUser;
use crate::request::{ConnId, LocalReply};

/// One port's local API.
#[derive(Debug)]
pub struct ApiService {
    /// The agent its requests go to.
    agent: usize,
    /// Who each open connection is.
    users: HashMap<ConnId, LocalUser>,
    out: VecDeque<Output>,
}

impl ApiService {
    /// The API of agent `agent`'s port.
    pub fn new(agent: usize) -> Self {
        Self {
            agent,
            users: HashMap::new(),
            out: VecDeque::new(),
        }
    }

    /// Answers request `id` of `conn` with API error `status`, closing the
    /// connection after it if `close`.
    fn refuse(&mut self, conn: ConnId, id: u32, status: u16, close: bool) {
        debug!(
            conn,
            status = format_args!("{status:#06x}"),
            "a bad local API frame"
        );
        self.out.push_back(Output::Send {
            conn,
            bytes: error_frame(id, status).encode(),
        });
        if close {
            self.out.push_back(Output::Close { conn });
        }
    }

    fn message(&mut self, conn: ConnId, bytes: &[u8]) {
        let rest = bytes.get(4..).unwrap_or_default();
        let id = rest
            .get(4..8)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let frame = match Frame::decode(rest) {
            Ok(frame) => frame,
            Err(FrameError::Version(_)) => return self.refuse(conn, id, api_error::VERSION, false),
            Err(FrameError::Length(_)) => return self.refuse(conn, id, api_error::LENGTH, true),
        };
        let request = match decode_request(&frame) {
            Ok(request) => request,
            Err(status) => return self.refuse(conn, id, status, false),
        };
        let user = self.users.get(&conn).copied();
        if request.is_admin() && !user.is_some_and(|u| u.privileged) {
            debug!(
                conn,
                uid = user.map_or(u32::MAX, |u| u.uid),
                "a cache-control request from a user who is neither root nor local-sa's: refused"
            );
            return self.refuse(conn, id, api_error::DENIED, false);
        }
        self.out.push_back(Output::Ask {
            agent: self.agent,
            conn,
            id,
            request,
        });
    }
}

/// The length field's announcement: the bytes after it.
fn body_len(header: &[u8]) -> Result<usize, Unframeable> {
    let field = header.first_chunk::<4>().ok_or(Unframeable::ShortHeader)?;
    Frame::announced(*field).map_err(Unframeable::Api)
}

impl ApiService {
    /// How its frames are framed: a 4-byte length field announcing the
    /// rest.
    pub const FRAMING: Framing = Framing {
        header_len: 4,
        body_len,
    };
}

impl Door for ApiService {
    fn framing(&self) -> Option<Framing> {
        Some(Self::FRAMING)
    }

    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match input {
            Input::Opened { conn, user } => {
                self.users.insert(conn, user);
                self.out.push_back(Output::Registrant { conn, user });
            }
            Input::Message { conn, bytes } => self.message(conn, bytes),
            Input::Unframeable { conn } => self.refuse(conn, 0, api_error::LENGTH, true),
            Input::Closed { conn } => {
                self.users.remove(&conn);
            }
            Input::Datagram { .. } => {}
        }
    }

    fn handle_reply(&mut self, _now: Instant, reply: &LocalReply) {
        for frame in reply_frames(reply) {
            self.out.push_back(Output::Send {
                conn: reply.conn,
                bytes: frame.encode(),
            });
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests;
