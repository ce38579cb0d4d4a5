//! Conformance support for local-sa: simulated InfiniBand fabrics (ibsim
//! with OpenSM as the master SA), the real clients that run on them
//! (saquery), and golden MADs captured from them.
//!
//! Everything here drives real peers, so a test that uses a [`SimulatedFabric`]
//! needs the Debian packages `ibsim-utils opensm infiniband-diags`; without
//! them [`SimulatedFabric::builder`]`(..).start()` returns
//! [`FabricError::NotInstalled`] naming what to install.
//!
//! ```no_run
//! use conformance::{SimulatedFabric, Topology};
//! let fabric = SimulatedFabric::builder(Topology::fat_tree(4, 4, 2)).start()?;
//! let out = fabric.node("h2")?.saquery(["-c"])?;
//! assert!(out.stdout.contains("Capability mask"));
//! # Ok::<(), conformance::FabricError>(())
//! ```

pub mod acm_client;
pub mod bench;
pub mod fabric;
pub mod golden;
pub mod kernel_end;
pub mod local_sa;
pub mod opensm_dump;
pub mod path_answers;
mod process;
pub mod rdmacm;
pub mod sa_agent;
pub mod sa_compare;
pub mod saquery;
pub mod systemd;
mod tools;
pub mod topology;
mod wait;

pub use fabric::{
    FabricBuilder, FabricError, Node, NodeCommand, NodePort, NodeProcess, RunOutput,
    SimulatedFabric,
};
pub use local_sa::LocalSa;
pub use opensm_dump::SaDump;
pub use process::command_as_user;
pub use tools::{preload_library, program, report, sibling};
pub use topology::Topology;
pub use wait::{closed_by_peer, eventually};
