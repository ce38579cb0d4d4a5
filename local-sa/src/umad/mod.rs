//! The user MAD device: open it, register agents, send and receive MADs,
//! and the request/response client built on that.

mod abi;
mod address;
mod client;
mod device;
pub mod simulator;
mod transport;

pub use abi::HeaderLayout;
pub use address::{GSI_QKEY, Grh, MadAddress};
pub use client::{MadClient, RequestError, RequestOptions, Response};
pub use device::{AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice};
pub use transport::UmadTransport;
