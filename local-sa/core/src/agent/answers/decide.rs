//! Where a path query's answer comes from, decided by the machine that
//! keeps the answers beside the tables: the tables or the QoS cache
//! (a hit), an answer of the master's kept a while, a question to the
//! master shared by everyone who asks the same (coalesced), asked in
//! the background while the asker gets "no records" at once (ibacm's
//! NODELAY), or refused BUSY when too many wait. Each decision is
//! counted here (`counts`); `SaCore` carries it out ([`Decision`]):
//! it answers, or sends the question to the master.

use std::time::Instant;

use mad_codec::{MadStatus, PathRecord};
use tracing::debug;

use crate::agent::answers::AnswerReuse;
use crate::agent::answers::forward::PathAnswer;
use crate::agent::answers::qos_cache::{Fetch, Waited};
use crate::agent::counterparts::Asker;
use crate::agent::master::waiters::Join;
use crate::path_query::{self, ForwardReason, Knowledge, Outcome, PairKey};
use crate::request::{Lookup, PathQuery};

/// What `SaCore` is to do with a path query.
#[derive(Debug)]
pub(in crate::agent) enum Decision {
    /// Answer these records (from the tables or the QoS cache).
    Records(Asker, Vec<PathRecord>),
    /// Answer this status (from the tables or the QoS cache, or "no
    /// records" where the lookup does not wait for the master).
    Status(Asker, MadStatus),
    /// Answer the master's answer to the same query, kept a while.
    Kept(Asker, PathAnswer),
    /// Wait for the master's ClassPortInfo (whether it applies QoS)
    /// being asked, then decide again.
    AwaitMasterInfo(Asker, PathQuery),
    /// Ask the master this; the asker waits for its answer (and whoever
    /// asks the same meanwhile joins it).
    Ask(Question),
    /// Answer "no records" now, and ask the master this in the
    /// background so that a later lookup finds it.
    NoRecordsThenAsk(Asker, Question),
    /// Nothing to do: the asker joined a question already out.
    Joined,
    /// Too many wait for the master already: answer BUSY.
    Busy(Asker),
}

/// A question for the master.
#[derive(Debug)]
pub(in crate::agent) enum Question {
    /// The query itself, forwarded.
    Forward(PathQuery),
    /// One port pair's records, or a source's whole table at a QoS key
    /// (never [`Fetch::Nothing`]).
    Fetch(Fetch),
}

impl AnswerReuse {
    /// Decides a path query from `asker`, answered from where `lookup`
    /// allows, with what the tables know (`k`) and whether the master's
    /// ClassPortInfo is being asked (`awaiting_info`).
    // Every Get answered from the cache passes here from SaCore's
    // routing, which the compiler may place in another codegen unit:
    // inlined (this, `settle`, the counts), a hit costs 3 % more
    // instructions than when SaCore decided itself, where a call cost 7 %
    // (BENCHMARKS.md, "the Get path inlined").
    #[inline]
    pub(in crate::agent) fn decide(
        &mut self,
        now: Instant,
        (k, awaiting_info): (&Knowledge<'_>, bool),
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
    ) -> Decision {
        if lookup == Lookup::Master {
            self.miss(now);
            return self.decide_forward(asker, query);
        }
        let outcome = path_query::evaluate(k, query.method, query.mask, &query.template);
        if k.in_doubt && matches!(outcome, Outcome::Pair(_) | Outcome::Forward(_)) {
            self.counts.doubt_queries += 1;
        }
        self.settle(now, (k, awaiting_info), asker, query, lookup, outcome)
    }

    /// Decides for one who waited for `key`'s records (already counted as
    /// a hit or a miss), now that they are `records`.
    pub(super) fn decide_from_pair(
        &mut self,
        k: &Knowledge<'_>,
        (asker, query): (Asker, PathQuery),
        key: &PairKey,
        records: &[PathRecord],
    ) -> Decision {
        let outcome = pair_outcome(k, records, key, &query);
        self.act_on_pair(k, asker, query, outcome)
    }

    /// Decides for one already counted who needs `key`'s records after
    /// all: a destination its source's table did not hold, or an SL the
    /// master must judge. From the QoS cache, else the pair is asked.
    pub(super) fn decide_pair_again(
        &mut self,
        k: &Knowledge<'_>,
        (asker, query): (Asker, PathQuery),
        key: PairKey,
    ) -> Decision {
        match self.held_pair_outcome(k, &key, &query) {
            Some(outcome) => {
                self.counts.qos_cache_hits += 1;
                self.act_on_pair(k, asker, query, outcome)
            }
            None => self.ask_pair(asker, query, Lookup::Anywhere, key),
        }
    }

    /// The hits and misses of the last minute.
    pub(in crate::agent) fn last_minute(&self, now: Instant) -> (u64, u64) {
        self.last_minute.totals(now)
    }

    #[inline]
    fn hit(&mut self, now: Instant) {
        self.counts.hits += 1;
        self.last_minute.hit(now);
    }

    #[inline]
    fn miss(&mut self, now: Instant) {
        self.counts.misses += 1;
        self.last_minute.miss(now);
    }

    /// Decides on what evaluating the query came to. A loop rather than
    /// a call of itself (an outcome from the QoS cache is decided as
    /// evaluated), so that it is inlined into [`Self::decide`].
    #[inline]
    fn settle(
        &mut self,
        now: Instant,
        (k, awaiting_info): (&Knowledge<'_>, bool),
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        mut outcome: Outcome,
    ) -> Decision {
        loop {
            return match outcome {
                Outcome::Records(records) => {
                    self.hit(now);
                    Decision::Records(asker, records)
                }
                Outcome::Status(status) => {
                    self.hit(now);
                    Decision::Status(asker, status)
                }
                Outcome::Forward(ForwardReason::MasterQos) | Outcome::Pair(_)
                    if lookup == Lookup::Anywhere && awaiting_info =>
                {
                    // Whether the master applies QoS is being asked: wait
                    // for that one small answer rather than ask the master
                    // this.
                    self.counts.coalesced += 1;
                    Decision::AwaitMasterInfo(asker, query)
                }
                Outcome::Pair(key) => match self.held_pair_outcome(k, &key, &query) {
                    Some(held) => {
                        self.counts.qos_cache_hits += 1;
                        outcome = held;
                        continue;
                    }
                    None => {
                        self.miss(now);
                        self.ask_pair(asker, query, lookup, key)
                    }
                },
                Outcome::Forward(reason) => self.settle_forward(now, asker, query, lookup, reason),
            };
        }
    }

    /// Decides on a query the tables leave to the master (`reason`): a
    /// kept answer of its, or the master asked, as `lookup` allows.
    fn settle_forward(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        reason: ForwardReason,
    ) -> Decision {
        self.miss(now);
        debug!(%reason, mask = %query.mask, "forwarding a PathRecord query");
        if let Some(answer) = self.forwarding.cached(now, &query).cloned() {
            self.counts.answer_cache_hits += 1;
            return Decision::Kept(asker, answer);
        }
        match lookup {
            Lookup::CacheOnly if self.forwarding.prefetch(query) => {
                Decision::NoRecordsThenAsk(asker, Question::Forward(query))
            }
            Lookup::CacheOnly | Lookup::KnownOnly => {
                Decision::Status(asker, MadStatus::ERR_NO_RECORDS)
            }
            Lookup::Anywhere | Lookup::Master => self.decide_forward(asker, query),
        }
    }

    /// Decides on what a pair's records came to for an asker already
    /// counted.
    fn act_on_pair(
        &mut self,
        k: &Knowledge<'_>,
        asker: Asker,
        query: PathQuery,
        outcome: Outcome,
    ) -> Decision {
        match outcome {
            Outcome::Records(records) => Decision::Records(asker, records),
            Outcome::Status(status) => Decision::Status(asker, status),
            // An SL the master must judge.
            Outcome::Pair(key) => self.decide_pair_again(k, (asker, query), key),
            // A port gone meanwhile.
            Outcome::Forward(_) => self.decide_forward(asker, query),
        }
    }

    /// What `query` comes to from `key`'s records in the QoS cache, if
    /// they are there.
    fn held_pair_outcome(
        &self,
        k: &Knowledge<'_>,
        key: &PairKey,
        query: &PathQuery,
    ) -> Option<Outcome> {
        let records = self.qos_cache.get(key)?;
        Some(pair_outcome(k, records, key, query))
    }

    /// Waits for `key`'s records from the master, or answers at once
    /// where `lookup` does not wait for the master.
    fn ask_pair(
        &mut self,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        key: PairKey,
    ) -> Decision {
        match lookup {
            Lookup::CacheOnly => {
                let fetch = self.qos_cache.prefetch(key);
                match self.fetch(fetch) {
                    Some(question) => Decision::NoRecordsThenAsk(asker, question),
                    None => Decision::Status(asker, MadStatus::ERR_NO_RECORDS),
                }
            }
            Lookup::KnownOnly => Decision::Status(asker, MadStatus::ERR_NO_RECORDS),
            Lookup::Anywhere | Lookup::Master => match self.qos_cache.wait(key, asker, query) {
                Waited::For(fetch) => match self.fetch(fetch) {
                    Some(question) => Decision::Ask(question),
                    None => {
                        self.counts.coalesced += 1;
                        Decision::Joined
                    }
                },
                Waited::Full(asker) => {
                    self.counts.refused += 1;
                    Decision::Busy(asker)
                }
            },
        }
    }

    /// The question a QoS cache's fetch puts to the master, counted;
    /// `None` if it is asked already.
    fn fetch(&mut self, fetch: Fetch) -> Option<Question> {
        match fetch {
            Fetch::Pair(_) => self.counts.qos_cache_fetches += 1,
            // Every port of a job asks its own at the job's start: a
            // whole table's wait, not a pair's.
            Fetch::Table(_) => self.counts.qos_cache_tables += 1,
            Fetch::Nothing => return None,
        }
        Some(Question::Fetch(fetch))
    }

    /// Decides to ask the master for `asker` (with whoever asks the
    /// same).
    pub(super) fn decide_forward(&mut self, asker: Asker, query: PathQuery) -> Decision {
        match self.forwarding.wait(query, asker) {
            Join::First => Decision::Ask(Question::Forward(query)),
            Join::Joined => {
                self.counts.coalesced += 1;
                Decision::Joined
            }
            Join::Full(asker) => {
                self.counts.refused += 1;
                Decision::Busy(asker)
            }
        }
    }
}

/// What `query` comes to from `key`'s records, `records`.
fn pair_outcome(
    k: &Knowledge<'_>,
    records: &[PathRecord],
    key: &PairKey,
    query: &PathQuery,
) -> Outcome {
    path_query::evaluate_pair(k, records, key, query.method, query.mask, &query.template)
}

#[cfg(test)]
pub(super) mod tests {
    use mad_codec::attr::path_record::mask as pr;
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{Gid, Method};

    use super::*;
    use crate::agent::answers::forward::MAX_WAITERS;
    use crate::config::AgentConfig;
    use crate::counters::Counters;
    use crate::partitions::Partitions;
    use crate::request::RequestKind;
    use crate::store::{FastSet, PathStore};

    pub(in crate::agent::answers) fn asker(id: u32) -> Asker {
        Asker::Local {
            conn: 1,
            id,
            kind: RequestKind::PathQuery,
            waited: false,
        }
    }

    /// A Get of the path between two ports the tables know nothing of.
    pub(in crate::agent::answers) fn unknown_pair() -> PathQuery {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(Gid::new(Gid::DEFAULT_PREFIX, 7));
        t.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, 8));
        PathQuery {
            method: Method::GET,
            mask: pr::SGID | pr::DGID,
            template: t,
        }
    }

    /// Tables that hold nothing.
    #[derive(Default)]
    pub(in crate::agent::answers) struct Empty {
        store: PathStore,
        complete: FastSet<u64>,
        partitions: Partitions,
    }

    impl Empty {
        /// What they tell path queries (`in_doubt`: after a sweep).
        pub(in crate::agent::answers) fn knowledge(&self, in_doubt: bool) -> Knowledge<'_> {
            Knowledge {
                store: &self.store,
                subnet_prefix: Gid::DEFAULT_PREFIX,
                complete_sources: &self.complete,
                master_qos: false,
                partitions: &self.partitions,
                in_doubt,
            }
        }
    }

    fn counted(a: &AnswerReuse) -> Counters {
        let mut c = Counters::default();
        a.add_counts(&mut c);
        c
    }

    #[test]
    fn identical_misses_share_one_question_and_one_too_many_is_refused_busy() {
        let now = Instant::now();
        let empty = Empty::default();
        let k = empty.knowledge(false);
        let mut a = AnswerReuse::new(&AgentConfig::default());
        let q = unknown_pair();
        let first = a.decide(now, (&k, false), asker(0), q, Lookup::Anywhere);
        assert!(matches!(first, Decision::Ask(Question::Forward(asked)) if asked == q));
        for id in 1..MAX_WAITERS as u32 {
            let joined = a.decide(now, (&k, false), asker(id), q, Lookup::Anywhere);
            assert!(matches!(joined, Decision::Joined), "{joined:?}");
        }
        let refused = a.decide(now, (&k, false), asker(5000), q, Lookup::Anywhere);
        assert!(
            matches!(refused, Decision::Busy(Asker::Local { id: 5000, .. })),
            "{refused:?}"
        );
        let c = counted(&a);
        assert_eq!(c.misses, MAX_WAITERS as u64 + 1);
        assert_eq!(c.coalesced, MAX_WAITERS as u64 - 1);
        assert_eq!((c.hits, c.upstream_refused), (0, 1));
        assert_eq!(a.last_minute(now), (0, MAX_WAITERS as u64 + 1));
    }

    #[test]
    fn a_lookup_that_does_not_wait_answers_no_records_and_asks_once_in_the_background() {
        let now = Instant::now();
        let empty = Empty::default();
        let k = empty.knowledge(true);
        let mut a = AnswerReuse::new(&AgentConfig::default());
        let q = unknown_pair();
        let first = a.decide(now, (&k, false), asker(0), q, Lookup::CacheOnly);
        assert!(matches!(
            first,
            Decision::NoRecordsThenAsk(_, Question::Forward(asked)) if asked == q
        ));
        let again = a.decide(now, (&k, false), asker(1), q, Lookup::CacheOnly);
        assert!(
            matches!(again, Decision::Status(_, MadStatus::ERR_NO_RECORDS)),
            "asked once: {again:?}"
        );
        let known = a.decide(now, (&k, false), asker(2), q, Lookup::KnownOnly);
        assert!(matches!(
            known,
            Decision::Status(_, MadStatus::ERR_NO_RECORDS)
        ));
        let c = counted(&a);
        assert_eq!((c.misses, c.doubt_queries, c.coalesced), (3, 3, 0));
    }
}
