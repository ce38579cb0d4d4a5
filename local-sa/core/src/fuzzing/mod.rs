//! The fuzz harnesses of the core, compiled only for the fuzz crate
//! (`--cfg fuzzing`) and this crate's corpus-replay tests (the `fuzzing`
//! feature): `fuzz/fuzz_targets/*.rs` call them, and `tests/fuzz_corpus.rs`
//! replays the committed corpus through them on stable Rust.

mod acm;
mod kept_tables;
mod memberships;
mod netlink;
mod opensm_config;
mod path_engine;
mod sa_core;

pub use acm::acm;
pub use kept_tables::kept_tables;
pub use memberships::memberships;
pub use netlink::netlink;
pub use opensm_config::opensm_config;
pub use path_engine::path_engine;
pub use sa_core::sa_core;
