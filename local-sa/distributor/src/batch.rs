//! Queries sent a window at a time, each end kept in the order asked:
//! the watch driver's renewals, its probes of ports, its polls of the
//! master's activity and the program's asks of the master; on its own
//! ([`Sends`]), lsaquery's reads and checks before a fill and the storm
//! simulator's.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use local_sa_core::requester::{Answer, Attempts, Failure as RequestFailure};
use mad_codec::address::Address;

use crate::computed::sample_check::End;
use crate::sends::{Send, Sends};

/// Queries to send, at most `window` out at once.
#[derive(Debug)]
pub struct Batch {
    /// Those not sent yet, by their place in the batch.
    left: VecDeque<(usize, Address, Bytes)>,
    /// Those out: the send's id, and its place.
    out: HashMap<u64, usize>,
    window: usize,
    /// Each query's time-out and retries, if not the transport's own.
    attempts: Option<Attempts>,
    ends: Vec<Option<End>>,
}

impl Batch {
    /// `queries`, each to its address, `window` (at least one) at a time.
    pub fn new(queries: Vec<(Address, Bytes)>, window: usize) -> Self {
        Self {
            ends: (0..queries.len()).map(|_| None).collect(),
            left: (queries.into_iter().enumerate())
                .map(|(i, (dest, mad))| (i, dest, mad))
                .collect(),
            out: HashMap::new(),
            window: window.max(1),
            attempts: None,
        }
    }

    /// The batch, each query given `attempts`.
    pub fn with_attempts(self, attempts: Attempts) -> Self {
        Self {
            attempts: Some(attempts),
            ..self
        }
    }

    /// The next query to send, if the window has room; `id_of` gives,
    /// from its place in the batch, the id its end will be told by.
    pub(crate) fn poll_query(&mut self, id_of: impl FnOnce(usize) -> u64) -> Option<(u64, Send)> {
        if self.out.len() >= self.window {
            return None;
        }
        let (place, dest, request) = self.left.pop_front()?;
        let id = id_of(place);
        self.out.insert(id, place);
        Some((
            id,
            Send::Query {
                dest,
                request,
                attempts: self.attempts,
            },
        ))
    }

    /// Query `id` ended (an id not out is none of this batch's).
    fn query_ended(&mut self, id: u64, end: End) {
        if let Some(place) = self.out.remove(&id) {
            self.ends[place] = Some(end);
        }
    }

    /// Whether every query has ended.
    pub fn is_done(&self) -> bool {
        self.left.is_empty() && self.out.is_empty()
    }

    /// Every end, in the order of the queries.
    pub fn finish(self) -> Vec<End> {
        self.ends.into_iter().flatten().collect()
    }
}

/// A batch on its own: each query's id is its place in the batch. (In
/// the watch's driver, which gives the ids, its ends come the same way.)
impl Sends for Batch {
    fn poll_send(&mut self) -> Option<(u64, Send)> {
        self.poll_query(|place| place as u64)
    }

    fn handle_end(&mut self, _now: Instant, id: u64, outcome: Result<Answer, RequestFailure>) {
        self.query_ended(id, outcome);
    }

    /// A query the transport refused outright ended unanswered.
    fn handle_unsendable(&mut self, _now: Instant, id: u64, _why: &str) {
        self.query_ended(id, Err(RequestFailure::Undeliverable { status: 0 }));
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::{AttributeId, MadStatus, Method, SaMadBuilder};

    use super::*;

    /// A Get of attribute modifier `n`, to LID 1.
    fn query(n: u32) -> (Address, Bytes) {
        let mut b = SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO);
        b.header_mut().mad.set_attribute_modifier(n);
        (Address::gsi(1, 0), b.into_bytes())
    }

    /// An answer to the query whose attribute modifier is `n`.
    fn answer(n: u32) -> Answer {
        let mut b = SaMadBuilder::request(Method::GET_RESP, 0, AttributeId::CLASS_PORT_INFO);
        b.header_mut().mad.set_attribute_modifier(n);
        Answer::whole(b.into_bytes()).unwrap()
    }

    #[test]
    fn a_batch_on_its_own_keeps_its_window_and_gives_the_ends_in_the_order_asked() {
        let now = Instant::now();
        let mut batch = Batch::new((0..5).map(query).collect(), 2);
        let first: Vec<(u64, Send)> = std::iter::from_fn(|| batch.poll_send()).collect();
        assert_eq!(first.len(), 2, "two at once");
        // The second ends first: the third goes out in its place.
        batch.handle_end(now, first[1].0, Ok(answer(1)));
        let (third, _) = batch.poll_send().unwrap();
        assert!(batch.poll_send().is_none());
        let silent = RequestFailure::Timeout {
            attempts: 4,
            per_attempt: std::time::Duration::from_secs(1),
            sm_key: 0,
        };
        batch.handle_end(now, first[0].0, Err(silent));
        batch.handle_unsendable(now, third, "refused");
        let rest: Vec<(u64, Send)> = std::iter::from_fn(|| batch.poll_send()).collect();
        assert_eq!(rest.len(), 2);
        assert!(!batch.is_done());
        for (id, _) in rest.iter().rev() {
            batch.handle_end(now, *id, Ok(answer(*id as u32)));
        }
        // An end for no query of its own changes nothing.
        batch.handle_end(now, 99, Ok(answer(99)));
        assert!(batch.is_done());
        let ends = batch.finish();
        assert_eq!(ends.len(), 5);
        assert!(matches!(ends[0], Err(RequestFailure::Timeout { .. })));
        assert!(matches!(ends[2], Err(RequestFailure::Undeliverable { .. })));
        for i in [1, 3, 4] {
            let a = ends[i].as_ref().unwrap();
            assert_eq!(a.status(), MadStatus::OK);
            assert_eq!(a.header().mad.attribute_modifier(), i as u32);
        }
    }
}
