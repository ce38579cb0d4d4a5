//! A distributor without I/O: what `lsaquery --distribute` and
//! `local-sa-distributor.service` decide, apart from how they move MADs.
//!
//! * [`computed`]: a fabric's description read, its tables computed by
//!   the core's path engine, and which kinds of table the check against
//!   the master proved ([`computed::Prepared`]).
//! * [`fill`]: one distribution as a state machine
//!   ([`fill::Distribution`]): which node's tables to fetch or compute,
//!   what to push each node and in which order, windows, retries and what
//!   each node ends with. It says what to send (`poll_send`) and is told
//!   how each send ended (`handle_end`); the driver moves the MADs (the
//!   client's async session in lsaquery, the storm simulator's virtual
//!   fabric in the benches), so the two run the same decisions.
//! * [`shard`]: one of several distributors' share of the nodes.
//!
//! Nothing here reads a clock, a socket or a file but OpenSM's
//! configuration ([`computed::opensm_input`]), which the driver names.

pub mod computed;
pub mod fill;
pub mod sends;
pub mod sent_tables;
pub mod shard;
pub mod watch;
