//! Handing requests to the master: what the agent asks for itself goes at
//! once; registrations wait in their lane for the fabric's pace, queries
//! for a place (refused when too many wait, or when their asker has
//! given up). The agent says where they go and carries out the rest.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use crate::address::{Address, Transmit};
use crate::agent::master::MasterLink;
use crate::agent::master::purpose::Purpose;
use crate::agent::master::queue::{Lane, Queued};
use crate::requester::Attempts;

/// What became of a request handed to the master link.
#[derive(Debug)]
pub(in crate::agent) enum Handed {
    /// Sent now.
    Sent,
    /// Waiting in its lane.
    Queued,
    /// Refused: too many queries wait already.
    Refused(Purpose),
}

impl MasterLink {
    /// Each attempt's wait and the retries a request gets by default.
    pub(in crate::agent) fn attempts(&self) -> Attempts {
        self.requester.config().attempts()
    }

    /// Hands `request` (a whole MAD) for `purpose` to the master at `to`:
    /// sent into `out` at once, queued in its lane, or refused.
    pub(in crate::agent) fn send(
        &mut self,
        now: Instant,
        (purpose, request, attempts): (Purpose, &[u8], Attempts),
        to: Address,
        out: &mut VecDeque<Transmit>,
    ) -> Handed {
        let Some(lane) = purpose.lane() else {
            self.counts.sent(&purpose);
            self.requester
                .send_with(now, to, purpose, request, attempts, out);
            return Handed::Sent;
        };
        if lane == Lane::Query && self.lanes.queries_full() {
            self.counts.refused += 1;
            return Handed::Refused(purpose);
        }
        let queued = Queued {
            purpose,
            request: Bytes::copy_from_slice(request),
            attempts,
            asked: now,
        };
        self.lanes.push(lane, queued);
        Handed::Queued
    }

    /// Sends the registrations whose turn has come at `rate` per second,
    /// at most `most` out.
    pub(in crate::agent) fn release_registrations(
        &mut self,
        now: Instant,
        (rate, most): (f64, usize),
        to: Address,
        out: &mut VecDeque<Transmit>,
    ) {
        while let Some(next) = self.lanes.release_registration(now, rate, most) {
            self.send_queued(now, next, to, out);
        }
    }

    /// The waiting queries whose askers have given up by `now`: they go
    /// unsent (refused).
    pub(in crate::agent) fn take_given_up_queries(&mut self, now: Instant) -> Vec<Purpose> {
        let gone: Vec<Purpose> = std::iter::from_fn(|| self.lanes.take_given_up_query(now))
            .map(|q| q.purpose)
            .collect();
        self.counts.refused += gone.len() as u64;
        gone
    }

    /// Sends the waiting queries a place is free for.
    pub(in crate::agent) fn release_queries(
        &mut self,
        now: Instant,
        to: Address,
        out: &mut VecDeque<Transmit>,
    ) {
        while let Some(next) = self.lanes.release_query(now) {
            self.send_queued(now, next, to, out);
        }
    }

    /// Sends a request that waited in its lane.
    fn send_queued(
        &mut self,
        now: Instant,
        queued: Queued,
        to: Address,
        out: &mut VecDeque<Transmit>,
    ) {
        let Queued {
            purpose,
            request,
            attempts,
            ..
        } = queued;
        self.counts.sent(&purpose);
        self.requester
            .send_with(now, to, purpose, &request, attempts, out);
    }

    /// A request in `lane` ended: its place is free.
    pub(in crate::agent) fn done(&mut self, lane: Lane) {
        self.lanes.done(lane);
    }

    /// A relayed query takes a place, if one is free.
    pub(in crate::agent) fn relay_out(&mut self) -> bool {
        self.lanes.relay_out()
    }

    /// A relayed query ended.
    pub(in crate::agent) fn relay_done(&mut self) {
        self.lanes.relay_done();
    }
}
