//! The port's notice subscriptions as the agent holds them: who holds which
//! filter ([`informinfo::Registry`]), which Reports were seen already,
//! Reports on their way to MAD subscribers, where those go, and who waits
//! for the master to answer a subscription request.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use informinfo::{Deliveries, DeliveryConfig, Duplicates, Filter, Registry};

use super::counterparts::{Asker, Subscriber};
use super::waiters::Waiters;
use crate::address::Address;

/// How long duplicate Reports of one notice are expected.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(5);

/// Notices remembered to recognise their duplicates.
const DUPLICATES_KEPT: usize = 4096;

/// TransactionIDs of Reports to subscribers have the top bit set;
/// requests to the master do not.
const REPORT_TID_BASE: u32 = 0x8000_0000;

/// The agent's notice and subscription state.
/// Requests for one subscriber's one subscription that may wait for the
/// master's answer; more are answered BUSY.
const MAX_WAITING_ASKERS: usize = 64;

#[derive(Debug)]
pub(super) struct Subscriptions {
    pub(super) registry: Registry<Subscriber>,
    pub(super) duplicates: Duplicates,
    pub(super) deliveries: Deliveries<Subscriber>,
    /// Where each MAD subscriber's Reports go.
    pub(super) addresses: HashMap<Subscriber, Address>,
    /// Requests waiting for the master's answer.
    pub(super) waiting: Waiters<(Subscriber, Filter), Asker>,
    /// When unanswered subscription requests are tried again.
    pub(super) next_retry: Option<Instant>,
    /// The agent holds traps 66/67 for itself: while the port is in some
    /// multicast group.
    pub(super) group_traps: bool,
}

impl Subscriptions {
    pub(super) fn new(delivery: DeliveryConfig) -> Self {
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

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        [self.deliveries.poll_timeout(), self.next_retry]
            .into_iter()
            .flatten()
            .min()
    }

    /// Reports to MAD subscribers waiting for their ReportResp.
    pub(super) fn reports_in_flight(&self) -> usize {
        self.deliveries.in_flight()
    }

    /// The master answered `subscriber`'s change to `filter`: everyone
    /// who waited for it.
    pub(super) fn answered(&mut self, subscriber: Subscriber, filter: Filter) -> Vec<Asker> {
        self.waiting
            .release(&(subscriber, filter))
            .map(|(_, askers)| askers)
            .unwrap_or_default()
    }
}
