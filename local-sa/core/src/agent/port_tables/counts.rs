//! What the tables' own decisions counted since start, added to the
//! agent's counters with the tables' gauges ([`PortTables::add_counts`]).
//!
//! [`PortTables::add_counts`]: super::PortTables::add_counts

use crate::counters::Counters;

/// Counts of the tables' decisions (each field is the agent counter of
/// the same name).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::agent) struct TableCounts {
    pub(super) change_notices: u64,
    pub(super) sweeps_seen: u64,
    pub(super) change_refreshes: u64,
    pub(super) doubts: u64,
    pub(super) lease_renewals: u64,
    pub(super) leases_lapsed: u64,
    pub(super) refreshes: u64,
    pub(super) refreshes_loaded: u64,
    pub(super) refreshes_kept: u64,
    pub(super) checks_passed: u64,
    pub(super) checks_failed: u64,
    pub(super) loaded: u64,
    pub(super) deleted: u64,
    pub(super) loads_fenced: u64,
}

impl TableCounts {
    /// Adds them to `c`.
    pub(super) fn add_to(&self, c: &mut Counters) {
        c.change_notices += self.change_notices;
        c.sweeps_seen += self.sweeps_seen;
        c.change_refreshes += self.change_refreshes;
        c.doubts += self.doubts;
        c.lease_renewals += self.lease_renewals;
        c.leases_lapsed += self.leases_lapsed;
        c.refreshes += self.refreshes;
        c.refreshes_loaded += self.refreshes_loaded;
        c.refreshes_kept += self.refreshes_kept;
        c.checks_passed += self.checks_passed;
        c.checks_failed += self.checks_failed;
        c.loaded += self.loaded;
        c.deleted += self.deleted;
        c.loads_fenced += self.loads_fenced;
    }
}
