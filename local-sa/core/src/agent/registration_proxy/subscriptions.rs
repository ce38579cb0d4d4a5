//! The port's notice subscriptions as the agent holds them: who holds which
//! filter ([`informinfo::Registry`]), which Reports were seen already,
//! Reports on their way to MAD subscribers, where those go, and who waits
//! for the master to answer a subscription request.
//!
//! Invariant: a subscriber that holds no filter has no address and no
//! Report in flight ([`Subscriptions::settle`], [`Subscriptions::remove`]),
//! except during shutdown, when every filter goes at once and what is in
//! flight is still delivered.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use informinfo::{Deliveries, DeliveryConfig, DeliveryEvent, Duplicates, Effect, Filter, Registry};
use mad_codec::Notice;

use crate::address::Address;
use crate::agent::counterparts::{Asker, Subscriber};
use crate::agent::master::waiters::{Join, Waiters};

/// How long duplicate Reports of one notice are expected.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(5);

/// Notices remembered to recognise their duplicates.
const DUPLICATES_KEPT: usize = 4096;

/// TransactionIDs of Reports to subscribers have the top bit set;
/// requests to the master do not.
const REPORT_TID_BASE: u32 = 0x8000_0000;

/// Requests for one subscriber's one subscription that may wait for the
/// master's answer; more are answered BUSY.
const MAX_WAITING_ASKERS: usize = 64;

/// The agent's notice and subscription state.
#[derive(Debug)]
pub(in crate::agent) struct Subscriptions {
    /// Who holds which filter, and the filters held upstream.
    registry: Registry<Subscriber>,
    /// Notices passed on lately, to drop their duplicates.
    duplicates: Duplicates,
    /// Reports to MAD subscribers waiting for their ReportResp.
    deliveries: Deliveries<Subscriber>,
    /// Where each MAD subscriber's Reports go.
    addresses: HashMap<Subscriber, Address>,
    /// Requests waiting for the master's answer.
    waiting: Waiters<(Subscriber, Filter), Asker>,
    /// When unanswered subscription requests are tried again.
    next_retry: Option<Instant>,
    /// The agent holds traps 66/67 for itself: while the port is in some
    /// multicast group.
    group_traps: bool,
}

impl Subscriptions {
    pub(in crate::agent) fn new(delivery: DeliveryConfig) -> Self {
        Self {
            registry: Registry::new(),
            duplicates: Duplicates::new(DUPLICATE_WINDOW, DUPLICATES_KEPT),
            deliveries: Deliveries::new(delivery, REPORT_TID_BASE),
            addresses: HashMap::new(),
            waiting: Waiters::new(MAX_WAITING_ASKERS),
            next_retry: None,
            group_traps: false,
        }
    }

    pub(in crate::agent) fn poll_timeout(&self) -> Option<Instant> {
        [self.deliveries.poll_timeout(), self.next_retry]
            .into_iter()
            .flatten()
            .min()
    }

    /// Reports to MAD subscribers waiting for their ReportResp.
    pub(in crate::agent) fn reports_in_flight(&self) -> usize {
        self.deliveries.in_flight()
    }

    /// The master answered `subscriber`'s change to `filter`: everyone
    /// who waited for it.
    pub(in crate::agent) fn answered(
        &mut self,
        subscriber: Subscriber,
        filter: Filter,
    ) -> Vec<Asker> {
        self.waiting
            .release(&(subscriber, filter))
            .map(|(_, askers)| askers)
            .unwrap_or_default()
    }

    /// Who holds which filter.
    pub(in crate::agent) fn registry(&self) -> &Registry<Subscriber> {
        &self.registry
    }

    /// The registry, to change what is held (it keeps its own
    /// invariants; [`Subscriptions::settle`] keeps this one's after).
    pub(in crate::agent) fn registry_mut(&mut self) -> &mut Registry<Subscriber> {
        &mut self.registry
    }

    /// `s`'s Reports go to `to`.
    pub(in crate::agent) fn note_address(&mut self, s: Subscriber, to: Address) {
        self.addresses.insert(s, to);
    }

    /// Where `s`'s Reports go (MAD subscribers only).
    pub(in crate::agent) fn address(&self, s: &Subscriber) -> Option<Address> {
        self.addresses.get(s).copied()
    }

    /// A subscriber that holds no filter any more keeps no address and
    /// no Report in flight.
    pub(in crate::agent) fn settle(&mut self, s: &Subscriber) {
        if !self.registry.holds_any(s) {
            self.addresses.remove(s);
            self.deliveries.forget(s);
        }
    }

    /// Everything `s` holds goes, and whoever waited for its requests;
    /// returns how many filters it held.
    pub(in crate::agent) fn remove(
        &mut self,
        s: &Subscriber,
        effects: &mut Vec<Effect<Subscriber>>,
    ) -> usize {
        let n = self.registry.remove_subscriber(s, effects);
        self.addresses.remove(s);
        self.deliveries.forget(s);
        self.waiting.close_where(|(w, _)| w == s);
        n
    }

    /// `asker` waits for the master's answer to `s`'s change to `filter`.
    pub(in crate::agent) fn wait_for_master(
        &mut self,
        s: Subscriber,
        filter: Filter,
        asker: Asker,
    ) -> Join<Asker> {
        self.waiting.join((s, filter), asker, || ())
    }

    /// The subscribers a notice goes to, if it is the first copy of it
    /// seen lately (`None` for a duplicate).
    pub(in crate::agent) fn recipients(
        &mut self,
        now: Instant,
        notice: &Notice,
    ) -> Option<Vec<Subscriber>> {
        let (recipients, copies) = self.registry.recipients(notice);
        self.duplicates
            .first_copy(now, notice, copies)
            .then_some(recipients)
    }

    /// A Report of `notice` to MAD subscriber `s`: where it goes, its
    /// TransactionID, and the subscriber whose lease this ended (one that
    /// left too many Reports unanswered). `None` without an address.
    pub(in crate::agent) fn report(
        &mut self,
        now: Instant,
        s: Subscriber,
        notice: Notice,
    ) -> Option<(Address, u32, Option<Subscriber>)> {
        let to = self.address(&s)?;
        let (tid, ended) = self.deliveries.send(now, s, notice);
        Some((to, tid, ended))
    }

    /// A ReportResp: true if it answered one of our Reports.
    pub(in crate::agent) fn acknowledged(&mut self, tid: u32) -> bool {
        self.deliveries.acknowledged(tid).is_some()
    }

    /// Report resends and lease ends due at `now`.
    pub(in crate::agent) fn deliveries_due(
        &mut self,
        now: Instant,
    ) -> Vec<DeliveryEvent<Subscriber>> {
        self.deliveries.handle_timeout(now)
    }

    /// Stalled subscription requests go again at `at` at the latest.
    pub(in crate::agent) fn retry_by(&mut self, at: Instant) {
        self.next_retry = Some(self.next_retry.map_or(at, |t| t.min(at)));
    }

    /// True (once) if the retry of stalled requests is due at `now`.
    pub(in crate::agent) fn take_retry_due(&mut self, now: Instant) -> bool {
        let due = self.next_retry.is_some_and(|t| t <= now);
        if due {
            self.next_retry = None;
        }
        due
    }

    /// Whether the agent holds traps 66/67 for itself from now; true if
    /// that changed.
    pub(in crate::agent) fn hold_group_traps(&mut self, wanted: bool) -> bool {
        std::mem::replace(&mut self.group_traps, wanted) != wanted
    }
}
