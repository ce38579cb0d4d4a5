//! Answers the tables do not hold, on their way from the master and kept
//! for the next asker: forwarded queries (coalesced, answers kept for a
//! while) and the QoS cache (port pairs' paths for QoS fields and other
//! partitions). Each member owns its state behind its own methods, reached
//! through the group's (`api`).
//!
//! * `decide`: where a path query's answer comes from (a hit, a kept
//!   answer, a question to the master shared or in the background, or
//!   BUSY);
//! * `counts`: what those decisions counted;
//! * `forward`: forwarded queries, coalesced, their answers kept;
//! * `qos_cache`, `qos_tables`: the QoS cache, and a source's whole table
//!   at a key once enough of its pairs were asked;
//! * `qos_loads`: what a distributor's loads put in the QoS cache.

pub(in crate::agent) mod api;
pub(in crate::agent) mod counts;
pub(in crate::agent) mod decide;
pub(in crate::agent) mod forward;
pub(in crate::agent) mod qos_cache;
pub(in crate::agent) mod qos_loads;
pub(in crate::agent) mod qos_tables;

use crate::agent::answers::counts::QueryCounts;
use crate::agent::answers::forward::Forwarding;
use crate::agent::answers::qos_cache::QosCache;
use crate::config::AgentConfig;
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
}
