//! The local API door: local-sa's own protocol on a Unix socket
//! (docs/local-api.md), its [`wire`] format.

pub mod wire;

pub use wire::*;
