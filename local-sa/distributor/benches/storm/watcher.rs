//! `lsaquery --distribute --compute --watch` after its fill: the shipped
//! watch ([`local_sa_distributor::watch::Watch`]) deciding, its effects
//! carried out on the virtual fabric as lsaquery carries them out:
//!
//! * a read: the GetTables of every record type of the description
//!   (which the model master charges for the model's fabric), at most
//!   `MASTER_WINDOW` at once; the description differs once a reroute was
//!   told;
//! * the digests: each node's tables computed again, in virtual time at
//!   [`ENGINE_PATHS_PER_SECOND`]; a node whose paths the reroute moved
//!   has new ones;
//! * the check: Gets of changed pairs, spread over the changed nodes,
//!   and of pairs that make every node a source and a destination —
//!   after a sweep that changed nothing, those alone;
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

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::Address;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::master_activity::{self, MasterActivity};
use local_sa_core::requester::Completion;
use local_sa_distributor::computed::Served;
use local_sa_distributor::fill::Distribution;
use local_sa_distributor::fill::ports::FabricPort;
use local_sa_distributor::fill::tally::Tally;
use local_sa_distributor::sent_tables::SentTables;
use local_sa_distributor::watch::{
    CheckOutcome, Effect, Holding, Holdings, LeaseAnswer, Plan, Read, Renewed, Watch, WatchSetup,
    renewal,
};
use mad_codec::{AttributeId, Gid, Method, PathRecord, SaMadBuilder, TrapDetails};

use crate::distributor::SM_KEY;
use crate::fixture::{gid, record as path};
use crate::master::rerouted_record;
use crate::requests::{MASTER_WINDOW, Requests, fill_setup};

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

/// After a notice, before the description is read (`--settle`).
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// Changed pairs checked against the master (`--watch-check`).
const CHECK: usize = 64;

/// The engine's rate on the distributor's cores: 25 M paths a second a
/// core (BENCHMARKS.md), four cores.
const ENGINE_PATHS_PER_SECOND: f64 = 100e6;

/// The description's record types, each one GetTable.
const DESCRIPTION: [AttributeId; 6] = [
    AttributeId::NODE_RECORD,
    AttributeId::PORT_INFO_RECORD,
    AttributeId::LINK_RECORD,
    AttributeId::LINEAR_FORWARDING_TABLE_RECORD,
    AttributeId::PKEY_TABLE_RECORD,
    AttributeId::GUID_INFO_RECORD,
];

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// A query of a read or a check.
    Master,
    /// A renewal to the node at this LID.
    Renewal(u16),
    /// One of the push's sends, by its id.
    Push(u64),
    /// A poll of the master's activity.
    Activity,
}

/// The effect under way.
enum Doing {
    Nothing,
    /// A read's or a check's queries: those still to send, those out.
    Asking {
        left: VecDeque<Bytes>,
        out: usize,
        then: AfterAsking,
    },
    /// Computing the digests of these nodes until this time.
    Computing {
        until: Instant,
        nodes: Vec<Gid>,
    },
    Pushing(Box<Distribution>),
    /// A poll of the master's activity, out.
    Polling,
    /// Renewals: those still to send, those out, and how they went.
    Renewing {
        left: VecDeque<(Gid, u16)>,
        out: usize,
        seconds: u16,
        forget_qos: bool,
        renewed: Renewed,
    },
}

/// What answers to the queries lead to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterAsking {
    Read,
    Check { pairs: usize },
}

/// The watch at `lid`.
pub(crate) struct Watcher {
    pub(crate) lid: u16,
    hosts: u16,
    master: Address,
    window: usize,
    watch: Watch,
    requests: Requests<Ask>,
    doing: Doing,
    /// The reroute's changed pairs, by source node, once told; whether
    /// the nodes were computed from the fabric after it, and whether the
    /// last read found it.
    rerouted: BTreeMap<u16, BTreeSet<u16>>,
    current_rerouted: bool,
    newest_rerouted: bool,
    /// Transfers tried again.
    retries: u64,
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
        Self {
            lid,
            hosts,
            master: Address::gsi(master, 0),
            window: window.max(1),
            watch: Watch::new(setup, holdings, digests, BTreeSet::new(), now).with_activity(
                MasterActivity::default().with_switches(crate::master::switches(hosts) as usize),
            ),
            requests: Requests::new(),
            doing: Doing::Nothing,
            rerouted: BTreeMap::new(),
            current_rerouted: false,
            newest_rerouted: false,
            retries: 0,
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
            self.watch.handle_notice(
                now,
                TrapDetails::LinkStateChange {
                    lid: self.hosts + 2,
                },
            );
        }
    }

    /// When its interval's next read is due.
    pub(crate) fn next_interval(&self) -> Instant {
        self.watch.next_interval()
    }

    /// Whether it has nothing under way.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.doing, Doing::Nothing)
    }

    /// Transfers tried again.
    pub(crate) fn retries(&self) -> u64 {
        self.retries
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        let computing = match self.doing {
            Doing::Computing { until, .. } => Some(until),
            _ => None,
        };
        [
            self.watch.poll_timeout(),
            self.requests.next_event(),
            computing,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Does what is due; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        for c in self.requests.timeouts(now) {
            self.ended(now, c);
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
            self.ended(now, c);
        }
        self.poll(now)
    }

    /// A request ended: a query's, a renewal's or one of the push's.
    fn ended(&mut self, now: Instant, c: Completion<Ask>) {
        match (&mut self.doing, c.token) {
            (Doing::Asking { out, .. }, Ask::Master) => *out -= 1,
            (Doing::Renewing { out, renewed, .. }, Ask::Renewal(lid)) => {
                *out -= 1;
                renewed.add(gid(lid), LeaseAnswer::of(c.outcome.as_ref().ok()));
            }
            (Doing::Pushing(fill), Ask::Push(id)) => fill.handle_end(id, c.outcome),
            (Doing::Polling, Ask::Activity) => {
                self.doing = Doing::Nothing;
                let count = c.outcome.ok().as_ref().and_then(master_activity::act_count);
                self.watch
                    .handle_activity(now, count.map(|n| (self.master.lid, n)));
            }
            _ => {}
        }
    }

    /// Moves the effect under way on, and takes the watch's next ones.
    fn step(&mut self, now: Instant) {
        loop {
            match &mut self.doing {
                Doing::Asking { left, out, then } => {
                    while *out < MASTER_WINDOW
                        && let Some(q) = left.pop_front()
                    {
                        *out += 1;
                        self.requests.query(now, self.master, Ask::Master, &q);
                    }
                    if *out > 0 || !left.is_empty() {
                        return;
                    }
                    let then = *then;
                    self.doing = Doing::Nothing;
                    match then {
                        AfterAsking::Read => {
                            self.newest_rerouted = !self.rerouted.is_empty();
                            let changed = self.newest_rerouted != self.current_rerouted;
                            let ports = (1..=self.hosts)
                                .map(|n| FabricPort {
                                    lid: n,
                                    gid: gid(n),
                                })
                                .collect();
                            self.watch.handle_read(
                                now,
                                Read {
                                    changed,
                                    ports,
                                    served: Served::default(),
                                    config_changes: Vec::new(),
                                    from_master: false,
                                },
                            );
                        }
                        AfterAsking::Check { pairs } => self.watch.handle_checked(
                            now,
                            CheckOutcome {
                                pairs,
                                differed: 0,
                                records: pairs as u64,
                            },
                        ),
                    }
                }
                // Its answer (or time-out) ends it.
                Doing::Polling => return,
                Doing::Computing { until, .. } => {
                    if *until > now {
                        return;
                    }
                    let Doing::Computing { nodes, .. } =
                        std::mem::replace(&mut self.doing, Doing::Nothing)
                    else {
                        return;
                    };
                    let digests = nodes.iter().map(|g| (*g, self.digest(*g))).collect();
                    self.watch.handle_digests(now, digests);
                }
                Doing::Pushing(fill) => {
                    self.requests.fill_sends(now, fill, Ask::Push);
                    if !fill.is_done() {
                        return;
                    }
                    let Doing::Pushing(fill) = std::mem::replace(&mut self.doing, Doing::Nothing)
                    else {
                        return;
                    };
                    self.current_rerouted = self.newest_rerouted;
                    self.retries += fill.tally().retried;
                    self.watch.handle_pushed(now, fill.finish(), Ok(()));
                }
                Doing::Renewing {
                    left,
                    out,
                    seconds,
                    forget_qos,
                    renewed,
                } => {
                    while *out < self.window
                        && let Some((_, lid)) = left.pop_front()
                    {
                        *out += 1;
                        let to = Address::gsi(lid, 0);
                        self.requests.query(
                            now,
                            to,
                            Ask::Renewal(lid),
                            &renewal(
                                SM_KEY,
                                LeaseTerms {
                                    seconds: *seconds,
                                    ..TERMS
                                },
                                *forget_qos,
                            ),
                        );
                    }
                    if *out > 0 || !left.is_empty() {
                        return;
                    }
                    let renewed = std::mem::take(renewed);
                    self.doing = Doing::Nothing;
                    self.watch.handle_renewed(now, &renewed);
                }
                Doing::Nothing => {
                    let Some(effect) = self.watch.poll_effect(now) else {
                        return;
                    };
                    self.start(now, effect);
                }
            }
        }
    }

    /// Starts carrying out `effect`.
    fn start(&mut self, now: Instant, effect: Effect) {
        self.doing = match effect {
            Effect::Read { .. } => Doing::Asking {
                left: DESCRIPTION
                    .into_iter()
                    .map(|a| SaMadBuilder::request(Method::GET_TABLE, 0, a).into_bytes())
                    .collect(),
                out: 0,
                then: AfterAsking::Read,
            },
            Effect::Probe(asked) => {
                // Every port runs local-sa.
                self.watch.handle_probed(now, &asked);
                Doing::Nothing
            }
            Effect::Digests(nodes) => {
                let paths = f64::from(self.hosts) * nodes.len() as f64;
                let until = now + Duration::from_secs_f64(paths / ENGINE_PATHS_PER_SECOND);
                Doing::Computing { until, nodes }
            }
            Effect::Check { nodes, .. } => {
                let left = self.check_queries(!nodes.is_empty());
                let pairs = left.len();
                Doing::Asking {
                    left,
                    out: 0,
                    then: AfterAsking::Check { pairs },
                }
            }
            Effect::Push(plan) => Doing::Pushing(Box::new(self.push(&plan))),
            Effect::Renew {
                nodes,
                seconds,
                forget_qos,
            } => Doing::Renewing {
                left: nodes.into(),
                out: 0,
                seconds,
                forget_qos,
                renewed: Renewed::default(),
            },
            Effect::PollActivity => {
                let request = master_activity::request(self.master.lid);
                self.requests
                    .query(now, self.master, Ask::Activity, &request);
                Doing::Polling
            }
            Effect::Told(_) | Effect::Ended { .. } => Doing::Nothing,
        };
    }

    /// The digest of `node`'s tables in the newest fabric read: moved by
    /// the reroute, or not.
    fn digest(&self, node: Gid) -> u64 {
        let lid = (node.guid() & 0xFFFF) as u16;
        u64::from(self.newest_rerouted && self.rerouted.contains_key(&lid))
    }

    /// Gets of up to [`CHECK`] changed pairs, spread over the nodes (if
    /// `changed`), and of pairs that make every node a source and a
    /// destination.
    fn check_queries(&self, changed: bool) -> VecDeque<Bytes> {
        let pairs: Vec<(u16, u16)> = (self.rerouted.iter())
            .filter(|_| changed)
            .flat_map(|(s, dests)| dests.iter().map(move |d| (*s, *d)))
            .collect();
        let step = pairs.len().div_ceil(CHECK).max(1);
        let drawn = pairs.into_iter().step_by(step).take(CHECK).collect();
        crate::check::seeing_every_port(self.hosts, drawn)
            .into_iter()
            .map(|(s, d)| crate::check::pair_query(s, d))
            .collect()
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
