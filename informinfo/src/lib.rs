//! Notice subscriptions of one port's local consumers, shared upstream.
//!
//! Any number of consumers on a node may subscribe to SA notices through
//! local-sa; the master SA sees one subscription per distinct filter per
//! port, and none once nobody holds it. This crate is the logic of that,
//! without I/O:
//!
//! * [`filter`]: what a subscription selects, and OpenSM's matching rules;
//! * [`registry`]: holders per filter, refcounts, the requests the master
//!   must get (subscribe, the exact matching unsubscribe, re-registration);
//! * [`dedup`]: one delivery per notice when several held filters match it;
//! * [`delivery`]: Reports to MAD subscribers, resent until answered, and
//!   the lease of a subscriber that stops answering.
#![forbid(unsafe_code)]

pub mod dedup;
pub mod delivery;
pub mod filter;
#[cfg(any(fuzzing, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod registry;

pub use dedup::Duplicates;
pub use delivery::{Deliveries, DeliveryConfig, DeliveryEvent};
pub use filter::{Filter, Invalid};
pub use registry::{Effect, Refusal, Registry, Reply, UpstreamResult};
