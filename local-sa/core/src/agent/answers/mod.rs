//! Answers the tables do not hold, on their way from the master and kept
//! for the next asker: forwarded queries (coalesced, answers kept for a
//! while) and the QoS cache (port pairs' paths for QoS fields and other
//! partitions). Each member owns its state behind its own methods, reached
//! through the group's.
//!
//! * `decide`: where a path query's answer comes from (a hit, a kept
//!   answer, a question to the master shared or in the background, or
//!   BUSY);
//! * `answered`: the master's answers to those questions kept, and the
//!   waiters' decisions made from them (or BUSY when it is silent);
//! * `counts`: what those decisions counted;
//! * `forward`: forwarded queries, coalesced, their answers kept;
//! * `qos_cache`, `qos_tables`: the QoS cache, and a source's whole table
//!   at a key once enough of its pairs were asked;
//! * `qos_loads`: what a distributor's loads put in the QoS cache.

pub(in crate::agent) mod answered;
pub(in crate::agent) mod counts;
pub(in crate::agent) mod decide;
pub(in crate::agent) mod forward;
pub(in crate::agent) mod qos_cache;
pub(in crate::agent) mod qos_loads;
pub(in crate::agent) mod qos_tables;

use std::time::{Duration, Instant};

use mad_codec::{ComponentMask, PathRecord};

use crate::agent::answers::counts::QueryCounts;
use crate::agent::answers::forward::Forwarding;
use crate::agent::answers::qos_cache::QosCache;
use crate::agent::answers::qos_loads::QosLoad;
use crate::agent::counterparts::Asker;
use crate::config::AgentConfig;
use crate::counters::Counters;
use crate::path_query::PairKey;
use crate::stats::LastMinute;

/// Forwarded queries and the QoS cache.
#[derive(Debug)]
pub(in crate::agent) struct AnswerReuse {
    /// Queries forwarded to the master, their askers and kept answers.
    forwarding: Forwarding,
    /// Port pairs' paths for QoS fields and other partitions.
    qos_cache: QosCache,
    /// What the path queries' decisions counted.
    counts: QueryCounts,
    /// Path queries from the cache and not, in the last minute.
    last_minute: LastMinute,
}

impl AnswerReuse {
    /// Nothing kept, limits and lifetimes from `config`.
    pub(in crate::agent) fn new(config: &AgentConfig) -> Self {
        Self {
            forwarding: Forwarding::new(
                config.answer_ttl,
                config.negative_ttl,
                config.max_cached_answers,
            ),
            qos_cache: QosCache::new(config.qos_cache),
            counts: QueryCounts::default(),
            last_minute: LastMinute::default(),
        }
    }

    /// Forgets every answer kept from the master beside the tables (the
    /// forwarded queries' and the QoS cache's): something that could
    /// change them happened.
    pub(in crate::agent) fn forget(&mut self) {
        self.forwarding.forget_answers();
        self.qos_cache.clear();
    }

    /// A distributor saw the master sweep: what it answered before may
    /// not be what it answers now, so everything kept from it goes.
    pub(in crate::agent) fn forget_after_sweep(&mut self) {
        self.forget();
        self.counts.qos_forgotten += 1;
    }

    /// A port went out of service or came back: the forwarded answers
    /// go (any of them may name it), and the QoS cache's pairs with it at
    /// either end.
    pub(in crate::agent) fn forget_port(&mut self, guid: u64) {
        self.forwarding.forget_answers();
        self.qos_cache.forget_port(guid);
    }

    /// Askers waiting for the master's answer, in both.
    pub(in crate::agent) fn waiting(&self) -> usize {
        self.forwarding.waiting() + self.qos_cache.asking()
    }

    /// Drops expired answers.
    pub(in crate::agent) fn prune(&mut self, now: Instant) {
        self.forwarding.prune(now)
    }

    /// Forgets every pair a distributor loaded.
    pub(in crate::agent) fn forget_loaded_qos(&mut self) {
        self.qos_cache.forget_loaded()
    }

    /// `k` of the pairs a distributor loaded, spread over them (in a
    /// fixed order, starting at `offset`): what a table check asks the
    /// master again.
    pub(in crate::agent) fn loaded_qos_sample(&self, k: usize, offset: usize) -> Vec<PairKey> {
        self.qos_cache.loaded_sample(k, offset)
    }

    /// The master's tables reach this port cut (a transport without
    /// RMPP): pairs are asked alone from now on.
    pub(in crate::agent) fn qos_tables_come_cut(&mut self) {
        self.qos_cache.tables_come_cut()
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
