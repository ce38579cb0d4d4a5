//! local-sa: a per-node InfiniBand Subnet Administration agent.
//!
//! * [`agent`]: the SA core, without I/O: PathRecord answers from the
//!   [`store`], forwarding to the master SA, refresh, loads, notices;
//! * [`daemon`]: the core driven by the umad transport on smol, and the
//!   local API server ([`api`] is its wire format);
//! * [`umad`]: the user MAD device, its reader/writer threads and a
//!   request/response client; [`port`] and [`port_events`]: the port's
//!   facts and changes.

pub mod agent;
pub mod api;
pub mod cli;
pub mod daemon;
pub mod port;
pub mod port_events;
pub mod store;
mod sys;
pub mod umad;
