//! The port's tables and their upkeep, held together: the default table,
//! the partitions' tables, the refresh that fetches them from the master
//! and who keeps them fresh (this port or a distributor's lease). Each
//! member owns its state behind its own methods; this groups them so
//! that [`SaCore`](crate::agent::SaCore) holds one concern, not four fields.
//!
//! * the default and partition tables (`crate::partitions`);
//! * `refresh`, `refresh_state`: fetching them from the master, and the
//!   refresh's timers and epochs;
//! * `counts`: what their decisions counted;
//! * `context`: what they know of the agent (settings, port, master's
//!   QoS, shutting down), told when it changes;
//! * `upkeep`, `upkeep_rules`, `sweep_watch`: who keeps them fresh and
//!   when (a lease, a change notice, a sweep seen, doubt);
//! * `check`: checking tables the port did not fetch against the master;
//! * `port_paths`: ports coming and going (traps 64, 65);
//! * `kept`: tables kept across a restart;
//! * `loads`: what a PathRecord load asks;
//! * `cache_control`: the administrators' refresh, flush and dump;
//! * `status_lines`: the tables' lines in `--status`;
//! * `timers`: when something of theirs is due, and what;
//! * `api`: the group's calls, through which `SaCore` reaches them.

pub(in crate::agent) mod api;
pub(in crate::agent) mod cache_control;
pub(in crate::agent) mod check;
pub(in crate::agent) mod context;
pub(in crate::agent) mod counts;
pub(in crate::agent) mod kept;
pub(in crate::agent) mod loads;
pub(in crate::agent) mod port_paths;
pub(in crate::agent) mod refresh;
pub(in crate::agent) mod refresh_state;
pub(in crate::agent) mod status_lines;
pub(in crate::agent) mod sweep_watch;
pub(in crate::agent) mod timers;
pub(in crate::agent) mod upkeep;
pub(in crate::agent) mod upkeep_rules;

use std::time::Instant;

use crate::agent::port_tables::context::{RefreshContext, UpkeepContext};
use crate::agent::port_tables::counts::TableCounts;
use crate::agent::port_tables::refresh_state::Refresh;
use crate::agent::port_tables::sweep_watch::SweepWatch;
use crate::agent::port_tables::upkeep::Upkeep;
#[cfg(test)]
use crate::config::{AgentConfig, PortIdentity};
use crate::counters::Counters;
use crate::partitions::{Partitions, PathTable, TableKey};
use crate::path_query::Knowledge;

/// The port's tables, their refresh and their upkeep.
#[derive(Debug)]
pub(in crate::agent) struct PortTables {
    /// The default table: the paths asked without a P_Key.
    paths: PathTable,
    /// The tables of the port's partitions.
    partitions: Partitions,
    /// Where the refresh of this port's tables stands.
    refresh: Refresh,
    /// Who keeps the tables fresh (this port, or a distributor's lease),
    /// and the checks of tables it did not fetch.
    upkeep: Upkeep,
    /// What the master's activity said, polled while this port keeps
    /// its own tables.
    sweeps: SweepWatch,
    /// What the upkeep's rules and the refresh know of the agent: its
    /// settings, the port, the master's QoS, whether it is shutting down
    /// ([`PortTables::know`]).
    upkeep_ctx: UpkeepContext,
    refresh_ctx: RefreshContext,
    /// What its decisions counted.
    counts: TableCounts,
}

impl PortTables {
    /// Empty tables, the first refresh due at `now`, knowing `upkeep`
    /// and `refresh` of the agent.
    pub(in crate::agent) fn new(
        now: Instant,
        (upkeep, refresh): (UpkeepContext, RefreshContext),
    ) -> Self {
        Self {
            paths: PathTable::default(),
            partitions: Partitions::default(),
            refresh: Refresh::new(now),
            upkeep: Upkeep::default(),
            sweeps: SweepWatch::default(),
            upkeep_ctx: upkeep,
            refresh_ctx: refresh,
            counts: TableCounts::default(),
        }
    }

    /// How long this port waits to refresh again after its refresh
    /// failed that many times in a row ([`context::Backoff::after`]).
    pub(in crate::agent) fn refresh_retry_delay(&self) -> std::time::Duration {
        (self.refresh_ctx.backoff).after(self.refresh.failures())
    }

    /// What the tables know of an agent in a unit test: the default
    /// settings, a port at LID 1 whose master is at LID 2.
    #[cfg(test)]
    pub(in crate::agent) fn test_context() -> (UpkeepContext, RefreshContext) {
        let port = PortIdentity {
            lid: 1,
            lmc: 0,
            gid: mad_codec::Gid::new(mad_codec::Gid::DEFAULT_PREFIX, 1),
            sm_lid: 2,
            sm_sl: 0,
        };
        context::of(&AgentConfig::default(), port, false, false)
    }

    /// What the agent is now, told whenever it changes (its settings on
    /// reload, the port, the master's QoS, its shutting down): the
    /// tables' decisions read it from here, not from each call.
    pub(in crate::agent) fn know(&mut self, upkeep: UpkeepContext, refresh: RefreshContext) {
        self.upkeep_ctx = upkeep;
        self.refresh_ctx = refresh;
    }

    /// The table `table` of this port's paths, to fill; `None` for a
    /// partition the port no longer holds.
    pub(in crate::agent) fn table_mut(&mut self, table: TableKey) -> Option<&mut PathTable> {
        match table {
            TableKey::Default => Some(&mut self.paths),
            TableKey::Partition(p) => self.partitions.table_mut(p),
        }
    }

    /// Adds what its decisions counted, and its gauges read now, to `c`.
    pub(in crate::agent) fn add_counts(&self, c: &mut Counters) {
        self.counts.add_to(c);
        c.records = self.paths.store.len() as u64;
        c.cache_bytes = self.paths.store.heap_bytes() as u64;
        c.partition_tables = self.partitions.tables().count() as u64;
        c.partition_records = self.partitions.records() as u64;
        c.partition_bytes = self.partitions.heap_bytes() as u64;
    }

    /// What the tables tell path queries, with what the master's
    /// ClassPortInfo said (`master_qos`) and the subnet's `prefix`.
    pub(in crate::agent) fn knowledge(&self, prefix: u64, master_qos: bool) -> Knowledge<'_> {
        Knowledge {
            store: &self.paths.store,
            subnet_prefix: prefix,
            complete_sources: self.paths.complete_sources(),
            master_qos,
            partitions: &self.partitions,
            in_doubt: self.upkeep.in_doubt(),
        }
    }

    /// The port's identity changed: no record held is this port's any
    /// more (the partitions it holds stay).
    pub(in crate::agent) fn clear(&mut self) {
        self.paths.clear();
        self.partitions.clear();
    }
}
