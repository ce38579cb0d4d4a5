//! Who keeps this port's tables fresh between fills, and when.
//!
//! * **The port itself**, without a distributor: a periodic refresh every
//!   [`SaCore::periodic_interval`] — the configured interval, or longer on
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
//! [`MasterPace::upkeep_interval`]: crate::pacing::MasterPace::upkeep_interval

use std::time::{Duration, Instant};

use mad_codec::TrapNumber;
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::tables::upkeep::Lease;

impl SaCore {
    /// How often this port refreshes its own tables: the configured
    /// interval, or the fabric's upkeep bound when that is longer.
    pub(in crate::agent) fn periodic_interval(&self) -> Duration {
        let bound = self
            .config
            .pace
            .upkeep_interval(self.tables.refresh.fabric_ports());
        self.config.refresh_interval.max(bound)
    }

    /// How stale an answer can be at worst, for a change no notice
    /// announces: the longest a port keeping its own tables waits between
    /// two refreshes (see [`SaCore::next_periodic_refresh`]).
    pub(in crate::agent) fn worst_staleness(&self) -> Duration {
        self.periodic_interval() * 5 / 4
    }

    /// Says in the log how often this port refreshes, when that changed
    /// (the fabric grew past what the configured interval allows, or
    /// shrank back).
    pub(in crate::agent) fn say_periodic_interval(&mut self) {
        let interval = self.periodic_interval();
        let Some(first) = self.tables.upkeep.say_interval(interval) else {
            return;
        };
        if interval == self.config.refresh_interval && first {
            return;
        }
        let pace = self.config.pace;
        info!(
            refresh_interval_s = interval.as_secs(),
            configured_s = self.config.refresh_interval.as_secs(),
            fabric_ports = self.tables.refresh.fabric_ports(),
            path_cost_ns = pace.path_cost.as_nanos() as u64,
            master_share_percent = pace.upkeep_share_percent,
            worst_staleness_s = self.worst_staleness().as_secs(),
            "this port refreshes its own tables at this interval: the fabric's refreshes together cost \
             the master ports² paths per interval, kept under its share; a change no notice announces \
             is seen within worst_staleness_s (a distributor with --watch keeps every node current)"
        );
    }

    /// A notice that the fabric changed (trap 128: a switch port's link
    /// went up or down). The
    /// master sweeps after it and may reroute: a port keeping its own
    /// tables refreshes once that has settled. Under a distributor's
    /// lease the distributor re-reads the fabric instead.
    pub(in crate::agent) fn fabric_changed(&mut self, now: Instant, trap: TrapNumber, lid: u16) {
        self.telemetry.counters.change_notices += 1;
        if let Some(lease) = self.tables.upkeep.lease() {
            debug!(
                %trap,
                lid,
                distributor = lease.lid,
                "fabric change notice: the distributor keeping this port's tables re-reads the fabric"
            );
            return;
        }
        let settled = now + self.config.change_settle + self.refresh_delay();
        let bound = (self.tables.refresh.last_fresh()).map(|(at, _)| {
            at + self
                .config
                .pace
                .upkeep_interval(self.tables.refresh.fabric_ports())
        });
        let due = bound.map_or(settled, |b| settled.max(b));
        // A later notice means a later sweep: the refresh waits for it.
        let due = self.tables.upkeep.note_change(due);
        self.tables.refresh.schedule_by(due);
        if let Some(earlier_not_logged) = self.telemetry.log_limit.allow(now, "fabric change", 0u32)
        {
            info!(
                %trap,
                lid,
                refresh_in_ms = due.saturating_duration_since(now).as_millis() as u64,
                earlier_not_logged,
                "the fabric changed: this port refreshes its tables once the master has rerouted"
            );
        }
    }

    /// A refresh starts now: it sees whatever change was due by now.
    pub(in crate::agent) fn refresh_starting(&mut self, now: Instant) {
        if self.tables.upkeep.take_change_seen(now) {
            self.telemetry.counters.change_refreshes += 1;
        }
    }

    /// When the next refresh of its own is due after this port's tables
    /// were made fresh at `now`: a refresh owed to a change if one is;
    /// under a lease, its end plus this port's phase of the refresh
    /// window (renewals move it on); else between three quarters and five
    /// quarters of the interval, at this port's phase, so that ports
    /// started together do not refresh together.
    pub(in crate::agent) fn next_periodic_refresh(&self, now: Instant) -> Instant {
        if let Some(lease) = self.tables.upkeep.lease() {
            return lease.until + self.refresh_delay();
        }
        if let Some(due) = self.tables.upkeep.change_due() {
            return due.max(now);
        }
        let interval = self.periodic_interval();
        now + interval * 3 / 4 + self.spread(interval / 2)
    }

    /// A distributor at `lid` took a lease of `seconds` on this port's
    /// tables with a load, a delete or a renewal (0 ends it).
    pub(in crate::agent) fn lease_renewed(&mut self, now: Instant, lid: u16, seconds: u16) {
        let before = self.tables.upkeep.lease();
        if seconds == 0 {
            if self.tables.upkeep.end_lease().is_some() {
                info!(
                    distributor = lid,
                    "the distributor ended its lease: this port keeps its own tables again"
                );
                self.reschedule_periodic_refresh(now);
            }
            return;
        }
        let length = Duration::from_secs(u64::from(seconds));
        self.telemetry.counters.lease_renewals += 1;
        self.tables.upkeep.take_lease(Lease {
            lid,
            until: now + length,
            length,
        });
        if before.is_none_or(|b| b.lid != lid || b.length != length) {
            info!(
                distributor = lid,
                lease_s = length.as_secs(),
                "a distributor keeps this port's tables: no refresh of its own while its lease runs"
            );
        }
        let interval = self.config.check_interval;
        let first_check = now + interval / 2 + self.spread(interval / 2);
        self.tables.upkeep.check_by_default(first_check);
        self.reschedule_periodic_refresh(now);
    }

    /// Moves the next refresh to what the upkeep says now, unless one is
    /// running (its end sets the next).
    fn reschedule_periodic_refresh(&mut self, now: Instant) {
        if !self.tables.refresh.is_running() && !self.shutting_down {
            self.tables
                .refresh
                .schedule(Some(self.next_periodic_refresh(now)));
        }
    }

    /// The refresh timer is due: whether the refresh goes ahead. A later
    /// change notice defers it to the sweep's end, a lease still running
    /// (renewed since the timer was set) to the lease's; a lease that
    /// ended hands the tables back to this port, which says so.
    pub(in crate::agent) fn refresh_due(&mut self, now: Instant) -> bool {
        if let Some(due) = self.tables.upkeep.change_due().filter(|d| *d > now) {
            // The master is still sweeping after a later notice: a
            // refresh now would fetch the routes about to change.
            self.tables.refresh.schedule(Some(due));
            return false;
        }
        let Some(lease) = self.tables.upkeep.lease() else {
            return true;
        };
        if now < lease.until {
            self.tables
                .refresh
                .schedule(Some(self.next_periodic_refresh(now)));
            return false;
        }
        self.telemetry.counters.leases_lapsed += 1;
        self.tables.upkeep.end_lease();
        warn!(
            distributor = lease.lid,
            lease_s = lease.length.as_secs(),
            "the distributor keeping this port's tables has been silent past its lease: \
             this port fetches and keeps its own tables again"
        );
        true
    }
}
