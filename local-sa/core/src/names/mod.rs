//! Names: how host names and IP addresses become GIDs on every node.
//!
//! * [`hosts`]: names and addresses of hosts and of this node's
//!   endpoints, the table they resolve through, and ibacm's two files;
//! * [`directory`]: the ServiceRecord each local-sa publishes at the
//!   master with its host's name and addresses, read back by every other;
//! * [`queries`]: the two tables' requests to the master SA;
//! * `state`: what the agent holds of them — the names from the last
//!   fetch or load, the fetch running, this port's publication.
//!
//! The agent's side (fetching both tables from the master, taking a
//! distributor's loads, publishing) is `agent::names`; the ibacm and
//! kernel doors resolve through the table it shares.

pub mod directory;
pub mod hosts;
pub mod queries;
pub(crate) mod state;
