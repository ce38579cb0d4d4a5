//! The master's answers to the questions the reused answers decided on,
//! taken by them: a port pair's records, or a source's table at a QoS
//! key, kept (unless something cleared the cache since they were asked)
//! and each waiter's decision made from them; a forwarded query's answer
//! kept for whoever asks the same; and, when the master left a question
//! unanswered, every waiter answered BUSY, as OpenSM's silence would
//! leave them to retry. `SaCore` carries the decisions out.

use std::collections::HashMap;
use std::time::Instant;

use mad_codec::{MadStatus, PathRecord};

use crate::agent::answers::AnswerReuse;
use crate::agent::answers::decide::Decision;
use crate::agent::answers::forward::PathAnswer;
use crate::agent::answers::qos_cache::{Origin, by_destination};
use crate::agent::counterparts::Asker;
use crate::path_query::{Knowledge, PairKey, SourceKey};
use crate::request::PathQuery;
use crate::requester::Answer;

impl AnswerReuse {
    /// The master answered a pair's query: everyone waiting is answered
    /// from its records, which are kept. An answer that cannot be used
    /// so (cut, or an error other than "none") sends each waiter's own
    /// query to the master instead.
    pub(in crate::agent) fn handle_pair_answer(
        &mut self,
        k: &Knowledge<'_>,
        key: &PairKey,
        answer: &Answer,
    ) -> Vec<Decision> {
        let (waiters, keep) = self.qos_cache.release(key);
        let records: Vec<PathRecord> = match answer.status() {
            _ if answer.is_cut() => return self.forward_each(waiters),
            MadStatus::OK => answer.records::<PathRecord>().copied().collect(),
            MadStatus::ERR_NO_RECORDS => Vec::new(),
            _ => return self.forward_each(waiters),
        };
        let decisions = (waiters.into_iter())
            .map(|(asker, query)| self.decide_from_pair(k, (asker.waited(), query), key, &records))
            .collect();
        if keep {
            self.qos_cache.insert(*key, records, Origin::Master);
        }
        decisions
    }

    /// The master answered a source's table at a key: each destination's
    /// records are kept as its pair's, and each waiter is answered from
    /// its pair's. A destination the table does not hold, or an answer
    /// that cannot be used so (cut, or an error other than "none"), has
    /// its waiters' pairs asked on their own.
    pub(in crate::agent) fn handle_qos_table_answer(
        &mut self,
        k: &Knowledge<'_>,
        key: &SourceKey,
        answer: &Answer,
    ) -> Vec<Decision> {
        let (waiters, keep) = self.qos_cache.release_table(key, false);
        let by_dst = match answer.status() {
            _ if answer.is_cut() => {
                // A transport without RMPP: pairs are asked alone from
                // now on.
                self.qos_cache.tables_come_cut();
                HashMap::new()
            }
            MadStatus::OK => by_destination(answer.records::<PathRecord>().copied()),
            _ => HashMap::new(),
        };
        let decisions = (waiters.into_iter())
            .map(|(dst, asker, query)| {
                let pair = key.pair(dst);
                match by_dst.get(&dst) {
                    Some(records) => {
                        self.decide_from_pair(k, (asker.waited(), query), &pair, records)
                    }
                    None => self.decide_pair_again(k, (asker, query), pair),
                }
            })
            .collect();
        if keep {
            self.qos_cache.insert_table(key, by_dst, Origin::Master);
        }
        decisions
    }

    /// The master answered a forwarded query: the answer is kept if it
    /// is worth keeping; returns everyone who waited.
    pub(in crate::agent) fn handle_forward_answer(
        &mut self,
        now: Instant,
        key: &PathQuery,
        answer: PathAnswer,
    ) -> Vec<Asker> {
        self.forwarding.answered(now, key, answer)
    }

    /// Everyone who waited for a forwarded query, keeping no answer: its
    /// answer is passed on as it came (cut).
    pub(in crate::agent) fn release_forward(&mut self, key: &PathQuery) -> Vec<Asker> {
        self.forwarding.release(key)
    }

    /// The master left a forwarded query unanswered (or it was never
    /// sent): its waiters are answered BUSY.
    pub(in crate::agent) fn handle_forward_failed(&mut self, key: &PathQuery) -> Vec<Decision> {
        let waiters = self.forwarding.release(key);
        busy(waiters.into_iter())
    }

    /// The master left a pair's query unanswered: its waiters are
    /// answered BUSY.
    pub(in crate::agent) fn handle_pair_failed(&mut self, key: &PairKey) -> Vec<Decision> {
        let (waiters, _) = self.qos_cache.release(key);
        busy(waiters.into_iter().map(|(asker, _)| asker))
    }

    /// The master left a source's table unanswered: its waiters are
    /// answered BUSY, and the table may be asked again.
    pub(in crate::agent) fn handle_qos_table_failed(&mut self, key: &SourceKey) -> Vec<Decision> {
        let (waiters, _) = self.qos_cache.release_table(key, true);
        busy(waiters.into_iter().map(|(_, asker, _)| asker))
    }

    /// Each waiter's own query asked of the master.
    fn forward_each(&mut self, waiters: Vec<(Asker, PathQuery)>) -> Vec<Decision> {
        (waiters.into_iter())
            .map(|(asker, query)| self.decide_forward(asker.waited(), query))
            .collect()
    }
}

/// `waiters` answered BUSY.
fn busy(waiters: impl Iterator<Item = Asker>) -> Vec<Decision> {
    waiters
        .map(|asker| Decision::Status(asker.waited(), MadStatus::BUSY))
        .collect()
}

#[cfg(test)]
mod tests {
    use mad_codec::attr::path_record::mask as pr;

    use super::*;
    use crate::agent::answers::decide::Question;
    use crate::agent::answers::decide::tests::{Empty, asker, unknown_pair};
    use crate::agent::answers::qos_cache::Fetch;
    use crate::config::AgentConfig;
    use crate::path_query::QosKey;
    use crate::request::Lookup;

    /// Whom `decisions` answer BUSY, by id.
    fn busy_ids(decisions: &[Decision]) -> Vec<u32> {
        (decisions.iter())
            .filter_map(|d| match d {
                Decision::Status(Asker::Local { id, waited, .. }, MadStatus::BUSY) => {
                    assert!(waited, "a waiter's answer says it waited");
                    Some(*id)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_silent_master_answers_every_waiter_of_a_forwarded_query_busy_once() {
        let now = Instant::now();
        let empty = Empty::default();
        let k = empty.knowledge(false);
        let mut a = AnswerReuse::new(&AgentConfig::default());
        let q = unknown_pair();
        for id in 0..3 {
            a.decide(now, (&k, false), asker(id), q, Lookup::Anywhere);
        }
        assert_eq!(busy_ids(&a.handle_forward_failed(&q)), [0, 1, 2]);
        assert!(a.handle_forward_failed(&q).is_empty(), "nobody waits now");
        assert_eq!(a.waiting(), 0);
    }

    #[test]
    fn a_pair_s_waiters_are_answered_busy_or_their_own_queries_asked_when_its_answer_is_cut() {
        let empty = Empty::default();
        let k = empty.knowledge(false);
        let mut a = AnswerReuse::new(&AgentConfig::default());
        // A partition the tables do not hold: its pair is asked.
        let mut q = unknown_pair();
        q.template.set_pkey(0x8123);
        q.mask |= pr::PKEY;
        let key = PairKey {
            src: 7,
            dst: 8,
            qos: QosKey::partition(0x0123),
        };
        let first = a.decide_pair_again(&k, (asker(0), q), key);
        assert!(
            matches!(first, Decision::Ask(Question::Fetch(Fetch::Pair(asked))) if asked == key),
            "{first:?}"
        );
        let joined = a.decide_pair_again(&k, (asker(1), q), key);
        assert!(matches!(joined, Decision::Joined), "{joined:?}");
        assert_eq!(busy_ids(&a.handle_pair_failed(&key)), [0, 1]);

        // Asked again, its answer comes cut: each waiter's own query goes
        // to the master, as one question.
        let Decision::Ask(_) = a.decide_pair_again(&k, (asker(2), q), key) else {
            panic!("asked again");
        };
        let cut = Answer::cut(bytes::Bytes::from(vec![0u8; 512]), 256).unwrap();
        let decisions = a.handle_pair_answer(&k, &key, &cut);
        assert!(
            matches!(&decisions[..], [Decision::Ask(Question::Forward(f))] if *f == q),
            "{decisions:?}"
        );
    }
}
