//! `--metrics-file`: the watch's role and counters, written whole after
//! every event, every round of renewals and every change of role, for a
//! node exporter's textfile collector. A standby writes it too, so that
//! an alert sees every watch of a fabric, not only the active one.

use std::path::PathBuf;

use local_sa_distributor::watch::{WatchCounters, WatchRole};
use tracing::warn;

/// What the file says now, and where it goes.
pub(super) struct MetricsFile {
    path: Option<PathBuf>,
    role: WatchRole,
    /// The active watch's counters (those of its last time active while
    /// it stands by).
    counters: WatchCounters,
}

impl MetricsFile {
    /// A watch that has not claimed yet: standing by.
    pub(super) fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            role: WatchRole::Standby,
            counters: WatchCounters::default(),
        }
    }

    /// The watch is now `role`; a fenced watch that stands by again is
    /// still said fenced until it is active.
    pub(super) fn role(&mut self, role: WatchRole) {
        self.role = match (self.role, role) {
            (WatchRole::Fenced, WatchRole::Standby) => WatchRole::Fenced,
            (_, role) => role,
        };
        self.write();
    }

    /// The active watch's counters now.
    pub(super) fn counters(&mut self, counters: WatchCounters) {
        self.counters = counters;
        self.write();
    }

    /// Writes the file; one that cannot be written is said in the log,
    /// and the watch goes on.
    fn write(&self) {
        if let Some(path) = &self.path
            && let Err(e) = self.counters.write(self.role, path)
        {
            warn!("{e}");
        }
    }
}
