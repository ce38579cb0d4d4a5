//! The reused answers' calls for the agent: what `SaCore` asks of the
//! forwarded queries and of the QoS cache — reached through
//! [`AnswerReuse`], never through its members.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mad_codec::{ComponentMask, PathRecord};

use crate::agent::answers::AnswerReuse;
use crate::agent::answers::forward::PathAnswer;
use crate::agent::answers::qos_cache::Origin;
use crate::agent::answers::qos_loads::QosLoad;
use crate::agent::answers::qos_tables::TableAsker;
use crate::agent::counterparts::Asker;
use crate::counters::Counters;
use crate::path_query::{PairKey, SourceKey};
use crate::request::PathQuery;

impl AnswerReuse {
    /// The master answered: keeps the answer if it is worth keeping and
    /// returns everyone who waited.
    pub(in crate::agent) fn forward_answered(
        &mut self,
        now: Instant,
        key: &PathQuery,
        answer: PathAnswer,
    ) -> Vec<Asker> {
        self.forwarding.answered(now, key, answer)
    }

    /// Drops expired answers.
    pub(in crate::agent) fn prune(&mut self, now: Instant) {
        self.forwarding.prune(now)
    }

    /// Everyone who waited, keeping no answer (the master did not answer,
    /// or its answer is passed on as it came).
    pub(in crate::agent) fn release_forward(&mut self, key: &PathQuery) -> Vec<Asker> {
        self.forwarding.release(key)
    }

    /// Forgets every pair a distributor loaded.
    pub(in crate::agent) fn forget_loaded_qos(&mut self) {
        self.qos_cache.forget_loaded()
    }

    /// Keeps the master's records for `key`, making room by dropping the
    /// least recently used eighth when full. A set larger than the whole
    /// byte limit (or any set, with no room at all) is not kept: returns
    /// whether it was.
    pub(in crate::agent) fn insert_pair(
        &mut self,
        key: PairKey,
        records: Vec<PathRecord>,
        from: Origin,
    ) -> bool {
        self.qos_cache.insert(key, records, from)
    }

    /// `k` of the pairs a distributor loaded, spread over them (in a
    /// fixed order, starting at `offset`): what a table check asks the
    /// master again.
    pub(in crate::agent) fn loaded_qos_sample(&self, k: usize, offset: usize) -> Vec<PairKey> {
        self.qos_cache.loaded_sample(k, offset)
    }

    /// Everyone who waited for `key`, and whether the answer may be kept
    /// (nothing cleared the cache since it was asked).
    pub(in crate::agent) fn release_pair(
        &mut self,
        key: &PairKey,
    ) -> (Vec<(Asker, PathQuery)>, bool) {
        self.qos_cache.release(key)
    }

    /// Everyone who waited for `key`'s table, and whether the answer may
    /// be kept (nothing cleared the cache since it was asked); `again`
    /// when it got no answer and may be asked again.
    pub(in crate::agent) fn release_qos_table(
        &mut self,
        key: &SourceKey,
        again: bool,
    ) -> (Vec<TableAsker>, bool) {
        self.qos_cache.release_table(key, again)
    }

    /// The master's tables reach this port cut (a transport without
    /// RMPP): pairs are asked alone from now on.
    pub(in crate::agent) fn qos_tables_come_cut(&mut self) {
        self.qos_cache.tables_come_cut()
    }

    /// Keeps a source's table, split [`by_destination`](crate::agent::answers::qos_cache::by_destination), one entry per
    /// destination; returns how many records were kept (entries later
    /// evicted by the table's own inserts count as kept, and evicted).
    pub(in crate::agent) fn insert_qos_table(
        &mut self,
        key: &SourceKey,
        by_dst: HashMap<u64, Vec<PathRecord>>,
        from: Origin,
    ) -> usize {
        self.qos_cache.insert_table(key, by_dst, from)
    }

    /// Whether the distributor's records for `key`, if still held, are
    /// those of the master's `answer` (`cut`: only its first records came).
    pub(in crate::agent) fn loaded_qos_agree(
        &self,
        key: &PairKey,
        answer: &[PathRecord],
        cut: bool,
    ) -> bool {
        self.qos_cache.loaded_agree(key, answer, cut)
    }

    /// A Set with `QOS_TABLES` (`flags`, `mask`) whose records are
    /// `records`: each source's table at the key kept as if the port had
    /// asked for it; or what is wrong with it (nothing changes).
    pub(in crate::agent) fn load_qos_tables(
        &mut self,
        flags: u32,
        mask: ComponentMask,
        records: &[PathRecord],
    ) -> Result<QosLoad, &'static str> {
        let load = self.qos_cache.load(flags, mask, records)?;
        self.counts.qos_cache_loaded += load.stored as u64;
        Ok(load)
    }

    /// Takes a reloaded configuration's answer lifetimes.
    pub(in crate::agent) fn set_ttls(&mut self, answer_ttl: Duration, negative_ttl: Duration) {
        self.forwarding.set_ttls(answer_ttl, negative_ttl);
    }

    /// Everyone waiting whom `gone` picks is forgotten (their connection
    /// closed), in both.
    pub(in crate::agent) fn forget_waiters(&mut self, gone: impl Fn(&Asker) -> bool) {
        self.forwarding.forget_where(&gone);
        self.qos_cache.forget_where(&gone);
    }

    /// Adds its gauges, read now, to `c`.
    pub(in crate::agent) fn add_counts(&self, c: &mut Counters) {
        self.counts.add_to(c);
        c.qos_cache_entries = self.qos_cache.len() as u64;
        c.qos_cache_bytes = self.qos_cache.bytes() as u64;
        c.qos_cache_evicted = self.qos_cache.evicted();
        c.queries_waiting = self.waiting() as u64;
    }
}
