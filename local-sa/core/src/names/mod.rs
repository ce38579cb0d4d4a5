//! Names: how host names and IP addresses become GIDs on every node.
//!
//! * [`hosts`]: names and addresses of hosts and of this node's
//!   endpoints, the table they resolve through, and ibacm's two files;
//! * [`directory`]: the ServiceRecord each local-sa publishes at the
//!   master with its host's name and addresses, read back by every other;
//! * [`queries`]: the two tables' requests to the master SA;
//! * `state`: what the agent holds of them — the names from the last
//!   fetch or load, the fetch running, this port's publication;
//! * `fetching`: the fetch of both tables from the master (whole, or
//!   port by port when cut) and a distributor's loads taking its place;
//! * `publishing`: this port's directory record at the master;
//! * `loads`: a distributor's names table, as names.
//!
//! The agent sends the requests these decide and takes the loads; the
//! ibacm and kernel doors resolve through the table it shares.

pub mod directory;
pub(crate) mod fetching;
pub mod hosts;
pub(crate) mod loads;
pub(crate) mod publishing;
pub mod queries;
pub(crate) mod state;
