//! Two watches, one owner, as OpenSM's standby SMs, against OpenSM on a
//! simulated fat tree: the second `lsaquery --distribute --compute
//! --watch` stands by while the first renews the nodes' leases; when the
//! first freezes (SIGSTOP) the nodes take it as gone after two renewals,
//! the standby takes over within 30 s and brings the next reroute to
//! every node; the frozen one, back, is refused by every node and stands
//! by, pushing nothing. With every watch gone, a node does not wait its
//! lease out: it checks its tables at once and keeps them itself, so a
//! reroute made as the watch died reaches it without one.

mod watching;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use conformance::path_answers::{KEY, start, waiting_nodes};
use conformance::{LocalSa, NodeProcess, SimulatedFabric};

use self::watching::{
    NODES, WATCH_AT, host_lids, lid, nodes_follow_the_reroute, opensm_answers, slow_spine_tree,
    spawn_watch, stop_cleanly, upkeep, wait_for_output, watch,
};

/// Where the second watch runs, with a local-sa of its own.
const STANDBY_AT: &str = "h7";

/// The fabric's nodes filled by a first watch on [`WATCH_AT`], a second
/// standing by on [`STANDBY_AT`] (each with a local-sa of its own), and
/// every node's lease the first's.
struct TwoWatches<'f> {
    nodes: Vec<LocalSa<'f>>,
    first: NodeProcess<'f>,
    standby: NodeProcess<'f>,
    first_lid: u16,
    standby_lid: u16,
    /// Each watch's --metrics-file.
    first_metrics: PathBuf,
    standby_metrics: PathBuf,
    _sas: [LocalSa<'f>; 2],
}

fn two_watches(fabric: &SimulatedFabric) -> TwoWatches<'_> {
    let mut nodes = waiting_nodes(fabric, &NODES, &[]);
    let at = LocalSa::start(fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let second =
        LocalSa::start(fabric, STANDBY_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    // Default renewals (8 s); changes come by notices and the polls
    // (whose every count the log says, for a failure's message).
    let args = ["--watch-interval", "300", "--settle", "3", "-vv"];
    let first_metrics = fabric.dir().join("first-watch.prom");
    let standby_metrics = fabric.dir().join("standby-watch.prom");
    let with_metrics = |file: &Path| {
        let mut a: Vec<String> = args.iter().map(ToString::to_string).collect();
        a.extend(["--metrics-file".to_owned(), file.display().to_string()]);
        a
    };
    let first_args = with_metrics(&first_metrics);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let first = watch(fabric, &at, &first_args);
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let standby_args = with_metrics(&standby_metrics);
    let standby_args: Vec<&str> = standby_args.iter().map(String::as_str).collect();
    let standby = spawn_watch(fabric, STANDBY_AT, &second, &standby_args);
    wait_for_output(&standby, "\"role\":\"standby\"", Duration::from_secs(60));
    assert_eq!(role_in(&first_metrics), "active");
    assert_eq!(role_in(&standby_metrics), "standby");
    let w = TwoWatches {
        nodes,
        first,
        standby,
        first_lid: lid(fabric, WATCH_AT),
        standby_lid: lid(fabric, STANDBY_AT),
        first_metrics,
        standby_metrics,
        _sas: [at, second],
    };
    w.kept_by(fabric, w.first_lid);
    w
}

impl TwoWatches<'_> {
    /// Asserts that every node's lease is the watch's at `lid`.
    fn kept_by(&self, fabric: &SimulatedFabric, lid: u16) {
        for (sa, name) in self.nodes.iter().zip(NODES) {
            let line = upkeep(fabric, name, sa);
            assert!(line.contains(&format!("LID {lid} ")), "{name}: {line}");
        }
    }

    /// Waits for the standby to take over after `what` happened to the
    /// active watch; asserts within 30 s, and that it holds every lease.
    fn taken_over(&self, fabric: &SimulatedFabric, what: &str) {
        let took = wait_for_output(&self.standby, "\"filled\"", Duration::from_secs(60));
        eprintln!(
            "the standby took over and filled every node {took:?} after the active watch {what}"
        );
        assert!(took < Duration::from_secs(30), "within 30 s ({took:?})");
        assert!(self.standby.stdout().contains("\"role\":\"active\""));
        assert_eq!(role_in(&self.standby_metrics), "active");
        self.kept_by(fabric, self.standby_lid);
        for (sa, name) in self.nodes.iter().zip(NODES) {
            // Between its lease's end and the standby's fill a node keeps
            // its own tables: on this small fabric its refresh window is
            // short enough for one refresh.
            assert!(sa.counter("refreshes") <= 1, "{name}: refreshed again");
        }
    }

    /// A reroute reaches every node through the watch now active.
    fn reroute_reaches_every_node(&self, fabric: &SimulatedFabric) {
        let lids = host_lids(fabric);
        let before = opensm_answers(fabric, &lids);
        fabric.unlink("leaf1", 5).unwrap();
        let within = Duration::from_secs(60);
        let (_, took) = nodes_follow_the_reroute(
            fabric,
            &before,
            &lids,
            (Instant::now(), within),
            Some(&self.standby),
        );
        eprintln!(
            "after the takeover, every node answered OpenSM's new paths {took:?} after the unplug"
        );
    }

    /// The first watch, back, was fenced off and stands by; the nodes
    /// stay the new owner's.
    fn first_fenced_off(&mut self, fabric: &SimulatedFabric) {
        wait_for_output(&self.first, "\"role\":\"fenced\"", Duration::from_secs(60));
        wait_for_output(&self.first, "\"role\":\"standby\"", Duration::from_secs(60));
        assert!(self.first.try_wait().is_none(), "it stays, standing by");
        // Said fenced, not standby, until it is active again: an alert
        // sees that a watch was cut off.
        assert_eq!(role_in(&self.first_metrics), "fenced");
        assert_eq!(role_in(&self.standby_metrics), "active");
        self.kept_by(fabric, self.standby_lid);
        // The counters file is written every few seconds.
        let deadline = Instant::now() + Duration::from_secs(20);
        for (sa, name) in self.nodes.iter().zip(NODES) {
            while sa.counter("loads_fenced") == 0 {
                assert!(
                    Instant::now() < deadline,
                    "{name} never refused the old owner"
                );
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

/// The role a watch's --metrics-file gives 1 (`lsaquery_watch_role`).
fn role_in(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let roles: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("lsaquery_watch_role{role=\""))
        .filter_map(|l| l.strip_suffix("\"} 1"))
        .collect();
    assert_eq!(roles.len(), 1, "one role at a time:\n{text}");
    roles[0].to_owned()
}

#[test]
fn a_standby_takes_over_from_a_frozen_watch_which_comes_back_fenced_off() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut w = two_watches(&fabric);
    // Two renewals and more: the standby stays standing by.
    std::thread::sleep(Duration::from_secs(20));
    assert!(
        !w.standby.stdout().contains("\"filled\""),
        "the standby filled while the first watch renewed:\n{}{}",
        w.standby.stdout(),
        w.standby.stderr()
    );
    w.kept_by(&fabric, w.first_lid);

    w.first.signal("STOP");
    w.taken_over(&fabric, "froze");
    w.reroute_reaches_every_node(&fabric);
    w.first.signal("CONT");
    w.first_fenced_off(&fabric);
    stop_cleanly(w.standby);
    stop_cleanly(w.first);
}

#[test]
fn a_standby_takes_over_from_a_watch_whose_port_went_down_which_comes_back_fenced_off() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut w = two_watches(&fabric);
    fabric.unlink(WATCH_AT, 1).unwrap();
    w.taken_over(&fabric, "lost its port");
    fabric.relink(WATCH_AT, 1).unwrap();
    w.first_fenced_off(&fabric);
    w.reroute_reaches_every_node(&fabric);
}

#[test]
fn with_both_watches_killed_a_node_checks_at_once_and_a_reroute_reaches_it_long_before_its_lease_ends()
 {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let w = two_watches(&fabric);
    w.first.signal("KILL");
    w.taken_over(&fabric, "was killed");
    // Two renewals at least, so that the nodes know the new watch's beat.
    std::thread::sleep(Duration::from_secs(20));
    let lids = host_lids(&fabric);
    let before = opensm_answers(&fabric, &lids);
    // The last watch dies as a link goes down: nobody pushes the reroute,
    // and the leases (a default of 15 min) have long to run.
    w.standby.signal("KILL");
    let died = Instant::now();
    fabric.unlink("leaf1", 5).unwrap();
    let within = Duration::from_secs(90);
    let (_, took) = nodes_follow_the_reroute(&fabric, &before, &lids, (died, within), None);
    eprintln!(
        "with both watches dead, every node answered OpenSM's new paths {took:?} after the last died"
    );
    assert!(took < Duration::from_secs(60), "within 60 s ({took:?})");
    for (sa, name) in w.nodes.iter().zip(NODES) {
        let line = upkeep(&fabric, name, sa);
        assert!(line.contains("kept by this port"), "{name}: {line}");
        assert!(sa.counter("leases_lapsed") >= 1, "{name}");
    }
}
