//! The local API door: local-sa's own protocol on a Unix socket
//! (docs/local-api.md): its [`wire`] format and its [`service`].

pub mod service;
pub mod wire;

pub use service::ApiService;
pub use wire::*;
