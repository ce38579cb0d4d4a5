//! The two lanes of requests waiting to go to the master — registrations
//! at the fabric's pace, queries for consumers and ports as places free
//! up — and the count of relayed queries out, each bounded: what the
//! agent may make the master (and itself) hold at once.

use std::time::Instant;

use crate::agent::master::queue::{
    Lane, MAX_QUERIES_IN_FLIGHT, MAX_QUERIES_WAITING, Queued, UpstreamQueue,
};
use crate::pacing::MasterPace;

/// Relayed queries that may wait for the master at once: each holds the
/// asker's request (at most a MAD) and an upstream request.
pub(in crate::agent) const MAX_RELAYS: usize = 1024;

/// The lanes to the master and the relays out.
#[derive(Debug)]
pub(in crate::agent) struct UpstreamLanes {
    /// Registration requests waiting for their turn at the master's pace.
    registrations: UpstreamQueue,
    /// Queries asked for consumers and ports waiting for a place.
    queries: UpstreamQueue,
    /// Relayed queries waiting for the master.
    relays: usize,
}

impl UpstreamLanes {
    /// Empty lanes, registrations at `pace`.
    pub(in crate::agent) fn new(pace: &MasterPace) -> Self {
        Self {
            registrations: UpstreamQueue::paced(pace),
            queries: UpstreamQueue::unpaced(),
            relays: 0,
        }
    }

    fn lane(&mut self, lane: Lane) -> &mut UpstreamQueue {
        match lane {
            Lane::Registration => &mut self.registrations,
            Lane::Query => &mut self.queries,
        }
    }

    /// True if no more queries may wait ([`MAX_QUERIES_WAITING`]).
    pub(in crate::agent) fn queries_full(&self) -> bool {
        self.queries.waiting() >= MAX_QUERIES_WAITING
    }

    /// `queued` waits in `lane`.
    pub(in crate::agent) fn push(&mut self, lane: Lane, queued: Queued) {
        self.lane(lane).push(queued);
    }

    /// The next registration whose turn has come at `rate` per second,
    /// with at most `most` out.
    pub(in crate::agent) fn release_registration(
        &mut self,
        now: Instant,
        rate: f64,
        most: usize,
    ) -> Option<Queued> {
        self.registrations.release(now, rate, most)
    }

    /// The next query whose asker gave up waiting.
    pub(in crate::agent) fn take_given_up_query(&mut self, now: Instant) -> Option<Queued> {
        self.queries.take_given_up(now)
    }

    /// The next query that may go (a place is free).
    pub(in crate::agent) fn release_query(&mut self, now: Instant) -> Option<Queued> {
        self.queries.release(now, 0.0, MAX_QUERIES_IN_FLIGHT)
    }

    /// When the next registration may go (with at most `most` out), or
    /// the oldest waiting query's asker gives up.
    pub(in crate::agent) fn next_timeout(&self, most: usize) -> Option<Instant> {
        (self.registrations.next_release(most))
            .into_iter()
            .chain(self.queries.next_given_up())
            .min()
    }

    /// A request of `lane` ended: its place is free.
    pub(in crate::agent) fn done(&mut self, lane: Lane) {
        self.lane(lane).done();
    }

    /// A relayed query goes out, unless [`MAX_RELAYS`] are out: false.
    pub(in crate::agent) fn relay_out(&mut self) -> bool {
        if self.relays >= MAX_RELAYS {
            return false;
        }
        self.relays += 1;
        true
    }

    /// A relayed query ended.
    pub(in crate::agent) fn relay_done(&mut self) {
        self.relays = self.relays.saturating_sub(1);
    }

    /// Registrations waiting for their turn.
    pub(in crate::agent) fn registrations_waiting(&self) -> usize {
        self.registrations.waiting()
    }

    /// Registrations out at the master.
    pub(in crate::agent) fn registrations_in_flight(&self) -> usize {
        self.registrations.in_flight()
    }

    /// Queries waiting for a place.
    pub(in crate::agent) fn queries_waiting(&self) -> usize {
        self.queries.waiting()
    }
}
