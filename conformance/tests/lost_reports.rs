//! A change whose Report is lost, against OpenSM under ibsim: OpenSM
//! sends trap 128 before it reroutes, so a node whose path from the
//! master crossed the link that went down never hears of the change. Its
//! local-sa, keeping its own tables (no distributor), polls the master
//! SM's SMInfoRecord; the heavy sweep shows in its ActCount, and the node
//! refreshes as after the notice: every node answers OpenSM's new paths
//! within a minute, whether or not its Report came.

mod watching;

use std::time::{Duration, Instant};

use conformance::path_answers::start;
use conformance::{LocalSa, SimulatedFabric};

use self::watching::{answered, lid, slow_spine_tree};

/// Hosts a leaf.
const HOSTS_PER_LEAF: usize = 4;

/// The leaf (1-based) of host `name` (`h1` … `h12`).
fn leaf_of(name: &str) -> usize {
    let n: usize = name.trim_start_matches('h').parse().expect("a host");
    (n - 1) / HOSTS_PER_LEAF + 1
}

#[test]
fn a_reroute_whose_report_is_lost_reaches_the_node_through_the_master_s_activity() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    // The nodes: every host of a leaf other than the master's, whose link
    // to the first spine goes down; the master's Reports to those of them
    // it reached through that link are lost.
    let master_leaf = leaf_of(fabric.opensm_node());
    let leaf = if master_leaf == 3 { 2 } else { 3 };
    let names: Vec<String> = (1..=HOSTS_PER_LEAF)
        .map(|i| format!("h{}", (leaf - 1) * HOSTS_PER_LEAF + i))
        .collect();
    let args = ["--sweep-poll", "5", "--change-settle", "3"];
    let nodes: Vec<LocalSa<'_>> = names
        .iter()
        .map(|n| LocalSa::start(&fabric, n, &args).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let lids: Vec<u16> = (1..=3 * HOSTS_PER_LEAF)
        .map(|i| lid(&fabric, &format!("h{i}")))
        .collect();
    let sm = lid(&fabric, fabric.opensm_node());
    let opensm = |fabric: &SimulatedFabric| -> Vec<_> {
        (names.iter())
            .map(|n| answered(fabric, fabric.opensm_node(), sm, lid(fabric, n), &lids))
            .collect()
    };
    let ours = |fabric: &SimulatedFabric| -> Vec<_> {
        (names.iter())
            .map(|n| answered(fabric, n, lid(fabric, n), lid(fabric, n), &lids))
            .collect()
    };
    let before = opensm(&fabric);
    assert_eq!(ours(&fabric), before, "the nodes answer as OpenSM before");
    // The light sweeps are learnt.
    std::thread::sleep(Duration::from_secs(20));

    let unplugged = Instant::now();
    fabric.unlink(&format!("leaf{leaf}"), 5).unwrap();
    let took = loop {
        let now = opensm(&fabric);
        if now != before && ours(&fabric) == now {
            break unplugged.elapsed();
        }
        let counters: Vec<_> = (nodes.iter())
            .map(|sa| {
                let c = sa.counters();
                (c["change_notices"], c["sweeps_seen"], c["refreshes"])
            })
            .collect();
        assert!(
            unplugged.elapsed() < Duration::from_secs(60),
            "the nodes never answered OpenSM's new paths; (notices, sweeps seen, refreshes) by \
             node: {counters:?}"
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    eprintln!("every node answered OpenSM's new paths {took:?} after the unplug");
    let counts: Vec<(u64, u64)> = (nodes.iter())
        .map(|sa| (sa.counter("change_notices"), sa.counter("sweeps_seen")))
        .collect();
    eprintln!("(change notices, sweeps seen) by node: {counts:?}");
    assert!(
        counts.iter().any(|(notices, _)| *notices == 0),
        "some node's Report is lost on the way (else this proves nothing): {counts:?}"
    );
    for (name, (notices, seen)) in names.iter().zip(&counts) {
        if *notices == 0 {
            assert_eq!(*seen, 1, "{name}: the poll saw the sweep");
        } else {
            assert_eq!(*seen, 0, "{name}: the notice stood for the sweep");
        }
    }
}
