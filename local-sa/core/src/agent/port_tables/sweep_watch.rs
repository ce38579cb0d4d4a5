//! When this port polls the master's activity
//! ([`crate::master_activity`]): every `sweep_poll` while it keeps its
//! own tables, so that a heavy sweep whose change notice was lost on the
//! way is taken as that notice. While a distributor's lease runs the
//! distributor watches the fabric: nothing is polled (the tables' rules
//! say when a poll is due: `rules`).

use std::time::Instant;

use crate::master_activity::{Activity, MasterActivity};

/// The polls' schedule, and what they saw.
#[derive(Debug, Default)]
pub(in crate::agent) struct SweepWatch {
    /// The next poll, while polling.
    next: Option<Instant>,
    /// What the polls saw.
    activity: MasterActivity,
}

impl SweepWatch {
    /// The next poll, while polling.
    pub(in crate::agent) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// The next poll is at `at` (`None`: no polls).
    pub(in crate::agent) fn poll_at(&mut self, at: Option<Instant>) {
        self.next = at;
    }

    /// Whether the master's activity was counted: the next count is
    /// judged against it.
    pub(in crate::agent) fn has_count(&self) -> bool {
        self.activity.has_count()
    }

    /// A change notice came (trap 128): the next rise is its sweep's.
    pub(in crate::agent) fn notice(&mut self) {
        self.activity.notice();
    }

    /// The master at `sm_lid` says its ActCount is `count`, in an answer
    /// that came at `now`.
    pub(in crate::agent) fn answered(&mut self, sm_lid: u16, count: u32, now: Instant) -> Activity {
        self.activity.counted(sm_lid, count, now)
    }
}
