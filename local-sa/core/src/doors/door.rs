//! The one shape every door has, so that the daemon serves them all with
//! one loop (quinn-proto's shape, like the agent's): inputs in
//! ([`Door::handle_input`]: a connection opened, a whole message on it,
//! one it could not frame, a datagram, the connection closed), the
//! agents' replies in ([`Door::handle_reply`]), and out of
//! [`Door::poll_output`] bytes for a connection, closes and requests for
//! an agent; [`Door::poll_timeout`] and [`Door::handle_timeout`] for the
//! door's own deadlines; port changes and learned names as they happen.
//!
//! A stream door's [`Framing`] tells the daemon where each message ends,
//! so that the door is handed whole messages only. A datagram door (the
//! kernel's) is one connection, named by [`Door::datagram_conn`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::config::PortIdentity;
use crate::names::hosts::{HostAddress, Names};
use crate::quota::LocalUser;
use crate::request::{ConnId, LocalReply, Request};

/// Who sent a datagram, as the socket's source address says (a netlink
/// socket's: the kernel is port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramSender {
    /// The kernel.
    Kernel,
    /// Another process, with its port ID.
    Process(u32),
    /// A sender the address does not name.
    Unknown,
}

/// How a stream door's messages are framed: a header of a fixed length
/// that announces how many bytes follow it.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// Bytes of the header.
    pub header_len: usize,
    /// The bytes after the header a header announces; `Err` with why
    /// when it cannot frame a message (the connection is then cut off:
    /// its byte stream is lost).
    pub body_len: fn(&[u8]) -> Result<usize, Unframeable>,
}

/// Why a stream door's header frames no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unframeable {
    /// Fewer bytes than the door's header.
    ShortHeader,
    /// The ibacm header's length field.
    Acm(crate::doors::acm::wire::FrameError),
    /// The local API's length field.
    Api(crate::doors::api::wire::FrameError),
}

impl std::fmt::Display for Unframeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ShortHeader => f.write_str("a short header"),
            Self::Acm(e) => e.fmt(f),
            Self::Api(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Unframeable {}

/// Something that happened at a door's socket.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// A stream connection opened, from `user`.
    Opened {
        /// The connection.
        conn: ConnId,
        /// Its peer.
        user: LocalUser,
    },
    /// A whole message on a stream connection, its header included.
    Message {
        /// The connection.
        conn: ConnId,
        /// The message.
        bytes: &'a [u8],
    },
    /// A header that cannot frame a message: the stream is lost.
    Unframeable {
        /// The connection.
        conn: ConnId,
    },
    /// A datagram on a datagram door's socket, and who sent it.
    Datagram {
        /// Its sender, as the socket's source address says.
        from: DatagramSender,
        /// The datagram.
        bytes: &'a [u8],
    },
    /// A stream connection closed (the agents are told separately).
    Closed {
        /// The connection.
        conn: ConnId,
    },
}

/// What a door asks the daemon to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send `bytes` on connection `conn`.
    Send {
        /// The connection.
        conn: ConnId,
        /// A whole message (or datagram).
        bytes: Bytes,
    },
    /// Close connection `conn` once what is queued for it is sent.
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Give `request` to SA agent `agent` as local request `id` of
    /// connection `conn`; its reply comes back through
    /// [`Door::handle_reply`].
    Ask {
        /// Which agent.
        agent: usize,
        /// The connection asking.
        conn: ConnId,
        /// The request number.
        id: u32,
        /// The request.
        request: Request,
    },
    /// Tell every agent that connection `conn` is `user`'s: what it
    /// registers counts against that user's limits.
    Registrant {
        /// The connection.
        conn: ConnId,
        /// Its user.
        user: LocalUser,
    },
}

/// A door: a client protocol translated into the agents' requests.
pub trait Door {
    /// How its stream messages are framed; `None` for a datagram door.
    fn framing(&self) -> Option<Framing>;

    /// The connection number of a datagram door's one peer.
    fn datagram_conn(&self) -> Option<ConnId> {
        None
    }

    /// Something happened at the door's socket, at `now`.
    fn handle_input(&mut self, now: Instant, input: Input<'_>);

    /// An agent answered a request of connection `reply.conn`, which this
    /// door asked.
    fn handle_reply(&mut self, now: Instant, reply: &LocalReply);

    /// What to do next, in order.
    fn poll_output(&mut self) -> Option<Output>;

    /// When [`Door::handle_timeout`] is next due.
    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    /// Deadlines up to `now` passed.
    fn handle_timeout(&mut self, _now: Instant) {}

    /// Port `agent` changed (LID, GID, SM).
    fn handle_port_change(&mut self, _agent: usize, _port: PortIdentity) {}

    /// The names from the operator's files (read again on SIGHUP); they
    /// win over the learned ones.
    fn set_names(&mut self, _names: Names) {}

    /// The names the agents learned from the master SA.
    fn set_learned_names(&mut self, _names: Arc<Names>) {}

    /// The names and addresses each of the door's endpoints owns, in the
    /// order of its endpoints (they change as IPoIB addresses come and go).
    fn set_owned_addresses(&mut self, _owned: &[Vec<HostAddress>]) {}

    /// Whether connection `conn` waits for an answer the door owes it (an
    /// agent has not replied yet).
    fn is_waiting(&self, _conn: ConnId) -> bool {
        false
    }

    /// The door's counters, `name value`, for the counters file and the
    /// metrics.
    fn counter_fields(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
