//! Who keeps this port's tables fresh between fills, and when.
//!
//! * **The port itself**, without a distributor: a periodic refresh every
//!   [`PortTables::periodic_interval`] — the configured interval, or longer on
//!   a fabric whose N² paths would otherwise take more than the pace's
//!   share of the master's time ([`MasterPace::upkeep_interval`]) — and
//!   one after a notice that the fabric changed (trap 128), once
//!   the master's sweep has had `change_settle` to reroute, at the port's
//!   phase of the refresh window, and never sooner than that bound after
//!   the last refresh. From the master's sweep on until that refresh the
//!   tables are in doubt: the paths asked are asked of the master, a port
//!   pair at a time, rather than answered from tables that may not show
//!   the new routes (on a large fabric the bound puts the refresh hours
//!   away).
//! * **A distributor holding a lease** (`load_flags::LEASE`, renewed by
//!   every load, delete and renewal it sends): the port refreshes nothing
//!   while the lease runs — the distributor watches the fabric and pushes
//!   what changes — and checks a few of its paths against the master
//!   every `check_interval` ([`crate::agent::port_tables::check`]). When the
//!   distributor falls silent past its lease, the port fetches its own
//!   table again at its phase of the refresh window, and keeps it itself
//!   from then on.
//!
//! This holds who keeps the tables as the agent holds it: a
//! distributor's lease if one runs, a refresh owed to a change notice,
//! the checks of tables the port did not fetch itself. Its rules are
//! [`crate::agent::port_tables::rules`]; the checks are in
//! [`crate::agent::port_tables::check`].
//!
//! [`MasterPace::upkeep_interval`]: crate::pacing::MasterPace::upkeep_interval
//! [`PortTables::periodic_interval`]: crate::agent::port_tables::PortTables::periodic_interval

use std::time::{Duration, Instant};

use crate::partitions::TableKey;
use crate::path_query::PairKey;

/// A distributor's lease on this port's tables. It names its owner: while
/// it runs, loads and deletes from any other sender are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct Lease {
    /// The distributor's LID: the lease's owner.
    pub(in crate::agent) lid: u16,
    /// When it ends unless renewed.
    pub(in crate::agent) until: Instant,
    /// How long each renewal gives.
    pub(in crate::agent) length: Duration,
    /// When the owner was last heard: a load, a delete or a renewal.
    pub(in crate::agent) heard: Instant,
    /// When its last renewal came, and the time between its last two
    /// (its renewal interval, as this port saw it).
    pub(in crate::agent) renewals: Option<(Instant, Option<Duration>)>,
    /// The renewal interval the owner said it keeps, if it said one.
    pub(in crate::agent) said_interval: Option<Duration>,
}

/// What a load, a delete or a renewal said of the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct LeaseWord {
    /// The lease it gives (0 ends it).
    pub(in crate::agent) seconds: u16,
    /// It was a renewal (`RENEW_ONLY`), whose spacing says the owner's
    /// interval.
    pub(in crate::agent) renewal: bool,
    /// The renewal interval it says, in seconds, if it says one.
    pub(in crate::agent) every: Option<u16>,
}

impl LeaseWord {
    /// The lease's length.
    pub(in crate::agent) fn length(self) -> Duration {
        Duration::from_secs(u64::from(self.seconds))
    }

    fn said_interval(self) -> Option<Duration> {
        self.every.map(|s| Duration::from_secs(u64::from(s)))
    }
}

/// Renewals closer together than this say nothing of the owner's
/// interval (a claim followed by its first round, say).
const SHORTEST_GAP: Duration = Duration::from_secs(1);

impl Lease {
    /// A lease taken from `lid` at `now` by what `word` says.
    pub(in crate::agent) fn new(lid: u16, word: LeaseWord, now: Instant) -> Self {
        let length = word.length();
        Self {
            lid,
            until: now + length,
            length,
            heard: now,
            renewals: word.renewal.then_some((now, None)),
            said_interval: word.said_interval(),
        }
    }

    /// The owner spoke again at `now`, saying `word`.
    pub(in crate::agent) fn heard(&mut self, now: Instant, word: LeaseWord) {
        self.until = now + word.length();
        self.length = word.length();
        self.heard = now;
        if let Some(every) = word.said_interval() {
            self.said_interval = Some(every);
        }
        if word.renewal {
            let gap = match self.renewals {
                Some((last, gap)) => Some(now.saturating_duration_since(last))
                    .filter(|g| *g >= SHORTEST_GAP)
                    .or(gap),
                None => None,
            };
            self.renewals = Some((now, gap));
        }
    }

    /// The owner's renewal interval: as it said it, or as this port saw
    /// it once two renewals came far enough apart.
    pub(in crate::agent) fn renewal_interval(&self) -> Option<Duration> {
        self.said_interval
            .or_else(|| self.renewals.and_then(|(_, gap)| gap))
    }

    /// When the lease ends without another word: at `until`, or sooner
    /// when the owner, whose renewal interval is known, went two of them
    /// without a word (it died, froze or lost its port: the port does not
    /// wait the rest of the lease out blind).
    pub(in crate::agent) fn ends(&self) -> Instant {
        match self.renewal_interval() {
            Some(gap) => self.until.min(self.heard + gap * 2),
            None => self.until,
        }
    }

    /// Whether the owner fell silent before `until` (rather than the
    /// lease running out).
    pub(in crate::agent) fn owner_fell_silent(&self) -> bool {
        self.ends() < self.until
    }
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
    /// The owner of the last lease that ended, if one did: the tables
    /// checked after it are its.
    last_owner: Option<u16>,
    /// The tables may not show a change the master made since they were
    /// fetched: what they would answer is asked of the master instead.
    doubt: Option<Doubt>,
}

/// Tables in doubt: a change was noticed (or seen in the master's
/// activity, or a distributor's lease lapsed) that a refresh has not
/// caught up with yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Doubt {
    /// When the master's latest sweep has settled: what it answered
    /// before is forgotten then, and queries go to it from then on.
    /// `None` once that time came.
    settles: Option<Instant>,
    /// Queries the tables would answer go to the master now.
    asking: bool,
    /// A refresh began after the latest sweep settled: its end ends the
    /// doubt.
    refresh_began: bool,
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
        self.doubt = None;
    }

    /// The lease ends (ended by the distributor, or lapsed): the lease
    /// there was. Its checks end with it, and the log says the interval
    /// again.
    pub(in crate::agent) fn end_lease(&mut self) -> Option<Lease> {
        let before = self.lease.take();
        if let Some(b) = before {
            self.check_next = None;
            self.interval_said = None;
            self.last_owner = Some(b.lid);
        }
        before
    }

    /// Whose tables a check looks at: a distributor's (whose lease runs
    /// or ended), or tables kept from before a restart.
    pub(in crate::agent) fn tables_kept_by(&self) -> &'static str {
        match (self.lease, self.last_owner) {
            (Some(_), _) => "a distributor's",
            (None, Some(_)) => "a distributor's whose lease ended",
            (None, None) => "kept from before a restart",
        }
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

    /// The tables may not show a change whose sweep settles at
    /// `settles` (a later one's settle time wins): from then until a
    /// refresh begun after it ends, what they would answer is asked of
    /// the master.
    pub(in crate::agent) fn doubt_from(&mut self, settles: Instant) {
        let before = self.doubt;
        let settles = before
            .and_then(|d| d.settles)
            .map_or(settles, |s| s.max(settles));
        self.doubt = Some(Doubt {
            settles: Some(settles),
            asking: before.is_some_and(|d| d.asking),
            refresh_began: false,
        });
    }

    /// When the sweep the tables are in doubt of settles.
    pub(in crate::agent) fn doubt_settles(&self) -> Option<Instant> {
        self.doubt.and_then(|d| d.settles)
    }

    /// True (once per settle) when the sweep has settled by `now`: the
    /// master's earlier answers are to be forgotten, and queries go to it
    /// from now on.
    pub(in crate::agent) fn take_doubt_settled(&mut self, now: Instant) -> bool {
        match &mut self.doubt {
            Some(d) if d.settles.is_some_and(|s| s <= now) => {
                d.settles = None;
                d.asking = true;
                true
            }
            _ => false,
        }
    }

    /// Whether queries the tables would answer go to the master.
    pub(in crate::agent) fn in_doubt(&self) -> bool {
        self.doubt.is_some_and(|d| d.asking)
    }

    /// A refresh of every table begins at `now`: true (once) if it sees a
    /// change that was due by then; if the sweep in doubt has settled,
    /// the refresh's end ends the doubt.
    pub(in crate::agent) fn refresh_begins(&mut self, now: Instant) -> bool {
        if let Some(d) = &mut self.doubt {
            d.refresh_began = d.settles.is_none_or(|s| s <= now);
        }
        let seen = self.change_due.is_some_and(|d| d <= now);
        if seen {
            self.change_due = None;
        }
        seen
    }

    /// The default table's refresh failed: the doubt waits for the next.
    pub(in crate::agent) fn refresh_failed(&mut self) {
        if let Some(d) = &mut self.doubt {
            d.refresh_began = false;
        }
    }

    /// The last table of a refresh came: true if that ended the doubt (a
    /// refresh begun after the sweep settled brought every table; a
    /// partition table that failed and came later counts).
    pub(in crate::agent) fn refresh_ended(&mut self) -> bool {
        let ends = self.doubt.is_some_and(|d| d.refresh_began);
        if ends {
            self.doubt = None;
        }
        ends
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
