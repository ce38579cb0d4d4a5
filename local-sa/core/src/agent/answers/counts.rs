//! What the reused answers' decisions counted since start (the path
//! queries', the QoS cache's loads and forgetting), added to the agent's
//! counters ([`AnswerReuse::add_counts`]).
//!
//! [`AnswerReuse::add_counts`]: super::AnswerReuse::add_counts

use crate::counters::Counters;

/// What the path queries' decisions counted since start (each field is
/// the agent counter of the same name, `refused` its `upstream_refused`).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::agent) struct QueryCounts {
    pub(super) hits: u64,
    pub(super) misses: u64,
    pub(super) coalesced: u64,
    pub(super) answer_cache_hits: u64,
    pub(super) qos_cache_hits: u64,
    pub(super) qos_cache_fetches: u64,
    pub(super) qos_cache_tables: u64,
    pub(super) doubt_queries: u64,
    pub(super) refused: u64,
    pub(super) qos_cache_loaded: u64,
    pub(super) qos_forgotten: u64,
}

impl QueryCounts {
    /// Adds them to `c`.
    pub(in crate::agent) fn add_to(&self, c: &mut Counters) {
        c.hits += self.hits;
        c.misses += self.misses;
        c.coalesced += self.coalesced;
        c.answer_cache_hits += self.answer_cache_hits;
        c.qos_cache_hits += self.qos_cache_hits;
        c.qos_cache_fetches += self.qos_cache_fetches;
        c.qos_cache_tables += self.qos_cache_tables;
        c.doubt_queries += self.doubt_queries;
        c.upstream_refused += self.refused;
        c.qos_cache_loaded += self.qos_cache_loaded;
        c.qos_forgotten += self.qos_forgotten;
    }
}
