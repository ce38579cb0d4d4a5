//! Who keeps this port's tables fresh, as the agent holds it: a
//! distributor's lease if one runs, a refresh owed to a change notice,
//! the checks of tables the port did not fetch itself. The rules that
//! move it are in [`super::upkeep_schedule`] and [`super::table_check`].

use std::time::{Duration, Instant};

/// A distributor's lease on this port's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lease {
    /// The distributor's LID.
    pub(super) lid: u16,
    /// When it ends unless renewed.
    pub(super) until: Instant,
    /// How long each renewal gives.
    pub(super) length: Duration,
}

/// Who keeps this port's tables, and what is owed.
#[derive(Debug, Default)]
pub(super) struct Upkeep {
    /// The distributor's lease, while one runs.
    pub(super) lease: Option<Lease>,
    /// A change notice came while this port keeps its own tables: a
    /// refresh starting at this time or later sees the master's new
    /// routes. Cleared by such a refresh, or by a distributor's lease.
    pub(super) change_due: Option<Instant>,
    /// When the tables are next checked against the master (only while
    /// someone else keeps them, or they were kept across a restart).
    pub(super) check_next: Option<Instant>,
    /// The check under way.
    pub(super) checking: Option<Checking>,
    /// Checks started so far.
    pub(super) check_rounds: u32,
    /// The interval the log last said, so that it says each change once.
    pub(super) interval_said: Option<Duration>,
}

impl Upkeep {
    /// The distributor's lease, if one runs.
    pub(super) fn lease(&self) -> Option<Lease> {
        self.lease
    }

    /// Whether a refresh is owed to a change notice.
    pub(super) fn change_pending(&self) -> bool {
        self.change_due.is_some()
    }
}

/// A check of the default table against the master, under way.
#[derive(Debug)]
pub(super) struct Checking {
    /// Which check this is (answers to an earlier one are ignored).
    pub(super) round: u32,
    /// Destinations not yet answered.
    pub(super) waiting: usize,
    /// Destinations whose paths differ from the master's.
    pub(super) differed: Vec<u16>,
    /// Destinations the master did not answer.
    pub(super) unanswered: usize,
}
