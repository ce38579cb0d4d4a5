//! Who keeps this port's tables fresh between fills, and when.
//!
//! * **The port itself**, without a distributor: a periodic refresh every
//!   [`PortTables::periodic_interval`] — the configured interval, or longer on
//!   a fabric whose N² paths would otherwise take more than the pace's
//!   share of the master's time ([`MasterPace::upkeep_interval`]) — and
//!   one after a notice that the fabric changed (trap 128), once
//!   the master's sweep has had `change_settle` to reroute, at the port's
//!   phase of the refresh window, and never sooner than that bound after
//!   the last refresh.
//! * **A distributor holding a lease** (`load_flags::LEASE`, renewed by
//!   every load, delete and renewal it sends): the port refreshes nothing
//!   while the lease runs — the distributor watches the fabric and pushes
//!   what changes — and checks a few of its paths against the master
//!   every `check_interval` ([`crate::agent::tables::check`]). When the
//!   distributor falls silent past its lease, the port fetches its own
//!   table again at its phase of the refresh window, and keeps it itself
//!   from then on.
//!
//! This holds who keeps the tables as the agent holds it: a
//! distributor's lease if one runs, a refresh owed to a change notice,
//! the checks of tables the port did not fetch itself. Its rules are
//! [`crate::agent::tables::upkeep_rules`]; the checks are in
//! [`crate::agent::tables::check`].
//!
//! [`MasterPace::upkeep_interval`]: crate::pacing::MasterPace::upkeep_interval
//! [`PortTables::periodic_interval`]: crate::agent::tables::PortTables::periodic_interval

use std::time::{Duration, Instant};

use crate::partitions::TableKey;
use crate::path_query::PairKey;

/// A distributor's lease on this port's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct Lease {
    /// The distributor's LID.
    pub(in crate::agent) lid: u16,
    /// When it ends unless renewed.
    pub(in crate::agent) until: Instant,
    /// How long each renewal gives.
    pub(in crate::agent) length: Duration,
}

/// Who keeps this port's tables, and what is owed. Only these methods
/// change it: a lease taken or ended, a change noted or seen, a check
/// scheduled, begun and answered.
#[derive(Debug, Default)]
pub(in crate::agent) struct Upkeep {
    /// The distributor's lease, while one runs.
    lease: Option<Lease>,
    /// A change notice came while this port keeps its own tables: a
    /// refresh starting at this time or later sees the master's new
    /// routes. Cleared by such a refresh, or by a distributor's lease.
    change_due: Option<Instant>,
    /// When the tables are next checked against the master (only while
    /// someone else keeps them, or they were kept across a restart).
    check_next: Option<Instant>,
    /// The check under way.
    checking: Option<Checking>,
    /// Checks started so far.
    check_rounds: u32,
    /// The interval the log last said, so that it says each change once.
    interval_said: Option<Duration>,
}

impl Upkeep {
    /// The distributor's lease, if one runs.
    pub(in crate::agent) fn lease(&self) -> Option<Lease> {
        self.lease
    }

    /// The lease a kept table carried across a restart.
    pub(in crate::agent) fn resume_lease(&mut self, lease: Option<Lease>) {
        self.lease = lease;
    }

    /// A distributor took or renewed its lease: a change it re-reads
    /// itself is no longer owed here.
    pub(in crate::agent) fn take_lease(&mut self, lease: Lease) {
        self.lease = Some(lease);
        self.change_due = None;
    }

    /// The lease ends (ended by the distributor, or lapsed): the lease
    /// there was. Its checks end with it, and the log says the interval
    /// again.
    pub(in crate::agent) fn end_lease(&mut self) -> Option<Lease> {
        let before = self.lease.take();
        if before.is_some() {
            self.check_next = None;
            self.interval_said = None;
        }
        before
    }

    /// Whether a refresh is owed to a change notice.
    pub(in crate::agent) fn change_pending(&self) -> bool {
        self.change_due.is_some()
    }

    /// When the refresh owed to a change is due.
    pub(in crate::agent) fn change_due(&self) -> Option<Instant> {
        self.change_due
    }

    /// A change notice asks for a refresh at `due` (or the later one
    /// already owed): when it is owed now.
    pub(in crate::agent) fn note_change(&mut self, due: Instant) -> Instant {
        let due = self.change_due.map_or(due, |d| d.max(due));
        self.change_due = Some(due);
        due
    }

    /// A refresh starts at `now`: true (once) if it sees a change that
    /// was due by then.
    pub(in crate::agent) fn take_change_seen(&mut self, now: Instant) -> bool {
        let seen = self.change_due.is_some_and(|d| d <= now);
        if seen {
            self.change_due = None;
        }
        seen
    }

    /// Whether the log must say `interval` (it changed, and no lease
    /// runs): `Some(first)`, `first` if it never said one.
    pub(in crate::agent) fn say_interval(&mut self, interval: Duration) -> Option<bool> {
        if self.interval_said == Some(interval) || self.lease.is_some() {
            return None;
        }
        let first = self.interval_said.is_none();
        self.interval_said = Some(interval);
        Some(first)
    }

    /// When the tables are next checked.
    pub(in crate::agent) fn check_next(&self) -> Option<Instant> {
        self.check_next
    }

    /// The next check is at `at` (or none: `None`).
    pub(in crate::agent) fn check_at(&mut self, at: Option<Instant>) {
        self.check_next = at;
    }

    /// The first check under a lease, at `at`, unless one is scheduled.
    pub(in crate::agent) fn check_by_default(&mut self, at: Instant) {
        self.check_next.get_or_insert(at);
    }

    /// True if a check is due at `now`.
    pub(in crate::agent) fn check_due(&self, now: Instant) -> bool {
        self.check_next.is_some_and(|t| t <= now)
    }

    /// A check runs.
    pub(in crate::agent) fn is_checking(&self) -> bool {
        self.checking.is_some()
    }

    /// Checks started so far (each picks another sample).
    pub(in crate::agent) fn check_rounds(&self) -> u32 {
        self.check_rounds
    }

    /// A check of `waiting` destinations begins: its round.
    pub(in crate::agent) fn begin_check(&mut self, waiting: usize) -> u32 {
        self.check_rounds = self.check_rounds.wrapping_add(1);
        self.checking = Some(Checking {
            round: self.check_rounds,
            waiting,
            differed: Vec::new(),
            unanswered: 0,
        });
        self.check_rounds
    }

    /// The master's answer about `dlid` in `table`, in check `round`:
    /// whether it agrees with what is held (`None`: it did not answer).
    /// The check, once every destination is answered.
    pub(in crate::agent) fn check_answered(
        &mut self,
        round: u32,
        question: CheckQuestion,
        agrees: Option<bool>,
    ) -> Option<Checking> {
        let c = self.checking.as_mut().filter(|c| c.round == round)?;
        c.waiting = c.waiting.saturating_sub(1);
        match agrees {
            None => c.unanswered += 1,
            Some(false) => c.differed.push(question),
            Some(true) => {}
        }
        if c.waiting == 0 {
            self.checking.take()
        } else {
            None
        }
    }
}

/// A check of the default table against the master, under way.
#[derive(Debug)]
pub(in crate::agent) struct Checking {
    /// Which check this is (answers to an earlier one are ignored).
    pub(in crate::agent) round: u32,
    /// Destinations not yet answered.
    pub(in crate::agent) waiting: usize,
    /// The questions whose answers differ from what is held.
    pub(in crate::agent) differed: Vec<CheckQuestion>,
    /// Destinations the master did not answer.
    pub(in crate::agent) unanswered: usize,
}

/// What one question of a table check asks the master about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum CheckQuestion {
    /// This port's paths to a LID in one of its tables.
    Table(TableKey, u16),
    /// A pair a distributor loaded into the QoS cache.
    Qos(PairKey),
}
