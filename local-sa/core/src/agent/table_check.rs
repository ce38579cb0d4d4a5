//! Checking the tables this port did not fetch itself — a distributor's,
//! or those kept across a restart — against the master: every
//! `check_interval` while a distributor keeps them, and once soon after a
//! restart, `check_sample` destinations of the default table, and a
//! quarter as many (at least one) of each partition table held, are asked
//! again (GetTable with SGID = ours, the P_Key of a partition's, and the
//! DLID, as a refresh walk asks them) and the master's records compared
//! with those held: every kind of table a distributor sends is drawn
//! from, as its own check draws. A difference and the port fetches its
//! own tables at once. A master that does not
//! answer changes nothing: what is held is served, and the check is
//! tried again after the back-off.

use std::time::Instant;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::{debug, info, warn};

use super::SaCore;
use super::upkeep::Checking;
use super::upstream_purpose::Purpose;
use crate::partitions::TableKey;
use crate::requester::Answer;
use crate::store::PathStore;

impl SaCore {
    /// Starts a check of the default table against the master, unless
    /// one runs, a refresh runs, or there is nothing to check.
    pub(super) fn start_table_check(&mut self, now: Instant) {
        self.tables.upkeep.check_at(None);
        if self.tables.upkeep.is_checking() || self.shutting_down {
            return;
        }
        let sample = self.check_sample();
        if sample.is_empty() {
            return;
        }
        let round = self.tables.upkeep.begin_check(sample.len());
        for (table, dlid) in sample {
            let (mask, mut t) = self.table_query(table);
            t.set_dlid(dlid);
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(mask | pr::DLID);
            self.send_upstream(now, Purpose::Check { round, table, dlid }, &b.into_bytes());
        }
    }

    /// The destinations a check asks about, by table: `check_sample` of
    /// the default table's and a quarter as many of each partition
    /// table's, spread over them, another set each round.
    fn check_sample(&self) -> Vec<(TableKey, u16)> {
        let k = self.config.check_sample;
        let mut sample: Vec<(TableKey, u16)> = self
            .destinations_to_check(&self.tables.paths.store, k)
            .into_iter()
            .map(|d| (TableKey::Default, d))
            .collect();
        if k > 0 {
            for (p, table) in self.tables.partitions.tables() {
                let dlids = self.destinations_to_check(&table.store, (k / 4).max(1));
                sample.extend(dlids.into_iter().map(|d| (TableKey::Partition(p), d)));
            }
        }
        sample
    }

    /// `k` of the destinations of `store`'s paths from this port (not its
    /// own LIDs), spread over them, another set each round.
    fn destinations_to_check(&self, store: &PathStore, k: usize) -> Vec<u16> {
        let own = self.port.lids();
        let mut dlids: Vec<u16> = store
            .from_lid(self.port.lid)
            .map(PathRecord::dlid)
            .filter(|d| !own.contains(d))
            .collect();
        dlids.sort_unstable();
        dlids.dedup();
        let (len, k) = (dlids.len(), k.min(dlids.len()));
        if k == 0 {
            return Vec::new();
        }
        let phase = self.port.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize;
        let offset = phase.wrapping_add(self.tables.upkeep.check_rounds() as usize * 7_919) % len;
        (0..k)
            .map(|i| dlids[(offset + i * len / k) % len])
            .collect()
    }

    /// The master's answer about `dlid` in `table`, in check `round`
    /// (`None`: it did not answer).
    pub(super) fn check_answered(
        &mut self,
        now: Instant,
        round: u32,
        table: TableKey,
        dlid: u16,
        answer: Option<&Answer>,
    ) {
        let agrees = answer.map(|a| self.agrees_with_master(table, dlid, a));
        if let Some(done) = self
            .tables
            .upkeep
            .check_answered(round, table, dlid, agrees)
        {
            self.check_done(now, done);
        }
    }

    /// Whether the master's paths to `dlid` are those `table` holds.
    fn agrees_with_master(&self, table: TableKey, dlid: u16, answer: &Answer) -> bool {
        if answer.status() != MadStatus::OK && answer.status() != MadStatus::ERR_NO_RECORDS {
            // Not an answer about the paths: as if none came.
            return true;
        }
        let store = match table {
            TableKey::Default => &self.tables.paths.store,
            TableKey::Partition(p) => match self.tables.partitions.table(p) {
                Some(t) => &t.store,
                // Gone since the check began: nothing held to differ.
                None => return true,
            },
        };
        let mut answered = 0;
        for r in answer.records::<PathRecord>() {
            answered += 1;
            if store.get(r.slid(), r.dlid()) != Some(r) {
                return false;
            }
        }
        let held = self
            .port
            .lids()
            .filter(|s| store.get(*s, dlid).is_some())
            .count();
        // A cut answer (no RMPP on the transport) holds only the first
        // records: those are compared, not their number.
        answer.is_cut() || held == answered
    }

    fn check_done(&mut self, now: Instant, done: Checking) {
        let kept_by = self
            .tables
            .upkeep
            .lease()
            .map_or("kept from before a restart", |_| "a distributor's");
        if !done.differed.is_empty() {
            self.telemetry.counters.checks_failed += 1;
            warn!(
                table = kept_by,
                differing = %differing(&done.differed),
                "this port's table differs from the master's answers: fetching its own tables now"
            );
            // Under a lease too: the master's word wins.
            self.start_refresh(now);
        } else if done.unanswered > 0 {
            debug!(
                unanswered = done.unanswered,
                "the master did not answer the table check: tried again after the back-off"
            );
            self.tables
                .upkeep
                .check_at(Some(now + self.refresh_retry_delay()));
            return;
        } else {
            self.telemetry.counters.checks_passed += 1;
            info!(
                table = kept_by,
                "this port's table agrees with the master's answers"
            );
        }
        if self.tables.upkeep.lease().is_some() {
            self.tables
                .upkeep
                .check_at(Some(now + self.config.check_interval));
        }
    }
}

/// The destinations that differed, by table, for the log: `default:
/// 5,7; 0x8001: 9`.
fn differing(differed: &[(TableKey, u16)]) -> String {
    let mut tables: Vec<TableKey> = differed.iter().map(|(t, _)| *t).collect();
    tables.dedup();
    tables
        .iter()
        .map(|t| {
            let lids: Vec<String> = differed
                .iter()
                .filter(|(u, _)| u == t)
                .map(|(_, d)| d.to_string())
                .collect();
            format!("{t}: {}", lids.join(","))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
