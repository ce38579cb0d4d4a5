//! The port's tables and their upkeep, held together: the default table,
//! the partitions' tables, the refresh that fetches them from the master
//! and who keeps them fresh (this port or a distributor's lease). Each
//! member owns its state behind its own methods; this groups them so
//! that [`SaCore`](crate::agent::SaCore) holds one concern, not four fields.
//!
//! * the default and partition tables (`crate::partitions`);
//! * `fetch`, `refresh`: fetching them from the master, and the
//!   refresh's state (where it stands, its epochs, when the next is due);
//! * `counts`: what their decisions counted;
//! * `context`: what they know of the agent (settings, port, master's
//!   QoS, shutting down), told when it changes;
//! * `upkeep`, `rules`, `sweep_watch`: who keeps them fresh, and the
//!   rules of when (a lease, a change notice, a sweep seen, doubt);
//! * `check`: checking tables the port did not fetch against the master;
//! * `kept`: tables kept across a restart;
//! * `loads`: what a PathRecord load asks;
//! * `timers`: what of theirs can fall due, in which order.
//!
//! `PortTables`'s own methods are in three files, by concern: here the
//! tables themselves (their loads, ports coming and going, kept tables,
//! the administrators' refresh, flush and dump, `--status` lines,
//! timers), in `fetch` the refresh's requests and answers, in `rules` who
//! keeps them fresh and when (and the check). `SaCore` reaches the members only
//! through them.

pub(in crate::agent) mod check;
pub(in crate::agent) mod context;
pub(in crate::agent) mod counts;
pub(in crate::agent) mod fetch;
pub(in crate::agent) mod kept;
pub(in crate::agent) mod loads;
pub(in crate::agent) mod refresh;
pub(in crate::agent) mod rules;
pub(in crate::agent) mod sweep_watch;
pub(in crate::agent) mod timers;
pub(in crate::agent) mod upkeep;

use std::borrow::Cow;
use std::time::Instant;

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, ComponentMask, Gid, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::debug;

use crate::agent::counterparts::{Asker, RefreshWaiter};
use crate::agent::port_tables::context::{RefreshContext, UpkeepContext};
use crate::agent::port_tables::counts::TableCounts;
use crate::agent::port_tables::loads::{by_table, delete_from, load_into};
use crate::agent::port_tables::refresh::Refresh;
use crate::agent::port_tables::sweep_watch::SweepWatch;
use crate::agent::port_tables::timers::Due;
use crate::agent::port_tables::upkeep::{Lease, Upkeep};
use crate::counters::Counters;
use crate::partitions::{Partitions, PathTable, TableKey, partition_of};
use crate::path_query::Knowledge;
use crate::request::{ConnId, StatusReport};
use crate::requester::Answer;
use crate::store::{Epoch, PathStore, PortLids};

#[cfg(test)]
use crate::config::AgentConfig;

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
        // Waiting for a distributor's load: the ports it has not reached
        // by then ask the master at their own phase of a quarter more,
        // not all in the same second.
        let wait = upkeep.load_wait;
        let first_refresh = if wait.is_zero() {
            now
        } else {
            now + wait + upkeep.spread(wait / 4)
        };
        Self {
            paths: PathTable::default(),
            partitions: Partitions::default(),
            refresh: Refresh::new(first_refresh),
            upkeep: Upkeep::default(),
            sweeps: SweepWatch::default(),
            upkeep_ctx: upkeep,
            refresh_ctx: refresh,
            counts: TableCounts::default(),
        }
    }

    /// How long this port waits to refresh again after its refresh
    /// failed that many times in a row ([`context::Backoff::after`]).
    pub(super) fn refresh_retry_delay(&self) -> std::time::Duration {
        (self.refresh_ctx.backoff).after(self.refresh.failures())
    }

    /// What the tables know of an agent in a unit test: the default
    /// settings, a port at LID 1 whose master is at LID 2.
    #[cfg(test)]
    pub(in crate::agent) fn test_context() -> (UpkeepContext, RefreshContext) {
        let port = crate::config::PortIdentity {
            lid: 1,
            lmc: 0,
            gid: Gid::new(Gid::DEFAULT_PREFIX, 1),
            sm_lid: 2,
            sm_sl: 0,
        };
        context::of(&AgentConfig::default(), port, false, false)
    }

    /// What the agent is now, told at `now` whenever it changes (its
    /// settings on reload, the port, the master's QoS, its shutting
    /// down): the tables' decisions read it from here, not from each call.
    pub(in crate::agent) fn know(
        &mut self,
        now: Instant,
        upkeep: UpkeepContext,
        refresh: RefreshContext,
    ) {
        if upkeep.shutting_down && !self.upkeep_ctx.shutting_down {
            // The agent withdraws: nothing more is refreshed or polled.
            self.refresh.schedule(None);
            self.sweeps.poll_at(None);
        }
        if upkeep.refresh_interval < self.upkeep_ctx.refresh_interval {
            // A shorter interval takes effect now rather than after the
            // long one already scheduled.
            self.refresh.bring_forward(now + upkeep.refresh_interval);
        }
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

// The tables' lines of `lsaquery --status`: what they hold, how fresh
// they are and who keeps them so.
impl PortTables {
    /// What the tables hold: the default table's records, each
    /// partition table's state (complete for port `me` or not) and
    /// records.
    pub(in crate::agent) fn push_contents(&self, s: &mut StatusReport, me: u64) {
        s.push("records", self.paths.store.len());
        for (pkey, t) in self.partitions.tables() {
            let state = if t.is_complete(me) {
                "complete"
            } else {
                "incomplete"
            };
            s.push(
                "partition",
                format!(
                    "{} {state} records={}",
                    TableKey::Partition(pkey),
                    t.store.len()
                ),
            );
        }
    }

    /// How fresh the tables are at `now`, and who keeps them so (`ctx`:
    /// what the upkeep goes by).
    pub(in crate::agent) fn push_freshness(&self, s: &mut StatusReport, now: Instant) {
        let ms = |t: Instant| now.saturating_duration_since(t).as_millis().to_string();
        if let Some((at, took)) = self.refresh.last_fresh() {
            s.push("last_refresh_age_ms", ms(at));
            match took {
                Some(d) => s.push("last_refresh_took_ms", d.as_millis()),
                None => s.push("last_refresh_by", "load"),
            }
        }
        if self.refresh.is_running()
            && let Some(began) = self.refresh.began()
        {
            s.push("refreshing_for_ms", ms(began));
        }
        if let Some(next) = self.refresh.next() {
            s.push(
                "next_refresh_in_ms",
                next.saturating_duration_since(now).as_millis(),
            );
        }
        s.push("refresh_failures_in_a_row", self.refresh.failures());
        match self.upkeep.lease() {
            Some(lease) => {
                s.push("kept_by", format!("distributor lid={}", lease.lid));
                s.push("lease_s", lease.length.as_secs());
                // What is left before this port takes its tables back:
                // the lease, or two of the owner's renewal intervals.
                s.push(
                    "lease_left_ms",
                    lease.ends().saturating_duration_since(now).as_millis(),
                );
                if let Some(gap) = lease.renewal_interval() {
                    s.push("lease_renewed_every_ms", gap.as_millis());
                }
            }
            None => {
                s.push("kept_by", "this port");
                s.push("refresh_interval_s", self.periodic_interval().as_secs());
                s.push("worst_staleness_s", self.worst_staleness().as_secs());
                if self.upkeep.change_pending() {
                    s.push("change_refresh_pending", "yes");
                }
                if self.upkeep.in_doubt() {
                    s.push("tables_in_doubt", "yes");
                }
            }
        }
        if let Some(next) = self.upkeep.check_next() {
            s.push(
                "next_check_in_ms",
                next.saturating_duration_since(now).as_millis(),
            );
        }
    }
}

// The node's administrators' hold on the cache, through the local API:
// a full refresh now (answered when it ends, with the records before and
// after), a flush (every record dropped: queries go to the master until
// the next refresh or load), and a dump, page by page. Who may ask is the
// daemon's to check ([`crate::request::Request::is_admin`]). The tables'
// side is here; `SaCore` answers the askers.
impl PortTables {
    /// Records in the default table and the partition tables.
    pub(in crate::agent) fn records_held(&self) -> usize {
        self.paths.store.len() + self.partitions.records()
    }

    /// `asker` waits for the next refresh to end; the records held now
    /// are the "before" it is told then.
    pub(in crate::agent) fn wait_for_refresh(&mut self, asker: Asker) {
        let before = self.records_held();
        self.refresh.wait(RefreshWaiter { asker, before });
    }

    /// Forgets the refresh waiters of connection `conn` (it closed).
    pub(in crate::agent) fn forget_refresh_waiters(&mut self, conn: ConnId) {
        self.refresh
            .forget_waiters(|w| matches!(w.asker, Asker::Local { conn: c, .. } if c == conn));
    }

    /// Drops every record; no source counts as complete any more. Returns
    /// how many were held.
    pub(in crate::agent) fn flush(&mut self) -> usize {
        let before = self.records_held();
        self.paths.clear();
        self.partitions.clear();
        before
    }

    /// A page of `max` records from `from` of the default table, or of the
    /// partition table of `partition`'s P_Key (empty if there is none).
    pub(in crate::agent) fn page(
        &self,
        from: u32,
        max: usize,
        partition: Option<u16>,
    ) -> Vec<PathRecord> {
        let table = match partition {
            None => Some(&self.paths),
            Some(pkey) => self.partitions.table(pkey),
        };
        table.map_or_else(Vec::new, |t| t.store.page(from, max))
    }
}

// Ports coming and going (traps 64 and 65): the paths to a port that
// left go from every table; this port's paths to a port that came into
// service are asked of the master table by table — until the answer is
// in, a partition table counts as incomplete (its paths to that port
// may be missing).
impl PortTables {
    /// Port `guid` left the fabric: every path to or from it goes, and
    /// it counts as incomplete in the default table. Returns how many
    /// records went.
    pub(in crate::agent) fn port_left(&mut self, guid: u64) -> usize {
        let removed = self.paths.store.remove_port(guid) + self.partitions.remove_port(guid);
        self.paths.mark_incomplete(guid);
        removed
    }

    /// The tables that hold paths to a port that came into service: the
    /// default table and every partition table.
    pub(in crate::agent) fn tables_for_new_port(&self) -> Vec<TableKey> {
        let partitions = self
            .partitions
            .tables()
            .map(|(p, _)| TableKey::Partition(p));
        [TableKey::Default].into_iter().chain(partitions).collect()
    }

    /// The request for `me`'s paths to `gid` in `table`
    /// ([`Purpose::GidInService`](crate::agent::master::purpose::Purpose::GidInService)); a partition table waits for its
    /// answer.
    pub(in crate::agent) fn port_paths_request(
        &mut self,
        me: Gid,
        gid: Gid,
        table: TableKey,
    ) -> Bytes {
        let (mask, mut t) = table.query(me);
        t.set_dgid(gid);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(mask | pr::DGID);
        if let TableKey::Partition(p) = table
            && let Some(t) = self.partitions.table_mut(p)
        {
            t.await_fetch();
        }
        b.into_bytes()
    }

    /// The paths from `me` to port `guid` (back in service), for
    /// `table`, came (or not: `None`).
    pub(in crate::agent) fn port_paths_answered(
        &mut self,
        me: u64,
        guid: u64,
        table: TableKey,
        answer: Option<&Answer>,
    ) {
        let epoch = self.refresh.epoch();
        let Some(t) = self.table_mut(table) else {
            return;
        };
        if let TableKey::Partition(_) = table {
            t.fetch_ended();
        }
        let Some(answer) = answer.filter(|a| a.status() == MadStatus::OK && !a.is_cut()) else {
            if answer.is_some_and(Answer::is_cut) {
                // Some paths did not arrive: this port's are not all held.
                t.mark_incomplete(me);
            }
            return;
        };
        let mut added = 0;
        for r in answer.records::<PathRecord>() {
            t.store.insert(*r, epoch);
            added += 1;
        }
        debug!(
            guid = format_args!("{guid:#x}"),
            %table,
            added, "paths to a port back in service"
        );
    }
}

// The tables' timers: when something of theirs is next due, and at a
// time which of them is, in the order of [`Due::ORDER`] (`timers`).
impl PortTables {
    /// When something of the tables is next due, if anything is.
    pub(in crate::agent) fn poll_timeout(&self) -> Option<Instant> {
        [
            self.refresh.next(),
            self.refresh.partitions_next(),
            self.next_sweep_poll(),
            self.upkeep.check_next(),
            self.upkeep.doubt_settles(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether `due` is due at `now`. Each is taken once: its timer moves
    /// on or is cleared, except a check's, which starting it clears.
    pub(in crate::agent) fn take_due(&mut self, due: Due, now: Instant) -> bool {
        match due {
            Due::DoubtSettled => {
                let settled = self.upkeep.take_doubt_settled(now);
                self.counts.doubts += u64::from(settled);
                settled
            }
            Due::Refresh => self.refresh.take_due(now),
            Due::Check => self.upkeep.check_due(now),
            Due::SweepPoll => self.take_sweep_poll_due(now),
            Due::Partitions => self.refresh.take_partitions_due(now),
        }
    }
}

/// Kept paths: the default table's (`None`), and each partition's by its
/// P_Key with the full-member bit.
pub(in crate::agent) type KeptPaths = Vec<(Option<u16>, Vec<PathRecord>)>;

// Keeping the tables across a restart, and taking them back (`kept`).
impl PortTables {
    /// What a successor may take of the tables: the lease running on them
    /// (if any), and this port's paths in the default table and in each
    /// partition table it holds complete; `None` while a fabric change
    /// awaits a refresh (a successor must then ask the master).
    pub(in crate::agent) fn to_keep(&self) -> Option<(Option<Lease>, KeptPaths)> {
        if self.upkeep.change_pending() {
            return None;
        }
        let port = self.refresh_ctx.port;
        let own = port.lids();
        let me = port.gid.guid();
        let mut tables = vec![(
            None,
            self.paths
                .store
                .iter()
                .filter(|r| own.contains(&r.slid()))
                .copied()
                .collect(),
        )];
        for (p, t) in self.partitions.tables() {
            if t.is_complete(me) {
                let records = t.store.iter().filter(|r| own.contains(&r.slid())).copied();
                tables.push((Some(p | 0x8000), records.collect()));
            }
        }
        Some((self.upkeep.lease(), tables))
    }

    /// Takes kept `tables` under a new epoch, each complete for this port
    /// (a partition the port no longer holds takes none), fresh from
    /// `now`, under the distributor's `lease` they were kept with if it
    /// still runs. A few of their paths are checked against the master
    /// soon: nobody fetched them just now. Returns the epoch and how many
    /// records were taken.
    pub(in crate::agent) fn restore(
        &mut self,
        now: Instant,
        tables: KeptPaths,
        lease: Option<Lease>,
    ) -> (Epoch, usize) {
        let me = self.refresh_ctx.port.gid.guid();
        self.counts.refreshes_kept += 1;
        self.refresh.stop();
        self.refresh.made_fresh(now, None);
        self.upkeep.resume_lease(lease);
        let window = self.upkeep_ctx.pace.min_window;
        let first_check = now + window + self.upkeep_ctx.spread(window);
        self.upkeep.check_at(Some(first_check));
        let epoch = self.refresh.next_epoch();
        let mut records = 0;
        for (pkey, list) in tables {
            let key = match pkey {
                None => TableKey::Default,
                Some(p) => TableKey::Partition(p & 0x7FFF),
            };
            let Some(t) = self.table_mut(key) else {
                continue;
            };
            t.store.expect_table(list.len());
            records += list.len();
            for r in list {
                t.store.insert(r, epoch);
            }
            t.mark_complete(me);
        }
        (epoch, records)
    }
}

// What a PathRecord load or delete does to the tables (`loads`).
impl PortTables {
    /// Stores a load's records, each in its table (with `partitions`, its
    /// P_Key's partition's; a partition the port does not hold takes
    /// none), under a new epoch; with `replace` they are the whole of each
    /// source's paths there. Returns how many were stored.
    pub(in crate::agent) fn store_load(
        &mut self,
        records: &[PathRecord],
        replace: bool,
        partitions: bool,
    ) -> usize {
        let epoch = self.refresh.next_epoch();
        let mut stored = 0;
        for (table, records) in by_table(records, partitions) {
            let Some(t) = self.table_mut(table) else {
                continue;
            };
            load_into(t, &records, epoch, replace);
            stored += records.len();
        }
        self.counts.loaded += stored as u64;
        stored
    }

    /// Removes a Delete's pairs (mask 0) or the records matching its
    /// template on `mask` (with `partitions`: in the template's partition
    /// if it names a P_Key, else in every partition table). Returns how
    /// many went.
    pub(in crate::agent) fn delete_load(
        &mut self,
        mask: ComponentMask,
        records: &[PathRecord],
        known_absent: bool,
        partitions: bool,
    ) -> usize {
        let work = if partitions && mask != ComponentMask::NONE {
            let keys: Vec<TableKey> = if mask.contains(pr::PKEY) {
                vec![TableKey::Partition(partition_of(records[0].pkey()))]
            } else {
                let held = self.partitions.tables();
                held.map(|(p, _)| TableKey::Partition(p)).collect()
            };
            keys.into_iter()
                .map(|k| (k, Cow::Borrowed(records)))
                .collect()
        } else {
            by_table(records, partitions)
        };
        let mut removed = 0;
        for (table, records) in work {
            if let Some(t) = self.table_mut(table) {
                removed += delete_from(t, mask, &records, known_absent);
            }
        }
        self.counts.deleted += removed as u64;
        removed
    }
}

// The tables as `SaCore` reads and sets them.
impl PortTables {
    /// How many records the default table holds.
    pub(in crate::agent) fn default_records(&self) -> usize {
        self.paths.store.len()
    }

    /// True once port `guid`'s paths are complete in the default table.
    pub(in crate::agent) fn is_complete(&self, guid: u64) -> bool {
        self.paths.is_complete(guid)
    }

    /// The port at `lid` as the default table knows it: its GUID and
    /// base LID.
    pub(in crate::agent) fn port_at(&self, lid: u16) -> Option<(u64, PortLids)> {
        self.paths.store.port_at(lid)
    }

    /// The default table's store.
    pub(in crate::agent) fn store(&self) -> &PathStore {
        &self.paths.store
    }

    /// The partition tables.
    pub(in crate::agent) fn partitions(&self) -> &Partitions {
        &self.partitions
    }

    /// The partitions the port holds.
    pub(in crate::agent) fn partitions_held(&self) -> &[u16] {
        self.partitions.held()
    }

    /// The port's P_Key table, as it lists it: true if the partitions
    /// held changed (the tables of those gone go).
    pub(in crate::agent) fn set_partitions_held(&mut self, pkeys: &[u16]) -> bool {
        self.partitions.set_held(pkeys)
    }

    /// Every partition table emptied (the master's policy changed).
    pub(in crate::agent) fn clear_partitions(&mut self) {
        self.partitions.clear();
    }
}
