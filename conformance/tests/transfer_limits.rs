//! A peer cannot make local-sa hold memory without end through RMPP: a
//! node that starts loads and never finishes them (here 10,000, each
//! announcing a million records, only the first segment sent) gets its
//! first eight held and every other one refused with STOP (ResX), counted;
//! local-sa's resident memory stays within 64 MB of idle; and another
//! node's load and queries are served meanwhile, as before.
//!
//! `FLOOD_COUNT=100000 cargo test -p conformance --test transfer_limits`
//! runs the full figure (scripts/long-tests.sh).

use std::time::Duration;

use conformance::saquery::parse_mad_dump;
use conformance::{Fabric, LocalSa, Node, RunOutput, Topology};
use mad_codec::{MadStatus, SaMad};

const KEY: &str = "0x5eed";

/// Loads one node may have in progress at once (local-sa's default).
const PER_SOURCE: u64 = 8;

fn lsaquery(node: &Node<'_>, args: &[&str]) -> RunOutput {
    node.lsaquery()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Resident memory of `pid`, in bytes.
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc status");
    kb * 1024
}

/// `key=value` from rmpp-flood's summary line.
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

#[test]
fn half_finished_loads_from_one_node_are_refused_past_eight_and_cost_no_memory() {
    let count: u64 = std::env::var("FLOOD_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa =
        LocalSa::start(&fabric, "h2", &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let me = fabric.node("h2").unwrap().port().unwrap().lid.to_string();
    let idle = resident(sa.pid());

    let hostile = fabric.node("h9").unwrap();
    let out = hostile
        .command(env!("CARGO_BIN_EXE_rmpp-flood"))
        .args([
            "--sa-lid",
            &me,
            "--smkey",
            KEY,
            "--count",
            &count.to_string(),
        ])
        .timeout(Duration::from_secs(900))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", out.stderr);
    let line = out.stdout.trim();
    assert_eq!(field(line, "stop"), count - PER_SOURCE, "{line}");
    assert_eq!(field(line, "ack"), PER_SOURCE, "{line}");
    sa.wait_until("the refusals counted", Duration::from_secs(10), |c| {
        c["rmpp_refused_per_peer"] == count - PER_SOURCE && c["transfers_active"] == PER_SOURCE
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let grown = resident(sa.pid()).saturating_sub(idle);
    eprintln!(
        "{count} half-finished loads: {line}; resident {} KB idle, +{} KB after",
        idle >> 10,
        grown >> 10
    );
    assert!(
        grown < 64 << 20,
        "resident memory grew {} MB over idle",
        grown >> 20
    );

    // Another node loads and asks as usual while the eight are held.
    let node = fabric.node("h5").unwrap();
    let peer = fabric.node("h7").unwrap().port().unwrap().lid.to_string();
    let pair = format!("{me}:{peer}");
    let table = lsaquery(&node, &["--sa-lid", &me, "-p", "--slid", &me]);
    assert!(table.status.success(), "{}", table.stderr);
    let file = fabric.dir().join("own.txt");
    std::fs::write(&file, &table.stdout).unwrap();
    let out = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--load",
            file.to_str().unwrap(),
            "--smkey",
            KEY,
        ],
    );
    assert!(
        out.status.success() && out.stdout.contains("loaded"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let got = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--src-to-dst",
            &pair,
            "--method",
            "get",
            "-d",
        ],
    );
    let mad = parse_mad_dump(&got.stdout)
        .and_then(|d| d.response)
        .unwrap_or_else(|| panic!("no answer: {}{}", got.stdout, got.stderr));
    assert_eq!(SaMad::parse(&mad).unwrap().mad().status(), MadStatus::OK);
    let (_, log) = sa.stop();
    assert!(
        log.matches("RMPP transfer refused").count() <= 2,
        "refusals are not logged one by one:\n{log}"
    );
}
