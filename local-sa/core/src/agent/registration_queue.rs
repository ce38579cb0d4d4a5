//! Registration requests to the master — subscriptions, multicast joins,
//! leaves and their probes, the canary, this port's directory record — go
//! out at one pace, a bounded number at a time, whatever asked for them:
//! a consumer, a consumer's connection closing, a re-registration after a
//! new master, a retry. The rest wait here in the order they were asked.
//!
//! The pace is this port's share of the fabric's
//! `--master-registrations-per-second` ([`MasterPace`]), after a burst of
//! [`REGISTRATION_BURST`]; at most
//! [`MasterPace::registrations_in_flight`] are out at once. A burst the
//! master cannot absorb (a thousand leaves when a connection that joined a
//! thousand groups closes) would overflow its queue and, under the
//! simulator, wedge the whole fabric; here it becomes a steady trickle
//! while every door goes on being served.
//!
//! The queue needs no bound of its own: each group and each filter has at
//! most one request at a time (the memberships and the registry wait for
//! its answer before the next), and the per-user limits bound the groups
//! and filters.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use super::purpose::Purpose;
use crate::pacing::{MasterPace, REGISTRATION_BURST, TokenBucket};
use crate::requester::Attempts;

/// A registration request waiting for its turn.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) purpose: Purpose,
    pub(super) request: Bytes,
    pub(super) attempts: Attempts,
}

/// Registration requests waiting, and how many are out.
#[derive(Debug)]
pub(super) struct RegistrationQueue {
    waiting: VecDeque<Queued>,
    in_flight: usize,
    bucket: TokenBucket,
}

impl RegistrationQueue {
    /// Empty, at the pace of a port of a fabric of unknown size.
    pub(super) fn new(pace: &MasterPace) -> Self {
        Self {
            waiting: VecDeque::new(),
            in_flight: 0,
            bucket: TokenBucket::new(pace.port_registration_rate(0), REGISTRATION_BURST),
        }
    }

    /// Requests waiting for their turn.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Requests out at the master.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Registrations a second this port sends.
    pub(super) fn rate(&self) -> f64 {
        self.bucket.rate()
    }

    /// Queues a request; [`Self::release`] says when it goes.
    pub(super) fn push(&mut self, queued: Queued) {
        self.waiting.push_back(queued);
    }

    /// The next request that may go now, at `rate` a second with at most
    /// `most` out: counted as out.
    pub(super) fn release(&mut self, now: Instant, rate: f64, most: usize) -> Option<Queued> {
        if rate != self.bucket.rate() {
            self.bucket.set_rate(rate);
        }
        if self.in_flight >= most.max(1) || self.waiting.is_empty() || !self.bucket.try_take(now) {
            return None;
        }
        let next = self.waiting.pop_front()?;
        self.in_flight += 1;
        Some(next)
    }

    /// A request that was out ended.
    pub(super) fn done(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// When the next waiting request may go, if one waits with a place
    /// free for it (at most `most` out).
    pub(super) fn next_release(&self, most: usize) -> Option<Instant> {
        if self.waiting.is_empty() || self.in_flight >= most.max(1) {
            return None;
        }
        self.bucket.next_token()
    }
}
