//! The local-sa agent without I/O: everything it decides, as state
//! machines fed bytes, requests and the time, that never touch a
//! descriptor, a clock, the environment or a random source.
//!
//! * [`agent`]: the SA agent of one port ([`agent::SaCore`]): PathRecord
//!   answers from the [`store`] (and a port's [`partitions`]) through the
//!   [`path_query`] engine, loads,
//!   forwarding to the master SA, refresh, notice subscriptions and
//!   multicast [`memberships`] proxied with reference counts;
//! * [`requester`]: requests to an SA and their answers (TransactionIDs,
//!   retries, RMPP), for the agent and for lsaquery alike;
//! * [`address`], [`request`]: what goes in and out: MADs with the
//!   core's own address type, and requests from programs on this node;
//! * [`doors`]: the local API, ibacm's client protocol and the kernel's
//!   RDMA_NL_LS, each a wire format and a service turning its messages
//!   into requests and the agents' replies back; [`path_flags`], what
//!   their path entries say; [`names`]: host names and IP addresses to
//!   GIDs, the directory of them every local-sa keeps at the master SA,
//!   and what the agent holds of them;
//! * [`pacing`]: how the fabric's agents spread their calls on a new
//!   master SA;
//! * [`path_engine`]: every port's PathRecord table computed from the
//!   fabric's description (forwarding tables, ports, links, partitions),
//!   as OpenSM would answer it, for a distributor next to the master;
//!   [`opensm_config`]: what OpenSM's own files say that its SA does not
//!   publish (partitions' names and SLs, the QoS policy);
//! * [`outlook`]: what a driver acts on besides the MADs to send;
//!   [`sa_class`]: whether the port's SA class is local-sa's to hold or a
//!   subnet manager's.
//!
//! A door (the umad transport, the local API socket) decodes its wire
//! format into these types and encodes the agent's answers back; the
//! daemon moves them. Tests drive the agent against a fake master SA on a
//! virtual clock; the fuzz targets feed it raw bytes (see `fuzz/`).
#![forbid(unsafe_code)]

pub mod address;
pub mod agent;
pub mod config;
pub mod counters;
pub mod doors;
#[cfg(any(fuzzing, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod inbound;
pub mod kept_tables;
pub mod lid_walk;
pub mod load_flags;
pub mod log_limit;
pub mod master_activity;
pub mod memberships;
pub mod names;
pub mod opensm_config;
pub mod outlook;
pub mod pacing;
pub mod partitions;
pub mod path_engine;
pub mod path_flags;
pub mod path_query;
pub mod quota;
pub mod registrations_record;
pub mod request;
pub mod requester;
mod respond;
pub mod sa_class;
pub mod stats;
pub mod store;
mod transfers;

pub use address::{Address, Received, Transmit};
pub use agent::SaCore;
pub use config::{AgentConfig, PortIdentity, QosCacheLimits, SmKey};
pub use counters::Counters;
pub use transfers::TransferLimits;
