//! The path engine: every port's PathRecord table computed from the
//! fabric's description, byte for byte as OpenSM answers it.
//!
//! The master SA publishes everything a path is made of through ordinary
//! queries: the switches' linear forwarding tables (LFTRecords: OpenSM
//! answers from the tables its routing engine computed, the ones its own
//! PathRecords follow), the ports (PortInfoRecords: LIDs, LMC, MTUCap,
//! widths and speeds, capability masks, SubnetTimeOut), the links
//! (LinkRecords), the nodes (NodeRecords), the partitions
//! (P_KeyTableRecords), alias GUIDs (GUIDInfoRecords) and, for a master
//! that applies QoS, the SL to VL tables. [`FabricRecords`] holds them as
//! read; [`Fabric::build`] checks and indexes them, refusing what does not
//! hold together with an error that names the record
//! ([`DescriptionError`]) — a way through the forwarding tables that leads
//! nowhere costs only the pairs that take it, as at OpenSM
//! ([`Fabric::route_faults`]); [`Fabric::table`] then computes one port's
//! table — the answer to the GetTable a local-sa makes for its port
//! (SGID, and the P_Key for a partition's table) — and [`Fabric::pair`]
//! the records of one port pair (what a Get or a GetTable naming both ends
//! gets).
//!
//! It follows OpenSM 3.3's `osm_sa_path_record.c` step by step (module
//! [`port_records`]): destinations in OpenSM's port-table order, alias GUIDs
//! included; the LID pairs of two LMC ranges with their Preference; the
//! walk through each switch's forwarding table (at most 64 switches); the
//! least MTUCap and rate of every port the walk checks ([`rate`]); the
//! reverse walk for Reversible; PacketLifeTime from SubnetTimeOut (0 on a
//! port's path to itself); the common P_Key as OpenSM picks it, or the
//! asked one ([`pkeys`]); the partition's SL; on a master with QoS, SLs
//! that some hop maps to VL15 left out. Walks are not repeated per source:
//! [`routes`] works out once, for each switch and destination LID, what
//! the rest of the way from that switch holds.
//!
//! What it cannot see it does not guess: the SL of each partition
//! (`sl=` in OpenSM's partitions.conf) is not published, so it is given
//! ([`Fabric::set_partition_sl`], learnt from one answer of the master per
//! partition); a table that needs one it was not given is refused
//! ([`TableError`]). A routing engine's path-SL hook (LASH, DFSSSP,
//! torus-2QoS), a QoS policy's levels and OpenSM options other than the
//! defaults (`enable_quirks`, `allow_both_pkeys`,
//! `use_original_extended_sa_rates_only`) are not published either: the
//! fabric follows them when told ([`Fabric::set_qos_levels`],
//! [`Fabric::set_tavor_quirk`], [`Fabric::set_allow_both_pkeys`],
//! [`Fabric::set_original_rates_only`], from OpenSM's own configuration),
//! and a distributor compares a sample of computed records with the
//! master's own answers before it sends any (lsaquery's `--distribute
//! --compute`).
//!
//! No I/O, no locks, no panics on any input: a [`Fabric`] is immutable
//! once built (but for the partitions' SLs and the settings above) and
//! `Sync`, so tables can be computed on every core at once.

mod build;
mod description_error;
mod fabric;
mod physical;
pub mod pkeys;
pub mod port_records;
mod qos_groups;
pub mod qos_levels;
pub mod rate;
pub mod routes;
mod sample;
pub mod synthetic;

#[cfg(test)]
mod tests;

pub use build::FabricRecords;
pub use description_error::DescriptionError;
pub use fabric::{Endport, Fabric};
pub use port_records::{Table, TableError};
pub use qos_groups::ResolveError;
pub use qos_levels::QosLevels;
pub use sample::{Difference, PairCheck, compare_pair};
