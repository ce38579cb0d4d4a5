//! The watch without I/O: what `lsaquery --distribute --compute --watch`
//! decides after its fill, apart from how it reads the fabric and moves
//! MADs.
//!
//! It keeps what each node holds ([`Holdings`]) and when to look: after
//! a notice (trap 128, 64, 65) or a heavy sweep of the master its polls
//! saw, once `settle` has passed with no other (each later one waits
//! again, but never past an interval after the first), and every
//! `interval`. An event goes through steps, each an [`Effect`] the driver
//! carries out and reports back:
//!
//! 1. [`Effect::Read`]: the description read again — and after a sweep
//!    of the master, OpenSM's own files, which OpenSM reads again at
//!    every heavy sweep — [`Watch::handle_read`] with whether either
//!    changed and every port of the fabric now. Kept nodes gone from the
//!    fabric are forgotten.
//! 2. [`Effect::Probe`]: ports new to the watch after a change — and
//!    every tenth interval, or after a port came into service, every port
//!    it does not hold, those found without local-sa before too — asked
//!    whether they run local-sa ([`Watch::handle_probed`]); those that do
//!    are kept, their holding unknown.
//! 3. Nothing changed and nobody new: after an interval the event is
//!    quiet; after a sweep it ends with a check all the same
//!    ([`Effect::Check`] of no node: every endport a source and a
//!    destination), since the master may have changed its mind in a way
//!    local-sa was not told (a policy on OpenSM's command line, a name
//!    map). A difference that stays after [`READS`] reads sends every
//!    node its tables whole, the kind of table that differs from the
//!    master.
//! 4. [`Effect::Digests`]: each kept node's tables computed from the
//!    newest fabric, by digest ([`Watch::handle_digests`]); the nodes to
//!    push are those whose digest differs from what they hold, the
//!    differences only to those holding the computed tables — and after
//!    a sweep, when some kind of table comes from the master, every node
//!    whole (what the master answers may have changed with it).
//! 5. [`Effect::Check`]: after a change, pairs that changed and every
//!    endport checked against the master ([`Watch::handle_checked`]). A
//!    difference may be a sweep not done: after `settle` the description
//!    is read again, up to [`READS`] reads, then the push goes on (the
//!    tables the check did not prove come from the master).
//! 6. [`Effect::Push`]: the plan's nodes pushed ([`Watch::handle_pushed`]
//!    with the fill's reports): those that took everything hold the new
//!    digest; the others are not known and get their tables whole later.
//! 7. [`Effect::Told`]: the event's report, for the driver to print.
//!    After a sweep a round of renewals follows at once that tells every
//!    node to forget the QoS answers it kept from the master (a sweep may
//!    have changed a level no table shows).
//!
//! Every `renew` each node's lease is renewed ([`Effect::Renew`],
//! [`Watch::handle_renewed`]); a node that does not answer is no longer
//! known to hold its tables, and when nodes not known answer again an
//! event pushes them their tables without reading anything. A node that
//! answers that another distributor holds its lease fences the watch
//! off: another took over while this one was frozen or cut off, so it
//! ends its leases and stops ([`Effect::Ended`] says by whom); its driver
//! stands by again ([`claim`]). A step that fails for want of an answer
//! from the master ([`Watch::handle_failed`]) ends the event and changes
//! nothing: the next event reads again. [`Watch::handle_stop`] ends every lease
//! ([`Effect::Renew`] of 0 s) and then the watch ([`Effect::Ended`]).
//!
//! Between events it polls the master SM's activity every
//! `activity_poll` ([`Effect::PollActivity`], [`Watch::handle_activity`]):
//! a heavy sweep no notice announced — its trap 128 lost on a link that
//! went down, as OpenSM sends it before it reroutes, or a SIGHUP that
//! changed the policy and moved no route — is looked into as that notice
//! would have been ([`local_sa_core::master_activity`]).
//!
//! Every call takes the time as an argument: the tests run it on a
//! virtual clock against a fake master and fake nodes, the storm
//! simulator on its own.

mod changed_pairs;
pub mod claim;
pub mod driver;
mod holdings;
mod renewal;
mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use local_sa_core::master_activity::{Activity, MasterActivity};
use mad_codec::{Gid, MadStatus, TrapDetails};

pub use self::changed_pairs::changed_pairs;
pub use self::claim::LeaseAnswer;
pub use self::holdings::{Holding, Holdings, Plan};
pub use self::renewal::renewal;
pub use self::report::{EventReport, WatchCounters, WatchRole};

use crate::computed::{Served, Untrusted};
use crate::fill::outcome::{NodeReport, Pushed};
use crate::fill::ports::FabricPort;
use crate::fill::tally::Tally;
use crate::shard::Shard;

/// Reads of the description an event makes while the master's answers
/// differ from the computed ones (its sweep may not be done).
pub const READS: u32 = 3;

/// Intervals between probes of the ports that did not run local-sa (one
/// may have started it since).
pub const PROBE_EVERY: u64 = 10;

/// How a watch is set up.
#[derive(Debug, Clone)]
pub struct WatchSetup {
    /// Between re-reads and lease renewals.
    pub interval: Duration,
    /// The master's sweep after a notice, and between reads while the
    /// check differs.
    pub settle: Duration,
    /// The lease every push and renewal gives, in seconds.
    pub lease: u16,
    /// The master's LID: never a node.
    pub master_lid: u16,
    /// This watch's share of the nodes, if it has one.
    pub shard: Option<Shard>,
    /// Between polls of the master SM's activity (zero: none).
    pub activity_poll: Duration,
    /// Between lease renewals. A node takes its lease's owner as gone
    /// after two of them without a word, so this sets how soon a standby
    /// takes over from a watch that died.
    pub renew: Duration,
    /// The LID of the node whose lease made this watch the active one
    /// (the claim's referee, [`claim`]); `None` when no node referees.
    pub referee: Option<u16>,
}

/// What the driver is to do next.
#[derive(Debug)]
pub enum Effect {
    /// Read the fabric's description again — and OpenSM's files, after a
    /// sweep of the master (`sweep`) or when the description changed:
    /// OpenSM reads them again at every heavy sweep; then
    /// [`Watch::handle_read`].
    Read {
        /// The event follows a sweep of the master.
        sweep: bool,
    },
    /// Ask the master SM its activity (its SMInfoRecord,
    /// [`local_sa_core::master_activity::request`]); then
    /// [`Watch::handle_activity`].
    PollActivity,
    /// Ask these ports whether they run local-sa; then
    /// [`Watch::handle_probed`].
    Probe(Vec<FabricPort>),
    /// Compute the tables of these nodes from the newest fabric read and
    /// give their digests; then [`Watch::handle_digests`].
    Digests(Vec<Gid>),
    /// Check against the master pairs whose records changed from the
    /// current fabric to the newest, from these nodes (port GUIDs), and
    /// every endport as a source and a destination (of the current
    /// fabric if none changed); then [`Watch::handle_checked`].
    Check {
        /// The nodes whose tables changed and that hold the computed ones.
        nodes: Vec<u64>,
        /// Which read of the event this is (1 for the first): a sample
        /// drawn again differs.
        read: u32,
    },
    /// Push these nodes their tables from the newest fabric (the current
    /// one if none was read), under the lease; then
    /// [`Watch::handle_pushed`].
    Push(Plan),
    /// Renew every node's lease for `seconds` (0 ends it); then
    /// [`Watch::handle_renewed`].
    Renew {
        /// Each node's GID and LID.
        nodes: Vec<(Gid, u16)>,
        /// The lease.
        seconds: u16,
        /// The master swept: each node forgets the QoS answers it kept
        /// from it (`load_flags::FORGET_QOS`).
        forget_qos: bool,
    },
    /// An event is over (the newest fabric read, if any, is now the
    /// current one): its report, to print.
    Told(Box<EventReport>),
    /// The watch is over: every lease was ended.
    Ended {
        /// Events looked into.
        events: u64,
        /// Nodes that took the end of their lease.
        released: usize,
        /// Nodes kept.
        nodes: usize,
        /// The distributor that took over, if this watch was fenced off
        /// (a node's lease was another's): it stands by again.
        fenced_by: Option<u16>,
    },
}

/// What a read of the description found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Whether the description, or OpenSM's files, differ from what the
    /// current fabric was computed from.
    pub changed: bool,
    /// Every port of the fabric read (the current one's if unchanged).
    pub ports: Vec<FabricPort>,
    /// What reading it cost the master.
    pub served: Served,
    /// What changed in OpenSM's files, a line each.
    pub config_changes: Vec<String>,
    /// Some kind of the tables of the fabric read (the current one's if
    /// unchanged) comes from the master: the check did not prove it.
    pub from_master: bool,
}

/// What a check of changed pairs found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Pairs checked.
    pub pairs: usize,
    /// Those whose computed records differ from the master's.
    pub differed: usize,
    /// PathRecords the master gave for it.
    pub records: u64,
}

/// How a round of renewals went.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Renewed {
    /// Nodes that took the renewal.
    pub taken: Vec<Gid>,
    /// Nodes that did not answer.
    pub unanswered: Vec<Gid>,
    /// Nodes that refused it, and their answer's status.
    pub refused: Vec<(Gid, MadStatus)>,
    /// Nodes whose lease another distributor holds, and its LID.
    pub held: Vec<(Gid, u16)>,
}

impl Renewed {
    /// Counts how `node` answered a renewal.
    pub fn add(&mut self, node: Gid, answer: LeaseAnswer) {
        match answer {
            LeaseAnswer::Taken => self.taken.push(node),
            LeaseAnswer::HeldBy(owner) => self.held.push((node, owner)),
            LeaseAnswer::Refused(status) => self.refused.push((node, status)),
            LeaseAnswer::Unanswered => self.unanswered.push(node),
        }
    }
}

/// Where an event is.
#[derive(Debug)]
enum Step {
    /// Waiting for the read.
    Reading,
    /// Waiting for the probe of these ports new to the watch.
    Probing { asked: Vec<FabricPort> },
    /// Waiting for the digests.
    Digesting,
    /// Waiting for the check of `plan`.
    Checking { plan: Plan },
    /// Waiting for the check that ends a sweep that changed nothing.
    Verifying,
    /// The check differed: reading again at this time.
    Rereading { at: Instant },
    /// Waiting for the push of `plan`.
    Pushing,
}

/// An event under way.
#[derive(Debug)]
struct Event {
    report: EventReport,
    started: Instant,
    /// Ports new to the watch are asked about even if nothing changed.
    probe: bool,
    /// An interval's event: the next interval is counted from its end.
    interval: bool,
    /// An event after a sweep of the master (a notice, or its activity).
    sweep: bool,
    /// The description read last differs from the current fabric's.
    changed: bool,
    /// Some kind of table comes from the master (the last read said).
    from_master: bool,
    /// The digests of the newest fabric read, once computed.
    digests: Option<BTreeMap<Gid, u64>>,
    step: Step,
}

/// The notices waiting for the master's sweep to settle.
#[derive(Debug)]
struct Settling {
    /// When they are looked into.
    at: Instant,
    /// What they said.
    causes: Vec<Cause>,
    /// A port came into service: ports are probed.
    probe: bool,
}

/// What the watch is doing.
#[derive(Debug)]
enum Phase {
    /// Waiting for a notice or a timer.
    Idle,
    Event(Box<Event>),
    /// Waiting for the renewals (`ending`: of 0 s, the watch's end).
    Renewing {
        ending: bool,
    },
    Ended,
}

/// The watch: holdings, timers and the event under way.
#[derive(Debug)]
pub struct Watch {
    setup: WatchSetup,
    holdings: Holdings,
    /// Each kept node's tables' digest in the current fabric.
    digests: BTreeMap<Gid, u64>,
    /// Ports probed that did not run local-sa.
    others: BTreeSet<Gid>,
    counters: WatchCounters,
    events: u64,
    next_interval: Instant,
    intervals: u64,
    settling: Option<Settling>,
    /// When the first of the settling notices came: a link that flaps for
    /// ever does not put the event off for longer than an interval.
    first_notice: Instant,
    phase: Phase,
    /// Nodes not known answered a renewal: an event pushes them.
    unknown_answered: bool,
    effects: VecDeque<Effect>,
    /// The next poll of the master's activity, unless one is out.
    next_poll: Option<Instant>,
    /// What the polls saw of the master's activity.
    activity: MasterActivity,
    /// The next round of lease renewals.
    next_renewal: Instant,
    /// The distributor that fenced this watch off, once one did.
    fenced_by: Option<u16>,
    /// The next round of renewals tells the nodes to forget their QoS
    /// answers (the master swept).
    forget_qos: bool,
}

impl Watch {
    /// A watch from `now` of the nodes `holdings` (with their tables'
    /// `digests` in the current fabric); `others` are ports known not to
    /// run local-sa.
    pub fn new(
        setup: WatchSetup,
        holdings: Holdings,
        digests: BTreeMap<Gid, u64>,
        others: BTreeSet<Gid>,
        now: Instant,
    ) -> Self {
        let next_poll = (setup.activity_poll > Duration::ZERO).then(|| now + setup.activity_poll);
        Self {
            next_interval: now + setup.interval,
            next_renewal: now + setup.renew,
            setup,
            holdings,
            digests,
            others,
            counters: WatchCounters::default(),
            events: 0,
            intervals: 0,
            settling: None,
            first_notice: now,
            phase: Phase::Idle,
            unknown_answered: false,
            effects: VecDeque::new(),
            next_poll,
            activity: MasterActivity::default(),
            fenced_by: None,
            forget_qos: false,
        }
    }

    /// The watch with what was learnt of the master's activity before it
    /// (while standing by): a heavy sweep right after it starts is told
    /// from the light ones.
    pub fn with_activity(mut self, learnt: MasterActivity) -> Self {
        self.activity = learnt;
        self
    }

    /// What the polls learnt of the master's activity.
    pub fn activity(&self) -> &MasterActivity {
        &self.activity
    }

    /// The counters, with the gauges as they are now.
    pub fn counters(&self) -> WatchCounters {
        WatchCounters {
            nodes: self.holdings.len() as u64,
            nodes_unknown: self.holdings.unknown() as u64,
            ..self.counters
        }
    }

    /// When the interval's next read is due.
    pub fn next_interval(&self) -> Instant {
        self.next_interval
    }

    /// The nodes kept and what they hold.
    pub fn holdings(&self) -> &Holdings {
        &self.holdings
    }

    /// The distributor that fenced this watch off, if one did (the
    /// watch then ends).
    pub fn fenced_by(&self) -> Option<u16> {
        self.fenced_by
    }

    /// Whether the watch is over.
    pub fn is_ended(&self) -> bool {
        matches!(self.phase, Phase::Ended)
    }

    /// A notice came at `now`; a port that came into service has the
    /// ports probed.
    pub fn handle_notice(&mut self, now: Instant, notice: TrapDetails) {
        self.counters.notices += 1;
        self.activity.notice();
        let port_came = matches!(notice, TrapDetails::GidInService { .. });
        self.settle_on(now, Cause::Notice(notice), port_came);
    }

    /// Something changed at `now` (`cause`): it is looked into once
    /// `settle` has passed with nothing else, never later than an
    /// interval after the first.
    fn settle_on(&mut self, now: Instant, cause: Cause, port_came: bool) {
        if matches!(self.phase, Phase::Ended) {
            return;
        }
        if self.settling.is_none() {
            self.first_notice = now;
        }
        let until = (now + self.setup.settle).min(self.first_notice + self.setup.interval);
        let s = self.settling.get_or_insert_with(|| Settling {
            at: until,
            causes: Vec::new(),
            probe: false,
        });
        s.at = until;
        s.probe |= port_came;
        s.causes.push(cause);
    }

    /// When [`Watch::poll_effect`] has something to give if nothing else
    /// comes: a settled notice, the interval, a read again; `None` while
    /// the driver carries out an effect.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Idle => {
                let due = (self.settling.as_ref())
                    .map_or(self.next_interval, |s| s.at.min(self.next_interval))
                    .min(self.next_renewal);
                Some(self.next_poll.map_or(due, |p| p.min(due)))
            }
            Phase::Event(e) => match e.step {
                Step::Rereading { at } => Some(at),
                _ => None,
            },
            Phase::Renewing { .. } | Phase::Ended => None,
        }
    }

    /// What the driver is to do now, if anything.
    pub fn poll_effect(&mut self, now: Instant) -> Option<Effect> {
        if let Some(e) = self.effects.pop_front() {
            return Some(e);
        }
        match &mut self.phase {
            Phase::Idle => {
                self.start_due(now);
                if self.effects.is_empty() && self.next_poll.is_some_and(|p| p <= now) {
                    // Out until its answer (or failure) comes.
                    self.next_poll = None;
                    self.counters.activity_polls += 1;
                    self.effects.push_back(Effect::PollActivity);
                }
            }
            Phase::Event(e) => {
                if let Step::Rereading { at } = e.step
                    && at <= now
                {
                    e.step = Step::Reading;
                    e.report.reads += 1;
                    self.effects.push_back(Effect::Read { sweep: e.sweep });
                }
            }
            Phase::Renewing { .. } | Phase::Ended => {}
        }
        self.effects.pop_front()
    }

    /// Starts what is due at `now` while idle: the renewals (first: a
    /// node not renewed in time takes the watch as gone), nodes not known
    /// that answered again, settled notices, the interval.
    fn start_due(&mut self, now: Instant) {
        if self.next_renewal <= now {
            self.phase = Phase::Renewing { ending: false };
            self.effects.push_back(Effect::Renew {
                nodes: self.holdings.nodes().collect(),
                seconds: self.setup.lease,
                forget_qos: std::mem::take(&mut self.forget_qos),
            });
            return;
        }
        if std::mem::take(&mut self.unknown_answered) {
            self.begin_without_reading(now, "nodes whose tables are not known answer");
            return;
        }
        if self.settling.as_ref().is_some_and(|s| s.at <= now) {
            let s = self.settling.take().unwrap_or_else(|| unreachable!());
            self.begin(now, cause_of(&s.causes), (s.probe, false));
            return;
        }
        if self.next_interval <= now {
            self.intervals += 1;
            self.next_interval = now + self.setup.interval;
            let probe = self.intervals.is_multiple_of(PROBE_EVERY);
            self.begin(now, "interval".into(), (probe, true));
        }
    }

    /// Starts an event that reads the description (`probe`: ports new
    /// to the watch are asked about; `interval`: the interval's event,
    /// else one after a sweep of the master).
    fn begin(&mut self, now: Instant, cause: String, (probe, interval): (bool, bool)) {
        self.events += 1;
        self.phase = Phase::Event(Box::new(Event {
            report: EventReport {
                number: self.events,
                cause,
                reads: 1,
                ..EventReport::default()
            },
            started: now,
            probe,
            interval,
            sweep: !interval,
            changed: false,
            from_master: false,
            digests: None,
            step: Step::Reading,
        }));
        self.effects.push_back(Effect::Read { sweep: !interval });
    }

    /// Starts an event that pushes the nodes not known their current
    /// tables, reading nothing.
    fn begin_without_reading(&mut self, now: Instant, cause: &str) {
        self.events += 1;
        let plan = self.holdings.plan(&self.digests);
        let report = EventReport {
            number: self.events,
            cause: cause.into(),
            description_changed: true,
            changed_nodes: plan.push.len(),
            ..EventReport::default()
        };
        self.phase = Phase::Event(Box::new(Event {
            report,
            started: now,
            probe: false,
            interval: false,
            sweep: false,
            changed: false,
            from_master: false,
            digests: Some(self.digests.clone()),
            step: Step::Pushing,
        }));
        if plan.push.is_empty() {
            return self.end_event(now);
        }
        self.effects.push_back(Effect::Push(plan));
    }

    /// The event under way, if its step is `expected`.
    fn event_at(&mut self, expected: fn(&Step) -> bool) -> Option<&mut Event> {
        match &mut self.phase {
            Phase::Event(e) if expected(&e.step) => Some(e),
            _ => None,
        }
    }

    /// The master at `sm_lid` said at `now` that its ActCount is `count`
    /// (`None`: it did not answer): a heavy sweep no notice announced is
    /// looked into as a notice; the next poll one `activity_poll` on.
    pub fn handle_activity(&mut self, now: Instant, count: Option<(u16, u32)>) {
        if matches!(self.phase, Phase::Ended) || self.setup.activity_poll.is_zero() {
            return;
        }
        self.next_poll = Some(now + self.setup.activity_poll);
        let Some((sm_lid, count)) = count else {
            return;
        };
        if let Activity::Swept { rose, usual } = self.activity.counted(sm_lid, count, now) {
            self.counters.sweeps_seen += 1;
            self.settle_on(now, Cause::Sweep { rose, usual }, false);
        }
    }

    /// The description was read at `now` (unchanged: the current fabric
    /// stays the newest).
    pub fn handle_read(&mut self, now: Instant, read: Read) {
        if self.event_at(|s| matches!(s, Step::Reading)).is_none() {
            return;
        }
        let gone = if read.changed {
            let present: BTreeSet<Gid> = read.ports.iter().map(|p| p.gid).collect();
            self.holdings.retain_present(|g| present.contains(g))
        } else {
            0
        };
        let Phase::Event(e) = &mut self.phase else {
            return;
        };
        add(&mut e.report.read, read.served);
        e.changed = read.changed;
        // A description that changed is a sweep the master made, whether
        // or not the watch heard of it.
        e.sweep |= read.changed;
        e.from_master = read.from_master;
        e.report.description_changed |= read.changed;
        e.report.config_changes.extend(read.config_changes);
        e.report.gone_nodes += gone;
        // A change asks the ports new to the watch; the tenth interval's
        // probe, and a port come into service, every port not held: a
        // local-sa started (or a node rebooted) since it was last asked is
        // found.
        let again = e.probe;
        let asked: Vec<FabricPort> = if e.probe || read.changed {
            read.ports
                .into_iter()
                .filter(|p| p.lid != self.setup.master_lid)
                .filter(|p| !self.holdings.contains(&p.gid))
                .filter(|p| again || !self.others.contains(&p.gid))
                .filter(|p| self.setup.shard.is_none_or(|s| s.owns(p.gid.guid())))
                .collect()
        } else {
            Vec::new()
        };
        if asked.is_empty() {
            return self.after_probe(now);
        }
        self.effects.push_back(Effect::Probe(asked.clone()));
        e.step = Step::Probing { asked };
    }

    /// Of the ports probed, `found` run local-sa (the others do not).
    pub fn handle_probed(&mut self, now: Instant, found: &[FabricPort]) {
        let Some(e) = self.event_at(|s| matches!(s, Step::Probing { .. })) else {
            return;
        };
        let Step::Probing { asked } = std::mem::replace(&mut e.step, Step::Digesting) else {
            return;
        };
        let found: Vec<FabricPort> = asked
            .iter()
            .filter(|p| found.contains(p))
            .copied()
            .collect();
        e.report.new_nodes += found.len();
        for p in asked {
            if found.contains(&p) {
                self.others.remove(&p.gid);
                self.holdings.insert(p.gid, p.lid, Holding::Unknown);
            } else {
                self.others.insert(p.gid);
            }
        }
        self.after_probe(now);
    }

    /// After the read (and the probe): quiet, the check that ends a
    /// sweep that changed nothing, or the digests.
    fn after_probe(&mut self, now: Instant) {
        let Phase::Event(e) = &mut self.phase else {
            return;
        };
        if !e.changed && e.report.new_nodes == 0 {
            if !e.sweep {
                return self.end_event(now);
            }
            e.step = Step::Verifying;
            let read = e.report.reads;
            self.effects.push_back(Effect::Check {
                nodes: Vec::new(),
                read,
            });
            return;
        }
        // Nothing changed but who runs local-sa: the new nodes get the
        // current tables.
        e.report.description_changed = true;
        e.step = Step::Digesting;
        let nodes = self.holdings.nodes().map(|(g, _)| g).collect();
        self.effects.push_back(Effect::Digests(nodes));
    }

    /// Each kept node's tables' digest in the newest fabric.
    pub fn handle_digests(&mut self, now: Instant, digests: BTreeMap<Gid, u64>) {
        let Some(e) = self.event_at(|s| matches!(s, Step::Digesting)) else {
            return;
        };
        let changed = e.changed;
        // After a sweep, tables the master gave may have changed with it.
        let plan = if e.sweep && e.from_master {
            self.holdings.plan_whole(&digests)
        } else {
            self.holdings.plan(&digests)
        };
        let Phase::Event(e) = &mut self.phase else {
            return;
        };
        e.report.changed_nodes = plan.push.len();
        if plan.push.is_empty() {
            // Nothing to push: the newest fabric's digests are the
            // current ones.
            self.digests = digests;
            return self.end_event(now);
        }
        e.digests = Some(digests);
        if !changed {
            e.step = Step::Pushing;
            self.effects.push_back(Effect::Push(plan));
            return;
        }
        let nodes = plan.delta.iter().map(Gid::guid).collect();
        let read = e.report.reads;
        e.step = Step::Checking { plan };
        self.effects.push_back(Effect::Check { nodes, read });
    }

    /// What the check of changed pairs (or, after a sweep that changed
    /// nothing, of every endport) found.
    pub fn handle_checked(&mut self, now: Instant, checked: CheckOutcome) {
        let settle = self.setup.settle;
        let Some(e) = self.event_at(|s| matches!(s, Step::Checking { .. } | Step::Verifying))
        else {
            return;
        };
        e.report.checked += checked.pairs;
        e.report.differed = checked.differed;
        e.report.check_records += checked.records;
        if checked.differed > 0 && e.report.reads < READS {
            // The master's sweep may not be done: read again.
            e.digests = None;
            e.step = Step::Rereading { at: now + settle };
            return;
        }
        match std::mem::replace(&mut e.step, Step::Pushing) {
            Step::Checking { plan } => self.effects.push_back(Effect::Push(plan)),
            // A sweep that changed nothing local-sa reads: a difference
            // that stays is the master answering what the engine cannot
            // compute (the nodes' tables may be wrong: the kind that
            // differs comes from the master now); tables the master gave
            // may have changed with its sweep.
            _ if checked.differed > 0 || e.from_master => {
                e.report.description_changed |= checked.differed > 0;
                self.push_whole(now);
            }
            _ => self.end_event(now),
        }
    }

    /// Pushes every node its tables whole, from the current fabric.
    fn push_whole(&mut self, now: Instant) {
        let plan = self.holdings.plan_whole(&self.digests);
        let Phase::Event(e) = &mut self.phase else {
            return;
        };
        if plan.push.is_empty() {
            return self.end_event(now);
        }
        e.report.changed_nodes = plan.push.len();
        e.digests = Some(self.digests.clone());
        e.step = Step::Pushing;
        self.effects.push_back(Effect::Push(plan));
    }

    /// How the push went: the fill's reports and tally, and whether its
    /// default tables were computed (`Err`: why they came from the
    /// master).
    pub fn handle_pushed(
        &mut self,
        now: Instant,
        (reports, tally): (Vec<NodeReport>, Tally),
        computed: Result<(), Untrusted>,
    ) {
        let Some(e) = self.event_at(|s| matches!(s, Step::Pushing)) else {
            return;
        };
        e.report.fallback = computed.clone().err();
        e.report.pushed = Pushed::of(&reports, &tally);
        e.report.nodes = reports
            .iter()
            .filter(|n| n.took_changes())
            .map(|n| {
                let o = &n.outcome;
                (
                    n.lid,
                    o.stored + o.partition_stored,
                    o.deleted + o.partition_deleted,
                )
            })
            .collect();
        e.report.failures = reports
            .iter()
            .filter_map(NodeReport::failure_line)
            .collect();
        let digests = e.digests.take().unwrap_or_default();
        self.holdings.pushed(
            reports.iter().map(|n| (n.gid, n.outcome.done)),
            &digests,
            computed.is_ok(),
        );
        self.digests = digests;
        self.end_event(now);
    }

    /// The step under way failed (`why`: the master did not answer, or
    /// its description read mid-sweep could not be used). Nothing is
    /// pushed, nothing is lost; the next event reads again.
    pub fn handle_failed(&mut self, now: Instant, why: &str) {
        let Phase::Event(e) = &mut self.phase else {
            return;
        };
        e.report.failures.push(why.to_owned());
        e.digests = None;
        self.end_event(now);
    }

    /// Ends the event under way: its report is told.
    fn end_event(&mut self, now: Instant) {
        let Phase::Event(e) = std::mem::replace(&mut self.phase, Phase::Idle) else {
            return;
        };
        if e.interval {
            self.next_interval = now + self.setup.interval;
        }
        if e.sweep {
            // Renewals at once that tell every node to forget the QoS
            // answers it kept from the master.
            self.forget_qos = true;
            self.next_renewal = now;
        }
        let mut report = e.report;
        report.took = now.saturating_duration_since(e.started);
        self.counters.count(&report);
        self.effects.push_back(Effect::Told(Box::new(report)));
    }

    /// How a round of renewals went. The referee's lease held by another
    /// distributor fences this watch off: another took over while it was
    /// frozen or cut off, so it ends its leases where it still has them
    /// and stops, to stand by. Another node held by another is not
    /// enough: a node cut off with a watch that was (its own node, say)
    /// never saw that watch silent, and keeps its lease until that watch,
    /// fenced by the referee in turn, ends it; a later renewal takes it.
    /// Without a referee, any node held by another fences.
    pub fn handle_renewed(&mut self, now: Instant, renewed: &Renewed) {
        let Phase::Renewing { ending } = self.phase else {
            return;
        };
        if ending {
            self.phase = Phase::Ended;
            self.effects.push_back(Effect::Ended {
                events: self.events,
                released: renewed.taken.len(),
                nodes: self.holdings.len(),
                fenced_by: self.fenced_by,
            });
            return;
        }
        self.counters.renewals += renewed.taken.len() as u64;
        self.counters.renewals_unanswered += renewed.unanswered.len() as u64;
        self.counters.renewals_refused += renewed.refused.len() as u64;
        self.counters.renewals_fenced += renewed.held.len() as u64;
        let referee = self.setup.referee;
        let lid_of = |gid: &Gid| {
            self.holdings
                .nodes()
                .find(|(g, _)| g == gid)
                .map(|(_, l)| l)
        };
        let fencing =
            (renewed.held.iter()).find(|(gid, _)| referee.is_none() || lid_of(gid) == referee);
        if let Some((_, owner)) = fencing {
            self.fenced_by = Some(*owner);
            self.phase = Phase::Idle;
            return self.handle_stop();
        }
        for gid in &renewed.unanswered {
            self.holdings.unreached(gid);
        }
        self.unknown_answered = self.holdings.unknown() > renewed.unanswered.len();
        self.next_renewal = now + self.setup.renew;
        self.phase = Phase::Idle;
    }

    /// The watch is to end (a signal, or the driver's failure): every
    /// node's lease ends, so that no node waits it out.
    pub fn handle_stop(&mut self) {
        if matches!(self.phase, Phase::Ended | Phase::Renewing { ending: true }) {
            return;
        }
        self.effects.clear();
        self.phase = Phase::Renewing { ending: true };
        self.effects.push_back(Effect::Renew {
            nodes: self.holdings.nodes().collect(),
            seconds: 0,
            forget_qos: false,
        });
    }
}

/// What made the watch look: a notice, or a sweep its polls saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A notice from the master.
    Notice(TrapDetails),
    /// A heavy sweep of the master no notice announced: its ActCount
    /// rose by `rose`, its light sweeps by about `usual`.
    Sweep {
        /// The count's rise.
        rose: u32,
        /// The light sweeps' rise.
        usual: u32,
    },
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Notice(TrapDetails::LinkStateChange { lid }) => {
                write!(f, "trap 128 from LID {lid}")
            }
            Self::Notice(TrapDetails::GidInService { gid }) => write!(f, "trap 64 for {gid}"),
            Self::Notice(TrapDetails::GidOutOfService { gid }) => write!(f, "trap 65 for {gid}"),
            Self::Notice(other) => match other.trap_number() {
                Some(t) => write!(f, "trap {}", t.0),
                None => f.write_str("a notice"),
            },
            Self::Sweep { rose, usual } => write!(
                f,
                "a heavy sweep of the master no notice announced (its ActCount rose by {rose}, \
                 light sweeps about {usual})"
            ),
        }
    }
}

/// An event's cause: the notices that led to it.
fn cause_of(causes: &[Cause]) -> String {
    match causes {
        [] => "notices".into(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} and {} more notices", rest.len()),
    }
}

/// Adds `served` to `total`.
fn add(total: &mut Served, served: Served) {
    total.queries += served.queries;
    total.records += served.records;
    total.bytes += served.bytes;
}
