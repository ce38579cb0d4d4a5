//! The umad transport against OpenSM on a simulated 100-host fat tree:
//! lsaquery sends ClassPortInfo, PathRecord and NodeRecord queries through
//! it from a simulated node, and what it decodes must equal, field by
//! field, what saquery prints for the same query from the same node.

use conformance::saquery::{PrintedRecord, parse_printed_records};
use conformance::{Node, RunOutput, SimulatedFabric, Topology};

fn fabric() -> SimulatedFabric {
    // 10 leaves x 10 hosts, 4 spines: 100 hosts, OpenSM on h1.
    SimulatedFabric::builder(Topology::fat_tree(10, 10, 4))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn lsaquery(node: &Node<'_>, args: &[String]) -> RunOutput {
    // Aimed at OpenSM (the master) unless the test names an SA.
    let aim: &[&str] = if args.iter().any(|a| a == "--sa-lid") {
        &[]
    } else {
        &["--master"]
    };
    node.lsaquery()
        .args(aim)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn saquery(node: &Node<'_>, args: &[String]) -> RunOutput {
    node.saquery(args).unwrap_or_else(|e| panic!("{e}"))
}

fn records(out: &RunOutput, what: &str) -> Vec<PrintedRecord> {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        out.stdout,
        out.stderr
    );
    parse_printed_records(&out.stdout)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn class_port_info_equals_saquery() {
    let fabric = fabric();
    let node = fabric.node("h57").unwrap();
    let ours = records(&lsaquery(&node, &args(&["-c"])), "lsaquery -c");
    let theirs = records(&saquery(&node, &args(&["-c"])), "saquery -c");
    assert_eq!(ours.len(), 1);
    assert_eq!(ours, theirs);
    assert_eq!(ours[0].get("Capability mask"), Some("0x2602"));
}

#[test]
fn path_record_get_equals_saquery() {
    let fabric = fabric();
    let here = fabric.node("h57").unwrap();
    let me = here.port().unwrap();
    // Far (another leaf), near (same leaf), to the SM, and towards us.
    let far = fabric.node("h12").unwrap().port().unwrap();
    let near = fabric.node("h58").unwrap().port().unwrap();
    for (src, dst) in [
        (me.lid, far.lid),
        (me.lid, near.lid),
        (me.lid, me.sm_lid),
        (far.lid, me.lid),
    ] {
        let pair = format!("{src}:{dst}");
        let ours = records(
            &lsaquery(&here, &args(&["--src-to-dst", &pair, "--method", "get"])),
            "lsaquery",
        );
        let theirs = records(&saquery(&here, &args(&["--src-to-dst", &pair])), "saquery");
        assert_eq!(ours.len(), 1, "{pair}: a Get returns one record");
        assert_eq!(ours, theirs, "{pair}");
        assert_eq!(ours[0].number("slid"), Some(u64::from(src)));
        assert_eq!(ours[0].number("dlid"), Some(u64::from(dst)));
    }
}

#[test]
fn node_record_get_equals_saquery() {
    let fabric = fabric();
    let here = fabric.node("h23").unwrap();
    for node in ["h1", "h23", "h100"] {
        let lid = fabric.node(node).unwrap().port().unwrap().lid.to_string();
        let ours = records(
            &lsaquery(&here, &args(&["NR", &lid, "--method", "get"])),
            "lsaquery NR",
        );
        let theirs = records(&saquery(&here, &args(&["NR", &lid])), "saquery NR");
        assert_eq!(ours, theirs, "NodeRecord of {node}");
        assert_eq!(ours[0].get("NodeDescription"), Some(node));
    }
}

#[test]
fn json_output_carries_the_same_values() {
    let fabric = fabric();
    let here = fabric.node("h7").unwrap();
    let me = here.port().unwrap();
    let pair = format!("{}:{}", me.lid, me.sm_lid);
    let out = lsaquery(
        &here,
        &args(&["--src-to-dst", &pair, "--method", "get", "--json"]),
    );
    assert!(out.status.success(), "{}", out.stderr);
    let line = out.stdout.trim();
    assert!(
        line.starts_with("{\"schema\":1,\"record\":\"PathRecord\""),
        "{line}"
    );
    assert!(line.contains(&format!("\"slid\":{}", me.lid)), "{line}");
    assert!(line.contains(&format!("\"dlid\":{}", me.sm_lid)), "{line}");
    assert_eq!(out.stdout.lines().count(), 1);
}

#[test]
fn error_statuses_are_reported_with_exit_status_1() {
    let fabric = fabric();
    let here = fabric.node("h31").unwrap();
    let me = here.port().unwrap();
    // A NodeRecord Get that matches every node.
    let out = lsaquery(&here, &args(&["NR", "--method", "get"]));
    assert_eq!(out.status.code(), Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("0x0400"), "{}", out.stderr);
    assert!(
        out.stderr.contains("more than one record matches a Get"),
        "{}",
        out.stderr
    );
    // A PathRecord Get stops at the first pair with a path instead.
    let out = lsaquery(
        &here,
        &args(&["-p", "--slid", &me.lid.to_string(), "--method", "get"]),
    );
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(parse_printed_records(&out.stdout).len(), 1);
    // An invalid MTU code with both MTU bits set.
    let out = lsaquery(&here, &args(&["-p", "-M", "9"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stderr.contains("0x0200") && out.stderr.contains("invalid request"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_node_without_an_sa_gets_the_simulator_s_error_status() {
    let fabric = fabric();
    let here = fabric.node("h2").unwrap();
    let nobody = fabric.node("h99").unwrap().port().unwrap().lid.to_string();
    let out = lsaquery(&here, &args(&["--sa-lid", &nobody, "-c", "--retries", "1"]));
    assert_eq!(out.status.code(), Some(4), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!("LID {nobody}")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("umad status 110"), "{}", out.stderr);
    assert!(
        out.stderr.contains("SIM_SET_ISSM"),
        "the message says what to do: {}",
        out.stderr
    );
}
