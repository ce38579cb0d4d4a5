//! One simulated job start: `hosts` nodes, each with `ranks` ranks that
//! resolve a path to every other host, asking either their node's
//! local-sa (the real [`SaCore`], over its QP1 door or through the real
//! ibacm door, [`AcmService`], as ib_acme and librdmacm do) or the master
//! SA directly (the baseline). The cores fill their caches from the master,
//! or a distributor next to it pushes them their tables; after the job an
//! SM failover or a reboot wave may follow ([`Disturbance`]), its load
//! measured on its own. Everything runs on one virtual clock: MADs
//! take [`Scenario::wire`] to arrive, the master takes its modelled time
//! per request, the cores their own timers. Nothing depends on the real
//! clock. The simulator's own order is fixed; the cores' inner hash
//! maps are seeded by the standard library from the OS, so a run of
//! 2,048 nodes varies by a few requests from one to the next.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};
use slab::Slab;

use local_sa_core::doors::acm::wire::{
    self as acm_wire, Entry, Opcode, Status as AcmStatus, flags,
};
use local_sa_core::doors::acm::{AcmConfig, AcmService, Endpoint};
use local_sa_core::doors::{Door as _, Input, Output};
use local_sa_core::names::hosts::{self, Names};
use local_sa_core::{Address, AgentConfig, PortIdentity, Received, SaCore, SmKey};

use crate::distributor::{Distributor, FillOf, Source};
use crate::master::{Master, MasterLoad, MasterModel, gid, rerouted_record};
use crate::requests::SM_KEY;
use crate::watcher::Watcher;

/// What is simulated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scenario {
    /// Nodes, one port each, at LIDs 1..=hosts.
    pub(crate) hosts: u16,
    /// Ranks per node.
    pub(crate) ranks: u16,
    /// Resolves each rank has outstanding at once.
    pub(crate) window: usize,
    /// Whether each node runs local-sa (else ranks ask the master).
    pub(crate) local_sa: bool,
    /// How ranks ask their node's local-sa.
    pub(crate) door: Door,
    /// With local-sa: the cores never get their tables (they wait for a
    /// load that does not come) and the job starts at once, every
    /// resolve a miss the core forwards (coalescing identical ones).
    pub(crate) cold: bool,
    /// With local-sa: a distributor next to the master fills the nodes,
    /// this many at a time, and the cores wait for it (`load_wait`) rather
    /// than ask the master for their tables. With a `service_id` it also
    /// sends each node its table at that ServiceID, from the master.
    pub(crate) distributor: Option<usize>,
    /// Where the distributor's paths come from.
    pub(crate) source: Source,
    /// Distributors, each with its share of the nodes.
    pub(crate) shards: u16,
    /// The ServiceID the ranks' queries name (rdma_cm's route
    /// resolution), if any.
    pub(crate) service_id: Option<u64>,
    /// With local-sa: before the job, a prolog on every node asks its
    /// local-sa for the path to every other host with the job's ServiceID
    /// (`lsaquery --warm`), one asker per node; its load counts in the
    /// fill.
    pub(crate) warm: bool,
    /// What happens once the job is over (and at least `horizon` from the
    /// start): its load is measured on its own for `EVENT_HORIZON`.
    pub(crate) disturbance: Option<Disturbance>,
    /// Whether the cores spread what every port does at once over their
    /// phases (their default); without, every window is zero.
    pub(crate) jitter: bool,
    /// The master.
    pub(crate) master: MasterModel,
    /// One MAD's time on the wire.
    pub(crate) wire: Duration,
    /// A rank's wait for an answer before it asks again.
    pub(crate) rank_timeout: Duration,
    /// The master's load is counted at least this long from the start,
    /// past the job's end (what the start's registrations and directory
    /// loads cost comes after the caches are filled).
    pub(crate) horizon: Duration,
    /// After the fill a watch keeps the nodes (`lsaquery --distribute
    /// --compute --watch`): the fill's loads carry its lease, and the
    /// watch renews it and pushes what a reroute changes.
    pub(crate) watch: bool,
    /// The cores' `--master-share` (percent): their periodic refresh is
    /// no more often than N² paths at the model's cost per path take
    /// that share of the master.
    pub(crate) master_share: u8,
}

/// How a rank asks its node's local-sa.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Door {
    /// A PathRecord Get (SLID, DLID) on QP1, as MPI libraries and
    /// saquery-style clients send it.
    Qp1,
    /// An ibacm RESOLVE by LID on the node's ibacm socket, as ib_acme and
    /// librdmacm's `rdma_getaddrinfo` send it.
    Acm,
}

/// An event that makes many ports call on the master at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disturbance {
    /// The master SM moves to another LID (a failover): every port
    /// refreshes and registers again with the new one.
    Failover,
    /// This percentage of the nodes reboot at once: their local-sa starts
    /// afresh.
    Reboot(u8),
    /// Nothing happens for [`QUIET_HOURS`]: what the upkeep alone costs.
    Quiet,
    /// A link between a leaf and a spine goes down and the master
    /// reroutes: the paths that crossed it change rate ([`reroute`]). The
    /// watch hears of it; cores keeping their own tables get trap 128.
    Reroute,
    /// The same reroute, its Report lost as OpenSM loses it (sent before
    /// it reroutes, over the link that went): the watch never hears it,
    /// nor do the first leaf's hosts; the master's ActCount shows its
    /// heavy sweep.
    RerouteUnannounced,
    /// Every node's local-sa restarts, one after another over
    /// [`ROLLING_RESTART`]; with `kept`, each takes the tables its
    /// predecessor kept.
    RollingRestart { kept: bool },
}

/// Hours a quiet fabric is watched.
pub(crate) const QUIET_HOURS: u32 = 3;

/// How long the load after a disturbance is measured.
fn event_horizon(what: Disturbance) -> Duration {
    match what {
        Disturbance::Quiet => Duration::from_secs(3600) * QUIET_HOURS,
        // Cores keeping their own tables of a large fabric refresh no
        // sooner than the upkeep bound allows (6,000 s at 10,000).
        Disturbance::Reroute | Disturbance::RerouteUnannounced => Duration::from_secs(8000),
        _ => Duration::from_secs(330),
    }
}

/// How long a rolling restart of every node takes.
const ROLLING_RESTART: Duration = Duration::from_secs(100);

/// Unix time at the simulation's start, for the tables cores keep.
const WALL_START: u64 = 1_800_000_000;

/// The pairs whose route crosses the link from the first leaf (LIDs
/// 1..=32 of a fat tree of radix-64 switches) to one spine, with their
/// new records by source node: the first leaf's hosts to every
/// destination that spine carries (every 32nd LID, not on the leaf), and
/// every other host to the leaf's host that spine carries (LID 32).
pub(crate) fn reroute(hosts: u16) -> BTreeMap<u16, Vec<PathRecord>> {
    let leaf = 1..=32.min(hosts);
    let mut changes: BTreeMap<u16, Vec<PathRecord>> = BTreeMap::new();
    for s in 1..=hosts {
        let dests: Vec<u16> = if leaf.contains(&s) {
            (1..=hosts)
                .filter(|d| d % 32 == 0 && !leaf.contains(d))
                .collect()
        } else if hosts >= 32 {
            vec![32]
        } else {
            Vec::new()
        };
        if !dests.is_empty() {
            changes.insert(
                s,
                dests.into_iter().map(|d| rerouted_record(s, d)).collect(),
            );
        }
    }
    changes
}

/// What a disturbance cost.
#[derive(Debug, Clone)]
pub(crate) struct Aftermath {
    /// The master's load from the event for its horizon
    /// ([`event_horizon`]).
    pub(crate) load: MasterLoad,
    /// From the event until every port it touched had reached its goal
    /// (refreshed again, holds the new records, ready after a restart).
    pub(crate) settled: Option<Duration>,
    /// The master's load from the event until then.
    pub(crate) until_settled: Option<MasterLoad>,
    /// The longest a restarted core took to be ready again.
    pub(crate) longest_restart: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The master's load while the caches filled (local-sa only: from the
    /// cores' start until every core had its table).
    pub(crate) fill: MasterLoad,
    /// The master's load during the job (from the ranks' start).
    pub(crate) job: MasterLoad,
    /// From the ranks' start until the last rank had all its paths.
    pub(crate) job_time: Duration,
    /// From the cores' start until every core had its table.
    pub(crate) fill_time: Duration,
    /// Per resolve, from its first request to its answer.
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    /// The slowest resolve.
    pub(crate) max: Duration,
    /// Resolves asked again after [`Scenario::rank_timeout`] or an error.
    pub(crate) rank_retries: u64,
    /// Loads the distributor had to push again.
    pub(crate) loads_retried: u64,
    /// What the disturbance cost, if there was one.
    pub(crate) aftermath: Option<Aftermath>,
    /// Ranks still without all their paths when the time limit came.
    pub(crate) unfinished_ranks: usize,
    /// Pairs the distributors' checks found the master's records of
    /// unlike the model's computed ones: the model and its master
    /// disagree, and the run's figures are not to be trusted.
    pub(crate) check_differed: usize,
}

/// Who receives a MAD or a wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Party {
    Master,
    Distributor(u16),
    Core(u16),
    Rank(u16, u16),
}

#[derive(Debug)]
enum Event {
    Deliver {
        to: Party,
        from: Address,
        mad: Bytes,
    },
    Wake(Party),
    /// The node's local-sa restarts (a rolling restart), taking its
    /// predecessor's tables if `kept`.
    Restart {
        lid: u16,
        kept: bool,
    },
}

/// What a core touched by a disturbance is to reach.
#[derive(Debug, Clone)]
enum Goal {
    /// A refresh more than this count (failover, reboot).
    Refreshed(u64),
    /// These records in its table (a reroute's), or its tables in doubt
    /// (what it is asked goes to the master).
    Holds(Vec<PathRecord>),
    /// Not restarted yet.
    Restarting,
    /// Restarted: ready again.
    Ready,
}

impl Goal {
    fn met(&self, core: &SaCore) -> bool {
        match self {
            Self::Refreshed(before) => {
                let c = core.counters();
                c.refreshes + c.refreshes_loaded > *before
            }
            // Tables in doubt answer nothing of their own: every pair
            // asked is the master's answer.
            Self::Holds(records) => {
                core.tables_in_doubt()
                    || records
                        .iter()
                        .all(|r| core.store().get(r.slid(), r.dlid()) == Some(r))
            }
            Self::Restarting => false,
            Self::Ready => core.is_ready(),
        }
    }
}

/// A rank: the peers it still has to resolve and what it has asked.
#[derive(Debug, Default)]
struct Rank {
    next_peer: u16,
    /// TransactionID → (destination LID, first asked, last asked).
    outstanding: HashMap<u64, (u16, Instant, Instant)>,
    done: u16,
    /// Its timer is armed.
    wake_armed: bool,
}

/// MADs per second the distributor's port sends (the model's assumption:
/// a user-space MAD sender on one HCA port).
const DISTRIBUTOR_MADS_PER_SECOND: f64 = 250_000.0;

/// How long the cores wait for the distributor before asking the master
/// (the daemon's `--load-wait`): longer than the distributor takes to
/// reach the last of 8,192 nodes at its MAD rate (about 84 s).
const DISTRIBUTOR_LOAD_WAIT: Duration = Duration::from_secs(120);

/// A cold core's wait for a load: longer than any run.
const COLD_WAIT: Duration = Duration::from_secs(24 * 3600);

/// QP numbers of ranks start here (QP1 is the cores').
const RANK_QP: u32 = 100;

/// What pushes tables to the nodes from next to the master: the fill's
/// distributor, or the watch that follows it.
enum Pusher {
    Fill(Box<Distributor>),
    Watch(Box<Watcher>),
}

impl Pusher {
    fn lid(&self) -> u16 {
        match self {
            Self::Fill(d) => d.lid,
            Self::Watch(w) => w.lid,
        }
    }

    fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        match self {
            Self::Fill(d) => d.poll(now),
            Self::Watch(w) => w.poll(now),
        }
    }

    fn receive(&mut self, now: Instant, from: Address, mad: &[u8]) -> Vec<(Address, Bytes)> {
        match self {
            Self::Fill(d) => d.receive(now, from, mad),
            Self::Watch(w) => w.receive(now, from, mad),
        }
    }

    fn next_event(&self) -> Option<Instant> {
        match self {
            Self::Fill(d) => d.next_event(),
            Self::Watch(w) => w.next_event(),
        }
    }

    fn is_done(&self) -> bool {
        match self {
            Self::Fill(d) => d.is_done(),
            Self::Watch(w) => w.is_done(),
        }
    }

    fn retries(&self) -> u64 {
        match self {
            Self::Fill(d) => d.retries(),
            Self::Watch(w) => w.retries(),
        }
    }

    /// Pairs its checks found the master's records of unlike the model's.
    fn differed(&self) -> usize {
        match self {
            Self::Fill(d) => d.differed(),
            Self::Watch(w) => w.differed(),
        }
    }
}

/// A distributor, its port and its timer.
struct DistributorPort {
    d: Pusher,
    /// When its wake-up is scheduled.
    wake: Option<Instant>,
    /// When its port can put its next MAD on the wire.
    free: Instant,
}

struct World {
    s: Scenario,
    now: Instant,
    start: Instant,
    events: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    payloads: Slab<Event>,
    seq: u64,
    master: Master,
    /// When the master's wake-up is scheduled (one at a time).
    master_wake: Option<Instant>,
    distributors: Vec<DistributorPort>,
    cores: Vec<SaCore>,
    /// Each node's ibacm door, when ranks use it.
    acm: Vec<AcmService>,
    core_wake: Vec<Option<Instant>>,
    /// Cores that have had their table, and how many.
    core_ready: Vec<bool>,
    cores_ready: usize,
    ranks: Vec<Vec<Rank>>,
    ranks_started: bool,
    /// The prolog's warm-up (one asker per node, as rank 0) is over; it
    /// runs from the ranks' start until then.
    warm_done: bool,
    ranks_done: usize,
    latencies: Vec<Duration>,
    rank_retries: u64,
    next_tid: u64,
    fill: MasterLoad,
    fill_time: Duration,
    job_start: Instant,
    last_done: Instant,
    /// When the disturbance happened, what each touched core is to reach
    /// (`None` once it has, or if it was not touched), and how many have
    /// not.
    disturbed: Option<(Instant, Vec<Option<Goal>>, usize)>,
    settled: Option<Duration>,
    until_settled: Option<MasterLoad>,
    /// When each core last restarted (a rolling restart), and the longest
    /// one took to be ready.
    restarted_at: Vec<Option<Instant>>,
    longest_restart: Duration,
    /// The master's load before the disturbance.
    job_load: Option<MasterLoad>,
}

fn rank_address(node: u16, rank: u16) -> Address {
    Address {
        qpn: RANK_QP + u32::from(rank),
        ..Address::gsi(node, 0)
    }
}

fn get_request(tid: u64, slid: u16, dlid: u16, service_id: Option<u64>) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_slid(slid);
    t.set_dlid(dlid);
    let mut mask = pr::SLID | pr::DLID;
    if let Some(id) = service_id {
        // As rdma_cm's route resolution asks: the ServiceID and the
        // partition.
        t.set_service_id(id);
        t.set_pkey(0xFFFF);
        mask |= pr::SERVICE_ID | pr::PKEY;
    }
    let mut b = SaMadBuilder::request(Method::GET, tid, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    let mut mad = BytesMut::from(&b.into_bytes()[..]);
    mad.resize(256, 0);
    mad.freeze()
}

impl World {
    fn new(s: Scenario) -> Self {
        let start = Instant::now();
        let master_lid = s.hosts + 1;
        let master = Master::new(master_lid, s.hosts, s.master, start);
        let mut w = Self {
            s,
            now: start,
            start,
            events: BinaryHeap::new(),
            payloads: Slab::new(),
            seq: 0,
            master,
            master_wake: None,
            distributors: match s.distributor {
                None => Vec::new(),
                Some(window) => (0..s.shards.max(1))
                    .map(|i| DistributorPort {
                        d: Pusher::Fill(Box::new(Distributor::new(
                            master_lid + 1 + i,
                            master_lid,
                            window,
                            (i, s.shards.max(1)),
                            FillOf {
                                hosts: s.hosts,
                                source: s.source,
                                service_id: s.service_id,
                                lease: s.watch.then_some(crate::watcher::TERMS),
                            },
                        ))),
                        wake: None,
                        free: start,
                    })
                    .collect(),
            },
            cores: Vec::new(),
            acm: Vec::new(),
            core_wake: Vec::new(),
            core_ready: vec![false; usize::from(s.hosts)],
            cores_ready: 0,
            ranks: (0..s.hosts)
                .map(|_| (0..s.ranks).map(|_| Rank::default()).collect())
                .collect(),
            ranks_started: false,
            warm_done: false,
            ranks_done: 0,
            latencies: Vec::new(),
            rank_retries: 0,
            next_tid: 1,
            fill: MasterLoad::default(),
            fill_time: Duration::ZERO,
            job_start: start,
            last_done: start,
            disturbed: None,
            settled: None,
            until_settled: None,
            restarted_at: vec![None; usize::from(s.hosts)],
            longest_restart: Duration::ZERO,
            job_load: None,
        };
        if s.local_sa {
            for lid in 1..=s.hosts {
                let port = PortIdentity {
                    lid,
                    lmc: 0,
                    gid: gid(lid),
                    sm_lid: master_lid,
                    sm_sl: 0,
                };
                let core = SaCore::new(core_config(&s), port, start, u32::from(lid));
                if s.door == Door::Acm {
                    w.acm.push(acm_door(port));
                }
                w.cores.push(core);
                w.core_wake.push(None);
            }
            if s.cold {
                w.start_ranks();
            }
            for lid in 1..=s.hosts {
                w.after_core(lid);
            }
            for i in 0..w.distributors.len() {
                let out = w.distributors[i].d.poll(start);
                w.after_distributor(i, out);
            }
        } else {
            w.start_ranks();
        }
        w
    }

    /// When a reroute under a watch is to happen, if not at `now`: half
    /// an interval from the interval's reads and between two polls, so
    /// that its notice or the polls find it, not a read or a poll that
    /// happened to follow it.
    fn reroute_at(&self, what: Disturbance, now: Instant) -> Option<Instant> {
        if !matches!(what, Disturbance::Reroute | Disturbance::RerouteUnannounced) {
            return None;
        }
        let Some(Pusher::Watch(w)) = self.distributors.last().map(|p| &p.d) else {
            return None;
        };
        let half = crate::watcher::INTERVAL / 2;
        let next = w.next_interval();
        let quarter = half / 2;
        if next.saturating_duration_since(now) >= quarter
            && now.saturating_duration_since(next - half * 2) >= quarter
        {
            return None;
        }
        // And a second off the watch's beat: between two of its polls.
        let off = Duration::from_secs(1);
        Some(
            if next - half > now {
                next - half
            } else {
                next + half
            } + off,
        )
    }

    /// Makes the disturbance happen now.
    fn disturb(&mut self, what: Disturbance) {
        let now = self.now;
        // The load from here on is the event's.
        self.job_load = Some(std::mem::take(&mut self.master.load));
        let touched: Vec<u16> = match what {
            Disturbance::Failover => {
                let last = self.distributors.last().map_or(0, |p| p.d.lid());
                let lid = self.master.lid.max(last) + 2;
                self.master = Master::new(lid, self.s.hosts, self.s.master, self.start);
                self.master_wake = None;
                for core in &mut self.cores {
                    let port = PortIdentity {
                        sm_lid: lid,
                        ..core.port()
                    };
                    core.handle_port_change(now, port);
                }
                (1..=self.s.hosts).collect()
            }
            Disturbance::Reboot(percent) => {
                let every = (100 / u16::from(percent.max(1))).max(1);
                let chosen: Vec<u16> = (1..=self.s.hosts).filter(|l| l % every == 0).collect();
                for &lid in &chosen {
                    let i = usize::from(lid - 1);
                    let port = self.cores[i].port();
                    let seed = u32::from(lid) + 0x10_0000;
                    self.cores[i] = SaCore::new(core_config(&self.s), port, now, seed);
                }
                chosen
            }
            Disturbance::Quiet
            | Disturbance::Reroute
            | Disturbance::RerouteUnannounced
            | Disturbance::RollingRestart { .. } => {
                return self.upkeep_event(what);
            }
        };
        let mut marks = vec![None; self.cores.len()];
        for &lid in &touched {
            let c = self.cores[usize::from(lid - 1)].counters();
            marks[usize::from(lid - 1)] = Some(Goal::Refreshed(c.refreshes + c.refreshes_loaded));
        }
        self.disturbed = Some((now, marks, touched.len()));
        for lid in touched {
            self.after_core(lid);
        }
        let out = self.master.poll(now);
        self.after_master(out);
    }

    /// The upkeep's events: the quiet hours, the reroute or the rolling
    /// restart.
    fn upkeep_event(&mut self, what: Disturbance) {
        let now = self.now;
        let mut marks: Vec<Option<Goal>> = vec![None; self.cores.len()];
        match what {
            Disturbance::Reroute | Disturbance::RerouteUnannounced => {
                let heard = what == Disturbance::Reroute;
                let changes = reroute(self.s.hosts);
                self.master.reroute(
                    changes
                        .iter()
                        .flat_map(|(s, records)| records.iter().map(|r| (*s, r.dlid())))
                        .collect::<Vec<_>>(),
                );
                for (s, records) in &changes {
                    marks[usize::from(s - 1)] = Some(Goal::Holds(records.clone()));
                }
                match self.distributors.last_mut().map(|p| &mut p.d) {
                    Some(Pusher::Watch(w)) => w.rerouted(now, changes, heard),
                    _ => {
                        // The master reports the link's change to every
                        // port that subscribed (every core, to trap 128);
                        // unannounced, the first leaf's hosts miss it.
                        let from = Address::gsi(self.master.lid, 0);
                        let first = if heard { 1 } else { 33 };
                        for lid in first..=self.s.hosts {
                            let to = Address::gsi(lid, 0);
                            self.send(from, &to, trap_128(u64::from(lid)));
                        }
                    }
                }
            }
            Disturbance::RollingRestart { kept } => {
                let gap = ROLLING_RESTART / u32::from(self.s.hosts.max(1));
                for lid in 1..=self.s.hosts {
                    marks[usize::from(lid - 1)] = Some(Goal::Restarting);
                    let at = now + gap * u32::from(lid);
                    self.schedule(at, Event::Restart { lid, kept });
                }
            }
            _ => {}
        }
        let touched = marks.iter().filter(|m| m.is_some()).count();
        self.disturbed = Some((now, marks, touched));
        for i in 0..self.distributors.len() {
            let out = self.distributors[i].d.poll(now);
            self.after_distributor(i, out);
        }
        for lid in 1..=self.s.hosts {
            self.after_core(lid);
        }
    }

    /// Node `lid`'s local-sa restarts now, taking the tables its
    /// predecessor kept if `kept`.
    fn restart(&mut self, lid: u16, kept: bool) {
        let i = usize::from(lid - 1);
        let now = self.now;
        let wall = WALL_START + (now - self.start).as_secs();
        let tables = kept.then(|| self.cores[i].keep_tables(now, wall)).flatten();
        let port = self.cores[i].port();
        let seed = u32::from(lid) + 0x20_0000;
        let mut core = SaCore::new(core_config(&self.s), port, now, seed);
        if let Some(t) = tables {
            let _ = core.restore_tables(now, wall, t);
        }
        self.cores[i] = core;
        self.core_wake[i] = None;
        self.restarted_at[i] = Some(now);
        if let Some((_, marks, _)) = &mut self.disturbed {
            marks[i] = Some(Goal::Ready);
        }
        self.after_core(lid);
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.seq += 1;
        let id = self.payloads.insert(event);
        self.events.push(Reverse((at, self.seq, id)));
    }

    /// Where a MAD addressed to `to` goes.
    fn party_at(&self, to: &Address) -> Option<Party> {
        if to.lid == self.master.lid {
            return Some(Party::Master);
        }
        if let Some(i) = self.distributors.iter().position(|p| p.d.lid() == to.lid) {
            return Some(Party::Distributor(i as u16));
        }
        if !(1..=self.s.hosts).contains(&to.lid) {
            return None;
        }
        if to.qpn >= RANK_QP {
            Some(Party::Rank(to.lid, (to.qpn - RANK_QP) as u16))
        } else if self.s.local_sa {
            Some(Party::Core(to.lid))
        } else {
            None
        }
    }

    fn send(&mut self, from: Address, to: &Address, mad: Bytes) {
        if let Some(party) = self.party_at(to) {
            let at = self.now + self.s.wire;
            self.schedule(
                at,
                Event::Deliver {
                    to: party,
                    from,
                    mad,
                },
            );
        }
    }

    /// Sends what core `lid` has to send and arms its timer.
    fn after_core(&mut self, lid: u16) {
        let i = usize::from(lid - 1);
        let me = Address::gsi(lid, 0);
        while let Some(t) = self.cores[i].poll_transmit() {
            self.send(me, &t.dest, t.mad);
        }
        while let Some(reply) = self.cores[i].poll_local() {
            let Some(door) = self.acm.get_mut(i) else {
                continue;
            };
            door.handle_reply(self.now, &reply);
            let outputs: Vec<Output> = std::iter::from_fn(|| door.poll_output()).collect();
            for output in outputs {
                self.acm_output(lid, output);
            }
        }
        if let Some(t) = self.cores[i].poll_timeout()
            && self.core_wake[i].is_none_or(|w| t < w || w <= self.now)
        {
            self.core_wake[i] = Some(t);
            self.schedule(t.max(self.now), Event::Wake(Party::Core(lid)));
        }
        if !self.core_ready[i] && self.cores[i].is_ready() {
            self.core_ready[i] = true;
            self.cores_ready += 1;
        }
        self.start_ranks_when_filled();
        let met = self
            .disturbed
            .as_ref()
            .and_then(|(_, marks, _)| marks[i].as_ref())
            .is_some_and(|goal| goal.met(&self.cores[i]));
        if met && let Some((at, marks, left)) = &mut self.disturbed {
            marks[i] = None;
            *left -= 1;
            if *left == 0 {
                self.settled = Some(self.now - *at);
                self.until_settled = Some(self.master.load.clone());
            }
            if let Some(t) = self.restarted_at[i].take() {
                self.longest_restart = self.longest_restart.max(self.now - t);
            }
        }
    }

    fn after_master(&mut self, out: Vec<(Address, Bytes)>) {
        let me = Address::gsi(self.master.lid, 0);
        for (to, mad) in out {
            self.send(me, &to, mad);
        }
        if let Some(t) = self.master.next_event()
            && self.master_wake.is_none_or(|w| t < w)
        {
            self.master_wake = Some(t);
            self.schedule(t.max(self.now), Event::Wake(Party::Master));
        }
    }

    /// The job starts once every core has its table and the distributor,
    /// if there is one, has sent everything (a job prolog waits for
    /// `lsaquery --distribute` to end).
    fn start_ranks_when_filled(&mut self) {
        let distributed = self.distributors.iter().all(|p| p.d.is_done());
        if !self.ranks_started && self.cores_ready == self.cores.len() && distributed {
            self.start_ranks();
        }
    }

    fn after_distributor(&mut self, i: usize, out: Vec<(Address, Bytes)>) {
        self.start_ranks_when_filled();
        let p = &self.distributors[i];
        let me = Address::gsi(p.d.lid(), 0);
        let next = p.d.next_event();
        // Each distributor's one port sends at most
        // `DISTRIBUTOR_MADS_PER_SECOND`.
        let gap = Duration::from_secs_f64(1.0 / DISTRIBUTOR_MADS_PER_SECOND);
        for (to, mad) in out {
            let p = &mut self.distributors[i];
            let leaves = p.free.max(self.now);
            p.free = leaves + gap;
            if let Some(party) = self.party_at(&to) {
                let event = Event::Deliver {
                    to: party,
                    from: me,
                    mad,
                };
                self.schedule(leaves + self.s.wire, event);
            }
        }
        if let Some(t) = next
            && self.distributors[i].wake.is_none_or(|w| t < w)
        {
            self.distributors[i].wake = Some(t);
            self.schedule(t.max(self.now), Event::Wake(Party::Distributor(i as u16)));
        }
    }

    /// Once the fill is over, the watch goes on from the fill's
    /// distributor, at its LID (the same lsaquery: the nodes' lease is
    /// its own).
    fn start_watch(&mut self) {
        let now = self.now;
        let Some(i) = self.distributors.len().checked_sub(1) else {
            return;
        };
        let lid = self.distributors[i].d.lid();
        let w = Watcher::new(lid, self.master.lid, self.s.hosts, 32, now);
        self.distributors[i].d = Pusher::Watch(Box::new(w));
        let out = self.distributors[i].d.poll(now);
        self.after_distributor(i, out);
    }

    fn start_ranks(&mut self) {
        if self.s.watch && !self.ranks_started {
            self.ranks_started = true;
            self.start_watch();
        }
        self.ranks_started = true;
        if self.s.warm && !self.warm_done {
            // The prolog first: rank 0's place on each node, its load
            // part of the fill.
            for node in 1..=self.s.hosts {
                self.rank_ask(node, 0);
            }
            return;
        }
        self.fill_time = self.now - self.start;
        self.fill = std::mem::take(&mut self.master.load);
        self.job_start = self.now;
        for node in 1..=self.s.hosts {
            for r in 0..self.s.ranks {
                self.rank_ask(node, r);
            }
        }
    }

    /// The prolog has every path: the job starts afresh.
    fn warmed(&mut self) {
        self.warm_done = true;
        for rank in self.ranks.iter_mut().flatten() {
            *rank = Rank::default();
        }
        self.ranks_done = 0;
        self.latencies.clear();
        self.rank_retries = 0;
        self.start_ranks();
    }

    /// Rank `r` of `node` fills its window.
    fn rank_ask(&mut self, node: u16, r: u16) {
        loop {
            let rank = &self.ranks[usize::from(node - 1)][usize::from(r)];
            if rank.outstanding.len() >= self.s.window || rank.next_peer > self.s.hosts {
                break;
            }
            let mut peer = rank.next_peer.max(1);
            if peer == node {
                peer += 1;
            }
            if peer > self.s.hosts {
                self.ranks[usize::from(node - 1)][usize::from(r)].next_peer = peer;
                break;
            }
            let tid = self.next_tid;
            self.next_tid += 1;
            let rank = &mut self.ranks[usize::from(node - 1)][usize::from(r)];
            rank.next_peer = peer + 1;
            rank.outstanding.insert(tid, (peer, self.now, self.now));
            self.rank_send(node, r, tid, peer);
        }
        let rank = &mut self.ranks[usize::from(node - 1)][usize::from(r)];
        if !rank.outstanding.is_empty() && !rank.wake_armed {
            rank.wake_armed = true;
            let at = self.now + self.s.rank_timeout;
            self.schedule(at, Event::Wake(Party::Rank(node, r)));
        }
    }

    fn rank_send(&mut self, node: u16, r: u16, tid: u64, peer: u16) {
        if self.s.local_sa && self.s.door == Door::Acm {
            let dest = Entry::for_address(flags::DEST, &hosts::HostAddress::Lid(peer));
            let message = acm_wire::request(Opcode::RESOLVE, [0; 3], &[dest], tid);
            let door = &mut self.acm[usize::from(node - 1)];
            let input = Input::Message {
                conn: u64::from(r),
                bytes: &message,
            };
            door.handle_input(self.now, input);
            let outputs: Vec<Output> = std::iter::from_fn(|| door.poll_output()).collect();
            for output in outputs {
                self.acm_output(node, output);
            }
            return;
        }
        let to = if self.s.local_sa {
            Address::gsi(node, 0)
        } else {
            Address::gsi(self.master.lid, 0)
        };
        let request = get_request(tid, node, peer, self.s.service_id);
        self.send(rank_address(node, r), &to, request);
    }

    /// What node `node`'s ibacm door asks: a reply goes to the rank over
    /// its socket (no wire), a request to the node's core.
    fn acm_output(&mut self, node: u16, output: Output) {
        match output {
            Output::Send { conn, bytes } => {
                let event = Event::Deliver {
                    to: Party::Rank(node, conn as u16),
                    from: Address::gsi(node, 0),
                    mad: bytes,
                };
                self.schedule(self.now, event);
            }
            Output::Ask {
                conn, id, request, ..
            } => {
                let i = usize::from(node - 1);
                self.cores[i].handle_local(self.now, conn, id, request);
                // The reply, from the cache at once or after the master's
                // answer, comes back through `after_core`.
                self.after_core(node);
            }
            Output::Close { .. } | Output::Registrant { .. } => {}
        }
    }

    fn rank_answer(&mut self, node: u16, r: u16, answer: &[u8]) {
        let (tid, ok) = if self.s.local_sa && self.s.door == Door::Acm {
            let Some(tid) = answer.get(8..16).and_then(|t| t.try_into().ok()) else {
                return;
            };
            (
                u64::from_ne_bytes(tid),
                answer.get(2) == Some(&AcmStatus::SUCCESS.0),
            )
        } else {
            let Ok(m) = SaMad::parse(answer) else { return };
            (m.mad().transaction_id(), m.mad().status() == MadStatus::OK)
        };
        let rank = &mut self.ranks[usize::from(node - 1)][usize::from(r)];
        let Some(&(_, first, _)) = rank.outstanding.get(&tid) else {
            return;
        };
        if !ok {
            // BUSY or a time-out upstream: ask again after a while.
            self.rank_retries += 1;
            return;
        }
        rank.outstanding.remove(&tid);
        rank.done += 1;
        self.latencies.push(self.now - first);
        if rank.done == self.s.hosts - 1 {
            self.ranks_done += 1;
            self.last_done = self.now;
            if self.s.warm && !self.warm_done && self.ranks_done == usize::from(self.s.hosts) {
                return self.warmed();
            }
        }
        self.rank_ask(node, r);
    }

    /// Rank timer: resend what has waited too long.
    fn rank_wake(&mut self, node: u16, r: u16) {
        let timeout = self.s.rank_timeout;
        let now = self.now;
        self.ranks[usize::from(node - 1)][usize::from(r)].wake_armed = false;
        let overdue: Vec<(u64, u16)> = self.ranks[usize::from(node - 1)][usize::from(r)]
            .outstanding
            .iter()
            .filter(|(_, (_, _, last))| now - *last >= timeout)
            .map(|(tid, (peer, _, _))| (*tid, *peer))
            .collect();
        // In the order asked, not the map's, so that runs repeat.
        let mut overdue = overdue;
        overdue.sort_unstable();
        for (tid, peer) in overdue {
            self.rank_retries += 1;
            if let Some(e) = self.ranks[usize::from(node - 1)][usize::from(r)]
                .outstanding
                .get_mut(&tid)
            {
                e.2 = now;
            }
            self.rank_send(node, r, tid, peer);
        }
        let rank = &mut self.ranks[usize::from(node - 1)][usize::from(r)];
        if !rank.outstanding.is_empty() {
            rank.wake_armed = true;
            self.schedule(now + timeout, Event::Wake(Party::Rank(node, r)));
        }
    }

    /// Runs until every rank has its paths, or `limit` of virtual time.
    fn run(mut self, limit: Duration) -> Outcome {
        let total_ranks = usize::from(self.s.hosts) * usize::from(self.s.ranks);
        let mut horizon = self.start + self.s.horizon;
        let mut pending = self.s.disturbance;
        while let Some(Reverse((at, seq, id))) = self.events.pop() {
            if at - self.start > limit {
                break;
            }
            if self.ranks_started && self.ranks_done == total_ranks && at > horizon {
                let Some(what) = pending.take() else { break };
                if let Some(t) = self.reroute_at(what, at) {
                    // Half an interval from the watch's reads: the reroute
                    // is seen by its notice or the polls, not by chance.
                    pending = Some(what);
                    horizon = t;
                    self.events.push(Reverse((at, seq, id)));
                    continue;
                }
                // The disturbance comes first; this event waits its turn.
                self.events.push(Reverse((at, seq, id)));
                self.now = self.now.max(horizon);
                horizon = self.now + event_horizon(what);
                self.disturb(what);
                continue;
            }
            self.now = at;
            match self.payloads.remove(id) {
                Event::Deliver { to, from, mad } => match to {
                    Party::Master => {
                        let mut out = self.master.receive(self.now, from, mad);
                        out.extend(self.master.poll(self.now));
                        self.after_master(out);
                    }
                    Party::Core(lid) => {
                        self.cores[usize::from(lid - 1)]
                            .handle_mad(self.now, Received::new(from, mad));
                        self.after_core(lid);
                    }
                    Party::Rank(node, r) => self.rank_answer(node, r, &mad),
                    Party::Distributor(i) => {
                        let now = self.now;
                        let i = usize::from(i);
                        let out = self.distributors[i].d.receive(now, from, &mad);
                        self.after_distributor(i, out);
                    }
                },
                Event::Wake(Party::Master) => {
                    if self.master_wake.is_some_and(|w| w <= self.now) {
                        self.master_wake = None;
                    }
                    let out = self.master.poll(self.now);
                    self.after_master(out);
                }
                Event::Wake(Party::Core(lid)) => {
                    let i = usize::from(lid - 1);
                    if self.core_wake[i].is_some_and(|w| w <= self.now) {
                        self.core_wake[i] = None;
                    }
                    if self.cores[i].poll_timeout().is_some_and(|t| t <= self.now) {
                        self.cores[i].handle_timeout(self.now);
                    }
                    self.after_core(lid);
                }
                Event::Wake(Party::Rank(node, r)) => self.rank_wake(node, r),
                Event::Restart { lid, kept } => self.restart(lid, kept),
                Event::Wake(Party::Distributor(i)) => {
                    let (now, i) = (self.now, usize::from(i));
                    let p = &mut self.distributors[i];
                    if p.wake.is_some_and(|w| w <= now) {
                        p.wake = None;
                    }
                    let out = p.d.poll(now);
                    self.after_distributor(i, out);
                }
            }
        }
        let mut latencies = std::mem::take(&mut self.latencies);
        latencies.sort_unstable();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len().max(1) - 1) as f64 * p) as usize)
                .copied()
                .unwrap_or_default()
        };
        // With STORM_COUNTERS set, what the cores' upkeep did, summed:
        // what no row shows (light sweeps taken for heavy ones, say).
        if std::env::var_os("STORM_COUNTERS").is_some() {
            let sum = |f: fn(&local_sa_core::counters::Counters) -> u64| {
                self.cores.iter().map(|c| f(&c.counters())).sum::<u64>()
            };
            eprintln!(
                "cores: sweeps seen {}, doubts {}, change refreshes {}, refreshes {}, checks failed {}",
                sum(|c| c.sweeps_seen),
                sum(|c| c.doubts),
                sum(|c| c.change_refreshes),
                sum(|c| c.refreshes),
                sum(|c| c.checks_failed)
            );
        }
        let aftermath = self.disturbed.is_some().then(|| Aftermath {
            load: self.master.load.clone(),
            settled: self.settled,
            until_settled: self.until_settled.clone(),
            longest_restart: self.longest_restart,
        });
        Outcome {
            aftermath,
            fill: self.fill.clone(),
            job: self
                .job_load
                .clone()
                .unwrap_or_else(|| self.master.load.clone()),
            job_time: self.last_done - self.job_start,
            fill_time: self.fill_time,
            p50: pct(0.5),
            p99: pct(0.99),
            max: pct(1.0),
            rank_retries: self.rank_retries,
            loads_retried: self.distributors.iter().map(|p| p.d.retries()).sum(),
            unfinished_ranks: total_ranks - self.ranks_done,
            check_differed: self.distributors.iter().map(|p| p.d.differed()).sum(),
        }
    }
}

/// The master's Report of a switch port's link change (trap 128) to a
/// subscriber.
fn trap_128(tid: u64) -> Bytes {
    use mad_codec::codes::{NoticeType, ProducerType};
    let notice = mad_codec::NoticeRepr::generic(
        NoticeType::URGENT,
        ProducerType::SWITCH,
        mad_codec::TrapDetails::LinkStateChange { lid: 0xC000 - 1 },
        0xC000 - 1,
        gid(0xBFFF),
    )
    .to_wire();
    let b = SaMadBuilder::request(Method::REPORT, tid, AttributeId::NOTICE).record(&notice);
    let mut mad = BytesMut::from(&b.into_bytes()[..]);
    mad.resize(256, 0);
    mad.freeze()
}

/// A node's ibacm door: one endpoint, its port, the default P_Key.
fn acm_door(port: PortIdentity) -> AcmService {
    let endpoint = Endpoint {
        agent: 0,
        port,
        dev_guid: port.gid.guid(),
        port_num: 1,
        phys_port_cnt: 1,
        pkey: 0xFFFF,
        addresses: Vec::new(),
    };
    AcmService::new(AcmConfig::default(), vec![endpoint], Names::new())
}

/// How every simulated core is configured.
fn core_config(s: &Scenario) -> AgentConfig {
    let mut config = match s.distributor {
        Some(_) => AgentConfig {
            sm_key: Some(SmKey::new(SM_KEY)),
            load_wait: DISTRIBUTOR_LOAD_WAIT,
            ..AgentConfig::default()
        },
        // Waits for a load that never comes: the cache stays empty.
        None if s.cold => AgentConfig {
            load_wait: COLD_WAIT,
            ..AgentConfig::default()
        },
        None => AgentConfig::default(),
    };
    config.pace.upkeep_share_percent = s.master_share;
    if !s.jitter {
        config.pace.min_window = Duration::ZERO;
        config.pace.max_window = Duration::ZERO;
    }
    config
}

/// Runs `s` for at most `limit` of virtual time.
pub(crate) fn run(s: Scenario, limit: Duration) -> Outcome {
    let o = World::new(s).run(limit);
    if o.check_differed > 0 {
        eprintln!(
            "storm: the checks found {} pairs whose records at the model master differ from the \
             model's computed ones: the model is inconsistent, and this run's figures are not to be trusted",
            o.check_differed
        );
    }
    o
}
