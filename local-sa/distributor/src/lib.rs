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
//! * [`watch`]: the watch as a state machine of effects, and its driver
//!   ([`watch::driver::WatchDriver`]), which carries out those that are
//!   only MADs.
//! * [`batch`]: queries a window at a time, their ends kept in the order
//!   asked — the watch driver's, and on their own the program's reads
//!   and checks before a fill ([`computed::fabric_read`],
//!   [`computed::sample_check`] give the batches).
//! * [`sends`]: what the fill, the driver and a batch ask the wire for,
//!   one interface for the program and the storm simulator to carry out.
//! * [`shard`]: one of several distributors' share of the nodes.
//!
//! Nothing here reads a clock, a socket or a file but OpenSM's
//! configuration ([`computed::opensm_input`]), which the driver names.

pub mod batch;
pub mod computed;
pub mod fill;
pub mod sends;
pub mod sent_tables;
pub mod shard;
pub mod watch;
