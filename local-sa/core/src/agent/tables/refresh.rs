//! Keeping this port's paths in the store: a bulk GetTable (SGID = ours)
//! at start, after port changes and every refresh interval, then one
//! (SGID = ours, P_Key) for each partition table the port keeps
//! ([`SaCore::wanted_partitions`]), one table after the other. When an
//! answer comes back cut (a transport without RMPP, such as ibsim,
//! delivers only the first 256 bytes of the master's multi-MAD answer),
//! that table's paths are fetched one destination LID at a time instead,
//! walking upward until `walk_gap` LIDs past the highest one that
//! answered. Records are stamped with the refresh's epoch; when a table
//! completes, this port's records in it that the refresh did not see are
//! swept and the port counts as complete in it. The default table's
//! completion makes the port ready; the refresh ends after the last
//! partition's.

use std::time::{Duration, Instant};

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, ComponentMask, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::{debug, info, warn};

use crate::agent::master::purpose::Purpose;
use crate::agent::{RefreshState, SaCore};
use crate::lid_walk::LidWalk;
use crate::partitions::{TableKey, partition_of};
use crate::requester::Answer;
use crate::store::Epoch;

impl SaCore {
    /// Starts a refresh unless one is running.
    pub(in crate::agent) fn start_refresh(&mut self, now: Instant) {
        if self.tables.refresh.is_running() {
            return;
        }
        self.refresh_starting(now);
        let epoch = self.tables.refresh.begin(now, false);
        debug!(
            epoch,
            master = self.port.sm_lid,
            "refreshing this port's paths"
        );
        if self.tables.refresh.registers_after() {
            // At start, whether the master applies QoS is asked just
            // before the table (one small request, answered first), so
            // that queries naming a P_Key — every ibacm and kernel query —
            // are answered from the cache as soon as the table is in.
            self.ask_master_info(now);
        }
        self.fetch_table(now, epoch, TableKey::Default);
        // Renews this port's directory record's lease (at start, the
        // registration after this refresh publishes it).
        if !self.tables.refresh.registers_after() {
            self.send_publication(now);
        }
    }

    /// Fetches the tables of the partitions wanted but not held complete
    /// (the port's P_Key table changed), unless a refresh is running (it
    /// fetches them, or they are asked again a second later).
    pub(in crate::agent) fn fetch_new_partitions(&mut self, now: Instant) {
        if self.shutting_down {
            return;
        }
        if self.tables.refresh.is_running() {
            self.tables
                .refresh
                .schedule_partitions(now + Duration::from_secs(1));
            return;
        }
        let first = self.missing_partitions().next();
        if let Some(p) = first {
            let epoch = self.tables.refresh.begin(now, true);
            self.fetch_table(now, epoch, TableKey::Partition(p));
        }
    }

    /// The partitions wanted whose tables are not held complete.
    fn missing_partitions(&self) -> impl Iterator<Item = u16> + '_ {
        let me = self.port.gid.guid();
        self.wanted_partitions().into_iter().filter(move |p| {
            self.tables
                .partitions
                .table(*p)
                .is_none_or(|t| !t.is_complete(me))
        })
    }

    /// Asks the master for table `table` of this port's paths, in bulk.
    fn fetch_table(&mut self, now: Instant, epoch: Epoch, table: TableKey) {
        let (mask, t) = self.table_query(table);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(mask);
        self.tables
            .refresh
            .advance(RefreshState::Bulk { epoch, table });
        self.send_table_upstream(now, Purpose::Bulk { epoch, table }, &b.into_bytes());
    }

    /// The query of table `table`: this port's paths, asked with the
    /// partition's P_Key as a full member's.
    pub(in crate::agent) fn table_query(&self, table: TableKey) -> (ComponentMask, PathRecord) {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(self.port.gid);
        match table {
            TableKey::Default => (pr::SGID, t),
            TableKey::Partition(p) => {
                t.set_pkey(p | 0x8000);
                (pr::SGID | pr::PKEY, t)
            }
        }
    }

    pub(in crate::agent) fn bulk_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: TableKey,
        answer: &Answer,
    ) {
        if self.tables.refresh.state() != (RefreshState::Bulk { epoch, table }) {
            return;
        }
        if answer.status() != MadStatus::OK {
            warn!(status = %answer.status(), %table, "the master refused a bulk PathRecord table");
            if table == TableKey::Default {
                return self.refresh_failed(now);
            }
            // That partition's queries go on being asked per pair; the
            // other tables are fetched, and that one alone is asked again
            // after the back-off.
            self.tables
                .refresh
                .schedule_partitions(now + self.refresh_retry_delay());
            return self.fetch_table_after(now, epoch, table);
        }
        if answer.is_cut() {
            self.answers.qos_cache.tables_come_cut();
            if table == TableKey::Default {
                info!(
                    "the bulk PathRecord table came back cut (no RMPP on this transport); fetching per destination"
                );
            }
            // The walk reaches past this port's own LIDs and the master's.
            let floor = self.port.sm_lid.max(*self.port.lids().end());
            let start = RefreshState::Walk {
                epoch,
                table,
                walk: LidWalk::new(floor, self.config.walk_gap),
            };
            self.tables.refresh.advance(start);
            return self.walk(now);
        }
        if let Some(t) = self.tables.table_mut(table) {
            t.store.expect_table(answer.records::<PathRecord>().count());
            for r in answer.records::<PathRecord>() {
                t.store.insert(*r, epoch);
            }
        }
        self.finish_table(now, epoch, table);
    }

    /// Keeps `walk_window` per-destination queries in flight; finishes when
    /// the walk is past the last LID worth trying and nothing is out.
    fn walk(&mut self, now: Instant) {
        let RefreshState::Walk {
            epoch,
            table,
            mut walk,
        } = self.tables.refresh.state()
        else {
            return;
        };
        let (mask, mut t) = self.table_query(table);
        let mut asked = Vec::new();
        while let Some(dlid) = walk.next_lid(self.config.walk_window) {
            asked.push(dlid);
        }
        self.tables
            .refresh
            .advance(RefreshState::Walk { epoch, table, walk });
        if walk.is_done() {
            return self.finish_table(now, epoch, table);
        }
        for dlid in asked {
            t.set_dlid(dlid);
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(mask | pr::DLID);
            let purpose = Purpose::Walk { epoch, table, dlid };
            self.send_upstream(now, purpose, &b.into_bytes());
        }
    }

    pub(in crate::agent) fn walk_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: TableKey,
        dlid: u16,
        answer: &Answer,
    ) {
        let RefreshState::Walk {
            epoch: current,
            table: current_table,
            mut walk,
        } = self.tables.refresh.state()
        else {
            return;
        };
        if current != epoch || current_table != table {
            return;
        }
        let mut found = false;
        if answer.status() == MadStatus::OK
            && let Some(t) = self.tables.table_mut(table)
        {
            for r in answer.records::<PathRecord>() {
                t.store.insert(*r, epoch);
                found = true;
            }
        }
        walk.answered(dlid, found);
        self.tables
            .refresh
            .advance(RefreshState::Walk { epoch, table, walk });
        self.walk(now);
    }

    /// Table `table` is in: this port's records in it that the refresh
    /// did not see go, and the next table is asked, or the refresh ends.
    fn finish_table(&mut self, now: Instant, epoch: Epoch, table: TableKey) {
        let (lids, me) = (self.port.lids(), self.port.gid.guid());
        let (swept, records) = self.tables.table_mut(table).map_or((0, 0), |t| {
            t.mark_complete(me);
            (t.store.sweep_from(lids, epoch), t.store.len())
        });
        match table {
            TableKey::Default => self.default_table_fresh(now, epoch, swept),
            TableKey::Partition(_) => {
                debug!(%table, records, swept, "this port's paths on a partition are fresh");
            }
        }
        self.fetch_table_after(now, epoch, table);
    }

    /// Asks for the table after `table`, or ends the refresh.
    fn fetch_table_after(&mut self, now: Instant, epoch: Epoch, table: TableKey) {
        let next = if self.tables.refresh.only_missing() {
            self.missing_partitions()
                .map(TableKey::Partition)
                .find(|t| *t > table)
        } else {
            let wanted = self.wanted_partitions().into_iter();
            wanted.map(TableKey::Partition).find(|t| *t > table)
        };
        match next {
            Some(next) if !self.shutting_down => self.fetch_table(now, epoch, next),
            _ => self.finish_refresh(),
        }
    }

    /// The partitions whose tables this port keeps: every one its P_Key
    /// table holds, but for the one its default table's paths carry when
    /// the master applies no QoS (those answers are the default table's).
    /// While the master's QoS is unknown, every one.
    pub(in crate::agent) fn wanted_partitions(&self) -> Vec<u16> {
        let default = self
            .tables
            .paths
            .store
            .from_lid(self.port.lid)
            .next()
            .map(|r| partition_of(r.pkey()));
        let no_qos = self.master.policy.info().is_some_and(|m| !m.qos);
        self.tables
            .partitions
            .held()
            .iter()
            .copied()
            .filter(|p| !(no_qos && Some(*p) == default))
            .collect()
    }

    /// The last table is in: tables no longer wanted go, and whoever
    /// waited for the refresh is answered.
    fn finish_refresh(&mut self) {
        let wanted = self.wanted_partitions();
        self.tables.partitions.retain(|p| wanted.contains(&p));
        self.tables.refresh.stop();
        if !self.tables.partitions.held().is_empty() {
            info!(
                tables = wanted.len(),
                records = self.tables.partitions.records(),
                "this port's partition tables are fresh"
            );
        }
        self.answer_refresh_waiters(MadStatus::OK);
    }

    /// The default table is in: the port is ready, and what follows a
    /// refresh follows.
    fn default_table_fresh(&mut self, now: Instant, epoch: Epoch, swept: usize) {
        self.answers.forget();
        self.telemetry.counters.refreshes += 1;
        let took = (self.tables.refresh.take_began()).map(|t| now.saturating_duration_since(t));
        self.tables.refresh.made_fresh(now, took);
        info!(
            records = self.tables.paths.store.len(),
            swept, "this port's paths are fresh"
        );
        if self.paths_fresh(now, epoch) {
            return;
        }
        if self.naming.take_keep_after_refresh() {
            // A new master's directory fills again as every port
            // publishes at its phase; a fetch now would cost the master
            // two tables per port, on top of the refreshes, for a partial
            // directory. The names held stand until the next periodic
            // refresh.
            debug!("names kept until the next periodic refresh (a new master)");
        } else {
            self.start_name_fetch(now, epoch);
        }
    }

    /// What follows this port's paths being fresh, from the master or a
    /// load: the next refresh a whole interval on, the fabric's size
    /// from them, and at start the registrations and the first directory
    /// loads. Returns whether this was the start's.
    pub(in crate::agent) fn paths_fresh(&mut self, now: Instant, epoch: Epoch) -> bool {
        self.tables
            .refresh
            .completed(self.tables.paths.store.port_count());
        self.tables
            .refresh
            .schedule(Some(self.next_periodic_refresh(now)));
        self.say_periodic_interval();
        let first = self.tables.refresh.registers_after();
        if first {
            // The fabric's size is known now. The directory loads (two
            // tables of a record per host, twice the paths' cost) and the
            // registrations follow at this port's phase, so that a fabric
            // started together asks for them spread. Whether the master
            // applies QoS is asked now if the paths came in a load (a
            // refresh asked it with the table). Names a distributor
            // loaded need no fetch.
            if !self.naming.loaded() {
                self.naming.fetch_at(now + self.refresh_delay(), epoch);
            }
            self.ask_master_info(now);
        }
        self.registration_after_first_refresh(now);
        first
    }

    /// A load replaced this port's paths (a distributor next to the
    /// master pushed them): that is a refresh the master was not asked
    /// for. The next refresh from the master waits a whole interval, and
    /// at start the registrations and directory loads follow as after a
    /// refresh. A refresh already running goes on: its table is the
    /// master's word.
    pub(in crate::agent) fn own_paths_loaded(&mut self, now: Instant) {
        if self.tables.refresh.is_running() || self.shutting_down {
            return;
        }
        self.telemetry.counters.refreshes_loaded += 1;
        self.tables.refresh.made_fresh(now, None);
        self.paths_fresh(now, self.tables.refresh.epoch());
        // Partition tables the load did not bring (a distributor sends
        // them before the default table) are fetched at this port's phase.
        self.tables
            .refresh
            .schedule_partitions(now + self.refresh_delay());
    }

    /// Schedules the start's registration, once the first refresh ended
    /// (done or failed), at this port's phase of the re-registration window.
    fn registration_after_first_refresh(&mut self, now: Instant) {
        if self.tables.refresh.take_register_after() {
            let at = now + self.reregister_delay();
            self.proxy.schedule.register_at(Some(at));
        }
    }

    /// Tables `cleared` picks were emptied (a flush, a new identity, a flip
    /// of the master's QoS bit): what is being fetched into them would
    /// refill them with part of their paths, and the refresh would then
    /// mark them complete. Those fetches are dropped, and the running
    /// refresh with them if it fills one of those tables. Returns whether
    /// it did; the caller says when the refresh starts again.
    pub(in crate::agent) fn abandon_fetches_into(
        &mut self,
        cleared: impl Fn(TableKey) -> bool,
    ) -> bool {
        self.master.requester.forget(|p| match p {
            Purpose::Bulk { table, .. }
            | Purpose::Walk { table, .. }
            | Purpose::GidInService { table, .. } => cleared(*table),
            _ => false,
        });
        let Some(running) = self.tables.refresh.table() else {
            return false;
        };
        if !cleared(running) {
            return false;
        }
        // The table's requests are forgotten above; no answer ends this
        // refresh now.
        self.tables.refresh.stop();
        true
    }

    /// The master did not give the table: keep serving what is cached and
    /// try again after the back-off.
    pub(in crate::agent) fn refresh_failed(&mut self, now: Instant) {
        let Some(table) = self.tables.refresh.table() else {
            return;
        };
        self.tables.refresh.pause();
        if table != TableKey::Default {
            // The default table is in: only the partitions' are asked
            // again, after the back-off.
            self.tables.refresh.stop();
            if !self.shutting_down {
                self.tables
                    .refresh
                    .schedule_partitions(now + self.refresh_retry_delay());
            }
            return self.answer_refresh_waiters(MadStatus::BUSY);
        }
        self.tables.refresh.failed();
        self.registration_after_first_refresh(now);
        if !self.shutting_down {
            self.tables
                .refresh
                .schedule(Some(now + self.refresh_retry_delay()));
        }
        // The master did not give the table: as for a query it left
        // unanswered.
        self.answer_refresh_waiters(MadStatus::BUSY);
    }
}
