//! Queries sent a window at a time, each end kept in the order asked:
//! the watch driver's renewals, its probes of ports, its polls of the
//! master's activity and the program's asks of the master.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use local_sa_core::requester::Attempts;
use mad_codec::address::Address;

use crate::computed::sample_check::End;
use crate::sends::Send;

/// Queries to send, at most `window` out at once.
#[derive(Debug)]
pub(super) struct Batch {
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
    pub(super) fn new(queries: Vec<(Address, Bytes)>, window: usize) -> Self {
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
    pub(super) fn with_attempts(self, attempts: Attempts) -> Self {
        Self {
            attempts: Some(attempts),
            ..self
        }
    }

    /// The next query to send, if the window has room; `id` is the one
    /// its end will be told by.
    pub(super) fn poll_send(&mut self, id: impl FnOnce() -> u64) -> Option<(u64, Send)> {
        if self.out.len() >= self.window {
            return None;
        }
        let (place, dest, request) = self.left.pop_front()?;
        let id = id();
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
    pub(super) fn handle_end(&mut self, id: u64, end: End) {
        if let Some(place) = self.out.remove(&id) {
            self.ends[place] = Some(end);
        }
    }

    /// Whether every query has ended.
    pub(super) fn is_done(&self) -> bool {
        self.left.is_empty() && self.out.is_empty()
    }

    /// Every end, in the order of the queries.
    pub(super) fn finish(self) -> Vec<End> {
        self.ends.into_iter().flatten().collect()
    }
}
