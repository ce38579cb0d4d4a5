//! local-sa: a per-node InfiniBand Subnet Administration agent.
//!
//! Not implemented yet; see the README for what exists today.
