//! The doors: the ways into local-sa other than QP1 MADs, each an I/O-free
//! translation between a client's bytes and the agents' typed
//! [`Request`](crate::request::Request)s and
//! [`LocalReply`](crate::request::LocalReply)s. The daemon moves the bytes.
//!
//! * [`api`]: the local API (docs/local-api.md), local-sa's own protocol
//!   on a Unix socket, for programs that cannot use the umad device;
//! * [`acm`]: ibacm's client protocol (`ib_acme`, libibacm, librdmacm);
//! * [`netlink`]: the kernel's RDMA_NL_LS queries.
//!
//! Each is a `wire` module (the format, views and builders, no state) and,
//! where the door keeps state between a request and its reply, a
//! `service`. The agent never imports a door: what both speak (requests,
//! replies, path flags, group events) lives below them.

pub mod acm;
pub mod api;
pub mod netlink;

pub mod door;

pub use door::{DatagramSender, Door, Framing, Input, Output, Unframeable};
