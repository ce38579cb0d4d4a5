//! What the upkeep's fabric tests share (the watch's, the standby's, the
//! lost Reports'): the fabric (a fat tree with a slow spine), the nodes
//! filled and watched, OpenSM's answers and the nodes', the watch started
//! and its events.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use conformance::path_answers::{KEY, answer_differences, answers_from, with_port_options};
use conformance::{LocalSa, NodeCommand, NodeProcess, SimulatedFabric, Topology};
use mad_codec::PathRecord;

/// The nodes filled and watched, one per leaf.
pub(crate) const NODES: [&str; 3] = ["h2", "h5", "h11"];

/// Where the watch runs (with a local-sa of its own, whose local API
/// brings it the notices): on the master's leaf, so that OpenSM's Reports
/// reach it even while its forwarding tables still point at a link just
/// gone (the simulator drops those, as a fabric would).
pub(crate) const WATCH_AT: &str = "h3";

/// A fat tree of three leaves of four hosts and two spines whose links to
/// the first spine are 1x (the others 4x): a route moved off that spine
/// gets a faster rate.
pub(crate) fn slow_spine_tree() -> Topology {
    let mut edits = Vec::new();
    for leaf in ["leaf1", "leaf2", "leaf3"] {
        edits.push((leaf, "[5]", "w=1"));
    }
    for port in ["[1]", "[2]", "[3]"] {
        edits.push(("spine1", port, "w=1"));
    }
    with_port_options(&Topology::fat_tree(3, 4, 2), &edits)
}

/// The LID of `name`'s port.
pub(crate) fn lid(fabric: &SimulatedFabric, name: &str) -> u16 {
    fabric.node(name).unwrap().port().unwrap().lid
}

/// Every host's LID.
pub(crate) fn host_lids(fabric: &SimulatedFabric) -> Vec<u16> {
    (1..=12).map(|i| lid(fabric, &format!("h{i}"))).collect()
}

/// The "upkeep" line of `name`'s `lsaquery --status`, its local-sa `sa`.
pub(crate) fn upkeep(fabric: &SimulatedFabric, name: &str, sa: &LocalSa<'_>) -> String {
    let out = fabric
        .node(name)
        .unwrap()
        .lsaquery()
        .arg("--status")
        .arg("--api-socket")
        .arg(sa.api_socket())
        .output()
        .unwrap();
    out.stdout
        .lines()
        .find(|l| l.trim_start().starts_with("upkeep"))
        .unwrap_or_else(|| panic!("{name}: no upkeep line:\n{}{}", out.stdout, out.stderr))
        .to_owned()
}

pub(crate) fn program() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_opensm-paths"))
}

/// What `sa_lid` answers, asked from `node`, for every pair from `source`
/// to `lids`.
pub(crate) fn answered(
    fabric: &SimulatedFabric,
    node: &str,
    sa_lid: u16,
    source: u16,
    lids: &[u16],
) -> HashMap<(u16, u16), Option<PathRecord>> {
    answers_from(fabric, node, program(), (sa_lid, source), lids)
}

/// For each watched node, the pairs where its local-sa's answers differ
/// from OpenSM's (`opensm`: OpenSM's answers, by node).
pub(crate) fn nodes_differing(
    fabric: &SimulatedFabric,
    opensm: &Answers,
    lids: &[u16],
) -> Vec<String> {
    let mut out = Vec::new();
    for name in NODES {
        let lid = fabric.node(name).unwrap().port().unwrap().lid;
        let ours = answered(fabric, name, lid, lid, lids);
        for d in answer_differences(&ours, &opensm[name]) {
            out.push(format!("{name}: {d}"));
        }
    }
    out
}

/// OpenSM's answers for every watched node's pairs.
pub(crate) fn opensm_answers(fabric: &SimulatedFabric, lids: &[u16]) -> Answers {
    let at = fabric.opensm_node();
    let sm = fabric.node(at).unwrap().port().unwrap().sm_lid;
    NODES
        .iter()
        .map(|name| {
            let lid = fabric.node(name).unwrap().port().unwrap().lid;
            (*name, answered(fabric, at, sm, lid, lids))
        })
        .collect()
}

/// Each watched node's answers (or OpenSM's for it), by pair.
pub(crate) type Answers = HashMap<&'static str, HashMap<(u16, u16), Option<PathRecord>>>;

/// OpenSM's answers once they differ from `before` and every watched
/// node answers them too, and how long after `since` that was; fails
/// after `within`, showing the watch's output (if one runs).
pub(crate) fn nodes_follow_the_reroute(
    fabric: &SimulatedFabric,
    before: &Answers,
    lids: &[u16],
    (since, within): (Instant, Duration),
    w: Option<&NodeProcess<'_>>,
) -> (Answers, Duration) {
    loop {
        let now = opensm_answers(fabric, lids);
        if now != *before && nodes_differing(fabric, &now, lids).is_empty() {
            return (now, since.elapsed());
        }
        assert!(
            since.elapsed() < within,
            "the nodes never answered OpenSM's new paths:\n{}\nwatch:\n{}{}",
            nodes_differing(fabric, &now, lids).join("\n"),
            w.map(NodeProcess::stdout).unwrap_or_default(),
            w.map(NodeProcess::stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The watch, started on [`WATCH_AT`] with `args` more, once its first
/// fill is done (its summary printed).
pub(crate) fn watch<'f>(
    fabric: &'f SimulatedFabric,
    at: &LocalSa<'f>,
    args: &[&str],
) -> NodeProcess<'f> {
    watch_on(fabric, WATCH_AT, at, args)
}

/// The watch, started on `node` (whose local-sa is `at`) with `args`
/// more, once its first fill is done.
pub(crate) fn watch_on<'f>(
    fabric: &'f SimulatedFabric,
    node: &str,
    at: &LocalSa<'f>,
    args: &[&str],
) -> NodeProcess<'f> {
    let p = spawn_watch(fabric, node, at, args);
    wait_for_output(&p, "\"filled\"", Duration::from_secs(120));
    p
}

/// The watch, started on `node` (whose local-sa is `at`) with `args`
/// more: at once, whether it fills or stands by.
pub(crate) fn spawn_watch<'f>(
    fabric: &'f SimulatedFabric,
    node: &str,
    at: &LocalSa<'f>,
    args: &[&str],
) -> NodeProcess<'f> {
    let socket = at.api_socket().to_str().expect("a UTF-8 path").to_owned();
    let mut all = vec!["--api-socket", socket.as_str()];
    all.extend_from_slice(args);
    spawn_watch_alone(fabric, node, &all)
}

/// The watch, started on `node` with `args` more, with no local-sa to
/// bring it notices unless `args` name one.
pub(crate) fn spawn_watch_alone<'f>(
    fabric: &'f SimulatedFabric,
    node: &str,
    args: &[&str],
) -> NodeProcess<'f> {
    watch_command(fabric, node, args)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The watch, started on `node` with `args` more, where no local-sa runs,
/// receiving the Reports of its own subscriptions (ibsim hands a port's
/// unsolicited MADs only to a process marked as serving them).
pub(crate) fn spawn_watch_taking_reports<'f>(
    fabric: &'f SimulatedFabric,
    node: &str,
    args: &[&str],
) -> NodeProcess<'f> {
    watch_command(fabric, node, args)
        .serve_requests()
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn watch_command<'f>(fabric: &'f SimulatedFabric, node: &str, args: &[&str]) -> NodeCommand<'f> {
    fabric
        .node(node)
        .unwrap()
        .lsaquery()
        .args([
            "--distribute",
            "--compute",
            "--watch",
            "--smkey",
            KEY,
            "--json",
        ])
        .args(args)
}

/// Waits until `p` has printed `text` (on either stream), at most
/// `within`; how long that took.
pub(crate) fn wait_for_output(p: &NodeProcess<'_>, text: &str, within: Duration) -> Duration {
    let since = Instant::now();
    while !p.stdout().contains(text) && !p.stderr().contains(text) {
        assert!(
            since.elapsed() < within,
            "{} never printed {text:?}:\n{}{}",
            p.label(),
            p.stdout(),
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    since.elapsed()
}

/// The first event the watch printed that changed tables.
pub(crate) fn first_change(p: &NodeProcess<'_>) -> serde_json::Value {
    events(p)
        .into_iter()
        .find(|e| e["changed"] == true)
        .expect("an event that changed tables")
}

/// Stops the watch (SIGTERM, which ends its leases); asserts it exited
/// successfully.
pub(crate) fn stop_cleanly(p: NodeProcess<'_>) {
    let status = p.stop(Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// The watch's event objects printed so far.
pub(crate) fn events(p: &NodeProcess<'_>) -> Vec<serde_json::Value> {
    p.stdout()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("event").is_some())
        .collect()
}
