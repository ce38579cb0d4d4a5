//! A change whose Report is lost, against OpenSM under ibsim: OpenSM
//! sends trap 128 before it reroutes, so a node whose path from the
//! master crossed the link that went down never hears of the change. Its
//! local-sa, keeping its own tables (no distributor), polls the master
//! SM's SMInfoRecord; the heavy sweep shows in its ActCount, and the node
//! refreshes as after the notice: every node answers OpenSM's new paths
//! within a minute, whether or not its Report came.
//!
//! On a fabric so large that the master's share puts the refresh hours
//! away, the nodes are right as soon as they know of the sweep all the
//! same: their tables are in doubt, and the paths asked are asked of the
//! master until the refresh (the second test makes the refresh that far
//! away on this fabric with `--master-path-cost`).

mod watching;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use conformance::path_answers::start;
use conformance::{LocalSa, SimulatedFabric};
use mad_codec::PathRecord;

use self::watching::{answered, lid, slow_spine_tree, upkeep};

/// Hosts a leaf.
const HOSTS_PER_LEAF: usize = 4;

/// The leaf (1-based) of host `name` (`h1` … `h12`).
fn leaf_of(name: &str) -> usize {
    let n: usize = name.trim_start_matches('h').parse().expect("a host");
    (n - 1) / HOSTS_PER_LEAF + 1
}

/// The nodes behind one leaf's uplink: every host of a leaf other than
/// the master's, each running local-sa with `args`; that leaf's link to
/// the first spine goes down, and the master's Reports to those it
/// reached through that link are lost.
struct BehindTheUplink<'f> {
    fabric: &'f SimulatedFabric,
    leaf: usize,
    names: Vec<String>,
    nodes: Vec<LocalSa<'f>>,
    /// Every host's LID.
    lids: Vec<u16>,
    /// (change notices, sweeps seen) by node just before the unplug:
    /// what the nodes' own start cost OpenSM (under ibsim each local-sa
    /// that starts marks its port IsSM, and OpenSM sweeps) is not the
    /// unplug's.
    before_unplug: Vec<(u64, u64)>,
}

impl<'f> BehindTheUplink<'f> {
    fn start(fabric: &'f SimulatedFabric, args: &[&str]) -> Self {
        let master_leaf = leaf_of(fabric.opensm_node());
        let leaf = if master_leaf == 3 { 2 } else { 3 };
        let names: Vec<String> = (1..=HOSTS_PER_LEAF)
            .map(|i| format!("h{}", (leaf - 1) * HOSTS_PER_LEAF + i))
            .collect();
        let nodes = (names.iter())
            .map(|n| LocalSa::start(fabric, n, args).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let lids = (1..=3 * HOSTS_PER_LEAF)
            .map(|i| lid(fabric, &format!("h{i}")))
            .collect();
        Self {
            fabric,
            leaf,
            names,
            nodes,
            lids,
            before_unplug: Vec::new(),
        }
    }

    /// (change notices, sweeps seen) by node now.
    fn counts(&self) -> Vec<(u64, u64)> {
        (self.nodes.iter())
            .map(|sa| (sa.counter("change_notices"), sa.counter("sweeps_seen")))
            .collect()
    }

    /// What OpenSM answers each node, by node.
    fn opensm(&self) -> Vec<HashMap<(u16, u16), Option<PathRecord>>> {
        let f = self.fabric;
        let sm = lid(f, f.opensm_node());
        (self.names.iter())
            .map(|n| answered(f, f.opensm_node(), sm, lid(f, n), &self.lids))
            .collect()
    }

    /// What each node's local-sa answers, by node.
    fn ours(&self) -> Vec<HashMap<(u16, u16), Option<PathRecord>>> {
        let f = self.fabric;
        (self.names.iter())
            .map(|n| answered(f, n, lid(f, n), lid(f, n), &self.lids))
            .collect()
    }

    /// Checks the nodes answer as OpenSM, lets them learn the master's
    /// light sweeps, unplugs the uplink, and returns how long until
    /// every node answered OpenSM's new paths (at most a minute).
    fn unplug_until_right(&mut self) -> Duration {
        let before = self.opensm();
        assert_eq!(self.ours(), before, "the nodes answer as OpenSM before");
        std::thread::sleep(Duration::from_secs(20));
        self.before_unplug = self.counts();
        let unplugged = Instant::now();
        (self.fabric)
            .unlink(&format!("leaf{}", self.leaf), 5)
            .unwrap();
        loop {
            let now = self.opensm();
            if now != before && self.ours() == now {
                return unplugged.elapsed();
            }
            let counters: Vec<_> = (self.nodes.iter())
                .map(|sa| {
                    let c = sa.counters();
                    (c["change_notices"], c["sweeps_seen"], c["refreshes"])
                })
                .collect();
            assert!(
                unplugged.elapsed() < Duration::from_secs(60),
                "the nodes never answered OpenSM's new paths; (notices, sweeps seen, refreshes) \
                 by node: {counters:?}"
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// (change notices, sweeps seen) by node since the unplug; asserts
    /// some node's Report was lost (else the test proves nothing).
    fn notices_and_sweeps_seen(&self) -> Vec<(u64, u64)> {
        let counts: Vec<(u64, u64)> = (self.counts().iter())
            .zip(&self.before_unplug)
            .map(|((n, s), (n0, s0))| (n - n0, s - s0))
            .collect();
        eprintln!("(change notices, sweeps seen) by node: {counts:?}");
        assert!(
            counts.iter().any(|(notices, _)| *notices == 0),
            "some node's Report is lost on the way (else this proves nothing): {counts:?}"
        );
        counts
    }
}

#[test]
fn a_reroute_whose_report_is_lost_reaches_the_node_through_the_master_s_activity() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut b = BehindTheUplink::start(&fabric, &["--sweep-poll", "5", "--change-settle", "3"]);
    let took = b.unplug_until_right();
    eprintln!("every node answered OpenSM's new paths {took:?} after the unplug");
    let counts = b.notices_and_sweeps_seen();
    for (name, (notices, seen)) in b.names.iter().zip(&counts) {
        if *notices == 0 {
            assert_eq!(*seen, 1, "{name}: the poll saw the sweep");
        } else {
            assert_eq!(*seen, 0, "{name}: the notice stood for the sweep");
        }
    }
}

#[test]
fn nodes_whose_refresh_is_hours_away_answer_the_master_s_new_paths_from_the_sweep_on() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    // A second of the master's time a path: at this fabric's size the
    // master's share allows a refresh every few hours, as the default
    // does at 10,000 ports.
    let args = [
        "--sweep-poll",
        "5",
        "--change-settle",
        "3",
        "--master-path-cost",
        "1000000000",
    ];
    let mut b = BehindTheUplink::start(&fabric, &args);
    for (name, sa) in b.names.iter().zip(&b.nodes) {
        let line = upkeep(&fabric, name, sa);
        let every: u64 = (line.split("a refresh every ").nth(1))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no refresh interval in {line}"));
        assert!(every >= 3600, "{name}: a refresh every {every} s");
    }
    let refreshed: Vec<u64> = b.nodes.iter().map(|sa| sa.counter("refreshes")).collect();
    let took = b.unplug_until_right();
    eprintln!("every node answered OpenSM's new paths {took:?} after the unplug, none refreshed");
    let after: Vec<u64> = b.nodes.iter().map(|sa| sa.counter("refreshes")).collect();
    assert_eq!(
        after, refreshed,
        "no node refreshed: the master's share forbids it"
    );
    b.notices_and_sweeps_seen();
    for (name, sa) in b.names.iter().zip(&mut b.nodes) {
        let line = upkeep(&fabric, name, sa);
        assert!(
            line.contains("in doubt since the master's last sweep"),
            "{name}: {line}"
        );
        // Counters reach the file a few seconds late.
        sa.wait_until("the doubt's counters", Duration::from_secs(15), |c| {
            c.get("doubts").is_some_and(|n| *n >= 1)
                && c.get("doubt_queries").is_some_and(|n| *n > 0)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
