//! `lsaquery --distribute --compute --watch` against OpenSM on simulated
//! fabrics: a link unplugged between switches makes OpenSM reroute and
//! change rates, and within the watch's interval every node answers
//! OpenSM's new records from its table — and goes on answering them with
//! OpenSM frozen; a quiet fabric costs the master no PathRecord, the
//! nodes under the watch's lease refreshing nothing themselves; under the
//! lease each node's own check also draws from the QoS tables it was
//! sent, and finds them wrong once OpenSM's policy changes; a local-sa
//! started after the fill is found by the watch's probe and filled; and
//! when the watch stops, the nodes take their tables back.

mod watching;

use std::time::{Duration, Instant};

use conformance::path_answers::{
    Ask, KEY, QOS_POLICY, answer_differences, answers, start, waiting_nodes,
};
use conformance::{LocalSa, Topology};

use self::watching::{
    Answers, NODES, WATCH_AT, events, first_change, host_lids, nodes_differing,
    nodes_follow_the_reroute, opensm_answers, program, slow_spine_tree, spawn_watch_alone,
    spawn_watch_taking_reports, stop_cleanly, upkeep, wait_for_output, watch, watch_on,
};

#[test]
fn a_reroute_reaches_every_node_within_the_interval_and_is_served_with_opensm_frozen() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let interval = 20;
    let w = watch(
        &fabric,
        &at,
        &["--watch-interval", &interval.to_string(), "--settle", "3"],
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let lids = host_lids(&fabric);
    let before = opensm_answers(&fabric, &lids);
    let differ = nodes_differing(&fabric, &before, &lids);
    assert!(differ.is_empty(), "after the fill:\n{}", differ.join("\n"));

    // leaf1's slow link to spine1 goes: OpenSM reroutes over spine2.
    let unplugged = Instant::now();
    fabric.unlink("leaf1", 5).unwrap();
    let within = Duration::from_secs(interval + 30);
    let (after, took) =
        nodes_follow_the_reroute(&fabric, &before, &lids, (unplugged, within), Some(&w));
    eprintln!("every node answered OpenSM's new paths {took:?} after the unplug");
    assert!(
        took < Duration::from_secs(interval),
        "within the interval ({took:?})"
    );
    let rates = |a: &Answers| {
        let mut r: Vec<u8> = a
            .values()
            .flat_map(|m| m.values().flatten().map(|r| r.rate().0))
            .collect();
        r.sort_unstable();
        r
    };
    assert_ne!(rates(&before), rates(&after), "the reroute changed rates");
    let changed = first_change(&w);
    assert!(
        changed["cause"]
            .as_str()
            .unwrap_or_default()
            .contains("trap 128"),
        "{changed}"
    );
    assert!(changed["pushed"]["nodes"].as_u64() >= Some(1), "{changed}");
    assert_eq!(changed["pushed"]["master_path_records"], 0, "{changed}");
    for sa in &nodes {
        assert_eq!(sa.counter("refreshes"), 0, "no node fetched its own table");
        assert!(sa.counter("lease_renewals") >= 1);
    }

    // The master frozen: the nodes answer from their tables.
    let differ = fabric.with_opensm_frozen(|| nodes_differing(&fabric, &after, &lids));
    assert!(
        differ.is_empty(),
        "with OpenSM frozen:\n{}",
        differ.join("\n")
    );

    // The watch stops: every lease ends, the nodes keep their own tables.
    stop_cleanly(w);
    for (sa, name) in nodes.iter().zip(NODES) {
        let line = upkeep(&fabric, name, sa);
        assert!(
            line.contains("upkeep       kept by this port"),
            "{name}: {line}"
        );
    }
}

#[test]
fn a_reroute_whose_report_the_watch_never_hears_reaches_every_node_through_the_master_s_activity() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let master: usize = (fabric
        .opensm_node()
        .trim_start_matches('h')
        .parse::<usize>())
    .expect("OpenSM on a host");
    assert!(master <= 4, "OpenSM on leaf1 ({})", fabric.opensm_node());
    // The watch on leaf3, whose link to the first spine goes down: the
    // master's Report of it is lost on the way (OpenSM sends it before it
    // reroutes), and the interval is far off.
    let at_node = "h9";
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let at = LocalSa::start(&fabric, at_node, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let w = watch_on(
        &fabric,
        at_node,
        &at,
        &[
            "--watch-interval",
            "300",
            "--settle",
            "3",
            "--watch-poll",
            "2",
        ],
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let lids = host_lids(&fabric);
    let before = opensm_answers(&fabric, &lids);
    assert!(nodes_differing(&fabric, &before, &lids).is_empty());
    // The master's light sweeps are learnt.
    std::thread::sleep(Duration::from_secs(10));

    let unplugged = Instant::now();
    fabric.unlink("leaf3", 5).unwrap();
    let within = Duration::from_secs(60);
    let (_, took) =
        nodes_follow_the_reroute(&fabric, &before, &lids, (unplugged, within), Some(&w));
    eprintln!("every node answered OpenSM's new paths {took:?} after the unplug");
    assert!(
        took < Duration::from_secs(30),
        "long before the interval ({took:?})"
    );
    assert_eq!(
        at.counter("change_notices"),
        0,
        "the watch's node heard the Report after all: this proves nothing"
    );
    let changed = first_change(&w);
    assert!(
        changed["cause"]
            .as_str()
            .unwrap_or_default()
            .contains("heavy sweep"),
        "{changed}"
    );
    stop_cleanly(w);
}

/// The watch started on `node` (OpenSM's: `None`), where no local-sa
/// runs, subscribes at the master itself; a leaf's uplink unplugged as
/// soon as it has filled the nodes: how long until every node answered
/// OpenSM's new paths, and the causes of the watch's events from the
/// unplug on.
fn a_watch_without_a_local_sa_follows_a_reroute(node: Option<&str>) -> (Duration, Vec<String>) {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let args = ["--watch-interval", "300", "--settle", "3", "-v"];
    let w = match node {
        Some(node) => spawn_watch_taking_reports(&fabric, node, &args),
        // Under ibsim one process a node takes its unsolicited MADs, on
        // this node OpenSM: the watch subscribes, its Reports go there.
        None => spawn_watch_alone(&fabric, fabric.opensm_node(), &args),
    };
    wait_for_output(&w, "\"filled\"", Duration::from_secs(120));
    assert!(
        w.stderr().contains("from the master SA itself"),
        "the watch subscribes at the master:\n{}",
        w.stderr()
    );
    let summary = (w.stdout().lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v.get("filled").is_some())
        .expect("the fill's summary");
    assert_eq!(
        (summary["nodes"].as_u64(), summary["failed"].as_u64()),
        (Some(NODES.len() as u64), Some(0)),
        "the watch's own node, without local-sa, is no node to fill: {summary}"
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let lids = host_lids(&fabric);
    let before = opensm_answers(&fabric, &lids);
    // Right after the fill: the watch followed the notices and counted
    // the master's activity before it read the fabric, so a change in its
    // first seconds is one it hears of or sees (no blind start).
    let earlier = events(&w).len();
    let unplugged = Instant::now();
    fabric.unlink("leaf1", 5).unwrap();
    let within = Duration::from_secs(60);
    let (_, took) =
        nodes_follow_the_reroute(&fabric, &before, &lids, (unplugged, within), Some(&w));
    // The events of the notices that came meanwhile follow their settle.
    std::thread::sleep(Duration::from_secs(6));
    let causes = events(&w)[earlier..]
        .iter()
        .map(|e| e["cause"].as_str().unwrap_or_default().to_owned())
        .collect();
    stop_cleanly(w);
    (took, causes)
}

/// Whether an event's cause names a notice the watch heard: its own, or
/// one more that came before the event began.
fn heard_a_notice(cause: &str) -> bool {
    cause.contains("trap ") || cause.contains("more notices")
}

#[test]
fn a_watch_on_a_node_without_a_local_sa_takes_the_master_s_reports_itself() {
    // h8: on the second leaf, away from the unplugged uplink (and not
    // OpenSM's node, h1).
    let (took, causes) = a_watch_without_a_local_sa_follows_a_reroute(Some("h8"));
    eprintln!(
        "with the watch on a node without local-sa, every node answered OpenSM's new paths {took:?} after the unplug ({causes:?})"
    );
    assert!(
        causes.iter().any(|c| heard_a_notice(c)),
        "the Reports it took: {causes:?}"
    );
    assert!(
        took < Duration::from_secs(30),
        "long before the interval ({took:?})"
    );
}

#[test]
fn the_watch_on_the_master_s_own_node_without_a_local_sa_brings_a_reroute_to_every_node() {
    // OpenSM's node: OpenSM is its port's SA agent, so no local-sa runs
    // there; OpenSM's SA does not take Reports (it registers Get, Set,
    // GetTable and Delete), so the watch subscribes at it. Under ibsim a
    // node's unsolicited MADs go to one process, OpenSM's, so the Report
    // never reaches the watch here: the polls of the master's activity
    // find the change.
    let (took, causes) = a_watch_without_a_local_sa_follows_a_reroute(None);
    eprintln!(
        "with the watch on the master's node, every node answered OpenSM's new paths {took:?} after the unplug ({causes:?})"
    );
    assert!(
        causes
            .first()
            .is_some_and(|c| c.contains("heavy sweep") || heard_a_notice(c)),
        "{causes:?}"
    );
    assert!(
        took < Duration::from_secs(30),
        "long before the interval ({took:?})"
    );
}

#[test]
fn a_quiet_fabric_costs_the_master_no_path_and_the_nodes_refresh_nothing() {
    let fabric = start(Topology::fat_tree(3, 4, 2), &[], &[]);
    // Nodes that would refresh every 5 s on their own.
    let mut nodes = waiting_nodes(&fabric, &NODES, &["--refresh-interval", "5"]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let w = watch(
        &fabric,
        &at,
        &["--watch-interval", "5", "--watch-renew", "5"],
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    std::thread::sleep(Duration::from_secs(30));
    let quiet = events(&w);
    assert!(quiet.len() >= 3, "an event per interval: {quiet:?}");
    for e in &quiet {
        assert_eq!(e["changed"], false, "{e}");
        assert_eq!(e["check"]["master_path_records"], 0, "{e}");
        assert_eq!(e["pushed"]["master_path_records"], 0, "{e}");
        assert!(e["read"]["records"].as_u64() > Some(0), "{e}");
    }
    for (sa, name) in nodes.iter().zip(NODES) {
        assert_eq!(sa.counter("refreshes"), 0, "{name}: no refresh of its own");
        assert_eq!(sa.counter("refreshes_loaded"), 1, "{name}");
        assert!(sa.counter("lease_renewals") >= 5, "{name}");
    }
}

#[test]
fn the_watch_outlives_a_master_restart_and_still_brings_a_reroute_to_every_node() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let mut w = watch(&fabric, &at, &["--watch-interval", "5", "--settle", "3"]);
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    // OpenSM goes away for more than an interval, then comes back.
    fabric.stop_opensm();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !events(&w).iter().any(|e| {
        e["failures"].as_array().is_some_and(|f| {
            f.iter()
                .any(|m| m.as_str().unwrap_or("").contains("master did not answer"))
        })
    }) {
        assert!(
            Instant::now() < deadline,
            "no event said the master did not answer:\n{}{}",
            w.stdout(),
            w.stderr()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(w.try_wait().is_none(), "the watch goes on: {}", w.stderr());
    fabric.start_opensm().unwrap_or_else(|e| panic!("{e}"));

    let lids = host_lids(&fabric);
    let before = opensm_answers(&fabric, &lids);
    fabric.unlink("leaf1", 5).unwrap();
    let within = Duration::from_secs(60);
    nodes_follow_the_reroute(&fabric, &before, &lids, (Instant::now(), within), Some(&w));
    for sa in &nodes {
        assert_eq!(
            sa.counter("refreshes"),
            0,
            "the nodes stayed under the lease"
        );
    }
}

#[test]
fn under_the_watch_s_lease_each_node_checks_its_qos_tables_against_opensm() {
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &["qos TRUE", "qos_policy_file qos-policy.conf"],
        &[("qos-policy.conf", QOS_POLICY)],
    );
    // Nodes that check what they hold every 5 s.
    let mut nodes = waiting_nodes(&fabric, &NODES, &["--check-interval", "5"]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let conf = fabric.opensm_dir().join("opensm.conf");
    let w = watch(
        &fabric,
        &at,
        &[
            "--watch-interval",
            "60",
            "--opensm-config",
            conf.to_str().unwrap(),
            "--service-id",
            "0x1060002",
            "--qos-class",
            "3",
        ],
    );
    for (sa, name) in nodes.iter_mut().zip(NODES) {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
        sa.wait_until("its QoS tables loaded", Duration::from_secs(30), |c| {
            c.get("qos_cache_loaded").is_some_and(|n| *n > 0)
        })
        .unwrap_or_else(|e| panic!("{e}"));
        // Two checks at least, each drawing from the loaded QoS tables
        // (OpenSM asked at their keys), all agreeing.
        sa.wait_until("two checks passed", Duration::from_secs(60), |c| {
            c.get("checks_passed").is_some_and(|n| *n >= 2)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sa.counter("checks_failed"), 0, "{name}: {}", sa.stderr());
        assert!(sa.counter("qos_cache_entries") > 0, "{name}: still held");
        assert_eq!(sa.counter("refreshes"), 0, "{name}: no refresh of its own");
    }

    // OpenSM's policy changes under the watch (QoS class 3 now on SL 1)
    // and OpenSM re-reads it at the heavy sweep a SIGHUP starts: the
    // tables the nodes hold at class 3 are wrong. The watch sees the
    // sweep and tells every node to forget the QoS answers it kept (or a
    // node's own check finds the difference first and forgets them), and
    // each answers class 3 as OpenSM now does.
    let policy = fabric.opensm_dir().join("qos-policy.conf");
    let changed = QOS_POLICY.replace("name: slow\n        sl: 3", "name: slow\n        sl: 1");
    assert_ne!(changed, QOS_POLICY);
    std::fs::write(&policy, changed).unwrap();
    fabric.hang_up_opensm();
    let lids = host_lids(&fabric);
    for (sa, name) in nodes.iter_mut().zip(NODES) {
        // The watch saw the sweep and told every node to forget its QoS
        // answers, or the node's own check found the difference first.
        sa.wait_until("its QoS answers forgotten", Duration::from_secs(90), |c| {
            c.get("checks_failed").is_some_and(|n| *n >= 1)
                || c.get("qos_forgotten").is_some_and(|n| *n >= 1)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let lid = [fabric.node(name).unwrap().port().unwrap().lid];
        let at_class = |sa_lid| Ask {
            sa_lid,
            lids: &lids,
            sources: Some(&lid),
            pkey: None,
            service_id: None,
            qos_class: Some(3),
        };
        let sm_lid = fabric.node(name).unwrap().port().unwrap().sm_lid;
        let theirs = answers(&fabric, name, program(), at_class(sm_lid));
        assert!(
            theirs.values().flatten().count() >= lids.len() - 1
                && theirs.values().flatten().all(|r| r.sl() == 1),
            "{name}: OpenSM applies the new policy: {theirs:?}"
        );
        let ours = answers(&fabric, name, program(), at_class(lid[0]));
        let diff = answer_differences(&ours, &theirs);
        assert!(diff.is_empty(), "{name}: {}", diff.join("\n"));
    }
    assert!(w.stdout().contains("\"filled\""));
}

#[test]
fn a_local_sa_started_after_the_fill_is_found_by_the_watch_s_probe_and_filled() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let (late, early) = NODES.split_last().expect("nodes");
    let mut nodes = waiting_nodes(&fabric, early, &[]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    // Every tenth interval the watch asks the ports it does not know
    // whether they run local-sa.
    let w = watch(&fabric, &at, &["--watch-interval", "2", "--settle", "1"]);
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let filled = events(&w).len();

    let mut late_sa = waiting_nodes(&fabric, &[late], &[]).remove(0);
    late_sa
        .wait_until(
            "its tables pushed by the watch",
            Duration::from_secs(90),
            |c| c.get("refreshes_loaded").is_some_and(|n| *n >= 1),
        )
        .unwrap_or_else(|e| panic!("{e}\nthe watch's output:\n{}", w.stdout()));
    assert_eq!(late_sa.counter("refreshes"), 0, "no refresh of its own");
    let found = events(&w)
        .into_iter()
        .skip(filled)
        .find(|e| e["new_nodes"].as_u64() >= Some(1))
        .unwrap_or_else(|| panic!("no event found a new node:\n{}", w.stdout()));
    assert_eq!(found["new_nodes"], 1, "{found}");
    assert_eq!(found["gone_nodes"], 0, "{found}");

    let lids = host_lids(&fabric);
    let theirs = opensm_answers(&fabric, &lids);
    let differ = nodes_differing(&fabric, &theirs, &lids);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let line = upkeep(&fabric, late, &late_sa);
    assert!(
        line.contains("kept by the distributor at LID"),
        "{late}: {line}"
    );
    stop_cleanly(w);
}
