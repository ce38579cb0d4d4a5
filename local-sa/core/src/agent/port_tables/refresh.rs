//! The refresh of this port's tables, as a state of its own: where the
//! refresh running stands (a bulk GetTable out, or a walk destination by
//! destination), the generation (epoch) the tables are fetched under, how
//! the last ones went, who waits for the next to end, and when the next
//! is due. The upkeep's rules (`rules`) decide when to refresh and
//! the fetch (`fetch`) what to ask; `SaCore` sends the requests.
//! This keeps the state they move, and only its methods change it.
//!
//! Invariants: a refresh running has begun at a time ([`Refresh::began`]);
//! every refresh begun fetches under a new epoch; failures count only
//! refreshes that failed since the last that completed.

use std::time::{Duration, Instant};

use crate::agent::counterparts::RefreshWaiter;
use crate::lid_walk::LidWalk;
use crate::partitions::TableKey;
use crate::store::Epoch;

/// Where a refresh of this port's paths stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum RefreshState {
    /// None running.
    Idle,
    /// The bulk GetTable of `table` is out.
    Bulk { epoch: Epoch, table: TableKey },
    /// Fetching `table` destination by destination.
    Walk {
        epoch: Epoch,
        table: TableKey,
        walk: LidWalk,
    },
}

/// The refresh of the port's paths from the master: where it stands, how
/// it went, who waits for it, when the next is due.
#[derive(Debug)]
pub(in crate::agent) struct Refresh {
    state: RefreshState,
    /// The generation tables are fetched (or loaded, or kept) under: what
    /// the last refresh did not renew is swept.
    epoch: Epoch,
    /// Refreshes that failed since the last one that completed.
    failures: u32,
    /// Ports of the fabric, as the last complete refresh showed them (0
    /// before one): how widely refreshes and re-registrations spread.
    fabric_ports: usize,
    /// When the refresh running now began.
    began: Option<Instant>,
    /// When this port's paths were last made fresh, and how long the
    /// refresh took (`None`: a load replaced them).
    last_fresh: Option<(Instant, Option<Duration>)>,
    /// Local requests waiting for the refresh to end.
    waiters: Vec<RefreshWaiter>,
    /// When the next refresh is due.
    next: Option<Instant>,
    /// When the tables of partitions the port holds but has no table of
    /// are due (after its P_Key table changed).
    partitions_next: Option<Instant>,
    /// The refresh running fetches only the partition tables missing.
    only_missing: bool,
    /// At start, the agent registers once its first refresh has ended:
    /// when a whole fabric starts together, each port's few registrations
    /// then follow its table rather than join every port's tables in the
    /// master's queue at once (where they would crowd tables out).
    register_after: bool,
}

impl Refresh {
    /// Nothing fetched yet; the first refresh due at `first`.
    pub(in crate::agent) fn new(first: Instant) -> Self {
        Self {
            state: RefreshState::Idle,
            epoch: 0,
            failures: 0,
            fabric_ports: 0,
            began: None,
            last_fresh: None,
            waiters: Vec::new(),
            next: Some(first),
            partitions_next: None,
            only_missing: false,
            register_after: true,
        }
    }

    /// Where the refresh stands.
    pub(in crate::agent) fn state(&self) -> RefreshState {
        self.state
    }

    /// True while a refresh runs.
    pub(in crate::agent) fn is_running(&self) -> bool {
        self.state != RefreshState::Idle
    }

    /// The table being fetched, if a refresh runs.
    pub(in crate::agent) fn table(&self) -> Option<TableKey> {
        match self.state {
            RefreshState::Idle => None,
            RefreshState::Bulk { table, .. } | RefreshState::Walk { table, .. } => Some(table),
        }
    }

    /// The refresh moved on (to the next table, or the next destinations
    /// of a walk).
    pub(in crate::agent) fn advance(&mut self, state: RefreshState) {
        self.state = state;
    }

    /// The generation now.
    pub(in crate::agent) fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// A new generation: what comes from now on replaces what came before.
    pub(in crate::agent) fn next_epoch(&mut self) -> Epoch {
        self.epoch = self.epoch.wrapping_add(1);
        self.epoch
    }

    /// A refresh begins at `now`, under a new epoch (returned); fetching
    /// only the partition tables missing, or everything.
    pub(in crate::agent) fn begin(&mut self, now: Instant, only_missing: bool) -> Epoch {
        self.began = Some(now);
        self.only_missing = only_missing;
        self.next_epoch()
    }

    /// The refresh running fetches only the partition tables missing.
    pub(in crate::agent) fn only_missing(&self) -> bool {
        self.only_missing
    }

    /// When the refresh running began.
    pub(in crate::agent) fn began(&self) -> Option<Instant> {
        self.began
    }

    /// No refresh runs any more (it ended, failed, or was superseded).
    pub(in crate::agent) fn stop(&mut self) {
        self.state = RefreshState::Idle;
        self.began = None;
    }

    /// No refresh runs now, but when the one that ended began is kept:
    /// the attempt that replaces it (after a failure, a new master, a new
    /// identity) counts its time from then.
    pub(in crate::agent) fn pause(&mut self) {
        self.state = RefreshState::Idle;
    }

    /// When the refresh that made the paths fresh began, taken (it is
    /// over).
    pub(in crate::agent) fn take_began(&mut self) -> Option<Instant> {
        self.began.take()
    }

    /// The port's paths were made fresh at `now` (by a refresh that took
    /// `took`, or by a load or a kept table: `None`).
    pub(in crate::agent) fn made_fresh(&mut self, now: Instant, took: Option<Duration>) {
        self.last_fresh = Some((now, took));
    }

    /// When the port's paths were last made fresh, and how long that took.
    pub(in crate::agent) fn last_fresh(&self) -> Option<(Instant, Option<Duration>)> {
        self.last_fresh
    }

    /// A refresh completed, showing `fabric_ports` ports: failures no
    /// longer count.
    pub(in crate::agent) fn completed(&mut self, fabric_ports: usize) {
        self.failures = 0;
        self.fabric_ports = fabric_ports;
    }

    /// Ports of the fabric, as the last complete refresh showed them (0
    /// before one).
    pub(in crate::agent) fn fabric_ports(&self) -> usize {
        self.fabric_ports
    }

    /// A refresh failed.
    pub(in crate::agent) fn failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
    }

    /// Refreshes that failed since the last that completed.
    pub(in crate::agent) fn failures(&self) -> u32 {
        self.failures
    }

    /// `waiter` waits for the refresh to end.
    pub(in crate::agent) fn wait(&mut self, waiter: RefreshWaiter) {
        self.waiters.push(waiter);
    }

    /// Everyone who waited, to be answered.
    pub(in crate::agent) fn take_waiters(&mut self) -> Vec<RefreshWaiter> {
        std::mem::take(&mut self.waiters)
    }

    /// Forgets the waiters `gone` picks (their connection closed).
    pub(in crate::agent) fn forget_waiters(&mut self, gone: impl Fn(&RefreshWaiter) -> bool) {
        self.waiters.retain(|w| !gone(w));
    }

    /// Someone waits for the refresh to end.
    pub(in crate::agent) fn awaited(&self) -> bool {
        !self.waiters.is_empty()
    }

    /// When the next refresh is due.
    pub(in crate::agent) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// The next refresh is due at `at` (or never: `None`).
    pub(in crate::agent) fn schedule(&mut self, at: Option<Instant>) {
        self.next = at;
    }

    /// The next refresh is due at `at` at the latest.
    pub(in crate::agent) fn schedule_by(&mut self, at: Instant) {
        self.next = Some(self.next.map_or(at, |n| n.min(at)));
    }

    /// A next refresh already scheduled comes no later than `at`.
    pub(in crate::agent) fn bring_forward(&mut self, at: Instant) {
        self.next = self.next.map(|t| t.min(at));
    }

    /// True (once) if the next refresh is due at `now`.
    pub(in crate::agent) fn take_due(&mut self, now: Instant) -> bool {
        let due = self.next.is_some_and(|t| t <= now);
        if due {
            self.next = None;
        }
        due
    }

    /// When the tables of new partitions are due.
    pub(in crate::agent) fn partitions_next(&self) -> Option<Instant> {
        self.partitions_next
    }

    /// The tables of new partitions are due at `at`.
    pub(in crate::agent) fn schedule_partitions(&mut self, at: Instant) {
        self.partitions_next = Some(at);
    }

    /// True (once) if the tables of new partitions are due at `now`.
    pub(in crate::agent) fn take_partitions_due(&mut self, now: Instant) -> bool {
        let due = self.partitions_next.is_some_and(|t| t <= now);
        if due {
            self.partitions_next = None;
        }
        due
    }

    /// The agent waits for its first refresh before it registers.
    pub(in crate::agent) fn registers_after(&self) -> bool {
        self.register_after
    }

    /// The agent registers without waiting for a refresh from now on.
    pub(in crate::agent) fn register_now(&mut self) {
        self.register_after = false;
    }

    /// True (once) if the agent waited for this refresh to register.
    pub(in crate::agent) fn take_register_after(&mut self) -> bool {
        std::mem::take(&mut self.register_after)
    }
}
