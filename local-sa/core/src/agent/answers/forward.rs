//! Queries the cache cannot answer, on their way to the master SA: one
//! upstream query per distinct query however many ask (coalescing), and the
//! master's answers kept for a while so that the next identical query is
//! answered here (a short while for "no such record").

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::{AttributeId, MadStatus, SaMadBuilder};

use crate::agent::counterparts::Asker;
use crate::agent::master::waiters::{Join, Waiters};
use crate::request::PathQuery;

/// The query as a MAD to send the master.
pub(crate) fn upstream_request(q: &PathQuery) -> Bytes {
    let mut b = SaMadBuilder::request(q.method, 0, AttributeId::PATH_RECORD).record(&q.template);
    b.header_mut().sa.set_component_mask(q.mask);
    b.into_bytes()
}

/// Askers one query may gather while it waits for the master; more are
/// answered BUSY at once (and each new one is checked against them all).
pub(crate) const MAX_WAITERS: usize = 1024;

/// The master's answer to a query: status and record data.
#[derive(Debug, Clone)]
pub(crate) struct PathAnswer {
    pub(crate) status: MadStatus,
    /// Records at their stride (64 bytes for PathRecords).
    pub(crate) data: Bytes,
}

#[derive(Debug, Clone)]
struct Cached {
    answer: PathAnswer,
    expires: Instant,
}

/// Queries upstream, who waits for them, and recent answers.
#[derive(Debug)]
pub(crate) struct Forwarding {
    /// Who waits for each query out, and the generation it was sent in.
    waiting: Waiters<PathQuery, Asker, u64>,
    /// Moves with every [`Forwarding::forget_answers`]: an answer to a
    /// query sent before is passed on but not kept.
    generation: u64,
    answers: HashMap<PathQuery, Cached>,
    answer_ttl: Duration,
    negative_ttl: Duration,
    max_answers: usize,
}

impl Forwarding {
    /// How long answers are reused from now on (answers kept keep their
    /// expiry).
    pub(crate) fn set_ttls(&mut self, answer_ttl: Duration, negative_ttl: Duration) {
        self.answer_ttl = answer_ttl;
        self.negative_ttl = negative_ttl;
    }

    pub(crate) fn new(answer_ttl: Duration, negative_ttl: Duration, max_answers: usize) -> Self {
        Self {
            waiting: Waiters::new(MAX_WAITERS),
            generation: 0,
            answers: HashMap::new(),
            answer_ttl,
            negative_ttl,
            max_answers,
        }
    }

    /// A fresh earlier answer to this query.
    pub(crate) fn cached(&self, now: Instant, key: &PathQuery) -> Option<&PathAnswer> {
        self.answers
            .get(key)
            .filter(|c| c.expires > now)
            .map(|c| &c.answer)
    }

    /// Queues `waiter` for `key`: the first (the query must go upstream),
    /// one more joining a query already there, or one too many. A client
    /// resending the same request (same TransactionID) while it waits is
    /// not queued twice: it gets one answer.
    pub(crate) fn wait(&mut self, key: PathQuery, waiter: Asker) -> Join<Asker> {
        let generation = self.generation;
        self.waiting.join(key, waiter, || generation)
    }

    /// Marks `key` as asked with nobody waiting (its answer is only
    /// kept). True if no request for it is out (it must go upstream).
    pub(crate) fn prefetch(&mut self, key: PathQuery) -> bool {
        self.waiting.open(key, self.generation)
    }

    /// Queries waiting for the master.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The master answered: keeps the answer if it is worth keeping (and
    /// nothing made the answers kept be forgotten since it was asked) and
    /// returns everyone who waited.
    pub(crate) fn answered(
        &mut self,
        now: Instant,
        key: &PathQuery,
        answer: PathAnswer,
    ) -> Vec<Asker> {
        let (asked_in, askers) =
            (self.waiting.release(key)).unwrap_or((self.generation, Vec::new()));
        if asked_in != self.generation {
            return askers;
        }
        let ttl = match answer.status {
            MadStatus::OK => Some(self.answer_ttl),
            MadStatus::ERR_NO_RECORDS => Some(self.negative_ttl),
            _ => None,
        };
        if let Some(ttl) = ttl.filter(|t| !t.is_zero()) {
            if self.answers.len() >= self.max_answers {
                self.answers.retain(|_, c| c.expires > now);
            }
            if self.answers.len() < self.max_answers {
                self.answers.insert(
                    *key,
                    Cached {
                        answer,
                        expires: now + ttl,
                    },
                );
            }
        }
        askers
    }

    /// Everyone who waited, keeping no answer (the master did not answer,
    /// or its answer is passed on as it came).
    pub(crate) fn release(&mut self, key: &PathQuery) -> Vec<Asker> {
        self.waiting
            .release(key)
            .map(|(_, askers)| askers)
            .unwrap_or_default()
    }

    /// Drops the waiters `gone` picks (their asker went away); a query
    /// nobody waits for any more keeps its upstream request, whose answer
    /// is then only kept.
    pub(crate) fn forget_where(&mut self, gone: impl Fn(&Asker) -> bool) {
        self.waiting.forget_where(gone);
    }

    /// Forgets every kept answer (the fabric changed), and the answers
    /// to queries out now when they come.
    pub(crate) fn forget_answers(&mut self) {
        self.answers.clear();
        self.generation += 1;
    }

    /// Drops expired answers.
    pub(crate) fn prune(&mut self, now: Instant) {
        self.answers.retain(|_, c| c.expires > now);
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{Method, PathRecord};

    use super::*;

    fn key(dlid: u16) -> PathQuery {
        let mut template = PathRecord::new_zeroed();
        template.set_dlid(dlid);
        PathQuery {
            method: Method::GET,
            mask: mad_codec::attr::path_record::mask::DLID,
            template,
        }
    }

    fn waiter(conn: u64) -> Asker {
        Asker::Local {
            conn,
            id: 1,
            kind: crate::request::RequestKind::PathQuery,
            waited: false,
        }
    }

    fn conn(a: &Asker) -> u64 {
        a.conn().expect("a local waiter")
    }

    #[test]
    fn identical_queries_coalesce_and_answers_are_kept() {
        let t0 = Instant::now();
        let mut f = Forwarding::new(Duration::from_secs(60), Duration::from_secs(5), 10);
        assert_eq!(
            f.wait(key(1), waiter(10)),
            Join::First,
            "the first asker sends"
        );
        assert_eq!(f.wait(key(1), waiter(11)), Join::Joined, "the second waits");
        assert_eq!(
            f.wait(key(2), waiter(10)),
            Join::First,
            "another query is another query"
        );
        // A thousand more join; one past that is given back.
        for conn in 12..(12 + MAX_WAITERS as u64 - 2) {
            assert_eq!(f.wait(key(1), waiter(conn)), Join::Joined);
        }
        assert_eq!(f.wait(key(1), waiter(5)), Join::Full(waiter(5)));
        assert_eq!(
            f.wait(key(1), waiter(10)),
            Join::Joined,
            "a resend is still the same request"
        );
        let ok = PathAnswer {
            status: MadStatus::OK,
            data: Bytes::from_static(&[0; 64]),
        };
        let waiters = f.answered(t0, &key(1), ok);
        assert_eq!(waiters.len(), MAX_WAITERS);
        assert_eq!(
            waiters.iter().take(2).map(conn).collect::<Vec<_>>(),
            [10, 11]
        );
        assert!(f.cached(t0 + Duration::from_secs(59), &key(1)).is_some());
        assert!(f.cached(t0 + Duration::from_secs(61), &key(1)).is_none());
        // "No such record" is kept briefly; other errors not at all.
        f.answered(
            t0,
            &key(2),
            PathAnswer {
                status: MadStatus::ERR_NO_RECORDS,
                data: Bytes::new(),
            },
        );
        assert!(f.cached(t0 + Duration::from_secs(4), &key(2)).is_some());
        assert!(f.cached(t0 + Duration::from_secs(6), &key(2)).is_none());
        f.wait(key(3), waiter(1));
        f.answered(
            t0,
            &key(3),
            PathAnswer {
                status: MadStatus::BUSY,
                data: Bytes::new(),
            },
        );
        assert!(f.cached(t0, &key(3)).is_none());
        assert_eq!(f.waiting(), 0);
    }

    #[test]
    fn an_answer_to_a_query_asked_before_the_answers_were_forgotten_is_not_kept() {
        let t0 = Instant::now();
        let mut f = Forwarding::new(Duration::from_secs(60), Duration::from_secs(5), 10);
        assert_eq!(f.wait(key(1), waiter(10)), Join::First);
        f.forget_answers();
        let ok = PathAnswer {
            status: MadStatus::OK,
            data: Bytes::from_static(&[0; 64]),
        };
        assert_eq!(f.answered(t0, &key(1), ok.clone()).len(), 1, "passed on");
        assert!(f.cached(t0, &key(1)).is_none(), "not kept");
        assert_eq!(f.wait(key(1), waiter(10)), Join::First, "asked again");
        f.answered(t0, &key(1), ok);
        assert!(f.cached(t0, &key(1)).is_some());
    }

    #[test]
    fn the_answer_cache_is_bounded() {
        let t0 = Instant::now();
        let mut f = Forwarding::new(Duration::from_secs(60), Duration::from_secs(5), 3);
        for d in 0..10 {
            f.answered(
                t0,
                &key(d),
                PathAnswer {
                    status: MadStatus::OK,
                    data: Bytes::new(),
                },
            );
        }
        assert!((0..10).filter(|d| f.cached(t0, &key(*d)).is_some()).count() <= 3);
        f.forget_answers();
        assert!(f.cached(t0, &key(0)).is_none());
    }
}
