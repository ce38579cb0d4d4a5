//! local-sa against OpenSM on a simulated 100-host fat tree: local-sa runs
//! on two hosts with OpenSM as the master, and the same PathRecord queries
//! go to both. Statuses must be equal, and records equal byte for byte
//! wherever OpenSM's answer arrives whole (the simulator cuts OpenSM's
//! multi-MAD answers to their first two records; those two must equal
//! local-sa's first two).

use std::time::Duration;

use conformance::sa_compare::{ask, assert_none_differ, compare};
use conformance::{LocalSa, NodePort, SimulatedFabric, Topology};
use mad_codec::MadStatus;

fn gid(p: &NodePort) -> String {
    mad_codec::Gid::new(mad_codec::Gid::DEFAULT_PREFIX, p.guid).to_string()
}

fn to_args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn path_queries_answer_as_opensm_does() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(10, 10, 4))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa5 = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let _sa50 = LocalSa::start(&fabric, "h50", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    let (me, dst, other) = (
        node.port().unwrap(),
        fabric.node("h77").unwrap().port().unwrap(),
        fabric.node("h33").unwrap().port().unwrap(),
    );
    let (s, d, o) = (
        me.lid.to_string(),
        dst.lid.to_string(),
        other.lid.to_string(),
    );
    let (gs, gd) = (gid(&me), gid(&dst));
    let pair = format!("{s}:{d}");
    let gids = format!("{gs}-{gd}");
    let mut queries: Vec<Vec<String>> = vec![
        // Every way of naming the two ends, Get and GetTable.
        to_args(&["--src-to-dst", &pair, "--method", "get"]),
        to_args(&["--src-to-dst", &pair]),
        to_args(&["--sgid-to-dgid", &gids]),
        to_args(&["--sgid-to-dgid", &gids, "--method", "get"]),
        to_args(&["-p", "--slid", &s, "--dgid", &gd]),
        to_args(&["-p", "--sgid", &gs, "--dlid", &d]),
        to_args(&["-p", "--slid", &s, "--dlid", &s]),
        to_args(&["-p", "--slid", &s]),
        to_args(&["-p", "--sgid", &gs]),
        to_args(&["-p", "--slid", &s, "--method", "get"]),
        // One end only, or another source: forwarded to the master.
        to_args(&["-p", "--dlid", &d]),
        to_args(&["-p", "--slid", &o, "--dlid", &d]),
        to_args(&["-p", "--slid", &o, "--dlid", &d, "--method", "get"]),
        to_args(&["-p"]),
        // Selectors and the other components.
        to_args(&["--src-to-dst", &pair, "--reversible", "1"]),
        to_args(&["-p", "--slid", &s, "--numb_path", "1"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--pkey", "0xffff"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--pkey", "0x7fff"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--pkey", "0x1234"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--sl", "0"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--sl", "1"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--qos_class", "0"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--service_id", "0x1"]),
        to_args(&["-p", "--slid", &s, "--dlid", &d, "--tclass", "0"]),
        // Half a ServiceID: ERR_REQ_INSUFFICIENT_COMPONENTS.
        to_args(&[
            "-p",
            "--slid",
            &s,
            "--dlid",
            &d,
            "--service_id",
            "0x1",
            "--comp-mask",
            "0x31",
        ]),
        // Unknown ends.
        to_args(&["--src-to-dst", &format!("{s}:9999"), "--method", "get"]),
        to_args(&["--src-to-dst", &format!("{s}:9999")]),
        to_args(&["--sgid-to-dgid", &format!("{gs}-fe80::dead:beef")]),
    ];
    for (flag, bytes) in [
        (
            "-M",
            ["0x84", "0x04", "0x44", "0x83", "0xc0", "0x80", "0x85"],
        ),
        (
            "-R",
            ["0x83", "0x03", "0x43", "0x86", "0xc0", "0x80", "0x82"],
        ),
        (
            "--pkt_lifetime",
            ["0x92", "0x12", "0x52", "0x80", "0xc0", "0x93", "0x00"],
        ),
    ] {
        for b in bytes {
            queries.push(to_args(&["-p", "--slid", &s, "--dlid", &d, flag, b]));
        }
    }
    let hits_before = sa5.counter("hits");
    let differences: Vec<String> = queries.iter().filter_map(|q| compare(&node, q)).collect();
    assert_none_differ(&differences, queries.len(), "");
    // Past the two records of OpenSM's cut table, local-sa's table from this
    // port must hold what OpenSM answers for each destination.
    let table = ask(&node, &[], &to_args(&["-p", "--slid", &s]));
    let records = table.records();
    assert!(
        records.len() > 100,
        "a path to every port: {}",
        records.len()
    );
    for r in records.iter().step_by(records.len() / 12) {
        let dlid = u16::from_be_bytes([r[40], r[41]]).to_string();
        let single = ask(
            &node,
            &["--master"],
            &to_args(&["--src-to-dst", &format!("{s}:{dlid}")]),
        );
        assert_eq!(single.records(), vec![*r], "the path {s} -> {dlid}");
    }
    // Most of them were answered from the cache, not by asking OpenSM.
    let cached = sa5.wait_until("hits counted", Duration::from_secs(5), |c| {
        c["hits"] >= hits_before + 30
    });
    assert!(
        cached.is_ok(),
        "only {} of {} queries answered from the cache",
        sa5.counter("hits") - hits_before,
        queries.len()
    );
}

#[test]
fn with_the_master_gone_cached_answers_flow_and_misses_get_busy() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(4, 5, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let args = ["--upstream-timeout", "300", "--upstream-retries", "1"];
    let sa = LocalSa::start(&fabric, "h5", &args).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    let (me, dst, other) = (
        node.port().unwrap(),
        fabric.node("h17").unwrap().port().unwrap(),
        fabric.node("h9").unwrap().port().unwrap(),
    );
    fabric.stop_opensm();
    let cached = ask(
        &node,
        &[],
        &to_args(&[
            "--src-to-dst",
            &format!("{}:{}", me.lid, dst.lid),
            "--method",
            "get",
        ]),
    );
    assert_eq!(
        (cached.status, cached.records().len()),
        (MadStatus::OK, 1),
        "answered from the cache"
    );
    // Not from this port: it must go to the master, which is not there.
    let patient = ["--timeout", "5000", "--retries", "0"];
    let miss = to_args(
        &[
            &[
                "--src-to-dst",
                &format!("{}:{}", other.lid, dst.lid),
                "--method",
                "get",
            ][..],
            &patient,
        ]
        .concat(),
    );
    let started = std::time::Instant::now();
    let answer = ask(&node, &[], &miss);
    assert_eq!(
        answer.status,
        MadStatus::BUSY,
        "a clear status once the master has not answered"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "after the upstream time-out, not the client's"
    );
    drop(sa);
}

#[test]
fn lsaquery_acknowledges_the_whole_table_before_it_exits() {
    // local-sa sends a table through RMPP. If lsaquery left without
    // acknowledging the last segment, local-sa would send the table again
    // to whatever runs on the node next, and finally abort the transfer.
    let fabric = SimulatedFabric::builder(Topology::fat_tree(4, 5, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    let me = node.port().unwrap();
    let (sent, aborted) = (sa.counter("rmpp_transfers"), sa.counter("rmpp_aborts"));
    let table = ask(&node, &[], &to_args(&["-p", "--slid", &me.lid.to_string()]));
    assert!(
        table.records().len() > 3,
        "a table of several segments: {} records",
        table.records().len()
    );
    sa.wait_until(
        "the table's transfer to end",
        Duration::from_secs(30),
        |c| c["rmpp_transfers"] > sent || c["rmpp_aborts"] > aborted,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let c = sa.counters();
    assert_eq!(
        (c["rmpp_transfers"] - sent, c["rmpp_aborts"] - aborted),
        (1, 0),
        "the transfer completed, every segment acknowledged"
    );
}
