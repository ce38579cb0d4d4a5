//! OpenSM changes its mind: an administrator edits its QoS policy or its
//! partitions and tells it (SIGHUP), and OpenSM answers otherwise from
//! the heavy sweep that follows. A cache that claims to answer as the
//! master does must follow within a minute, and say what changed.
//!
//! Against OpenSM under ibsim, each change in turn — a level's MTU, a
//! level's SL, rate and packet lifetime, a port group's members, a new
//! partition, a partition removed — with a watch that reads OpenSM's files
//! (`--opensm-config`) and keeps three nodes; and the same policy change
//! on nodes that keep their own tables. How long each took is printed
//! (BENCHMARKS.md).

mod watching;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use conformance::path_answers::{Ask, KEY, answer_differences, answers, start, waiting_nodes};
use conformance::{LocalSa, NodeProcess, SimulatedFabric, Topology};
use mad_codec::PathRecord;

use self::watching::{NODES, WATCH_AT, events, host_lids, lid, program, watch};

/// The policy: a default level, and a level for the sources of port
/// group "pinned" (h2's port), whose GUID the test fills in.
const POLICY: &str = "\
port-groups
    port-group
        name: pinned
        port-guid: PINNED
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: pinned-level
        sl: 1
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        source: pinned
        qos-level-name: pinned-level
    end-qos-match-rule
end-qos-match-rules
";

const PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\n";

/// A partition added, with an SL of its own.
const WITH_P3: &str = "Default=0x7fff, ipoib : ALL=full ;\nP3=0x8003, sl=3 : ALL=full ;\n";

/// A QoS fabric whose OpenSM reads `POLICY` and `PARTITIONS`.
fn fabric() -> SimulatedFabric {
    start(
        Topology::fat_tree(3, 4, 2),
        &[
            "qos TRUE",
            "qos_policy_file qos-policy.conf",
            "partition_config_file partitions.conf",
        ],
        &[("qos-policy.conf", POLICY), ("partitions.conf", PARTITIONS)],
    )
}

/// h2's port GUID, as the policy writes it.
fn guid_of(fabric: &SimulatedFabric, name: &str) -> String {
    let port = fabric.node(name).unwrap().port().unwrap();
    format!("{:#018x}", port.guid)
}

/// Writes OpenSM's `file` and tells it (SIGHUP).
fn edit_and_hang_up(fabric: &SimulatedFabric, file: &str, text: &str) -> Instant {
    std::fs::write(fabric.opensm_dir().join(file), text).unwrap();
    fabric.hang_up_opensm();
    Instant::now()
}

/// Answers by node, then by pair.
type ByNode = HashMap<&'static str, HashMap<(u16, u16), Option<PathRecord>>>;

/// What the SA at `sa(name)` answers, asked from `from(name)`, for each
/// node's pairs (naming `pkey` if given).
fn asked(
    fabric: &SimulatedFabric,
    pkey: Option<u16>,
    from: impl Fn(&'static str) -> (String, u16),
) -> ByNode {
    let lids = host_lids(fabric);
    NODES
        .iter()
        .map(|name| {
            let me = [lid(fabric, name)];
            let (node, sa_lid) = from(name);
            let ask = Ask {
                sa_lid,
                lids: &lids,
                sources: Some(&me),
                pkey,
                service_id: None,
                qos_class: None,
            };
            (*name, answers(fabric, &node, program(), ask))
        })
        .collect()
}

/// What OpenSM answers for each node's pairs.
fn opensm(fabric: &SimulatedFabric, pkey: Option<u16>) -> ByNode {
    let at = fabric.opensm_node().to_owned();
    let sm = lid(fabric, &at);
    asked(fabric, pkey, |_| (at.clone(), sm))
}

/// What OpenSM answers for each node's pairs, and where each node's
/// local-sa answers otherwise.
fn compared(fabric: &SimulatedFabric, pkey: Option<u16>) -> (ByNode, Vec<String>) {
    let theirs = opensm(fabric, pkey);
    let ours = asked(fabric, pkey, |name| (name.to_owned(), lid(fabric, name)));
    let mut differ = Vec::new();
    for name in NODES {
        differ.extend(
            answer_differences(&ours[name], &theirs[name])
                .into_iter()
                .map(|d| format!("{name}: {d}")),
        );
    }
    (theirs, differ)
}

/// Waits until OpenSM answers otherwise than `before` and every node
/// answers as OpenSM; how long after `since` that was. Fails after a
/// minute, showing what differs and the watch's output (if one runs).
fn until_followed(
    fabric: &SimulatedFabric,
    (before, pkey): (&ByNode, Option<u16>),
    since: Instant,
    w: Option<&NodeProcess<'_>>,
) -> (ByNode, Duration) {
    until_followed_within(fabric, (before, pkey), (since, Duration::from_secs(60)), w)
}

/// [`until_followed`], failing after `within`.
fn until_followed_within(
    fabric: &SimulatedFabric,
    (before, pkey): (&ByNode, Option<u16>),
    (since, within): (Instant, Duration),
    w: Option<&NodeProcess<'_>>,
) -> (ByNode, Duration) {
    loop {
        let (now, differ) = compared(fabric, pkey);
        if now != *before && differ.is_empty() {
            return (now, since.elapsed());
        }
        assert!(
            since.elapsed() < within,
            "the nodes never answered as OpenSM (it changed: {}):\n{}\nwatch:\n{}{}",
            now != *before,
            differ.join("\n"),
            w.map(NodeProcess::stdout).unwrap_or_default(),
            w.map(NodeProcess::stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The records of `answers` by field, for an assertion's sake.
fn all<T: PartialEq + std::fmt::Debug>(
    answers: &ByNode,
    field: impl Fn(&PathRecord) -> T,
) -> Vec<T> {
    let mut v: Vec<T> = answers
        .values()
        .flat_map(|m| m.values().flatten().map(&field))
        .collect();
    v.dedup();
    v
}

/// OpenSM's policy with h2's port pinned, once OpenSM answers with it.
fn pinned_policy(fabric: &SimulatedFabric) -> String {
    let policy = POLICY.replace("PINNED", &guid_of(fabric, "h2"));
    let since = edit_and_hang_up(fabric, "qos-policy.conf", &policy);
    while !all(&opensm(fabric, None), PathRecord::sl).contains(&1) {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "OpenSM takes the policy"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    policy
}

/// Five changes of OpenSM's mind in turn, each edited and SIGHUP'd once
/// the nodes answer as OpenSM: how long until they answered as OpenSM
/// after each (at most a minute each).
fn five_changes(
    fabric: &SimulatedFabric,
    policy: &str,
    w: Option<&NodeProcess<'_>>,
) -> Vec<(&'static str, Duration)> {
    let (before, differ) = compared(fabric, None);
    assert!(differ.is_empty(), "before:\n{}", differ.join("\n"));
    let mut took = Vec::new();

    // 1. The default level's MTU limited to 512.
    let policy = policy.replace(
        "name: DEFAULT\n        sl: 0",
        "name: DEFAULT\n        sl: 0\n        mtu-limit: 2",
    );
    let since = edit_and_hang_up(fabric, "qos-policy.conf", &policy);
    let (after, t) = until_followed(fabric, (&before, None), since, w);
    took.push(("a level's MTU", t));
    assert!(
        all(&after, |r| r.mtu().0).contains(&2),
        "OpenSM answers MTU 512"
    );

    // 2. The pinned group's level: another SL, a rate limit, a packet
    // lifetime.
    let policy = policy.replace(
        "name: pinned-level\n        sl: 1",
        "name: pinned-level\n        sl: 2\n        rate-limit: 3\n        packet-life: 12",
    );
    let since = edit_and_hang_up(fabric, "qos-policy.conf", &policy);
    let (after, t) = until_followed(fabric, (&after, None), since, w);
    took.push(("a level's SL, rate and packet life", t));
    assert!(all(&after, PathRecord::sl).contains(&2));

    // 3. The group's members: h5's port joins it.
    let pinned = guid_of(fabric, "h2");
    let both = format!("{pinned},{}", guid_of(fabric, "h5"));
    let policy = policy.replace(
        &format!("port-guid: {pinned}"),
        &format!("port-guid: {both}"),
    );
    let since = edit_and_hang_up(fabric, "qos-policy.conf", &policy);
    let (_, t) = until_followed(fabric, (&after, None), since, w);
    took.push(("a port group's members", t));

    // 4. A new partition with an SL of its own, asked by its P_Key.
    let (before_p3, _) = compared(fabric, Some(0x8003));
    let since = edit_and_hang_up(fabric, "partitions.conf", WITH_P3);
    let (in_p3, t) = until_followed(fabric, (&before_p3, Some(0x8003)), since, w);
    took.push(("a new partition", t));
    assert!(
        in_p3.values().all(|m| m.values().any(Option::is_some)),
        "paths in the new partition"
    );

    // 5. That partition removed again.
    let since = edit_and_hang_up(fabric, "partitions.conf", PARTITIONS);
    let (gone, t) = until_followed(fabric, (&in_p3, Some(0x8003)), since, w);
    took.push(("a partition removed", t));
    assert!(gone.values().all(|m| m.values().all(Option::is_none)));
    took
}

#[test]
fn every_policy_and_partition_change_reaches_the_watched_nodes_within_a_minute() {
    let fabric = fabric();
    let policy = pinned_policy(&fabric);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let at =
        LocalSa::start(&fabric, WATCH_AT, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let conf = fabric.opensm_dir().join("opensm.conf");
    let w = watch(
        &fabric,
        &at,
        &[
            "--watch-interval",
            "300",
            "--settle",
            "3",
            "--opensm-config",
            conf.to_str().unwrap(),
        ],
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let took = five_changes(&fabric, &policy, Some(&w));
    for (what, t) in &took {
        eprintln!("{what}: every watched node answered as OpenSM {t:?} after the SIGHUP");
    }
    let said: Vec<String> = events(&w)
        .iter()
        .flat_map(|e| {
            e["opensm_config_changes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    for expected in [
        "QoS level DEFAULT: mtu-limit none -> 2",
        "QoS level pinned-level: sl 1 -> 2, rate-limit none -> 3, packet-life none -> 12",
        "port group pinned: members",
        "partition P3 (0x0003) added (sl 3)",
        "partition P3 (0x0003) removed",
    ] {
        assert!(
            said.iter().any(|s| s == expected),
            "{expected:?} not in {said:?}"
        );
    }
    for e in events(&w) {
        assert_eq!(
            e["pushed"]["master_path_records"], 0,
            "computed from OpenSM's files, not taken from the master: {e}"
        );
    }
    for (sa, name) in nodes.iter().zip(NODES) {
        assert_eq!(sa.counter("refreshes"), 0, "{name}: no refresh of its own");
    }
}

#[test]
fn a_policy_change_in_a_node_s_first_seconds_reaches_nodes_that_keep_their_own_tables() {
    // No watch: each node counts the master's activity before its first
    // table, so the SIGHUP's sweep right after its start is seen (by its
    // polls, every 30 s by default), its tables are in doubt from then,
    // and it refreshes.
    let fabric = fabric();
    let mut nodes: Vec<LocalSa<'_>> = (NODES.iter())
        .map(|n| LocalSa::start(&fabric, n, &[]).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let (before, differ) = compared(&fabric, None);
    assert!(differ.is_empty(), "at start:\n{}", differ.join("\n"));
    let policy = POLICY.replace("PINNED", &guid_of(&fabric, "h2")).replace(
        "name: DEFAULT\n        sl: 0",
        "name: DEFAULT\n        sl: 0\n        mtu-limit: 2",
    );
    let since = edit_and_hang_up(&fabric, "qos-policy.conf", &policy);
    let within = Duration::from_secs(120);
    let (after, took) = until_followed_within(&fabric, (&before, None), (since, within), None);
    eprintln!(
        "nodes keeping their own tables (--sweep-poll 30) answered as OpenSM {took:?} after the SIGHUP"
    );
    assert!(all(&after, |r| r.mtu().0).contains(&2));
    for (sa, name) in nodes.iter_mut().zip(NODES) {
        sa.wait_until(
            "the sweep seen and the doubt said",
            Duration::from_secs(15),
            |c| {
                c.get("sweeps_seen").is_some_and(|n| *n >= 1)
                    && c.get("doubts").is_some_and(|n| *n >= 1)
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The node GUID of `name`'s adapter, as OpenSM's SA gives it (a node
/// name map names nodes by it).
fn node_guid(fabric: &SimulatedFabric, name: &str) -> u64 {
    let lid = lid(fabric, name).to_string();
    let out = fabric.node(name).unwrap().saquery(["NR", &lid]).unwrap();
    let line = (out.stdout.lines())
        .find(|l| l.trim_start().starts_with("node_guid"))
        .unwrap_or_else(|| panic!("no node_guid in {}{}", out.stdout, out.stderr));
    let hex = line.rsplit("0x").next().unwrap().trim();
    u64::from_str_radix(hex, 16).unwrap()
}

/// Waits until OpenSM gives h2's paths SL `sl` (it took the policy, or
/// dropped it).
fn until_opensm_gives_h2_sl(fabric: &SimulatedFabric, sl: u8, since: Instant) {
    loop {
        let sls = all(&opensm(fabric, None), |r| (r.slid(), r.sl()));
        let h2 = lid(fabric, "h2");
        if sls.iter().any(|(s, l)| *s == h2 && *l == sl) {
            return;
        }
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "OpenSM never gave h2's paths SL {sl}: {sls:?}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn a_policy_on_opensm_s_command_line_is_caught_by_a_check_that_sees_every_port() {
    // OpenSM takes its policy from -Y on its command line; the
    // configuration the distributor reads names none, so local-sa knows no
    // level. Ten pairs drawn: every port is a source and a destination
    // all the same, so h2's level is caught and the default tables come
    // from the master.
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .opensm_config(["qos TRUE", &format!("sa_key {KEY}")])
        .opensm_file("cli-policy.conf", POLICY)
        .opensm_args(["-Y", "cli-policy.conf"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let policy = POLICY.replace("PINNED", &guid_of(&fabric, "h2"));
    let since = edit_and_hang_up(&fabric, "cli-policy.conf", &policy);
    until_opensm_gives_h2_sl(&fabric, 1, since);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let conf = fabric.opensm_dir().join("opensm.conf");
    let out = fabric
        .node("h9")
        .unwrap()
        .lsaquery()
        .args(["--distribute", "--compute", "--smkey", KEY, "--json"])
        .args(["--check-sample", "10", "--opensm-config"])
        .arg(&conf)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    let summary: serde_json::Value = (out.stdout.lines())
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("the summary");
    let because = summary["compute"]["from_master_because"]
        .as_str()
        .unwrap_or_default();
    assert!(because.contains("sl"), "the level's SL caught: {summary}");
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let (_, differ) = compared(&fabric, None);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn port_names_are_looked_up_as_opensm_knows_the_nodes_and_a_policy_it_drops_is_dropped() {
    // h2 is "pinned host" in OpenSM's node name map: a port group naming
    // it quoted holds it, one naming it unquoted holds nothing (OpenSM's
    // lexer drops the blank); its level's packet-life 70 spills into the
    // selector. Every pair computed equals OpenSM's.
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &[
            "qos TRUE",
            "qos_policy_file qos-policy.conf",
            "node_name_map_name names.map",
        ],
        &[("qos-policy.conf", PARTITIONS)],
    );
    let map = format!("{:#018x} \"pinned host\"\n", node_guid(&fabric, "h2"));
    std::fs::write(fabric.opensm_dir().join("names.map"), map).unwrap();
    // OpenSM opens its node name map when it starts (the fabric's files
    // are written again then: the map is not one of them).
    fabric.restart_opensm().unwrap_or_else(|e| panic!("{e}"));
    let named = POLICY
        .replace("port-guid: PINNED", "port-name: \"pinned host\"/P1")
        .replace(
            "name: pinned-level\n        sl: 1",
            "name: pinned-level\n        sl: 1\n        packet-life: 70",
        )
        .replace(
            "end-port-groups",
            "    port-group\n        name: unquoted\n        port-name: pinned host/P1\n    \
             end-port-group\nend-port-groups",
        )
        .replace(
            "end-qos-match-rules",
            "    qos-match-rule\n        destination: unquoted\n        qos-level-name: pinned-level\n    \
             end-qos-match-rule\nend-qos-match-rules",
        );
    let since = edit_and_hang_up(&fabric, "qos-policy.conf", &named);
    until_opensm_gives_h2_sl(&fabric, 1, since);
    let conf = fabric.opensm_dir().join("opensm.conf");
    let compute = || {
        fabric
            .node("h9")
            .unwrap()
            .lsaquery()
            .args([
                "--compute",
                "--smkey",
                KEY,
                "--check-sample",
                "all",
                "--opensm-config",
            ])
            .arg(&conf)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let out = compute();
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("all equal"), "{}", out.stdout);
    assert!(out.stdout.contains("1 node names from"), "{}", out.stdout);
    let lives = all(&opensm(&fabric, None), |r| {
        (r.packet_life_selector(), r.packet_life())
    });
    assert!(
        lives.contains(&(mad_codec::Selector::from_bits(3), 6)),
        "OpenSM's own byte: {lives:?}"
    );
    // An IPoIB rule whose partition OpenSM does not have: it drops the
    // whole policy, and so do the computed tables.
    let dropped = format!("{named}qos-ulps\n    ipoib, pkey 0x0005 : 3\nend-qos-ulps\n");
    let since = edit_and_hang_up(&fabric, "qos-policy.conf", &dropped);
    until_opensm_gives_h2_sl(&fabric, 0, since);
    let out = compute();
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("all equal"), "{}", out.stdout);
    assert!(
        out.stderr.contains("partition doesn't exist")
            && out.stderr.contains("drops the whole policy"),
        "{}",
        out.stderr
    );
}

#[test]
fn every_policy_and_partition_change_reaches_nodes_that_keep_their_own_tables() {
    // No watch: each node sees each SIGHUP's sweep in the master's
    // activity (polled every 5 s here), doubts its tables from the settle
    // on, and refreshes.
    let fabric = fabric();
    let policy = pinned_policy(&fabric);
    let args = ["--sweep-poll", "5", "--change-settle", "3"];
    let nodes: Vec<LocalSa<'_>> = (NODES.iter())
        .map(|n| LocalSa::start(&fabric, n, &args).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    // The master's light sweeps learnt.
    std::thread::sleep(Duration::from_secs(20));
    let took = five_changes(&fabric, &policy, None);
    for (what, t) in &took {
        eprintln!(
            "{what}: every node keeping its own tables (--sweep-poll 5) answered as OpenSM {t:?} after the SIGHUP"
        );
    }
    // Found by the master's activity, not by a refresh (600 s away): two
    // SIGHUPs whose sweeps fall between two polls are one rise, so a node
    // may count fewer than five.
    for (sa, name) in nodes.iter().zip(NODES) {
        assert!(sa.counter("sweeps_seen") >= 1, "{name}: the sweeps seen");
    }
}
