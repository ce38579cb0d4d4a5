//! `lsaquery --distribute --compute --watch` after its fill: the shipped
//! watch ([`local_sa_distributor::watch::Watch`]) deciding and its
//! shipped driver ([`WatchDriver`]) carrying out its renewals, its polls
//! of the master's activity, its pushes (the fill machine) and the
//! queries at the master, over the virtual fabric; what lsaquery computes
//! and reads is modelled here:
//!
//! * a read: the GetTables of every record type of the description
//!   (which the model master charges for the model's fabric), at most
//!   `MASTER_WINDOW` at once; the description differs once a reroute was
//!   told;
//! * the digests: each node's tables computed again, in virtual time at
//!   [`ENGINE_PATHS_PER_SECOND`]; a node whose paths the reroute moved
//!   has new ones;
//! * the check: the shipped [`SampleCheck`] of changed pairs, spread
//!   over the changed nodes, and of pairs that make every node a source
//!   and a destination — after a sweep that changed nothing, those alone
//!   — compared with the model's records of the fabric read
//!   ([`crate::check`]);
//! * a push: the shipped fill machine over the nodes to push, each
//!   node's new table against the one it holds, so that it gets only the
//!   differences (a Set of the changed records, no REPLACE_SOURCES) under
//!   the lease, `window` nodes at a time;
//! * renewals: one Set with LEASE and RENEW_ONLY per node, `window` at a
//!   time (with FORGET_QOS after a sweep).
//!
//! It hears of a reroute as the notice on the master's node (trap 128)
//! and settles [`SETTLE`] before it reads; every [`INTERVAL`] it reads
//! and renews.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::Address;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::master_activity::MasterActivity;
use local_sa_distributor::computed::Served;
use local_sa_distributor::computed::description::DescriptionRead;
use local_sa_distributor::computed::sample_check::SampleCheck;
use local_sa_distributor::fill::Distribution;
use local_sa_distributor::fill::ports::FabricPort;
use local_sa_distributor::fill::tally::Tally;
use local_sa_distributor::sends::Sends;
use local_sa_distributor::sent_tables::SentTables;
use local_sa_distributor::watch::driver::{Busy, DriverSetup, Task, WatchDriver};
use local_sa_distributor::watch::{
    CheckOutcome, Effect, Holding, Holdings, Plan, Read, Watch, WatchSetup,
};
use mad_codec::{Gid, PathRecord, TrapDetails};

use crate::check::ModelPaths;
use crate::fixture::{gid, record as path};
use crate::master::rerouted_record;
use crate::requests::{MASTER_WINDOW, Requests, SM_KEY, fill_setup};

/// Between re-reads of the description and lease renewals (the
/// watch's `--watch-interval` default).
pub(crate) const INTERVAL: Duration = Duration::from_secs(60);

/// The lease every push and renewal gives (three intervals and the
/// settle time, the default).
pub(crate) const LEASE: u16 = 185;

/// What the watch's pushes and renewals say: its lease, renewed each
/// interval.
pub(crate) const TERMS: LeaseTerms = LeaseTerms {
    seconds: LEASE,
    renew_every: INTERVAL.as_secs() as u16,
};

/// Between polls of the master's activity (`--watch-poll`).
const ACTIVITY_POLL: Duration = Duration::from_secs(2);

/// A probe of a port new to the watch (lsaquery's `--timeout`).
const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);

/// After a notice, before the description is read (`--settle`).
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// Changed pairs checked against the master (`--watch-check`).
const CHECK: usize = 64;

/// The engine's rate on the distributor's cores: 25 M paths a second a
/// core (BENCHMARKS.md), four cores.
const ENGINE_PATHS_PER_SECOND: f64 = 100e6;

/// What the driver's queries at the master are for.
enum Asked {
    /// The shipped read of the description, a batch at a time.
    Read(Box<DescriptionRead>),
    /// The shipped check of the fabric read, a batch at a time.
    Check(Box<SampleCheck>),
}

/// The watch at `lid`.
pub(crate) struct Watcher {
    pub(crate) lid: u16,
    hosts: u16,
    master: Address,
    window: usize,
    driver: WatchDriver,
    requests: Requests<u64>,
    /// The queries at the master out, if any.
    asked: Option<Asked>,
    /// Computing the digests of these nodes until this time.
    computing: Option<(Instant, Vec<Gid>)>,
    /// The reroute's changed pairs, by source node, once told; whether
    /// the nodes were computed from the fabric after it, and whether the
    /// last read found it.
    rerouted: BTreeMap<u16, BTreeSet<u16>>,
    current_rerouted: bool,
    newest_rerouted: bool,
    /// Transfers tried again.
    retries: u64,
    /// Pairs its checks found the master's records of unlike the model's.
    differed: usize,
}

impl Watcher {
    /// A watch at `lid`, starting at `now` with its first interval, of
    /// nodes `1..=hosts` filled with their tables.
    pub(crate) fn new(lid: u16, master: u16, hosts: u16, window: usize, now: Instant) -> Self {
        let mut holdings = Holdings::default();
        for n in 1..=hosts {
            holdings.insert(gid(n), n, Holding::Computed(0));
        }
        let digests = (1..=hosts).map(|n| (gid(n), 0)).collect();
        let setup = WatchSetup {
            interval: INTERVAL,
            settle: SETTLE,
            lease: LEASE,
            master_lid: master,
            shard: None,
            activity_poll: ACTIVITY_POLL,
            // Renewals with each interval, as the storm has always modelled.
            renew: INTERVAL,
            // One watch: nothing to referee between watches.
            referee: None,
        };
        let watch = Watch::new(setup, holdings, digests, BTreeSet::new(), now).with_activity(
            MasterActivity::default().with_switches(crate::master::switches(hosts) as usize),
        );
        let window = window.max(1);
        let master = Address::gsi(master, 0);
        let driver = WatchDriver::new(
            watch,
            DriverSetup {
                master,
                sm_sl: 0,
                sm_key: SM_KEY,
                window,
                master_window: MASTER_WINDOW,
                probe_timeout: PROBE_TIMEOUT,
                terms: TERMS,
            },
        );
        Self {
            lid,
            hosts,
            master,
            window,
            driver,
            requests: Requests::new(),
            asked: None,
            computing: None,
            rerouted: BTreeMap::new(),
            current_rerouted: false,
            newest_rerouted: false,
            retries: 0,
            differed: 0,
        }
    }

    /// A reroute changed these records (the new ones, by source node):
    /// the watch hears of it now (`heard`), as trap 128 on the master's
    /// node, or only through the master's activity.
    pub(crate) fn rerouted(
        &mut self,
        now: Instant,
        changes: BTreeMap<u16, Vec<PathRecord>>,
        heard: bool,
    ) {
        self.rerouted = changes
            .into_iter()
            .map(|(s, records)| (s, records.iter().map(PathRecord::dlid).collect()))
            .collect();
        if heard {
            self.driver.watch_mut().handle_notice(
                now,
                TrapDetails::LinkStateChange {
                    lid: self.hosts + 2,
                },
            );
        }
    }

    /// When its interval's next read is due.
    pub(crate) fn next_interval(&self) -> Instant {
        self.driver.watch().next_interval()
    }

    /// Whether it has nothing under way.
    pub(crate) fn is_done(&self) -> bool {
        self.driver.is_idle() && self.computing.is_none()
    }

    /// Transfers tried again.
    pub(crate) fn retries(&self) -> u64 {
        self.retries
    }

    /// Pairs its checks found the master's records of unlike the model's.
    pub(crate) fn differed(&self) -> usize {
        self.differed
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        [
            self.driver.poll_timeout(),
            self.requests.next_event(),
            self.computing.as_ref().map(|(until, _)| *until),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Does what is due; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        for c in self.requests.timeouts(now) {
            self.driver.handle_end(now, c.token, c.outcome);
        }
        self.step(now);
        self.requests.drain()
    }

    /// A MAD from `from`: an answer of the master, or a node's ACK or
    /// answer.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Vec<(Address, Bytes)> {
        if let Some(c) = self.requests.receive(now, from, mad) {
            self.driver.handle_end(now, c.token, c.outcome);
        }
        self.poll(now)
    }

    /// Carries out the driver's tasks until it waits, and makes its sends.
    fn step(&mut self, now: Instant) {
        loop {
            if self
                .computing
                .as_ref()
                .is_some_and(|(until, _)| *until > now)
            {
                break;
            }
            if let Some((_, nodes)) = self.computing.take() {
                let digests = nodes.iter().map(|g| (*g, self.digest(*g))).collect();
                self.driver.watch_mut().handle_digests(now, digests);
            }
            let Some(task) = self.driver.poll_task(now) else {
                break;
            };
            self.carry_out(now, task);
        }
        self.requests.sends(now, &mut self.driver, |id| id);
    }

    /// Carries out one task of the driver's: what lsaquery reads and
    /// computes, modelled.
    fn carry_out(&mut self, now: Instant, task: Task) {
        // The driver gives an effect only when it carries out nothing, so
        // it takes the asks and the push that follow one.
        let started = match task {
            Task::Effect(Effect::Read { .. }) => self.reading(
                now,
                Box::new(DescriptionRead::new(SM_KEY, self.lid.max(self.master.lid))),
            ),
            Task::Effect(Effect::Digests(nodes)) => {
                let paths = f64::from(self.hosts) * nodes.len() as f64;
                let until = now + Duration::from_secs_f64(paths / ENGINE_PATHS_PER_SECOND);
                self.computing = Some((until, nodes));
                Ok(())
            }
            Task::Effect(Effect::Check { nodes, .. }) => {
                let check = self.sample_check(!nodes.is_empty());
                self.checking(now, Box::new(check))
            }
            Task::Effect(Effect::Push(plan)) => self.driver.push(now, self.push(&plan)),
            Task::Answered(ends) => match self.asked.take() {
                Some(Asked::Read(mut read)) => match read.handle_batch(ends) {
                    Ok(()) => self.reading(now, read),
                    Err(e) => {
                        self.driver.watch_mut().handle_failed(now, &e.to_string());
                        Ok(())
                    }
                },
                Some(Asked::Check(mut check)) => match check.handle_batch(&self.computed(), ends) {
                    Ok(()) => self.checking(now, check),
                    Err(e) => {
                        self.driver.watch_mut().handle_failed(now, &e.to_string());
                        Ok(())
                    }
                },
                None => Ok(()),
            },
            Task::Pushed(fill) => {
                self.current_rerouted = self.newest_rerouted;
                self.retries += fill.tally().retried;
                (self.driver.watch_mut()).handle_pushed(now, fill.finish(), Ok(()));
                Ok(())
            }
            Task::Effect(_) | Task::Renewed(_) | Task::Probed(..) | Task::Polled(_) => Ok(()),
        };
        debug_assert!(started.is_ok(), "the driver took no step while busy");
    }

    /// Asks the master the read's next batch; the read is over once it
    /// has none.
    fn reading(&mut self, now: Instant, mut read: Box<DescriptionRead>) -> Result<(), Busy> {
        match read.poll_batch() {
            Some(batch) => {
                self.asked = Some(Asked::Read(read));
                self.driver.ask(now, batch)
            }
            None => {
                self.read(now, read.finish().served);
                Ok(())
            }
        }
    }

    /// Asks the master the check's next batch; once it has none, the
    /// watch is told what it found.
    fn checking(&mut self, now: Instant, mut check: Box<SampleCheck>) -> Result<(), Busy> {
        match check.poll_batch(&self.computed()) {
            Some(batch) => {
                self.asked = Some(Asked::Check(check));
                self.driver.ask(now, batch)
            }
            None => {
                let (found, cost) = check.finish();
                let differed = found.mismatches.len() + found.uncomputable.len();
                self.differed += differed;
                let outcome = CheckOutcome {
                    pairs: found.pairs,
                    differed,
                    records: cost.records,
                };
                self.driver.watch_mut().handle_checked(now, outcome);
                Ok(())
            }
        }
    }

    /// The records the model's engine computed from the newest fabric
    /// read.
    fn computed(&self) -> ModelPaths<'_> {
        ModelPaths {
            hosts: self.hosts,
            moved: self.newest_rerouted.then_some(&self.rerouted),
        }
    }

    /// The description was read, costing the master `served`: the newest
    /// fabric is the rerouted one once a reroute was told (the model
    /// master serves no fabric the engine could read).
    fn read(&mut self, now: Instant, served: Served) {
        self.newest_rerouted = !self.rerouted.is_empty();
        let changed = self.newest_rerouted != self.current_rerouted;
        let ports = (1..=self.hosts)
            .map(|n| FabricPort {
                lid: n,
                gid: gid(n),
            })
            .collect();
        self.driver.watch_mut().handle_read(
            now,
            Read {
                changed,
                ports,
                served,
                config_changes: Vec::new(),
                from_master: false,
            },
        );
    }

    /// The digest of `node`'s tables in the newest fabric read: moved by
    /// the reroute, or not.
    fn digest(&self, node: Gid) -> u64 {
        let lid = (node.guid() & 0xFFFF) as u16;
        u64::from(self.newest_rerouted && self.rerouted.contains_key(&lid))
    }

    /// A check of up to [`CHECK`] changed pairs, spread over the nodes
    /// (if `changed`), and of pairs that make every node a source and a
    /// destination.
    fn sample_check(&self, changed: bool) -> SampleCheck {
        let pairs: Vec<(u16, u16)> = (self.rerouted.iter())
            .filter(|_| changed)
            .flat_map(|(s, dests)| dests.iter().map(move |d| (*s, *d)))
            .collect();
        let step = pairs.len().div_ceil(CHECK).max(1);
        let drawn = pairs.into_iter().step_by(step).take(CHECK).collect();
        crate::check::sample_check(self.hosts, drawn)
    }

    /// The fill machine over `plan`'s nodes: each node's table in the
    /// newest fabric, against the one it holds (the current fabric's) if
    /// the plan says it holds the computed tables.
    fn push(&self, plan: &Plan) -> Distribution {
        let setup = fill_setup(self.master, self.hosts, self.window, Some(TERMS));
        let hosts = self.hosts;
        let moved = std::rc::Rc::new(self.rerouted.clone());
        // A node's table in a fabric before the reroute, or after it.
        let table = move |after: bool| {
            let moved = moved.clone();
            move |node: Gid| {
                let s = (node.guid() & 0xFFFF) as u16;
                let moved = moved.get(&s).filter(|_| after);
                SentTables {
                    default: (1..=hosts)
                        .map(|d| match moved {
                            Some(dests) if dests.contains(&d) => rerouted_record(s, d),
                            _ => path(s, d),
                        })
                        .collect(),
                    partitions: Vec::new(),
                }
            }
        };
        let mut fill = Distribution::new(setup, plan.ports(), Tally::default(), None)
            .tables_by(table(self.newest_rerouted));
        let held = table(self.current_rerouted);
        let delta = plan.delta.clone();
        fill = fill.holding_by(move |node| delta.contains(&node).then(|| held(node)));
        fill
    }
}
