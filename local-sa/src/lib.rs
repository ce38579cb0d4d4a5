//! local-sa: a per-node InfiniBand Subnet Administration agent.
//!
//! What exists so far is the device layer: [`umad`] (the user MAD device,
//! with reader/writer threads feeding smol channels and a request/response
//! client) and [`port`] (port facts from sysfs and port events).

pub mod agent;
pub mod port;
pub mod port_events;
pub mod store;
mod sys;
pub mod umad;
