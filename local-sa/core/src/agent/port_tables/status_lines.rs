//! The tables' lines of `lsaquery --status`: what they hold, how fresh
//! they are and who keeps them so.

use std::time::Instant;

use crate::agent::port_tables::PortTables;
use crate::partitions::TableKey;
use crate::request::StatusReport;

impl PortTables {
    /// What the tables hold: the default table's records, each
    /// partition table's state (complete for port `me` or not) and
    /// records.
    pub(in crate::agent) fn push_contents(&self, s: &mut StatusReport, me: u64) {
        s.push("records", self.paths.store.len());
        for (pkey, t) in self.partitions.tables() {
            let state = if t.is_complete(me) {
                "complete"
            } else {
                "incomplete"
            };
            s.push(
                "partition",
                format!(
                    "{} {state} records={}",
                    TableKey::Partition(pkey),
                    t.store.len()
                ),
            );
        }
    }

    /// How fresh the tables are at `now`, and who keeps them so (`ctx`:
    /// what the upkeep goes by).
    pub(in crate::agent) fn push_freshness(&self, s: &mut StatusReport, now: Instant) {
        let ms = |t: Instant| now.saturating_duration_since(t).as_millis().to_string();
        if let Some((at, took)) = self.refresh.last_fresh() {
            s.push("last_refresh_age_ms", ms(at));
            match took {
                Some(d) => s.push("last_refresh_took_ms", d.as_millis()),
                None => s.push("last_refresh_by", "load"),
            }
        }
        if self.refresh.is_running()
            && let Some(began) = self.refresh.began()
        {
            s.push("refreshing_for_ms", ms(began));
        }
        if let Some(next) = self.refresh.next() {
            s.push(
                "next_refresh_in_ms",
                next.saturating_duration_since(now).as_millis(),
            );
        }
        s.push("refresh_failures_in_a_row", self.refresh.failures());
        match self.upkeep.lease() {
            Some(lease) => {
                s.push("kept_by", format!("distributor lid={}", lease.lid));
                s.push("lease_s", lease.length.as_secs());
                // What is left before this port takes its tables back:
                // the lease, or two of the owner's renewal intervals.
                s.push(
                    "lease_left_ms",
                    lease.ends().saturating_duration_since(now).as_millis(),
                );
                if let Some(gap) = lease.renewal_interval() {
                    s.push("lease_renewed_every_ms", gap.as_millis());
                }
            }
            None => {
                s.push("kept_by", "this port");
                s.push("refresh_interval_s", self.periodic_interval().as_secs());
                s.push("worst_staleness_s", self.worst_staleness().as_secs());
                if self.upkeep.change_pending() {
                    s.push("change_refresh_pending", "yes");
                }
                if self.upkeep.in_doubt() {
                    s.push("tables_in_doubt", "yes");
                }
            }
        }
        if let Some(next) = self.upkeep.check_next() {
            s.push(
                "next_check_in_ms",
                next.saturating_duration_since(now).as_millis(),
            );
        }
    }
}
