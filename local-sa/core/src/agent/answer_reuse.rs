//! Answers the tables do not hold, on their way from the master and kept
//! for the next asker: forwarded queries (coalesced, answers kept for a
//! while) and the QoS cache (port pairs' paths for QoS fields and other
//! partitions). Each member owns its state behind its own methods.

use super::forward::Forwarding;
use super::qos_cache::QosCache;
use crate::config::AgentConfig;

/// Forwarded queries and the QoS cache.
#[derive(Debug)]
pub(super) struct AnswerReuse {
    /// Queries forwarded to the master, their askers and kept answers.
    pub(super) forwarding: Forwarding,
    /// Port pairs' paths for QoS fields and other partitions.
    pub(super) qos_cache: QosCache,
}

impl AnswerReuse {
    /// Nothing kept, limits and lifetimes from `config`.
    pub(super) fn new(config: &AgentConfig) -> Self {
        Self {
            forwarding: Forwarding::new(
                config.answer_ttl,
                config.negative_ttl,
                config.max_cached_answers,
            ),
            qos_cache: QosCache::new(config.qos_cache),
        }
    }

    /// Forgets every answer kept from the master beside the tables (the
    /// forwarded queries' and the QoS cache's): something that could
    /// change them happened.
    pub(super) fn forget(&mut self) {
        self.forwarding.forget_answers();
        self.qos_cache.clear();
    }

    /// A port went out of service or came back: the forwarded answers
    /// go (any of them may name it), and the QoS cache's pairs with it at
    /// either end.
    pub(super) fn forget_port(&mut self, guid: u64) {
        self.forwarding.forget_answers();
        self.qos_cache.forget_port(guid);
    }

    /// Askers waiting for the master's answer, in both.
    pub(super) fn waiting(&self) -> usize {
        self.forwarding.waiting() + self.qos_cache.asking()
    }
}
