//! Everything between this port and the master SA, held together: the
//! requests in flight (retried, timed out, matched to their answers), the
//! requests waiting by lane and the relays out, and what the master's
//! ClassPortInfo said. Each member owns its state behind its own methods,
//! reached through the link's.
//!
//! * requests in flight are `crate::requester`'s; `purpose`: why each was
//!   sent; `sending`: handing them over;
//! * `lanes`, `queue`: what waits for the master, by lane;
//! * `waiters`: who waits for what was asked;
//! * `policy`: what the master's ClassPortInfo said.

pub(in crate::agent) mod lanes;
pub(in crate::agent) mod policy;
pub(in crate::agent) mod purpose;
pub(in crate::agent) mod queue;
pub(in crate::agent) mod sending;
pub(in crate::agent) mod waiters;

use std::collections::VecDeque;
use std::time::Instant;

use crate::address::{Address, Transmit};
use crate::agent::counterparts::Asker;
use crate::agent::master::lanes::UpstreamLanes;
use crate::agent::master::policy::{MasterInfo, MasterPolicy};
use crate::agent::master::purpose::Purpose;
use crate::config::AgentConfig;
use crate::counters::Counters;
use crate::request::{ConnId, PathQuery};
use crate::requester::{Completion, Handled, Requester};

/// The agent's side of its conversation with the master.
#[derive(Debug)]
pub(in crate::agent) struct MasterLink {
    /// Requests in flight to the master, each with what it is for.
    requester: Requester<Address, Purpose>,
    /// Requests waiting to go to the master, by lane, and relays out.
    lanes: UpstreamLanes,
    /// What the master's ClassPortInfo said (whether it applies QoS), and
    /// the queries waiting for it.
    policy: MasterPolicy,
    /// What it sent and refused.
    counts: LinkCounts,
}

/// What the master link counted since start.
#[derive(Debug, Default, Clone, Copy)]
struct LinkCounts {
    /// Requests sent to the master (`upstream_queries`).
    sent: u64,
    /// Of them, polls of the master's activity (`sweep_polls`).
    sweep_polls: u64,
    /// Queries refused for want of a place, or given up while waiting
    /// for one (`upstream_refused`).
    refused: u64,
}

impl LinkCounts {
    /// A request for `purpose` went to the master.
    fn sent(&mut self, purpose: &Purpose) {
        self.sent += 1;
        if *purpose == Purpose::SweepPoll {
            self.sweep_polls += 1;
        }
    }
}

impl MasterLink {
    /// Nothing asked yet. TransactionIDs start at `seed`, top two bits
    /// clear (reports to subscribers take them with the top bit set).
    pub(in crate::agent) fn new(config: &AgentConfig, seed: u32) -> Self {
        Self {
            requester: Requester::new(config.upstream(), seed & 0x3FFF_FFFF),
            lanes: UpstreamLanes::new(&config.pace),
            policy: MasterPolicy::default(),
            counts: LinkCounts::default(),
        }
    }

    /// Takes a reloaded configuration's time-outs and retries.
    pub(in crate::agent) fn set_config(&mut self, config: &AgentConfig) {
        self.requester.set_config(config.upstream());
    }

    /// Adds its gauges, read now, to `c`.
    pub(in crate::agent) fn add_counts(&self, c: &mut Counters) {
        c.upstream_queries += self.counts.sent;
        c.sweep_polls += self.counts.sweep_polls;
        c.upstream_refused += self.counts.refused;
        c.upstream_in_flight = self.requester.in_flight() as u64;
        c.registrations_waiting = self.lanes.registrations_waiting() as u64;
        c.queries_queued = self.lanes.queries_waiting() as u64;
        c.registrations_in_flight = self.lanes.registrations_in_flight() as u64;
    }

    /// True while a request for `purpose` is in flight to the master.
    pub(in crate::agent) fn asking(&self, purpose: &Purpose) -> bool {
        self.requester.any_pending(|p| p == purpose)
    }

    /// True when nothing is in flight to the master, or waiting to go.
    pub(in crate::agent) fn is_idle(&self) -> bool {
        self.requester.in_flight() == 0
            && self.lanes.registrations_waiting() == 0
            && self.lanes.queries_waiting() == 0
    }

    /// When [`Self::handle_timeout`] is next due, or the next waiting
    /// registration may go, or the oldest waiting query's asker gives up
    /// (with at most `most` registrations out).
    pub(in crate::agent) fn poll_timeout(&self, most: usize) -> Option<Instant> {
        [self.requester.poll_timeout(), self.lanes.next_timeout(most)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Resends what is due into `out`; the requests that ended
    /// unanswered.
    pub(in crate::agent) fn handle_timeout(
        &mut self,
        now: Instant,
        out: &mut VecDeque<Transmit>,
    ) -> Vec<Completion<Purpose>> {
        self.requester.handle_timeout(now, out)
    }

    /// A MAD from `from` that may answer one of the requests in flight.
    pub(in crate::agent) fn handle_answer(
        &mut self,
        now: Instant,
        from: &Address,
        (status, mad, cut): (u32, &[u8], Option<usize>),
        out: &mut VecDeque<Transmit>,
    ) -> Handled<Purpose> {
        self.requester.handle(now, from, status, mad, cut, out)
    }

    /// Every request in flight ends (its answer would come from a master
    /// that is no longer this port's).
    pub(in crate::agent) fn cancel_all(&mut self) -> Vec<Completion<Purpose>> {
        self.requester.cancel_all()
    }

    /// Requests in flight for a purpose `stale` picks are dropped, their
    /// answers ignored.
    pub(in crate::agent) fn forget(&mut self, stale: impl Fn(&Purpose) -> bool) {
        self.requester.forget(stale);
    }

    /// What the master's ClassPortInfo said, if it did.
    pub(in crate::agent) fn info(&self) -> Option<MasterInfo> {
        self.policy.info()
    }

    /// The master's ClassPortInfo said so.
    pub(in crate::agent) fn learned(&mut self, info: MasterInfo) {
        self.policy.learned(info);
    }

    /// What the master said no longer holds.
    pub(in crate::agent) fn forget_info(&mut self) {
        self.policy.forget();
    }

    /// True when the master's ClassPortInfo is unknown but asked, and the
    /// queries waiting for it are not too many.
    pub(in crate::agent) fn awaiting_info(&self) -> bool {
        self.policy.may_wait() && self.asking(&Purpose::MasterInfo)
    }

    /// `asker`'s `query` waits for the master's ClassPortInfo.
    pub(in crate::agent) fn wait_for_info(&mut self, asker: Asker, query: PathQuery) {
        self.policy.wait(asker, query);
    }

    /// Everyone who waited for the ClassPortInfo, to be answered now.
    pub(in crate::agent) fn take_info_waiters(&mut self) -> Vec<(Asker, PathQuery)> {
        self.policy.take_waiters()
    }

    /// Forgets the queries of local connection `conn` (it closed).
    pub(in crate::agent) fn forget_waiters_of(&mut self, conn: ConnId) {
        self.policy.forget_waiters_of(conn);
    }
}
