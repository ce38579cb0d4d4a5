//! The watch on a virtual clock, against a fake fabric: a master whose
//! description changes when told, which may stop answering, and whose
//! check may differ; nodes that take pushes and renewals, or fall silent.
//! Every path of the watch: quiet, changed, differing check, master gone,
//! a node not known, a new port, the lease's end.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

use mad_codec::{Gid, MadStatus};

use super::*;
use crate::fill::outcome::{NodeOutcome, NodeReport};
use crate::fill::tally::Tally;
use crate::sent_tables::SentTables;

const MASTER: u16 = 1;
const INTERVAL: Duration = Duration::from_secs(60);
const SETTLE: Duration = Duration::from_secs(5);
const LEASE: u16 = 185;

fn gid(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + u64::from(lid))
}

fn port(lid: u16) -> FabricPort {
    FabricPort { lid, gid: gid(lid) }
}

/// The fake fabric, and what the watch asked of it.
struct Fake {
    start: Instant,
    now: Instant,
    /// Between the watch's polls of the master's activity (zero: none).
    activity_poll: Duration,
    /// Between the watch's lease renewals.
    renew: Duration,
    /// Nodes whose lease another distributor (at this LID) took.
    taken_over: Option<(u16, BTreeSet<u16>)>,
    /// The node whose lease made the watch active, if one did.
    referee: Option<u16>,
    /// The master SM's ActCount beside its light sweeps (five SMPs every
    /// ten seconds).
    act_base: u32,
    /// Polls of the master's activity answered.
    activity_polls: u32,
    /// Ports of the fabric, and which of them run local-sa.
    ports: Vec<u16>,
    local_sa: BTreeSet<u16>,
    /// Each port's tables' digest in the master's fabric now; in the
    /// driver's current fabric; in the newest it read, if it differs.
    digest: BTreeMap<u16, u64>,
    current: BTreeMap<u16, u64>,
    newest: Option<BTreeMap<u16, u64>>,
    /// Ports whose tables at the master changed in a way no read shows
    /// (a policy on OpenSM's command line): the digest the engine still
    /// computes for them.
    hidden: BTreeMap<u16, u64>,
    /// Ports whose tables changed with OpenSM's files (a policy edited,
    /// then SIGHUP): the digest the engine computes until a read after a
    /// sweep reads the files again.
    files_unread: BTreeMap<u16, u64>,
    /// The nodes hold tables of some kind from the master.
    from_master: bool,
    /// The master answers nothing.
    master_gone: bool,
    /// The next checks differ this many times.
    checks_differ: u32,
    /// Nodes that answer nothing.
    silent: HashSet<u16>,
    /// What the watch did, in order.
    reads: u32,
    probes: Vec<Vec<u16>>,
    checks: Vec<(Vec<u64>, u32)>,
    pushes: Vec<Plan>,
    renewals: Vec<(usize, u16)>,
    /// Rounds of renewals that told the nodes to forget their QoS answers.
    forgets: usize,
    reads_after_sweeps: u32,
    told: Vec<EventReport>,
    ended: Option<(u64, usize, usize)>,
    fenced_by: Option<u16>,
    /// Ports the watch starts knowing not to run local-sa (the fill
    /// probed them).
    others: BTreeSet<Gid>,
}

impl Fake {
    fn new(start: Instant, lids: &[u16]) -> Self {
        let digest: BTreeMap<u16, u64> = lids.iter().map(|l| (*l, 100)).collect();
        Self {
            start,
            now: start,
            activity_poll: Duration::ZERO,
            renew: INTERVAL,
            taken_over: None,
            referee: None,
            act_base: 1000,
            activity_polls: 0,
            ports: lids.to_vec(),
            local_sa: lids.iter().copied().collect(),
            current: digest.clone(),
            newest: None,
            digest,
            hidden: BTreeMap::new(),
            files_unread: BTreeMap::new(),
            from_master: false,
            master_gone: false,
            checks_differ: 0,
            silent: HashSet::new(),
            reads: 0,
            probes: Vec::new(),
            checks: Vec::new(),
            pushes: Vec::new(),
            renewals: Vec::new(),
            forgets: 0,
            reads_after_sweeps: 0,
            told: Vec::new(),
            ended: None,
            fenced_by: None,
            others: BTreeSet::new(),
        }
    }

    /// A watch of every local-sa port, each holding the computed tables.
    fn watch(&self) -> Watch {
        let mut holdings = Holdings::default();
        for lid in &self.local_sa {
            holdings.insert(gid(*lid), *lid, Holding::Computed(self.digest[lid]));
        }
        let digests = self
            .local_sa
            .iter()
            .map(|l| (gid(*l), self.digest[l]))
            .collect();
        let setup = WatchSetup {
            interval: INTERVAL,
            settle: SETTLE,
            lease: LEASE,
            master_lid: MASTER,
            shard: None,
            activity_poll: self.activity_poll,
            renew: self.renew,
            referee: self.referee,
        };
        Watch::new(setup, holdings, digests, self.others.clone(), self.now)
    }

    /// Carries out what the watch asks until it waits for time.
    fn serve(&mut self, w: &mut Watch) {
        while let Some(effect) = w.poll_effect(self.now) {
            let now = self.now;
            match effect {
                Effect::Read { sweep } => {
                    self.reads += 1;
                    if self.master_gone {
                        self.newest = None;
                        w.handle_failed(
                            now,
                            "the master did not answer: no answer (3 attempts of 1 s)",
                        );
                        continue;
                    }
                    // What the engine computes from the description (and
                    // after a sweep OpenSM's files), compared with the
                    // current fabric, as lsaquery's re-read does.
                    let mut computed = self.digest.clone();
                    if sweep {
                        self.reads_after_sweeps += 1;
                        self.files_unread.clear();
                    }
                    computed.extend(&self.files_unread);
                    computed.extend(&self.hidden);
                    self.newest = (computed != self.current).then_some(computed);
                    let changed = self.newest.is_some();
                    w.handle_read(
                        now,
                        Read {
                            changed,
                            ports: self.ports.iter().map(|l| port(*l)).collect(),
                            served: Served {
                                queries: 6,
                                records: 40,
                                bytes: 4000,
                            },
                            config_changes: Vec::new(),
                            from_master: self.from_master,
                        },
                    );
                }
                Effect::PollActivity => {
                    self.activity_polls += 1;
                    let light = (now - self.start).as_secs() / 10 * 5;
                    let count = self.act_base + light as u32;
                    let answer = (!self.master_gone).then_some((MASTER, count));
                    w.handle_activity(now, answer);
                }
                Effect::Probe(asked) => {
                    self.probes.push(asked.iter().map(|p| p.lid).collect());
                    let found: Vec<FabricPort> = asked
                        .into_iter()
                        .filter(|p| self.local_sa.contains(&p.lid))
                        .collect();
                    w.handle_probed(now, &found);
                }
                Effect::Digests(nodes) => {
                    let newest = self.newest.as_ref().unwrap_or(&self.current);
                    let digests = nodes
                        .iter()
                        .map(|g| (*g, newest[&(g.guid() as u16)]))
                        .collect();
                    w.handle_digests(now, digests);
                }
                Effect::Check { nodes, read } => {
                    self.checks.push((nodes, read));
                    let checked = self.newest.as_ref().unwrap_or(&self.current);
                    let differed = if self.checks_differ > 0 {
                        self.checks_differ -= 1;
                        2
                    } else if *checked != self.digest {
                        2
                    } else {
                        0
                    };
                    w.handle_checked(
                        now,
                        CheckOutcome {
                            pairs: 8,
                            differed,
                            records: 8,
                        },
                    );
                }
                Effect::Push(plan) => {
                    let reports = plan
                        .push
                        .iter()
                        .map(|(g, lid)| {
                            let silent = self.silent.contains(lid);
                            NodeReport {
                                lid: *lid,
                                gid: *g,
                                outcome: NodeOutcome {
                                    done: !silent,
                                    stored: if silent { 0 } else { 3 },
                                    ..NodeOutcome::default()
                                },
                                failure: silent.then(|| "no answer".to_owned()),
                                holds: SentTables::default(),
                            }
                        })
                        .collect();
                    self.pushes.push(plan);
                    // What the engine does not compute comes from the
                    // master.
                    let pushed = self.newest.as_ref().unwrap_or(&self.current);
                    self.from_master = *pushed != self.digest;
                    w.handle_pushed(now, (reports, Tally::default()), Ok(()));
                }
                Effect::Renew {
                    nodes,
                    seconds,
                    forget_qos,
                } => {
                    self.renewals.push((nodes.len(), seconds));
                    self.forgets += usize::from(forget_qos);
                    let mut renewed = Renewed::default();
                    for (g, lid) in nodes {
                        let other = (self.taken_over.as_ref())
                            .and_then(|(o, nodes)| nodes.contains(&lid).then_some(*o));
                        renewed.add(
                            g,
                            if self.silent.contains(&lid) {
                                LeaseAnswer::Unanswered
                            } else if let Some(owner) = other {
                                LeaseAnswer::HeldBy(owner)
                            } else if !self.local_sa.contains(&lid) {
                                LeaseAnswer::Refused(MadStatus::ERR_REQ_INVALID)
                            } else {
                                LeaseAnswer::Taken
                            },
                        );
                    }
                    w.handle_renewed(now, &renewed);
                }
                Effect::Told(report) => {
                    if let Some(n) = self.newest.take() {
                        self.current = n;
                    }
                    self.told.push(*report);
                }
                Effect::Ended {
                    events,
                    released,
                    nodes,
                    fenced_by,
                } => {
                    self.ended = Some((events, released, nodes));
                    self.fenced_by = fenced_by;
                }
            }
        }
    }

    /// Runs the watch until `until` on the virtual clock.
    fn run_until(&mut self, w: &mut Watch, until: Instant) {
        self.serve(w);
        while let Some(t) = w.poll_timeout()
            && t <= until
        {
            self.now = self.now.max(t);
            self.serve(w);
        }
        self.now = until;
        self.serve(w);
    }

    /// A reroute: these nodes' tables change at the master.
    fn reroute(&mut self, lids: &[u16]) {
        for l in lids {
            *self.digest.get_mut(l).unwrap() += 1;
        }
    }

    /// OpenSM's policy edited and OpenSM told (SIGHUP): these nodes'
    /// tables change at the master, and the engine computes them too
    /// once it reads the files again.
    fn edit_policy(&mut self, lids: &[u16]) {
        for l in lids {
            self.files_unread.insert(*l, self.digest[l]);
        }
        self.reroute(lids);
    }

    /// The master changed its mind in a way the engine cannot see (a
    /// policy on OpenSM's command line): these nodes' tables change at
    /// the master only.
    fn change_unseen(&mut self, lids: &[u16]) {
        for l in lids {
            self.hidden.insert(*l, self.digest[l]);
        }
        self.reroute(lids);
    }
}

#[test]
fn a_quiet_fabric_costs_a_read_an_interval_and_renews_every_lease() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    let mut w = f.watch();
    f.run_until(&mut w, start + INTERVAL * 3 + Duration::from_secs(1));
    assert_eq!(f.reads, 3, "one read an interval");
    assert!(f.pushes.is_empty() && f.checks.is_empty() && f.probes.is_empty());
    assert_eq!(f.renewals, [(3, LEASE); 3]);
    assert_eq!(f.told.len(), 3);
    assert!(
        f.told
            .iter()
            .all(|t| !t.description_changed && t.cause == "interval")
    );
    let c = w.counters();
    assert_eq!((c.events, c.quiet_events, c.renewals), (3, 3, 9));
    assert_eq!(c.description_queries, 18);
}

#[test]
fn a_notice_is_looked_into_once_the_sweep_settles_and_only_changed_nodes_get_differences() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4, 5]);
    let mut w = f.watch();
    f.run_until(&mut w, start + Duration::from_secs(10));
    f.reroute(&[3, 5]);
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    // A second notice two seconds later puts the event off again.
    f.run_until(&mut w, start + Duration::from_secs(12));
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 10 });
    f.run_until(&mut w, start + Duration::from_secs(16));
    assert_eq!(f.reads, 0, "still settling");
    f.run_until(&mut w, start + Duration::from_secs(17));
    assert_eq!(f.reads, 1);
    assert_eq!(f.checks, [(vec![gid(3).guid(), gid(5).guid()], 1)]);
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.pushes[0].push, [(gid(3), 3), (gid(5), 5)]);
    assert_eq!(f.pushes[0].delta, BTreeSet::from([gid(3), gid(5)]));
    let t = &f.told[0];
    assert_eq!(t.cause, "trap 128 from LID 9 and 1 more notices");
    assert!(t.description_changed);
    assert_eq!((t.changed_nodes, t.checked, t.pushed.nodes), (2, 8, 2));
    assert_eq!(t.nodes, [(3, 3, 0), (5, 3, 0)]);
    assert_eq!(
        (f.renewals.as_slice(), f.forgets),
        (&[(4, LEASE)][..], 1),
        "after the sweep every node forgets the QoS answers it kept"
    );
    // They hold the new tables: the interval finds nothing to push (the
    // renewals after the sweep were the interval's).
    f.run_until(&mut w, start + INTERVAL + Duration::from_secs(1));
    assert_eq!((f.reads, f.pushes.len(), f.renewals.len()), (2, 1, 1));
    f.run_until(&mut w, start + INTERVAL * 2);
    assert_eq!(
        (f.renewals.len(), f.forgets),
        (2, 1),
        "an interval's forget nothing"
    );
}

#[test]
fn a_link_that_flaps_for_ever_is_looked_into_within_an_interval_of_its_first_notice() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3]);
    let mut w = f.watch();
    f.reroute(&[2]);
    for s in 0..70u16 {
        f.run_until(&mut w, start + Duration::from_secs(s.into()));
        w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 100 + s });
    }
    let first = f
        .told
        .iter()
        .find(|t| t.cause.starts_with("trap 128"))
        .expect("the notices' event");
    assert!(
        first.cause.starts_with("trap 128 from LID 100 and"),
        "{}",
        first.cause
    );
    assert_eq!(f.pushes[0].push, [(gid(2), 2)]);
}

#[test]
fn a_check_that_differs_reads_again_after_the_settle_time_then_pushes() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    let mut w = f.watch();
    f.reroute(&[4]);
    f.checks_differ = 5;
    w.handle_notice(start, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + SETTLE);
    assert_eq!((f.reads, f.checks.len(), f.pushes.len()), (1, 1, 0));
    f.run_until(&mut w, start + SETTLE * 2);
    assert_eq!((f.reads, f.checks.len(), f.pushes.len()), (2, 2, 0));
    f.run_until(&mut w, start + SETTLE * 3);
    assert_eq!(f.reads, READS);
    assert_eq!(f.pushes.len(), 1, "after {READS} reads the push goes on");
    let reads: Vec<u32> = f.checks.iter().map(|(_, r)| *r).collect();
    assert_eq!(reads, [1, 2, 3], "each read's sample drawn anew");
    let t = &f.told[0];
    assert_eq!((t.reads, t.checked, t.differed), (READS, 24, 2));
    assert_eq!(t.read.queries, 18);
}

#[test]
fn a_master_that_does_not_answer_ends_the_event_and_changes_nothing() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3]);
    let mut w = f.watch();
    f.reroute(&[2]);
    f.master_gone = true;
    f.run_until(&mut w, start + INTERVAL);
    assert_eq!(f.reads, 1);
    assert!(f.pushes.is_empty());
    assert_eq!(f.told[0].failures.len(), 1, "{:?}", f.told[0].failures);
    assert!(f.told[0].failures[0].starts_with("the master did not answer"));
    assert_eq!(f.renewals, [(2, LEASE)], "the leases are renewed still");
    // Back: the next interval reads again and finds the change.
    f.master_gone = false;
    f.run_until(&mut w, start + INTERVAL * 2);
    assert_eq!(f.reads, 2);
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.pushes[0].push, [(gid(2), 2)]);
}

#[test]
fn a_node_that_misses_a_renewal_gets_its_tables_whole_once_it_answers() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    let mut w = f.watch();
    f.silent.insert(3);
    f.run_until(&mut w, start + INTERVAL);
    assert_eq!(w.counters().nodes_unknown, 1);
    assert!(f.pushes.is_empty(), "not while it is silent");
    f.silent.clear();
    f.run_until(&mut w, start + INTERVAL * 2);
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.pushes[0].push, [(gid(3), 3)]);
    assert!(
        f.pushes[0].delta.is_empty(),
        "whole: what it holds is not known"
    );
    assert!(
        (f.told.iter()).any(|t| t.cause == "nodes whose tables are not known answer"),
        "{:?}",
        f.told
    );
    assert_eq!(w.counters().nodes_unknown, 0);
    assert_eq!(w.counters().renewals_unanswered, 1);
}

#[test]
fn a_push_a_node_misses_leaves_it_not_known_and_a_later_event_sends_it_whole() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3]);
    let mut w = f.watch();
    f.reroute(&[2, 3]);
    f.silent.insert(2);
    w.handle_notice(start, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + SETTLE);
    assert_eq!(f.told[0].pushed.failed, 1);
    assert_eq!(f.told[0].failures, ["LID 2 (fe80::2:c903:0:2): no answer"]);
    f.silent.clear();
    f.reroute(&[3]);
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + SETTLE * 2);
    let last = f.pushes.last().unwrap();
    assert_eq!(last.push, [(gid(2), 2), (gid(3), 3)]);
    assert_eq!(last.delta, BTreeSet::from([gid(3)]), "LID 2's goes whole");
}

#[test]
fn a_port_that_starts_local_sa_is_found_by_the_tenth_interval_s_probe_and_filled() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3]);
    f.local_sa.remove(&3);
    let mut w = f.watch();
    f.run_until(&mut w, start + INTERVAL * 9);
    assert!(f.probes.is_empty(), "nothing changed: no probe");
    f.local_sa.insert(3);
    f.run_until(&mut w, start + INTERVAL * 10);
    assert_eq!(f.probes, [vec![3]]);
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.pushes[0].push, [(gid(3), 3)]);
    assert_eq!(f.told.last().unwrap().new_nodes, 1);
    assert_eq!(w.holdings().len(), 2);
}

#[test]
fn a_port_known_not_to_run_local_sa_is_asked_again_by_the_tenth_interval_s_probe() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    // The fill found no local-sa at LID 3.
    f.local_sa.remove(&3);
    f.others.insert(gid(3));
    let mut w = f.watch();
    // A change asks only the ports new to the watch: none.
    f.reroute(&[2]);
    w.handle_notice(start, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + SETTLE);
    assert!(f.probes.is_empty(), "{:?}", f.probes);
    // Its local-sa starts; the tenth interval asks it again.
    f.local_sa.insert(3);
    f.run_until(&mut w, start + INTERVAL * 10);
    assert_eq!(f.probes, [vec![3]]);
    assert_eq!(f.told.last().unwrap().new_nodes, 1);
    assert_eq!(f.pushes.last().unwrap().push, [(gid(3), 3)]);
    assert!(w.holdings().contains(&gid(3)));
}

#[test]
fn a_port_gone_from_the_fabric_is_forgotten_and_the_master_is_never_probed() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    let mut w = f.watch();
    f.ports = vec![MASTER, 2, 3, 7];
    f.reroute(&[2]);
    w.handle_notice(
        start,
        TrapDetails::GidOutOfService {
            gid: Gid::new(0xfe80 << 48, 9),
        },
    );
    f.run_until(&mut w, start + SETTLE);
    let t = &f.told[0];
    assert_eq!(t.gone_nodes, 1);
    assert_eq!(f.probes, [vec![7]], "the new port, not the master's");
    assert_eq!(w.holdings().len(), 2);
    assert!(!w.holdings().contains(&gid(4)));
}

#[test]
fn stopping_ends_every_lease_and_then_the_watch() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    let mut w = f.watch();
    f.run_until(&mut w, start + INTERVAL + Duration::from_secs(1));
    w.handle_stop();
    f.serve(&mut w);
    assert_eq!(f.renewals.last(), Some(&(3, 0)), "a lease of 0 s ends it");
    assert_eq!(f.ended, Some((1, 3, 3)));
    assert!(w.is_ended());
    assert_eq!(w.poll_timeout(), None);
    // Nothing more happens.
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + INTERVAL * 5);
    assert_eq!(f.reads, 1);
}

/// A watch that polls the master's activity every two seconds.
fn polling(lids: &[u16]) -> (Fake, Watch) {
    let mut f = Fake::new(Instant::now(), lids);
    f.activity_poll = Duration::from_secs(2);
    let w = f.watch();
    (f, w)
}

#[test]
fn light_sweeps_polled_cost_no_event_before_the_interval() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    let until = f.start + INTERVAL - Duration::from_secs(1);
    f.run_until(&mut w, until);
    assert!(f.activity_polls >= 25, "{} polls", f.activity_polls);
    assert_eq!((f.reads, w.counters().events), (0, 0));
    assert_eq!(w.counters().activity_polls, u64::from(f.activity_polls));
}

#[test]
fn a_heavy_sweep_no_notice_announced_is_looked_into_once_it_settles() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.run_until(&mut w, f.start + Duration::from_secs(20));
    // A link went down: the master swept heavily and rerouted node 3,
    // and its trap 128 never reached the watch.
    f.reroute(&[3]);
    f.act_base += 170;
    let swept = f.now;
    f.run_until(&mut w, swept + Duration::from_secs(2) + SETTLE);
    assert_eq!(
        f.pushes.len(),
        1,
        "pushed within a poll and the settle time"
    );
    let pushed: Vec<u16> = f.pushes[0].push.iter().map(|(_, lid)| *lid).collect();
    assert_eq!(pushed, [3]);
    assert!(
        f.told[0].cause.contains("heavy sweep"),
        "{}",
        f.told[0].cause
    );
    let c = w.counters();
    assert_eq!((c.sweeps_seen, c.notices), (1, 0));
    f.run_until(&mut w, f.start + INTERVAL - Duration::from_secs(1));
    assert_eq!(f.told.len(), 1, "quiet again after it");
}

#[test]
fn a_heavy_sweep_a_notice_announced_is_looked_into_once() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.run_until(&mut w, f.start + Duration::from_secs(20));
    f.reroute(&[3]);
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    f.act_base += 170;
    f.run_until(&mut w, f.start + INTERVAL - Duration::from_secs(1));
    assert_eq!(f.told.len(), 1, "the notice's event only");
    assert_eq!(w.counters().sweeps_seen, 0);
}

#[test]
fn a_master_that_does_not_answer_the_poll_is_polled_again() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.master_gone = true;
    f.run_until(&mut w, f.start + Duration::from_secs(10));
    assert!(f.activity_polls >= 4, "{} polls", f.activity_polls);
    assert_eq!(w.counters().sweeps_seen, 0);
}

#[test]
fn leases_are_renewed_on_their_own_beat_between_events() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    f.renew = Duration::from_secs(8);
    let mut w = f.watch();
    f.run_until(&mut w, start + Duration::from_secs(41));
    assert_eq!(f.renewals, [(3, LEASE); 5], "every 8 s");
    // A notice's event does not hold them up for long: it is short.
    f.reroute(&[3]);
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + Duration::from_secs(49));
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.renewals.len(), 6);
    assert_eq!(w.counters().renewals, 18);
}

#[test]
fn a_node_another_holds_fences_the_watch_only_if_it_is_the_referee() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    f.renew = Duration::from_secs(8);
    f.referee = Some(2);
    let mut w = f.watch();
    f.run_until(&mut w, start + Duration::from_secs(9));
    // Node 4 was cut off with another watch (at LID 30), never saw it
    // silent, and keeps its lease: not the referee, so this watch goes on.
    f.taken_over = Some((30, BTreeSet::from([4])));
    f.run_until(&mut w, start + Duration::from_secs(17));
    assert!(!w.is_ended());
    assert_eq!(f.fenced_by, None);
    assert_eq!(w.counters().renewals_fenced, 1);
    // The other watch, fenced by the referee in turn, ends its lease
    // there: the next renewal takes it.
    f.taken_over = None;
    f.run_until(&mut w, start + Duration::from_secs(25));
    assert!(!w.is_ended());
    assert_eq!(w.counters().renewals_fenced, 1);
    // The referee held by another: fenced.
    f.taken_over = Some((30, BTreeSet::from([2])));
    f.run_until(&mut w, start + Duration::from_secs(33));
    assert!(w.is_ended());
    assert_eq!(f.fenced_by, Some(30));
}

#[test]
fn a_watch_another_took_over_from_is_fenced_off_ends_its_leases_and_stops() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3, 4]);
    f.renew = Duration::from_secs(8);
    let mut w = f.watch();
    f.run_until(&mut w, start + Duration::from_secs(9));
    // Frozen meanwhile: the watch at LID 30 took over nodes 2 and 3.
    f.taken_over = Some((30, BTreeSet::from([2, 3])));
    f.reroute(&[4]);
    f.run_until(&mut w, start + Duration::from_secs(17));
    assert!(w.is_ended());
    assert_eq!(f.fenced_by, Some(30));
    assert_eq!(
        f.renewals,
        [(3, LEASE), (3, LEASE), (3, 0)],
        "its leases end where it still holds them (node 4)"
    );
    assert_eq!(f.ended, Some((0, 1, 3)));
    let c = w.counters();
    assert_eq!((c.renewals, c.renewals_fenced), (4, 2));
    // It pushes nothing more, whatever changes.
    w.handle_notice(f.now, TrapDetails::LinkStateChange { lid: 9 });
    f.run_until(&mut w, start + Duration::from_secs(60));
    assert!(f.pushes.is_empty() && f.reads == 0);
}

#[test]
fn a_sweep_that_changes_nothing_still_ends_with_a_check_of_every_port() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.run_until(&mut w, f.start + Duration::from_secs(20));
    // A SIGHUP: a heavy sweep that moves no route and changes no file.
    f.act_base += 170;
    f.run_until(&mut w, f.start + Duration::from_secs(30));
    assert_eq!(f.reads_after_sweeps, 1, "OpenSM's files read again");
    assert_eq!(f.checks, [(vec![], 1)], "every endport, no changed node");
    assert!(f.pushes.is_empty());
    let t = &f.told[0];
    assert!(!t.description_changed && t.checked == 8 && t.differed == 0);
    assert!(
        t.text().contains("nothing changed (checked 8 pairs"),
        "{}",
        t.text()
    );
    assert_eq!(f.forgets, 1, "the nodes forget their QoS answers");
    // An interval that changes nothing checks nothing.
    f.run_until(&mut w, f.start + INTERVAL + Duration::from_secs(1));
    assert_eq!((f.reads, f.checks.len()), (2, 1));
}

#[test]
fn a_policy_edited_and_opensm_told_is_read_again_at_its_sweep_and_pushed() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.run_until(&mut w, f.start + Duration::from_secs(20));
    // The file is edited: nothing happens until OpenSM sweeps (an
    // interval's read does not read the files: OpenSM has not either).
    f.edit_policy(&[2, 3, 4]);
    f.act_base += 170;
    f.run_until(&mut w, f.start + Duration::from_secs(30));
    assert_eq!(f.pushes.len(), 1, "{:?}", f.told);
    assert_eq!(f.pushes[0].push.len(), 3);
    assert_eq!(f.pushes[0].delta.len(), 3, "the differences only");
    assert_eq!(f.checks.len(), 1);
    assert!(!f.from_master, "the engine follows the edited policy");
}

#[test]
fn a_change_the_engine_cannot_see_sends_every_node_the_master_s_tables_whole() {
    let (mut f, mut w) = polling(&[2, 3, 4]);
    f.run_until(&mut w, f.start + Duration::from_secs(20));
    // A policy on OpenSM's command line, changed and SIGHUP: the master
    // answers node 3's paths otherwise; no read shows it.
    f.change_unseen(&[3]);
    f.act_base += 170;
    f.run_until(&mut w, f.start + Duration::from_secs(20) + SETTLE * 5);
    assert_eq!(f.reads, READS, "read again while the check differs");
    assert_eq!(f.checks.len(), READS as usize);
    assert_eq!(f.pushes.len(), 1);
    let plan = &f.pushes[0];
    assert_eq!(plan.push.len(), 3, "every node: what it holds may be wrong");
    assert!(plan.delta.is_empty(), "whole");
    assert!(f.from_master);
    let t = f.told.last().unwrap();
    assert!(t.description_changed && t.differed > 0);
    // The next sweep, even one that changes nothing, sends the master's
    // tables again: they may have changed with it.
    f.act_base += 170;
    f.run_until(&mut w, f.now + Duration::from_secs(10) + SETTLE * 3);
    assert_eq!(f.pushes.len(), 2, "{:?}", f.told);
    assert_eq!(f.pushes[1].push.len(), 3);
}

#[test]
fn an_interval_that_finds_the_fabric_changed_is_a_sweep_the_nodes_forget_their_qos_answers_after() {
    let start = Instant::now();
    let mut f = Fake::new(start, &[2, 3]);
    let mut w = f.watch();
    // Nothing heard, nothing polled: the interval's read finds it.
    f.reroute(&[3]);
    f.run_until(&mut w, start + INTERVAL + Duration::from_secs(1));
    assert_eq!(f.pushes.len(), 1);
    assert_eq!(f.reads_after_sweeps, 0, "the interval's read is no sweep's");
    assert_eq!(f.forgets, 1, "but the sweep it found is one");
}
