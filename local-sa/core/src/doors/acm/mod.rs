//! The ibacm door: ibacm's client protocol ([`wire`]), spoken by
//! `ib_acme`, libibacm and librdmacm's `rdma_getaddrinfo`, answered by the
//! SA agents through [`service::AcmService`]. docs/acm.md describes what
//! is served and how it differs from ibacm.

pub mod service;
pub mod wire;

pub use service::{AcmConfig, AcmService, Endpoint, SourceRoute};
