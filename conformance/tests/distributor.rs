//! `lsaquery --distribute` on the simulated fabric, against OpenSM: it
//! finds the nodes running local-sa, fills each with its table from the
//! master (which stands for the node's own refresh), and after a change
//! sends only the difference; a wrong key or a port without local-sa is a
//! clear failure that changes nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use conformance::saquery::{PATIENT, parse_printed_records, path_record_dump, printed_answer};
use conformance::{LocalSa, Node, RunOutput, SimulatedFabric, Topology};
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, PathRecord};

/// The SM_Key the local-sa nodes are started with.
const KEY: &str = "0x5eed";

/// Where local-sa runs, and where the distributor does.
const NODES: [&str; 3] = ["h2", "h5", "h11"];
const DISTRIBUTOR: &str = "h9";

fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa on each of [`NODES`], waiting for a load rather than asking
/// OpenSM for its table.
fn waiting_nodes(fabric: &SimulatedFabric) -> Vec<LocalSa<'_>> {
    NODES
        .iter()
        .map(|n| {
            LocalSa::start_unfilled(fabric, n, &["--sm-key", KEY, "--load-wait", "300"])
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn lsaquery(node: &Node<'_>, args: &[&str]) -> RunOutput {
    node.lsaquery()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn gid_of(fabric: &SimulatedFabric, node: &str) -> Gid {
    Gid::new(
        Gid::DEFAULT_PREFIX,
        fabric.node(node).unwrap().port().unwrap().guid,
    )
}

fn lid_of(fabric: &SimulatedFabric, node: &str) -> u16 {
    fabric.node(node).unwrap().port().unwrap().lid
}

/// The records local-sa at `sa_lid` answers for a GetTable from `sgid`
/// (asked patiently: what is checked is the table, not how fast it comes
/// on a loaded machine).
fn table_from(node: &Node<'_>, sa_lid: u16, sgid: Gid) -> Vec<PathRecord> {
    let out = lsaquery(
        node,
        &[
            PATIENT[0],
            PATIENT[1],
            PATIENT[2],
            PATIENT[3],
            "--sa-lid",
            &sa_lid.to_string(),
            "-p",
            "--sgid",
            &sgid.to_string(),
            "-d",
        ],
    );
    let (status, data) = response(&out);
    assert_eq!(status, mad_codec::MadStatus::OK, "{}", out.stderr);
    data.chunks_exact(64)
        .map(|r| PathRecord::read_from_bytes(r).unwrap())
        .collect()
}

/// The status and data of the SA answer lsaquery printed with `-d`.
fn response(out: &RunOutput) -> (mad_codec::MadStatus, Vec<u8>) {
    printed_answer(&out.stdout).unwrap_or_else(|| panic!("no answer: {}{}", out.stdout, out.stderr))
}

/// What OpenSM answers for the paths from `slid` to `dlid` (the simulator
/// cuts multi-MAD answers, so one destination at a time).
fn opensm_paths(node: &Node<'_>, slid: u16, dlid: u16) -> Vec<PathRecord> {
    let out = lsaquery(
        node,
        &[
            "--master",
            PATIENT[0],
            PATIENT[1],
            PATIENT[2],
            PATIENT[3],
            "-p",
            "--slid",
            &slid.to_string(),
            "--dlid",
            &dlid.to_string(),
            "-d",
        ],
    );
    let (status, data) = response(&out);
    if status == mad_codec::MadStatus::ERR_NO_RECORDS {
        return Vec::new();
    }
    assert_eq!(status, mad_codec::MadStatus::OK, "{}", out.stderr);
    data.chunks_exact(64)
        .map(|r| PathRecord::read_from_bytes(r).unwrap())
        .collect()
}

/// The records of a text dump (a snapshot), each as one line of its
/// printed fields: comparable with [`printed`].
fn dump_file(path: &std::path::Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    parse_printed_records(&text)
        .into_iter()
        .map(|r| format!("{:?}", r.fields))
        .collect()
}

/// `records` as [`dump_file`] reads them.
fn printed(records: &[PathRecord]) -> BTreeSet<String> {
    let text: String = records.iter().map(path_record_dump).collect();
    parse_printed_records(&text)
        .into_iter()
        .map(|r| format!("{:?}", r.fields))
        .collect()
}

fn bytes(records: &[PathRecord]) -> BTreeSet<Vec<u8>> {
    records.iter().map(|r| r.as_bytes().to_vec()).collect()
}

fn expect(out: &RunOutput, line: &str) {
    assert!(
        out.stdout.contains(line),
        "expected {line:?}:\n{}{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn the_distributor_fills_every_local_sa_with_what_opensm_holds_and_then_only_the_changes() {
    let fabric = fabric();
    let mut nodes = waiting_nodes(&fabric);
    let distributor = fabric.node(DISTRIBUTOR).unwrap();
    let snapshot = fabric.dir().join("paths.snap");
    let out = lsaquery(
        &distributor,
        &[
            "--distribute",
            "--smkey",
            KEY,
            "--snapshot",
            snapshot.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    // The master's LID is not probed; every other port is, and the three
    // running local-sa are found and filled.
    let ports = fabric.topology().hcas().len() + fabric.topology().switches().len() - 1;
    expect(
        &out,
        &format!("3 local-sa nodes among {ports} ports probed: 3 filled, 0 unchanged, 0 failed"),
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    // The names tables went with the paths: each node resolves the
    // fabric's host names (OpenSM's NodeDescriptions) from the load,
    // without asking OpenSM for them.
    let hosts = fabric.topology().hcas().len();
    expect(
        &out,
        &format!("names: {hosts} adapters' NodeRecords and 0 directory entries, 6 tables taken"),
    );
    for (sa, name) in nodes.iter().zip(NODES) {
        assert_eq!(sa.counter("name_tables_loaded"), 2, "{name}");
        assert_eq!(sa.counter("names"), hosts as u64, "{name}");
        assert_eq!(sa.counter("name_fetches"), 0, "{name}");
    }
    let resolved = std::process::Command::new(conformance::program("lsaquery").unwrap())
        .arg("--acm-socket")
        .arg(nodes[0].acm_socket())
        .args(["--resolve", "h9", "--json"])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&resolved.stdout);
    assert!(
        resolved.status.success(),
        "h2 resolves h9 by name: {json}{}",
        String::from_utf8_lossy(&resolved.stderr)
    );
    assert!(
        json.contains(&format!("\"dlid\":{}", lid_of(&fabric, "h9"))),
        "{json}"
    );

    // Each node answers a GetTable from its port from the load, and the
    // snapshot holds exactly what the nodes hold.
    let mut tables = Vec::new();
    for (sa, name) in nodes.iter().zip(NODES) {
        let table = table_from(&distributor, lid_of(&fabric, name), gid_of(&fabric, name));
        assert!(!table.is_empty(), "{name} got records");
        assert_eq!(sa.counter("records"), table.len() as u64, "{name}");
        tables.push(table);
    }
    let given: Vec<PathRecord> = tables.concat();
    assert_eq!(dump_file(&snapshot), printed(&given), "the snapshot");
    // And what h2 was given is what OpenSM holds: every destination,
    // byte for byte (and nothing just past the highest one).
    let h2 = lid_of(&fabric, "h2");
    let h2_given = &tables[0];
    let dlids: BTreeSet<u16> = h2_given.iter().map(PathRecord::dlid).collect();
    for host in fabric.topology().hcas() {
        assert!(dlids.contains(&lid_of(&fabric, host)), "a path to {host}");
    }
    let highest = *dlids.last().unwrap();
    let mut from_opensm = Vec::new();
    for dlid in dlids.iter().copied().chain(highest + 1..highest + 3) {
        from_opensm.extend(opensm_paths(&distributor, h2, dlid));
    }
    assert_eq!(bytes(&from_opensm), bytes(h2_given));

    // A stale node: h5 holds a path to a port that has left the fabric and
    // an old version of a path OpenSM has (as after a reroute the
    // distributor knew of). The delta puts both right and leaves the other
    // nodes alone.
    let h5 = lid_of(&fabric, "h5");
    let mut changed = *given.iter().find(|r| r.slid() == h5).unwrap();
    changed.set_sl((changed.sl() + 1) % 16);
    let mut gone = changed;
    gone.set_dlid(0xB000);
    gone.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, 0x00ff_0000_0000_0001));
    let stale = fabric.dir().join("stale.txt");
    std::fs::write(
        &stale,
        [changed, gone]
            .iter()
            .map(path_record_dump)
            .collect::<String>(),
    )
    .unwrap();
    let loaded = lsaquery(
        &distributor,
        &[
            "--sa-lid",
            &h5.to_string(),
            "--load",
            stale.to_str().unwrap(),
            "--smkey",
            KEY,
        ],
    );
    assert!(loaded.status.success(), "{}", loaded.stderr);
    // The snapshot the distributor kept says so too.
    let mut old: Vec<PathRecord> = given
        .iter()
        .filter(|r| (r.slid(), r.dlid()) != (changed.slid(), changed.dlid()))
        .copied()
        .collect();
    old.extend([changed, gone]);
    std::fs::write(
        &snapshot,
        old.iter().map(path_record_dump).collect::<String>(),
    )
    .unwrap();
    let misses_before = nodes[1].counter("misses");
    let out = lsaquery(
        &distributor,
        &[
            "--distribute",
            "--smkey",
            KEY,
            "--delta",
            snapshot.to_str().unwrap(),
            "--snapshot",
            snapshot.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    expect(&out, "1 filled, 2 unchanged, 0 failed");
    expect(
        &out,
        "PathRecords: 1 stored, 1 deleted, in 2 RMPP transfers",
    );
    assert_eq!(
        bytes(&table_from(&distributor, h5, gid_of(&fabric, "h5"))),
        bytes(&tables[1])
    );
    assert_eq!(dump_file(&snapshot), printed(&given), "the new snapshot");
    // The pair deleted is known absent: h5 still answers for its port by
    // itself, and says there is no such path.
    let out = lsaquery(
        &distributor,
        &[
            "--sa-lid",
            &h5.to_string(),
            "-p",
            "--slid",
            &h5.to_string(),
            "--dlid",
            "0xB000",
            "--method",
            "get",
        ],
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("0x0300"), "{}", out.stderr);
    assert_eq!(
        nodes[1].counter("misses"),
        misses_before,
        "nothing for h5's port went to OpenSM"
    );
    assert_eq!(nodes[1].counter("refreshes"), 0);
}

#[test]
fn a_wrong_key_or_a_port_without_local_sa_fails_clearly_and_changes_nothing() {
    let fabric = fabric();
    let nodes = waiting_nodes(&fabric);
    let distributor = fabric.node(DISTRIBUTOR).unwrap();
    let out = lsaquery(&distributor, &["--distribute", "--smkey", "0x1"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", out.stdout, out.stderr);
    expect(&out, "0 filled, 0 unchanged, 3 failed");
    for name in NODES {
        expect(
            &out,
            &format!(
                "failed: LID {} ({}): answered 0x0700",
                lid_of(&fabric, name),
                gid_of(&fabric, name)
            ),
        );
    }
    assert!(
        out.stderr.contains("3 of 3 local-sa nodes were not filled"),
        "{}",
        out.stderr
    );
    for sa in &nodes {
        assert_eq!(sa.counter("records"), 0, "{}", sa.node());
        assert_eq!(sa.counter("name_tables_loaded"), 0, "{}", sa.node());
    }

    // A port named that runs no local-sa.
    let h3 = lid_of(&fabric, "h3");
    let out = lsaquery(
        &distributor,
        &["--distribute", "--smkey", KEY, "--targets", &h3.to_string()],
    );
    assert_eq!(out.status.code(), Some(4), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("none of the 1 ports probed answered as an SA"),
        "{}",
        out.stderr
    );
    // A LID that is no port's.
    let out = lsaquery(
        &distributor,
        &["--distribute", "--smkey", KEY, "--targets", "0xB000"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("LID 45056 is no port's lowest LID"),
        "{}",
        out.stderr
    );
}
