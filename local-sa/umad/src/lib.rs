//! Everything local-sa does with the operating system for MADs: the user
//! MAD device (open it, register agents, send and receive MADs), the
//! kernel's ABI, the port's facts in sysfs and its events from libibverbs,
//! and what is peculiar to the simulator's preload. Every `unsafe` line of
//! the project lives in `sys` (private), each with its `// SAFETY:`.

mod abi;
pub mod activation;
mod address;
pub mod address_watch;
mod device;
pub mod fd_store;
pub mod ipoib;
pub mod netlink;
pub mod port;
pub mod port_events;
pub mod process;
pub mod shared_memory;
pub mod simulator;
mod sys;
mod transport;

pub use abi::HeaderLayout;
pub use address::{Address, GSI_QKEY, Grh};
pub use device::{
    AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice, status_hint, transaction_id_seed,
};
pub use simulator::Transport;
pub use transport::{Outlet, UmadTransport};
