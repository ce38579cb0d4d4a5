//! What local-sa does not keep (NodeRecords, ServiceRecords), plain
//! `lsaquery` asks the master SA for, as saquery does: on a node running
//! local-sa, `lsaquery NR` and `lsaquery -S` print what saquery prints,
//! instead of local-sa's 0x000C refusal (as far as the simulator carries
//! their answers intact); and local-sa itself, asked for them by MAD,
//! relays the query to the master and its answer back.

use std::time::Duration;

use conformance::{LocalSa, SimulatedFabric, Topology};

/// saquery's NodeRecords, one per LID asked (each a table of one: whole
/// under ibsim).
fn theirs_all(node: &conformance::Node<'_>) -> String {
    (1..=40)
        .filter_map(|lid| node.saquery(["NR", &lid.to_string()]).ok())
        .map(|o| o.stdout)
        .collect()
}

#[test]
fn node_and_service_records_come_from_the_master_as_saquery_prints_them() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    // A local-sa publishes its directory record and canary: ServiceRecords
    // at the master for -S to show.
    let mut sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    let lid = far.lid.to_string();
    let ours = node.lsaquery().args(["NR", &lid]).output().unwrap();
    assert!(ours.status.success(), "lsaquery NR: {}", ours.stderr);
    let theirs = node.saquery(["NR", &lid]).unwrap();
    assert!(ours.stdout.contains("NodeRecord dump:"), "{}", ours.stdout);
    assert_eq!(ours.stdout, theirs.stdout, "lsaquery NR against saquery");

    // Asked of local-sa itself by MAD (as any SA client on the fabric
    // could), the NodeRecords come from the master through it: the whole
    // table, not 0x000C.
    let me = node.port().unwrap();
    let through = node
        .lsaquery()
        .args(["--sa-lid", &me.lid.to_string(), "NR", &lid])
        .output()
        .unwrap();
    assert!(through.status.success(), "{}", through.stderr);
    assert_eq!(through.stdout, theirs.stdout, "NR relayed by local-sa");
    // The whole table: ibsim cuts the master's multi-MAD answer, and
    // local-sa passes on the records wholly within its intact bytes.
    let all_through = node
        .lsaquery()
        .args(["--sa-lid", &me.lid.to_string(), "NR"])
        .output()
        .unwrap();
    assert!(all_through.status.success(), "{}", all_through.stderr);
    let first = all_through
        .stdout
        .split("NodeRecord dump:")
        .nth(1)
        .unwrap_or("");
    assert!(
        !first.is_empty() && theirs_all(&node).contains(first),
        "a NodeRecord OpenSM has: {}{}",
        all_through.stdout,
        all_through.stderr
    );
    sa.wait_until("the relays counted", Duration::from_secs(5), |c| {
        c.get("relayed").is_some_and(|n| *n >= 2)
    })
    .unwrap_or_else(|e| panic!("{e}"));

    // The simulator delivers only a MAD's first 224 bytes intact, and a
    // ServiceRecord (176 bytes after 56 of headers) does not fit: saquery
    // prints a record with a garbled end, lsaquery none, and says so. That
    // it got an answer at all shows the query went to the master.
    let ours = node.lsaquery().arg("-S").output().unwrap();
    assert!(ours.status.success(), "lsaquery -S: {}", ours.stderr);
    assert!(
        ours.stderr
            .contains("only the records wholly within its intact bytes are shown: none was"),
        "{}",
        ours.stderr
    );
}
