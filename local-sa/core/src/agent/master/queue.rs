//! Requests to the master that consumers and peers cause, waiting for
//! their turn, so that what local-sa has out at the master stays bounded
//! whatever they ask. Two lanes:
//!
//! * **registrations** — subscriptions, multicast joins, leaves and the
//!   Gets before them, the canary, this port's directory record — go at
//!   one pace, whatever asked for them (a consumer, a connection closing,
//!   a re-registration after a new master, a retry): this port's share of
//!   the fabric's `--master-registrations-per-second` ([`MasterPace`]),
//!   after a burst of [`REGISTRATION_BURST`], at most
//!   [`MasterPace::registrations_in_flight`] out at once. The queue needs
//!   no bound of its own: each group and each filter has at most one
//!   request at a time, and the per-user limits bound groups and filters.
//! * **queries** — PathRecord queries the cache could not answer, and
//!   queries relayed for ports — at most [`MAX_QUERIES_IN_FLIGHT`] out at
//!   once, at most [`MAX_QUERIES_WAITING`] waiting; past that a query is
//!   answered BUSY at once. A query waits no longer than its own attempts
//!   would have taken (its asker has given up by then): then it is
//!   answered BUSY too.
//!
//! A burst the master cannot absorb — a thousand leaves when a connection
//! that joined a thousand groups closes, five thousand distinct queries a
//! local user asks at once — would overflow its queue and, under the
//! simulator, wedge the whole fabric; here it becomes a stream the master
//! keeps up with, while every door goes on being served. What local-sa
//! asks for itself (its table, the walk of it, names, ClassPortInfo) is
//! bounded by its own windows and goes at once.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use crate::agent::master::purpose::Purpose;
use crate::pacing::{MasterPace, REGISTRATION_BURST, TokenBucket};
use crate::requester::Attempts;

/// Queries out at the master at once, at most.
pub(in crate::agent) const MAX_QUERIES_IN_FLIGHT: usize = 64;

/// Queries waiting for a place, at most; more are answered BUSY.
pub(in crate::agent) const MAX_QUERIES_WAITING: usize = 4096;

/// Which queue a request to the master waits in, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Lane {
    /// A registration, paced.
    Registration,
    /// A query asked for someone, bounded.
    Query,
}

impl Purpose {
    /// The lane a request for this purpose waits in; `None` for what the
    /// agent asks for itself, which goes at once.
    pub(in crate::agent) fn lane(&self) -> Option<Lane> {
        match self {
            Self::Inform { .. } | Self::Membership(_) | Self::Canary(_) | Self::Publish { .. } => {
                Some(Lane::Registration)
            }
            Self::Forward(_) | Self::Pair(_) | Self::QosTable(_) | Self::Relay(_) => {
                Some(Lane::Query)
            }
            Self::Bulk { .. }
            | Self::Walk { .. }
            | Self::GidInService { .. }
            | Self::MasterInfo
            | Self::SweepPoll
            | Self::MasterHere
            | Self::Check { .. }
            | Self::Names { .. } => None,
        }
    }
}

/// A request waiting for its turn.
#[derive(Debug)]
pub(in crate::agent) struct Queued {
    pub(in crate::agent) purpose: Purpose,
    pub(in crate::agent) request: Bytes,
    pub(in crate::agent) attempts: Attempts,
    /// When it was asked.
    pub(in crate::agent) asked: Instant,
}

impl Queued {
    /// When its asker has given up: its attempts' time from when it was
    /// asked.
    fn given_up(&self) -> Instant {
        let Attempts { timeout, retries } = self.attempts;
        self.asked + timeout.saturating_mul(retries.saturating_add(1))
    }
}

/// Requests of one lane waiting, how many are out, and the lane's pace.
#[derive(Debug)]
pub(in crate::agent) struct UpstreamQueue {
    waiting: VecDeque<Queued>,
    in_flight: usize,
    /// `None`: as fast as places free up.
    pace: Option<TokenBucket>,
}

impl UpstreamQueue {
    /// The registrations' lane, at the pace of a port of a fabric of
    /// unknown size.
    pub(in crate::agent) fn paced(pace: &MasterPace) -> Self {
        Self {
            waiting: VecDeque::new(),
            in_flight: 0,
            pace: Some(TokenBucket::new(
                pace.port_registration_rate(0),
                REGISTRATION_BURST,
            )),
        }
    }

    /// A lane bounded only by the requests out.
    pub(in crate::agent) fn unpaced() -> Self {
        Self {
            waiting: VecDeque::new(),
            in_flight: 0,
            pace: None,
        }
    }

    /// Requests waiting for their turn.
    pub(in crate::agent) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Requests out at the master.
    pub(in crate::agent) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues a request; [`Self::release`] says when it goes.
    pub(in crate::agent) fn push(&mut self, queued: Queued) {
        self.waiting.push_back(queued);
    }

    /// The next request that may go now, with at most `most` out (and, if
    /// paced, at `rate` a second): counted as out.
    pub(in crate::agent) fn release(
        &mut self,
        now: Instant,
        rate: f64,
        most: usize,
    ) -> Option<Queued> {
        if self.in_flight >= most.max(1) || self.waiting.is_empty() {
            return None;
        }
        if let Some(bucket) = &mut self.pace {
            if rate != bucket.rate() {
                bucket.set_rate(rate);
            }
            if !bucket.try_take(now) {
                return None;
            }
        }
        let next = self.waiting.pop_front()?;
        self.in_flight += 1;
        Some(next)
    }

    /// The oldest waiting request if its asker has given up by `now`.
    pub(in crate::agent) fn take_given_up(&mut self, now: Instant) -> Option<Queued> {
        if self.waiting.front()?.given_up() > now {
            return None;
        }
        self.waiting.pop_front()
    }

    /// When the oldest waiting request's asker gives up.
    pub(in crate::agent) fn next_given_up(&self) -> Option<Instant> {
        self.waiting.front().map(Queued::given_up)
    }

    /// A request that was out ended.
    pub(in crate::agent) fn done(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// When the next waiting request may go, if one waits with a place
    /// free for it (at most `most` out) and only the pace holds it.
    pub(in crate::agent) fn next_release(&self, most: usize) -> Option<Instant> {
        if self.waiting.is_empty() || self.in_flight >= most.max(1) {
            return None;
        }
        self.pace.as_ref().and_then(TokenBucket::next_token)
    }
}
