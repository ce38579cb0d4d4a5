//! What local-sa does not keep (NodeRecords, ServiceRecords), plain
//! `lsaquery` asks the master SA for, as saquery does: on a node running
//! local-sa, `lsaquery NR` and `lsaquery -S` print what saquery prints,
//! instead of local-sa's 0x000C refusal (as far as the simulator carries
//! their answers intact).

use conformance::{Fabric, LocalSa, Topology};

#[test]
fn node_and_service_records_come_from_the_master_as_saquery_prints_them() {
    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    // A local-sa publishes its directory record and canary: ServiceRecords
    // at the master for -S to show.
    let _sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    let lid = far.lid.to_string();
    let ours = node.lsaquery().args(["NR", &lid]).output().unwrap();
    assert!(ours.status.success(), "lsaquery NR: {}", ours.stderr);
    let theirs = node.saquery(["NR", &lid]).unwrap();
    assert!(ours.stdout.contains("NodeRecord dump:"), "{}", ours.stdout);
    assert_eq!(ours.stdout, theirs.stdout, "lsaquery NR against saquery");

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
