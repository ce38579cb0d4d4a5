//! Notice-subscription registry for local-sa.
//!
//! Not implemented yet: this crate will hold the per-port refcounted
//! InformInfo registry (local subscribers, one upstream subscription per
//! distinct key, leases and notice fan-out).
