//! Checking the tables this port did not fetch itself — a distributor's,
//! or those kept across a restart — against the master: every
//! `check_interval` while a distributor keeps them, and once soon after a
//! restart, `check_sample` destinations of the default table, and a
//! quarter as many (at least one) of each partition table held and of the
//! pairs a distributor loaded into the QoS cache, are asked again
//! (GetTable with SGID = ours, the P_Key of a partition's, and the DLID,
//! as a refresh walk asks them; a QoS pair as the port asks it itself,
//! both GIDs and its key's fields) and the master's records compared with
//! those held: every kind of table a distributor sends is drawn from, as
//! its own check draws. A difference in a table and the port fetches its
//! own tables at once; in a QoS pair, the distributor's QoS tables are
//! forgotten (the port asks the master for each pair again as it is
//! asked). A master that does not answer changes nothing: what is held is
//! served, and the check is tried again after the back-off.

use std::time::Instant;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::agent::tables::refresh::table_query;
use crate::agent::tables::upkeep::{CheckQuestion, Checking};
use crate::partitions::TableKey;
use crate::requester::Answer;
use crate::store::PathStore;

impl SaCore {
    /// Starts a check of the default table against the master, unless
    /// one runs, a refresh runs, or there is nothing to check.
    pub(in crate::agent) fn start_table_check(&mut self, now: Instant) {
        self.tables.upkeep.check_at(None);
        if self.tables.upkeep.is_checking() || self.shutting_down {
            return;
        }
        let sample = self.check_sample();
        if sample.is_empty() {
            return;
        }
        let round = self.tables.upkeep.begin_check(sample.len());
        for question in sample {
            let (mask, t) = match question {
                CheckQuestion::Table(table, dlid) => {
                    let (mask, mut t) = table_query(self.port.gid, table);
                    t.set_dlid(dlid);
                    (mask | pr::DLID, t)
                }
                CheckQuestion::Qos(key) => key.query(self.port.gid.prefix()),
            };
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(mask);
            self.send_upstream(now, Purpose::Check { round, question }, &b.into_bytes());
        }
    }

    /// What a check asks about: `check_sample` destinations of the
    /// default table, and a quarter as many of each partition table's and
    /// of the pairs a distributor loaded into the QoS cache, spread over
    /// them, another set each round.
    fn check_sample(&self) -> Vec<CheckQuestion> {
        let k = self.config.check_sample;
        let mut sample: Vec<CheckQuestion> = self
            .destinations_to_check(&self.tables.paths.store, k)
            .into_iter()
            .map(|d| CheckQuestion::Table(TableKey::Default, d))
            .collect();
        if k > 0 {
            let quarter = (k / 4).max(1);
            for (p, table) in self.tables.partitions.tables() {
                let dlids = self.destinations_to_check(&table.store, quarter);
                sample.extend(
                    dlids
                        .into_iter()
                        .map(|d| CheckQuestion::Table(TableKey::Partition(p), d)),
                );
            }
            let loaded = self
                .answers
                .qos_cache
                .loaded_sample(quarter, self.check_phase());
            sample.extend(loaded.into_iter().map(CheckQuestion::Qos));
        }
        sample
    }

    /// Where this round's sample starts: this port's own phase, moved on
    /// each round.
    fn check_phase(&self) -> usize {
        let phase = self.port.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize;
        phase.wrapping_add(self.tables.upkeep.check_rounds() as usize * 7_919)
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
        let offset = self.check_phase() % len;
        (0..k)
            .map(|i| dlids[(offset + i * len / k) % len])
            .collect()
    }

    /// The master's answer to `question`, in check `round` (`None`: it
    /// did not answer).
    pub(in crate::agent) fn check_answered(
        &mut self,
        now: Instant,
        round: u32,
        question: CheckQuestion,
        answer: Option<&Answer>,
    ) {
        let agrees = answer.map(|a| self.agrees_with_master(question, a));
        if let Some(done) = self.tables.upkeep.check_answered(round, question, agrees) {
            self.check_done(now, done);
        }
    }

    /// Whether the master's answer to `question` is what is held.
    fn agrees_with_master(&self, question: CheckQuestion, answer: &Answer) -> bool {
        if answer.status() != MadStatus::OK && answer.status() != MadStatus::ERR_NO_RECORDS {
            // Not an answer about the paths: as if none came.
            return true;
        }
        let (table, dlid) = match question {
            CheckQuestion::Table(table, dlid) => (table, dlid),
            CheckQuestion::Qos(key) => {
                let records: Vec<PathRecord> = answer.records::<PathRecord>().copied().collect();
                return self
                    .answers
                    .qos_cache
                    .loaded_agree(&key, &records, answer.is_cut());
            }
        };
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
        let qos_differed = done
            .differed
            .iter()
            .any(|q| matches!(q, CheckQuestion::Qos(_)));
        let tables_differed = done
            .differed
            .iter()
            .any(|q| matches!(q, CheckQuestion::Table(..)));
        if qos_differed {
            warn!(
                differing = %differing(&done.differed),
                "a distributor's QoS tables differ from the master's answers: forgotten, each pair asked of the master"
            );
            self.answers.qos_cache.forget_loaded();
        }
        if tables_differed {
            warn!(
                table = kept_by,
                differing = %differing(&done.differed),
                "this port's table differs from the master's answers: fetching its own tables now"
            );
            // Under a lease too: the master's word wins.
            self.start_refresh(now);
        }
        if !done.differed.is_empty() {
            self.telemetry.counters.checks_failed += 1;
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
/// 5,7; 0x8001: 9; QoS: 0x…2 -> 0x…9`.
fn differing(differed: &[CheckQuestion]) -> String {
    let in_tables: Vec<(TableKey, u16)> = differed
        .iter()
        .filter_map(|q| match q {
            CheckQuestion::Table(t, d) => Some((*t, *d)),
            CheckQuestion::Qos(_) => None,
        })
        .collect();
    let mut tables: Vec<TableKey> = in_tables.iter().map(|(t, _)| *t).collect();
    tables.dedup();
    let mut parts: Vec<String> = tables
        .iter()
        .map(|t| {
            let lids: Vec<String> = in_tables
                .iter()
                .filter(|(u, _)| u == t)
                .map(|(_, d)| d.to_string())
                .collect();
            format!("{t}: {}", lids.join(","))
        })
        .collect();
    let pairs: Vec<String> = differed
        .iter()
        .filter_map(|q| match q {
            CheckQuestion::Qos(k) => Some(format!("{:#x} -> {:#x}", k.src, k.dst)),
            CheckQuestion::Table(..) => None,
        })
        .collect();
    if !pairs.is_empty() {
        parts.push(format!("QoS: {}", pairs.join(",")));
    }
    parts.join("; ")
}
