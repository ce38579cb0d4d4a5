//! The local-sa agent without I/O.
//!
//! * [`agent`]: the SA core, a state machine fed MADs, local requests and
//!   the time: PathRecord answers from the [`store`], forwarding to the
//!   master SA, refresh, loads, notices and multicast memberships;
//! * [`api`]: the local API's wire format;
//! * [`text`]: how the command-line tools read numbers.

pub mod agent;
pub mod api;
pub mod store;
pub mod text;
