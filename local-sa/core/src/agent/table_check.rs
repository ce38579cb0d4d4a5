//! Checking a table this port did not fetch itself — a distributor's,
//! or one kept across a restart — against the master: every
//! `check_interval` while a distributor keeps it, and once soon after a
//! restart, `check_sample` destinations of the default table are asked
//! again (GetTable with SGID = ours and the DLID, as a refresh walk asks
//! them) and the master's records compared with those held. A difference
//! and the port fetches its own tables at once. A master that does not
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
        let (mask, mut t) = self.table_query(TableKey::Default);
        for dlid in sample {
            t.set_dlid(dlid);
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(mask | pr::DLID);
            self.send_upstream(now, Purpose::Check { round, dlid }, &b.into_bytes());
        }
    }

    /// The destinations a check asks about: `check_sample` of the
    /// default table's, spread over them, another set each round.
    fn check_sample(&self) -> Vec<u16> {
        let own = self.port.lids();
        let mut dlids: Vec<u16> = self
            .tables
            .paths
            .store
            .from_lid(self.port.lid)
            .map(PathRecord::dlid)
            .filter(|d| !own.contains(d))
            .collect();
        dlids.sort_unstable();
        dlids.dedup();
        let (len, k) = (dlids.len(), self.config.check_sample.min(dlids.len()));
        if k == 0 {
            return Vec::new();
        }
        let phase = self.port.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize;
        let offset = phase.wrapping_add(self.tables.upkeep.check_rounds() as usize * 7_919) % len;
        (0..k)
            .map(|i| dlids[(offset + i * len / k) % len])
            .collect()
    }

    /// The master's answer about `dlid` in check `round` (`None`: it did
    /// not answer).
    pub(super) fn check_answered(
        &mut self,
        now: Instant,
        round: u32,
        dlid: u16,
        answer: Option<&Answer>,
    ) {
        let agrees = answer.map(|a| self.agrees_with_master(dlid, a));
        if let Some(done) = self.tables.upkeep.check_answered(round, dlid, agrees) {
            self.check_done(now, done);
        }
    }

    /// Whether the master's paths to `dlid` are those held.
    fn agrees_with_master(&self, dlid: u16, answer: &Answer) -> bool {
        if answer.status() != MadStatus::OK && answer.status() != MadStatus::ERR_NO_RECORDS {
            // Not an answer about the paths: as if none came.
            return true;
        }
        let store = &self.tables.paths.store;
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
                differing_dlids = %lid_list(&done.differed),
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

/// LIDs as a comma-separated list, for the log.
fn lid_list(lids: &[u16]) -> String {
    let list: Vec<String> = lids.iter().map(u16::to_string).collect();
    list.join(",")
}
