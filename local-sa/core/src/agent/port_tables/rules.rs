//! The upkeep's rules, the tables' own: when the next refresh of the
//! port's own is due, what a change notice, a distributor's lease and the
//! refresh timer lead to, given what they know of the agent
//! ([`UpkeepContext`](super::context::UpkeepContext)); and the check of
//! tables the port did not fetch (what it asks and what the answers say
//! are in `check`).

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use mad_codec::PathRecord;
use tracing::{debug, info, warn};

use crate::agent::port_tables::PortTables;
use crate::agent::port_tables::check::{CheckEnd, destinations_to_check, differing};
use crate::agent::port_tables::upkeep::{CheckQuestion, Checking, Lease, LeaseWord};
use crate::master_activity::Activity;
use crate::partitions::TableKey;
use crate::path_query::PairKey;
use crate::requester::Answer;

/// What the refresh timer being due leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum RefreshDue {
    /// The refresh goes ahead.
    Go,
    /// Not now: the distributor's lease ended without a renewal (its
    /// owner gone); a check is due at once and the refresh at this
    /// port's phase.
    LeaseLapsed(Lease),
    /// Not now: a later notice's sweep, or a lease still running; the
    /// timer is set again.
    Deferred,
}

impl PortTables {
    /// Says in the log how often this port refreshes, when that changed
    /// (the fabric grew past what the configured interval allows, or
    /// shrank back).
    pub(in crate::agent) fn say_periodic_interval(&mut self) {
        let ctx = self.upkeep_ctx;
        let interval = self.periodic_interval();
        let Some(first) = self.upkeep.say_interval(interval) else {
            return;
        };
        if interval == ctx.refresh_interval && first {
            return;
        }
        let pace = ctx.pace;
        info!(
            refresh_interval_s = interval.as_secs(),
            configured_s = ctx.refresh_interval.as_secs(),
            fabric_ports = self.refresh.fabric_ports(),
            path_cost_ns = pace.path_cost.as_nanos() as u64,
            master_share_percent = pace.upkeep_share_percent,
            worst_staleness_s = self.worst_staleness().as_secs(),
            "this port refreshes its own tables at this interval: the fabric's refreshes together cost \
             the master ports² paths per interval, kept under its share; a change no notice announces \
             is seen within worst_staleness_s (a distributor with --watch keeps every node current)"
        );
    }

    /// How often this port refreshes its own tables: the configured
    /// interval, or the fabric's upkeep bound when that is longer.
    pub(in crate::agent) fn periodic_interval(&self) -> Duration {
        let ctx = self.upkeep_ctx;
        let bound = ctx.pace.upkeep_interval(self.refresh.fabric_ports());
        ctx.refresh_interval.max(bound)
    }

    /// How stale an answer can be at worst, for a change no notice
    /// announces: the longest a port keeping its own tables waits between
    /// two refreshes (see [`PortTables::next_periodic_refresh`]).
    pub(in crate::agent) fn worst_staleness(&self) -> Duration {
        self.periodic_interval() * 5 / 4
    }

    /// How long this port waits before refreshing from a new master, at
    /// its phase of the refresh window (meanwhile it serves what it holds).
    pub(in crate::agent) fn refresh_delay(&self) -> Duration {
        let ctx = self.upkeep_ctx;
        ctx.spread(ctx.pace.refresh_window(self.refresh.fabric_ports()))
    }

    /// The master is new, or lost its state: the tables are refreshed at
    /// this port's phase of the refresh window from `now`, so that a
    /// fabric's ports ask it spread.
    pub(in crate::agent) fn refresh_at_phase(&mut self, now: Instant) {
        let at = now + self.refresh_delay();
        self.refresh.schedule(Some(at));
    }

    /// The tables the master wants changed (its QoS bit flipped): they
    /// are refreshed by this port's phase of the refresh window from
    /// `now` — a refresh due sooner stays, and one not scheduled (a
    /// refresh runs) is due at once.
    pub(in crate::agent) fn refresh_by_phase(&mut self, now: Instant) {
        let at = match self.refresh.next() {
            Some(next) => next.min(now + self.refresh_delay()),
            None => now,
        };
        self.refresh.schedule(Some(at));
    }

    /// The port holds new partitions (or its paths came in a load without
    /// them): their tables are fetched at this port's phase of the
    /// refresh window from `now`.
    pub(in crate::agent) fn fetch_partitions_at_phase(&mut self, now: Instant) {
        let at = now + self.refresh_delay();
        self.refresh.schedule_partitions(at);
    }

    /// When the next refresh of its own is due after this port's tables
    /// were made fresh at `now`: a refresh owed to a change if one is;
    /// under a lease, its end (renewals move it on; then the refresh is
    /// set at this port's phase of the refresh window); else between three quarters and five
    /// quarters of the interval, at this port's phase, so that ports
    /// started together do not refresh together.
    pub(super) fn next_periodic_refresh(&self, now: Instant) -> Instant {
        let ctx = self.upkeep_ctx;
        if let Some(lease) = self.upkeep.lease() {
            return lease.ends();
        }
        if let Some(due) = self.upkeep.change_due() {
            return due.max(now);
        }
        let interval = self.periodic_interval();
        now + interval * 3 / 4 + ctx.spread(interval / 2)
    }

    /// A notice that the fabric changed (trap 128): the master sweeps
    /// after it and may reroute, so a port keeping its own tables
    /// refreshes once that has settled, at its phase of the refresh
    /// window, and never sooner than the upkeep bound after its last
    /// refresh; a later notice means a later sweep. From the settle on
    /// until that refresh, the tables are in doubt: what they would
    /// answer is asked of the master, a pair at a time
    /// ([`crate::agent::port_tables::upkeep::Upkeep::doubt_from`]). Returns
    /// when that refresh is due, or the distributor's lease under which
    /// nothing is (the distributor re-reads the fabric).
    pub(in crate::agent) fn handle_fabric_changed(
        &mut self,
        now: Instant,
    ) -> Result<Instant, Lease> {
        let ctx = self.upkeep_ctx;
        if let Some(lease) = self.upkeep.lease() {
            return Err(lease);
        }
        self.upkeep.doubt_from(now + ctx.change_settle);
        let settled = now + ctx.change_settle + self.refresh_delay();
        let bound = (self.refresh.last_fresh())
            .map(|(at, _)| at + ctx.pace.upkeep_interval(self.refresh.fabric_ports()));
        let due = bound.map_or(settled, |b| settled.max(b));
        let due = self.upkeep.note_change(due);
        self.refresh.schedule_by(due);
        Ok(due)
    }

    /// A distributor at `lid` took a lease on this port's tables with a
    /// load, a delete or a renewal saying `word` (a lease of 0 ends it).
    /// Returns whether it was a renewal of a lease (not an end). Only the
    /// lease's owner gets here while the lease runs
    /// ([`PortTables::fences_off`]).
    pub(in crate::agent) fn handle_lease(
        &mut self,
        now: Instant,
        (lid, word): (u16, LeaseWord),
    ) -> bool {
        let ctx = self.upkeep_ctx;
        let before = self.upkeep.lease();
        if word.seconds == 0 {
            if self.upkeep.end_lease().is_some() {
                info!(
                    distributor = lid,
                    "the distributor ended its lease: this port keeps its own tables again"
                );
                self.reschedule_periodic_refresh(now);
            }
            return false;
        }
        let length = word.length();
        let lease = match before.filter(|b| b.lid == lid) {
            Some(mut same) => {
                same.heard(now, word);
                same
            }
            None => Lease::new(lid, word, now),
        };
        self.upkeep.take_lease(lease);
        match before {
            Some(b) if b.lid != lid => warn!(
                distributor = lid,
                before = b.lid,
                lease_s = length.as_secs(),
                "a new distributor keeps this port's tables: the one before fell silent"
            ),
            Some(b) if b.length == length => {}
            _ => info!(
                distributor = lid,
                lease_s = length.as_secs(),
                "a distributor keeps this port's tables: no refresh of its own while its lease runs, \
                 and loads from no other sender"
            ),
        }
        let interval = ctx.check_interval;
        let first_check = now + interval / 2 + ctx.spread(interval / 2);
        self.upkeep.check_by_default(first_check);
        self.reschedule_periodic_refresh(now);
        self.counts.lease_renewals += 1;
        true
    }

    /// The lease running at `now`, if its owner is not `lid`: a load or
    /// delete from `lid` is then refused, and counted (a distributor
    /// standing by, or one fenced off by the one that took over from it).
    pub(in crate::agent) fn fences_off(&mut self, now: Instant, lid: u16) -> Option<Lease> {
        let lease = (self.upkeep.lease()).filter(|l| l.lid != lid && now < l.ends())?;
        self.counts.loads_fenced += 1;
        Some(lease)
    }

    /// Moves the next refresh to what the upkeep says now, unless one is
    /// running (its end sets the next).
    fn reschedule_periodic_refresh(&mut self, now: Instant) {
        let ctx = self.upkeep_ctx;
        if !self.refresh.is_running() && !ctx.shutting_down {
            let next = self.next_periodic_refresh(now);
            self.refresh.schedule(Some(next));
        }
    }

    /// The refresh timer is due: whether the refresh goes ahead. A later
    /// change notice defers it to the sweep's end, a lease still running
    /// (renewed since the timer was set) to the lease's. A lease that
    /// ended — run out, or its owner silent for two of its renewal
    /// intervals — hands the tables back to this port, which says so,
    /// checks them against the master at once, polls the master's
    /// activity, and refreshes at its phase of the refresh window.
    pub(in crate::agent) fn handle_refresh_due(&mut self, now: Instant) -> RefreshDue {
        let ctx = self.upkeep_ctx;
        if let Some(due) = self.upkeep.change_due().filter(|d| *d > now) {
            // The master is still sweeping after a later notice: a
            // refresh now would fetch the routes about to change.
            self.refresh.schedule(Some(due));
            return RefreshDue::Deferred;
        }
        let Some(lease) = self.upkeep.lease() else {
            return RefreshDue::Go;
        };
        if now < lease.ends() {
            let next = self.next_periodic_refresh(now);
            self.refresh.schedule(Some(next));
            return RefreshDue::Deferred;
        }
        self.upkeep.end_lease();
        self.counts.leases_lapsed += 1;
        match lease
            .renewal_interval()
            .filter(|_| lease.owner_fell_silent())
        {
            Some(gap) => warn!(
                distributor = lease.lid,
                renewal_interval_s = gap.as_secs_f64(),
                silent_s = now.saturating_duration_since(lease.heard).as_secs(),
                lease_left_s = lease.until.saturating_duration_since(now).as_secs(),
                "the distributor keeping this port's tables missed two renewals: taken as gone, \
                 this port checks its tables now and keeps them itself"
            ),
            None => warn!(
                distributor = lease.lid,
                lease_s = lease.length.as_secs(),
                "the distributor keeping this port's tables has been silent past its lease: \
                 this port checks its tables now and keeps them itself"
            ),
        }
        // In doubt at once: a change the distributor did not push would
        // be served until the refresh. A few paths now (spread over
        // seconds, not the refresh window: a difference and the tables
        // are fetched at once); the whole table at this port's phase, as
        // after a new master.
        self.upkeep.doubt_from(now);
        self.upkeep
            .check_at(Some(now + ctx.spread(LAPSED_CHECK_WINDOW)));
        self.refresh.schedule(Some(now + self.refresh_delay()));
        self.start_sweep_polls(now);
        RefreshDue::LeaseLapsed(lease)
    }
}

/// The ports whose lease ended together check their tables within this.
const LAPSED_CHECK_WINDOW: Duration = Duration::from_secs(5);

/// Polls of the master's activity ([`crate::agent::port_tables::sweep_watch`]).
impl PortTables {
    /// When the master's ActCount is next asked for.
    pub(super) fn next_sweep_poll(&self) -> Option<Instant> {
        self.sweeps.next()
    }

    /// Starts polling the master's activity (after a refresh made the
    /// tables this port's own), at this port's phase of the poll
    /// interval, unless polling already, or off (`ctx.sweep_poll` zero),
    /// or a distributor keeps the tables.
    pub(in crate::agent) fn start_sweep_polls(&mut self, now: Instant) {
        let ctx = self.upkeep_ctx;
        if self.sweeps.next().is_none() && polls(self) {
            let every = self.sweep_poll_interval();
            self.sweeps.poll_at(Some(now + ctx.spread(every)));
        }
    }

    /// Whether a refresh beginning now takes a first count of the
    /// master's activity: the polls are on and none was counted yet.
    pub(super) fn needs_sweep_baseline(&self) -> bool {
        polls(self) && !self.sweeps.has_count()
    }

    /// True (and the next poll one interval on) when a poll is due; a
    /// lease stops the polls.
    pub(super) fn take_sweep_poll_due(&mut self, now: Instant) -> bool {
        if !polls(self) {
            self.sweeps.poll_at(None);
            return false;
        }
        let due = self.sweeps.next().is_some_and(|t| t <= now);
        if due {
            let every = self.sweep_poll_interval();
            self.sweeps.poll_at(Some(now + every));
        }
        due
    }

    /// Between this port's polls of the master's activity: the
    /// configured interval, or longer on a fabric whose ports' polls
    /// together would take more than their share of the master's time
    /// ([`crate::pacing::MasterPace::activity_poll_interval`]).
    fn sweep_poll_interval(&self) -> Duration {
        let ctx = self.upkeep_ctx;
        let bound = ctx.pace.activity_poll_interval(self.refresh.fabric_ports());
        ctx.sweep_poll.max(bound)
    }

    /// A change notice came at `now` (trap 128): counted, the next rise
    /// of the master's activity is its sweep's, and the fabric changed
    /// ([`Self::handle_fabric_changed`]).
    pub(in crate::agent) fn handle_change_notice(
        &mut self,
        now: Instant,
    ) -> Result<Instant, Lease> {
        self.counts.change_notices += 1;
        self.sweeps.notice();
        self.handle_fabric_changed(now)
    }

    /// The master at `sm_lid` says its ActCount is `count`, in an answer
    /// that came at `now`: a heavy sweep no notice announced is taken as
    /// one ([`Self::handle_fabric_changed`]). What was seen, if it was
    /// such a sweep and this port keeps its own tables.
    pub(in crate::agent) fn handle_sweep_poll(
        &mut self,
        now: Instant,
        (sm_lid, count): (u16, u32),
    ) -> Option<SweepSeen> {
        let Activity::Swept { rose, usual } = self.sweeps.answered(sm_lid, count, now) else {
            return None;
        };
        self.counts.sweeps_seen += 1;
        let refresh_at = self.handle_fabric_changed(now).ok()?;
        Some(SweepSeen {
            rose,
            usual,
            refresh_at,
        })
    }
}

/// A heavy sweep of the master's that no notice announced, seen by a
/// poll of its activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct SweepSeen {
    /// The SMPs its ActCount rose by.
    pub(in crate::agent) rose: u32,
    /// What its light sweeps usually add.
    pub(in crate::agent) usual: u32,
    /// When this port's refresh that follows it is due.
    pub(in crate::agent) refresh_at: Instant,
}

/// Whether a port polls the master's activity: the poll is on, it keeps
/// its own tables, and it is not withdrawing.
fn polls(t: &PortTables) -> bool {
    let ctx = t.upkeep_ctx;
    ctx.sweep_poll > Duration::ZERO && !ctx.shutting_down && t.lease().is_none()
}

// The check of tables this port did not fetch (`check`).
impl PortTables {
    /// Starts a check of the tables against the master, unless one runs,
    /// the agent is shutting down or there is nothing to check: its round
    /// and its questions — `check_sample` destinations of the tables' own
    /// at this port's phase of the round, and the QoS pairs a distributor
    /// loaded that `qos` picks (how many, from which phase).
    pub(in crate::agent) fn start_check(
        &mut self,
        qos: impl FnOnce(usize, usize) -> Vec<PairKey>,
    ) -> Option<(u32, Vec<CheckQuestion>)> {
        self.upkeep.check_at(None);
        if self.upkeep.is_checking() || self.upkeep_ctx.shutting_down {
            return None;
        }
        let k = self.upkeep_ctx.check_sample;
        let port = self.refresh_ctx.port;
        let phase = self.check_phase(port.gid.guid());
        let mut sample = self.check_sample(k, phase, &port.lids());
        if k > 0 {
            sample.extend(
                qos((k / 4).max(1), phase)
                    .into_iter()
                    .map(CheckQuestion::Qos),
            );
        }
        if sample.is_empty() {
            return None;
        }
        Some((self.upkeep.begin_check(sample.len()), sample))
    }

    /// Check `done` ended at `now`: what follows, and when the next check
    /// is (after the refresh's back-off if the master did not answer;
    /// `check_interval` on while a distributor keeps the tables).
    fn check_ended(&mut self, now: Instant, done: &Checking) -> CheckEnd {
        let retry = self.refresh_retry_delay();
        let interval = self.upkeep_ctx.check_interval;
        let kept_by = self.upkeep.tables_kept_by();
        let differed = |qos: bool| {
            done.differed
                .iter()
                .any(|q| matches!(q, CheckQuestion::Qos(_)) == qos)
        };
        let end = CheckEnd {
            forget_qos: differed(true),
            refresh: differed(false),
            passed: match (done.differed.is_empty(), done.unanswered) {
                (false, _) => Some(false),
                (true, 0) => Some(true),
                (true, _) => None,
            },
        };
        match end.passed {
            Some(true) => self.counts.checks_passed += 1,
            Some(false) => self.counts.checks_failed += 1,
            None => {}
        }
        if end.forget_qos {
            warn!(
                differing = %differing(&done.differed),
                "a distributor's QoS tables differ from the master's answers: forgotten, each pair asked of the master"
            );
        }
        if end.refresh {
            warn!(
                table = kept_by,
                differing = %differing(&done.differed),
                "this port's table differs from the master's answers: fetching its own tables now"
            );
        }
        match end.passed {
            None => {
                debug!(
                    unanswered = done.unanswered,
                    "the master did not answer the table check: tried again after the back-off"
                );
                self.upkeep.check_at(Some(now + retry));
                return end;
            }
            Some(true) => info!(
                table = kept_by,
                "this port's table agrees with the master's answers"
            ),
            Some(false) => {}
        }
        if self.upkeep.lease().is_some() {
            self.upkeep.check_at(Some(now + interval));
        }
        end
    }

    /// Where this round's sample starts: the port's own phase (from
    /// `guid`), moved on each round.
    fn check_phase(&self, guid: u64) -> usize {
        let phase = guid.wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize;
        phase.wrapping_add(self.upkeep.check_rounds() as usize * 7_919)
    }

    /// The check's questions about this port's tables: `k` destinations
    /// of the default table, and a quarter as many (at least one) of each
    /// partition table's, spread over them, another set each round
    /// (`phase`); the port answers at `lids`.
    pub(in crate::agent) fn check_sample(
        &self,
        k: usize,
        phase: usize,
        lids: &RangeInclusive<u16>,
    ) -> Vec<CheckQuestion> {
        let mut sample: Vec<CheckQuestion> =
            destinations_to_check(&self.paths.store, k, phase, lids)
                .into_iter()
                .map(|d| CheckQuestion::Table(TableKey::Default, d))
                .collect();
        if k > 0 {
            let quarter = (k / 4).max(1);
            for (p, table) in self.partitions.tables() {
                let dlids = destinations_to_check(&table.store, quarter, phase, lids);
                sample.extend(
                    dlids
                        .into_iter()
                        .map(|d| CheckQuestion::Table(TableKey::Partition(p), d)),
                );
            }
        }
        sample
    }

    /// Whether the master's answer about destination `dlid` of `table`
    /// is what this port (at `lids`) holds.
    pub(in crate::agent) fn agrees_with_master(
        &self,
        (table, dlid): (TableKey, u16),
        answer: &Answer,
        lids: &RangeInclusive<u16>,
    ) -> bool {
        let store = match table {
            TableKey::Default => &self.paths.store,
            TableKey::Partition(p) => match self.partitions.table(p) {
                Some(t) => &t.store,
                // Gone since the check began: nothing held to differ.
                None => return true,
            },
        };
        let mut answered = 0;
        for r in answer.records::<PathRecord>() {
            answered += 1;
            if store.get(r.slid(), r.dlid()) != Some(r) {
                return false;
            }
        }
        let held = lids
            .clone()
            .filter(|s| store.get(*s, dlid).is_some())
            .count();
        // A cut answer (no RMPP on the transport) holds only the first
        // records: those are compared, not their number.
        answer.is_cut() || held == answered
    }
}

// The upkeep's state as `SaCore` reads and sets it (`upkeep`).
impl PortTables {
    /// The distributor's lease, if one runs.
    pub(in crate::agent) fn lease(&self) -> Option<Lease> {
        self.upkeep.lease()
    }

    /// A refresh of every table begins at `now`: counted as a change's if
    /// it sees one that was due by then (its end may also end the doubt).
    pub(super) fn refresh_begins(&mut self, now: Instant) {
        let owed = self.upkeep.refresh_begins(now);
        self.counts.change_refreshes += u64::from(owed);
    }

    /// Whether queries the tables would answer go to the master.
    pub(in crate::agent) fn in_doubt(&self) -> bool {
        self.upkeep.in_doubt()
    }

    /// The master's answer at `now` to `question`, in check `round`:
    /// whether it agrees with what is held (`None`: it did not answer).
    /// Once every question is answered, the check's end: what follows.
    pub(in crate::agent) fn check_answered(
        &mut self,
        now: Instant,
        round: u32,
        question: CheckQuestion,
        agrees: Option<bool>,
    ) -> Option<CheckEnd> {
        let done = self.upkeep.check_answered(round, question, agrees)?;
        Some(self.check_ended(now, &done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::port_tables::context::UpkeepContext;
    use crate::pacing::MasterPace;

    fn ctx() -> UpkeepContext {
        UpkeepContext {
            refresh_interval: Duration::from_secs(600),
            load_wait: Duration::ZERO,
            change_settle: Duration::from_secs(5),
            check_interval: Duration::from_secs(6 * 3600),
            check_sample: 16,
            sweep_poll: Duration::from_secs(30),
            pace: MasterPace::default(),
            phase: 0.5,
            shutting_down: false,
        }
    }

    /// Tables fresh at `now` from a refresh of the port's own.
    fn fresh(now: Instant) -> PortTables {
        let mut t = PortTables::new(now, (ctx(), PortTables::test_context().1));
        t.refresh.made_fresh(now, None);
        let next = t.next_periodic_refresh(now);
        t.refresh.schedule(Some(next));
        t
    }

    #[test]
    fn a_new_master_s_refresh_comes_at_the_port_s_phase_and_a_sooner_one_may_stay() {
        let now = Instant::now();
        let mut t = fresh(now);
        let phase = now + t.refresh_delay();
        let periodic = t.refresh.next().unwrap();
        assert!(periodic > phase, "the periodic refresh is further off");
        t.refresh_at_phase(now);
        assert_eq!(t.refresh.next(), Some(phase));
        // A refresh due sooner than the phase stays when the tables the
        // master wants changed; none scheduled (one runs) is due at once.
        let soon = now + Duration::from_millis(1);
        t.refresh.schedule(Some(soon));
        t.refresh_by_phase(now);
        assert_eq!(t.refresh.next(), Some(soon));
        t.refresh.schedule(None);
        t.refresh_by_phase(now);
        assert_eq!(t.refresh.next(), Some(now));
    }

    #[test]
    fn a_shorter_refresh_interval_takes_effect_when_told_and_a_longer_one_waits() {
        let now = Instant::now();
        let mut t = fresh(now);
        let periodic = t.refresh.next().unwrap();
        let refresh = PortTables::test_context().1;
        let later = now + Duration::from_secs(10);
        let longer = UpkeepContext {
            refresh_interval: Duration::from_secs(3600),
            ..ctx()
        };
        t.know(later, longer, refresh);
        assert_eq!(t.refresh.next(), Some(periodic), "the one scheduled stays");
        let shorter = UpkeepContext {
            refresh_interval: Duration::from_secs(60),
            ..ctx()
        };
        t.know(later, shorter, refresh);
        assert_eq!(t.refresh.next(), Some(later + Duration::from_secs(60)));
    }

    #[test]
    fn shutting_down_ends_the_refreshes_and_the_polls() {
        let now = Instant::now();
        let mut t = fresh(now);
        t.start_sweep_polls(now);
        assert!(t.refresh.next().is_some());
        let (mut upkeep, refresh) = (ctx(), PortTables::test_context().1);
        upkeep.shutting_down = true;
        t.know(now, upkeep, refresh);
        assert_eq!(t.refresh.next(), None);
        assert_eq!(t.poll_timeout(), None, "nothing falls due");
    }

    #[test]
    fn a_port_refreshes_within_three_to_five_quarters_of_the_interval_at_its_phase() {
        let now = Instant::now();
        let t = fresh(now);
        assert_eq!(
            t.next_periodic_refresh(now),
            now + Duration::from_secs(450) + Duration::from_secs(150)
        );
        assert_eq!(t.worst_staleness(), Duration::from_secs(750));
    }

    #[test]
    fn a_change_brings_the_refresh_forward_to_the_settled_sweep_and_a_later_one_puts_it_off() {
        let now = Instant::now();
        let mut t = fresh(now);
        let later = now + Duration::from_secs(100);
        let due = t.handle_fabric_changed(later).unwrap();
        // The settle time, then the port's phase of the refresh window
        // (1 s at an unknown fabric size).
        assert_eq!(
            due,
            later + Duration::from_secs(5) + Duration::from_millis(500)
        );
        assert_eq!(t.refresh.next(), Some(due));
        let again = later + Duration::from_secs(3);
        let put_off = t.handle_fabric_changed(again).unwrap();
        assert_eq!(put_off, due + Duration::from_secs(3));
        // The first timer comes while the later sweep runs: deferred to it.
        assert_eq!(t.handle_refresh_due(due), RefreshDue::Deferred);
        assert_eq!(t.refresh.next(), Some(put_off));
        assert_eq!(t.handle_refresh_due(put_off), RefreshDue::Go);
    }

    #[test]
    fn under_a_lease_notices_are_the_distributor_s_and_a_silent_one_hands_the_tables_back() {
        let now = Instant::now();
        let mut t = fresh(now);
        assert!(t.handle_lease(now, (9, word(185, false))));
        let lease = t.upkeep.lease().unwrap();
        assert_eq!(
            (lease.lid, lease.until),
            (9, now + Duration::from_secs(185))
        );
        assert_eq!(t.handle_fabric_changed(now), Err(lease));
        // The timer during the lease waits for it.
        let during = now + Duration::from_secs(100);
        assert_eq!(t.handle_refresh_due(during), RefreshDue::Deferred);
        assert!(t.refresh.next().unwrap() >= lease.until);
        // Silent past its end: the port keeps its own tables again.
        let after = lease.until + Duration::from_secs(1);
        assert_eq!(t.handle_refresh_due(after), RefreshDue::LeaseLapsed(lease));
        assert_eq!(t.upkeep.lease(), None);
        assert!(
            t.upkeep.check_due(after + Duration::from_secs(5)),
            "a check at once"
        );
        // A lease of 0 s ends one at once.
        assert!(t.handle_lease(after, (9, word(185, true))));
        assert!(!t.handle_lease(after, (9, word(0, true))));
        assert_eq!(t.upkeep.lease(), None);
    }

    fn word(seconds: u16, renewal: bool) -> LeaseWord {
        LeaseWord {
            seconds,
            renewal,
            every: None,
        }
    }

    #[test]
    fn an_owner_that_says_its_renewal_interval_is_gone_after_two_from_its_first_word() {
        let now = Instant::now();
        let mut t = fresh(now);
        let said = LeaseWord {
            seconds: 600,
            renewal: false,
            every: Some(8),
        };
        assert!(t.handle_lease(now, (9, said)));
        assert_eq!(
            t.upkeep.lease().unwrap().ends(),
            now + Duration::from_secs(16)
        );
    }

    #[test]
    fn an_owner_two_renewal_intervals_silent_is_gone_and_only_the_owner_may_load() {
        let now = Instant::now();
        let mut t = fresh(now);
        let s = Duration::from_secs;
        assert!(t.handle_lease(now, (9, word(185, false))));
        // Before two renewals the port knows no interval: the lease runs.
        assert!(t.handle_lease(now + s(8), (9, word(185, true))));
        assert_eq!(t.upkeep.lease().unwrap().ends(), now + s(8 + 185));
        assert!(t.handle_lease(now + s(16), (9, word(185, true))));
        let lease = t.upkeep.lease().unwrap();
        assert_eq!(lease.renewal_interval(), Some(s(8)));
        assert_eq!(lease.ends(), now + s(32));
        assert_eq!(t.refresh.next(), Some(now + s(32)), "the timer at its end");
        assert_eq!(t.fences_off(now + s(20), 9), None, "the owner");
        assert_eq!(t.fences_off(now + s(20), 12), Some(lease));
        // A renewal a moment after another says nothing of the interval.
        assert!(t.handle_lease(
            now + s(16) + Duration::from_millis(10),
            (9, word(185, true))
        ));
        assert_eq!(t.upkeep.lease().unwrap().renewal_interval(), Some(s(8)));
        // Silent for two intervals: gone, whatever is left of the lease.
        let gone = now + s(33);
        assert_eq!(t.fences_off(gone, 12), None);
        assert!(matches!(
            t.handle_refresh_due(gone),
            RefreshDue::LeaseLapsed(l) if l.lid == 9
        ));
        assert!(t.upkeep.check_due(gone + s(5)), "a check at once");
        assert!(t.refresh.next().unwrap() > gone, "the refresh at its phase");
        // Another distributor takes it over; the old one is refused.
        assert!(t.handle_lease(gone + s(1), (12, word(185, true))));
        assert_eq!(t.fences_off(gone + s(2), 9).map(|l| l.lid), Some(12));
    }
}
