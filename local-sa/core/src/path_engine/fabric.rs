//! The fabric as the engine walks it: physical ports with what a path
//! takes from them, switches with their forwarding tables, endports (the
//! ports with a LID and GUID: adapters' ports, switches' port 0) and the
//! alias table in OpenSM's order. Built by [`Fabric::build`]; read-only
//! after it, but for the partitions' SLs.

use std::collections::HashMap;

use super::physical::{Port, Switch};
use super::pkeys::PkeyTable;
use super::qos_levels::QosLevels;
use super::routes::Routes;

/// A port with a LID and a GUID: an adapter's (or router's) port, or a
/// switch's port 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endport {
    /// Its port GUID.
    pub guid: u64,
    /// Its node's GUID.
    pub node_guid: u64,
    /// Its GID prefix (PortInfo.GIDPrefix).
    pub prefix: u64,
    /// Its base LID (0: none, it has no paths).
    pub lid: u16,
    /// Its LMC: it answers to 2^LMC LIDs from `lid`.
    pub lmc: u8,
    /// Whether it is a switch's port 0.
    pub is_switch: bool,
    /// Its port number (0 on a switch).
    pub port_num: u8,
    /// Whether its node is a Mellanox Tavor (OpenSM's `enable_quirks`
    /// gives its paths MTU 1024 at most).
    pub tavor: bool,
    /// PortInfo.CapabilityMask.
    pub cap_mask: u32,
    /// PortInfo.CapabilityMask2.
    pub cap_mask2: u16,
    /// Its physical port (index in `Fabric::ports`).
    pub(super) port: u32,
    /// Its switch (index in `Fabric::switches`), `u32::MAX` on an adapter.
    pub(super) switch: u32,
    /// Its P_Key table (index in `Fabric::pkey_tables`).
    pub(super) pkeys: u32,
}

impl Endport {
    /// Its LIDs.
    pub fn lids(&self) -> std::ops::Range<u16> {
        let count = 1u16 << self.lmc.min(7);
        self.lid..self.lid.saturating_add(count)
    }
}

/// An entry of OpenSM's alias table: a GUID and the endport it names
/// (every endport's own GUID, and the alias GUIDs assigned to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Alias {
    pub(super) guid: u64,
    pub(super) endport: u32,
}

/// The whole fabric, indexed for walks.
#[derive(Debug)]
pub struct Fabric {
    pub(super) ports: Vec<Port>,
    pub(super) switches: Vec<Switch>,
    pub(super) endports: Vec<Endport>,
    /// OpenSM's alias table, in its order: GUIDs in network byte order
    /// compared as (x86) host integers.
    pub(super) aliases: Vec<Alias>,
    /// Alias GUID to its index in `aliases`.
    pub(super) by_guid: HashMap<u64, u32>,
    /// LID to endport, `u32::MAX` where no port answers.
    pub(super) by_lid: Vec<u32>,
    /// The distinct P_Key tables.
    pub(super) pkey_tables: Vec<PkeyTable>,
    /// SubnetTimeOut: a path's PacketLifeTime.
    pub(super) subnet_timeout: u8,
    /// The SL of each partition, by its low 15 bits, where known.
    pub(super) partition_sl: HashMap<u16, u8>,
    pub(super) routes: Routes,
    /// The master's QoS policy, when it is known ([`Fabric::set_qos_levels`]).
    pub(super) qos_levels: Option<QosLevels>,
    /// OpenSM's `enable_quirks`: a path with a Tavor end gets MTU 1024 at
    /// most.
    pub(super) tavor_quirk: bool,
    /// OpenSM's `use_original_extended_sa_rates_only`: rates up to 300
    /// Gb/s only.
    pub(super) original_rates_only: bool,
}

impl Fabric {
    /// Every endport, in no particular order.
    pub fn endports(&self) -> &[Endport] {
        &self.endports
    }

    /// The endport a GUID (a port's own or an alias) names.
    pub fn endport(&self, guid: u64) -> Option<&Endport> {
        let alias = self.aliases[*self.by_guid.get(&guid)? as usize];
        self.endports.get(alias.endport as usize)
    }

    /// The endport that answers to `lid`.
    pub fn endport_at(&self, lid: u16) -> Option<&Endport> {
        let i = *self.by_lid.get(usize::from(lid))?;
        self.endports.get(i as usize)
    }

    /// The ways through the forwarding tables that lead nowhere (a dead
    /// end, a loop, an adapter on the way, a port the switch does not
    /// have), the first few by name, and how many in all: each costs the
    /// paths that take it, as at OpenSM, not the fabric.
    pub fn route_faults(&self) -> (&[super::routes::RouteError], usize) {
        self.routes.faults()
    }

    /// How many switches.
    pub fn switch_count(&self) -> usize {
        self.switches.len()
    }

    /// How many GUIDs name a destination (every endport's, its aliases).
    pub fn alias_count(&self) -> usize {
        self.aliases.len()
    }

    /// The PacketLifeTime of a path between two ports: OpenSM's
    /// `subnet_timeout` option, which it also sets in every port's
    /// PortInfo.SubnetTimeOut, where [`Fabric::build`] reads it.
    pub fn subnet_timeout(&self) -> u8 {
        self.subnet_timeout
    }

    /// Sets the PacketLifeTime of paths between two ports: what the master
    /// answered for one. A port that ignores the SM's PortInfo Set (ibsim's
    /// keep their own SubnetTimeOut) does not show the master's value.
    pub fn set_subnet_timeout(&mut self, value: u8) {
        self.subnet_timeout = value & 0x3F;
    }

    /// The partitions (low 15 bits) some endport holds, in ascending order.
    pub fn partitions(&self) -> Vec<u16> {
        let mut all: Vec<u16> = self
            .pkey_tables
            .iter()
            .flat_map(|t| t.entries().iter().map(|p| p & 0x7FFF))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The P_Key table of `endport`.
    pub fn pkey_table(&self, endport: &Endport) -> &PkeyTable {
        &self.pkey_tables[endport.pkeys as usize]
    }

    /// Gives partition `pkey` (membership bit ignored) its SL, which the
    /// SA does not publish (`sl=` in OpenSM's partitions.conf, 0 by
    /// default).
    pub fn set_partition_sl(&mut self, pkey: u16, sl: u8) {
        self.partition_sl.insert(pkey & 0x7FFF, sl & 0x0F);
    }

    /// Gives the fabric its master's QoS policy (its groups resolved):
    /// every path then gets the level of its query, as at the master.
    pub fn set_qos_levels(&mut self, levels: QosLevels) {
        self.qos_levels = Some(levels);
    }

    /// Follows OpenSM's `enable_quirks` (its `sa_path_rec_apply_tavor_mtu_limit`
    /// for a query that names no MTU: every table's): a path from or to a
    /// Tavor adapter gets MTU 1024 at most.
    pub fn set_tavor_quirk(&mut self, on: bool) {
        self.tavor_quirk = on;
    }

    /// Follows OpenSM's `allow_both_pkeys`: a port's P_Key table keyed by
    /// the whole P_Key, a partition held both as a full and a limited
    /// member (see `pkeys`).
    pub fn set_allow_both_pkeys(&mut self, on: bool) {
        for t in &mut self.pkey_tables {
            *t = t.allowing_both(on);
        }
    }

    /// Follows OpenSM's `use_original_extended_sa_rates_only`: a path's
    /// rate past 300 Gb/s, or one only 2x links or HDR give, is lowered to
    /// an original extended rate (`ib_path_rate_max_12xedr`), in place of
    /// the 2x/HDR fixups.
    pub fn set_original_rates_only(&mut self, on: bool) {
        self.original_rates_only = on;
    }

    /// The master's QoS policy, if given.
    pub fn qos_levels(&self) -> Option<&QosLevels> {
        self.qos_levels.as_ref()
    }

    /// The SL given to partition `pkey`, if any.
    pub fn partition_sl(&self, pkey: u16) -> Option<u8> {
        self.partition_sl.get(&(pkey & 0x7FFF)).copied()
    }
}
