//! `lsaquery --verify` on the fabric, against OpenSM: a local-sa that
//! answers as OpenSM does passes (exit status 0); one given a wrong path
//! with its SM_Key is caught, the pair named; with OpenSM frozen the
//! check says what it could not check, and ends.

use std::time::{Duration, Instant};

use conformance::{LocalSa, Node, RunOutput, SimulatedFabric, Topology};

const KEY: &str = "0x5a";

fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `lsaquery --verify` on `node` against `sa`, with `extra` (every
/// destination unless it names a `--sample`).
fn verify(node: &Node<'_>, sa: &LocalSa<'_>, extra: &[&str]) -> RunOutput {
    let sample: &[&str] = if extra.contains(&"--sample") {
        &[]
    } else {
        &["--sample", "all"]
    };
    node.lsaquery()
        .arg("--verify")
        .args(sample)
        .arg("--api-socket")
        .arg(sa.api_socket())
        .arg("--acm-socket")
        .arg(sa.acm_socket())
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until the master holds `sa`'s directory record, as its status
/// says.
fn wait_for_directory(node: &Node<'_>, sa: &LocalSa<'_>) {
    let since = Instant::now();
    loop {
        let status = node
            .lsaquery()
            .arg("--status")
            .arg("--api-socket")
            .arg(sa.api_socket())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        if status.stdout.contains("addresses are in the directory") {
            return;
        }
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "{}'s directory record never reached the master:\n{}{}",
            sa.node(),
            status.stdout,
            status.stderr
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The line of `part` in the summary.
fn part_line<'a>(text: &'a str, part: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(&format!("{part} ")))
        .unwrap_or_else(|| panic!("no {part} line in\n{text}"))
}

#[test]
fn a_local_sa_that_answers_as_opensm_passes() {
    let fabric = fabric();
    // Another node's local-sa publishes a name and an address in the
    // directory at OpenSM: the check asks the ibacm socket by them too.
    let storage = LocalSa::start(
        &fabric,
        "h9",
        &["--host-name", "storage-9", "--address", "10.9.0.9"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let sa = LocalSa::start(&fabric, "h2", &["--host-name", "client-2"])
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    for (name, published) in [("h9", &storage), ("h2", &sa)] {
        wait_for_directory(&fabric.node(name).unwrap(), published);
    }
    let out = verify(&node, &sa, &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    let paths = part_line(&out.stdout, "paths");
    assert!(paths.contains(" OK "), "{}", out.stdout);
    // Every host and switch port of the fabric but this one, × P_Key
    // 0xffff × (no ServiceID, rdma_cm's).
    let destinations = sa.counter("records");
    assert!(
        paths.contains(&format!("{} answers equal", destinations * 2)),
        "{}",
        out.stdout
    );
    // Through the ibacm socket: each destination by GID and by LID, the
    // fabric's 12 hosts by name (this one among them: the table holds its
    // path to itself), the two directory names and h9's address.
    let doors = part_line(&out.stdout, "doors");
    assert!(doors.contains(" OK "), "{}", out.stdout);
    assert!(
        doors.contains(&format!(
            "{} paths through the ibacm socket",
            destinations * 2 + 14 + 1
        )),
        "{}",
        out.stdout
    );
    assert!(
        doors.contains("by 14 host names and by 1 IP addresses"),
        "{}",
        out.stdout
    );
    assert!(doors.contains("kernel door"), "{}", out.stdout);
    assert!(
        part_line(&out.stdout, "health").contains(" OK "),
        "{}",
        out.stdout
    );
    assert!(
        !part_line(&out.stdout, "registrations").contains("DIFFERENT"),
        "{}",
        out.stdout
    );

    // The same as JSON, for a script.
    let json = verify(&node, &sa, &["--json", "--sample", "3"]);
    assert_eq!(
        json.status.code(),
        Some(0),
        "{}{}",
        json.stdout,
        json.stderr
    );
    assert!(
        json.stdout
            .contains("\"part\":\"paths\",\"verdict\":\"OK\",\"reason\":\"6 answers equal"),
        "{}",
        json.stdout
    );
}

#[test]
fn a_wrong_path_loaded_into_local_sa_is_named() {
    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h2", &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap().lid;
    let far = fabric.node("h9").unwrap().port().unwrap().lid;
    // OpenSM's path to h9, pushed back with another SL.
    let theirs = node
        .lsaquery()
        .args(["--master", "--json", "-p", "--src-to-dst"])
        .arg(format!("{me}:{far}"))
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", theirs.stderr);
    assert!(theirs.stdout.contains("\"sl\":0,"), "{}", theirs.stdout);
    let file = fabric.dir().join("h2-wrong-sl.json");
    std::fs::write(&file, theirs.stdout.replace("\"sl\":0,", "\"sl\":3,")).unwrap();
    let load = node
        .lsaquery()
        .args(["--load", file.to_str().unwrap(), "--smkey", KEY])
        .output()
        .unwrap();
    assert!(load.status.success(), "{}{}", load.stdout, load.stderr);

    let out = verify(&node, &sa, &[]);
    assert_eq!(out.status.code(), Some(1), "{}{}", out.stdout, out.stderr);
    let paths = part_line(&out.stdout, "paths");
    assert!(paths.contains(" DIFFERENT "), "{}", out.stdout);
    // The pair, without and with rdma_cm's ServiceID.
    let asked = sa.counter("records") * 2;
    assert!(
        paths.contains(&format!("2 of {asked} answers differ")),
        "{}",
        out.stdout
    );
    for named in [
        format!("LID {far} P_Key 0xffff no ServiceID: sl 0x3 (local-sa) ≠ 0x0 (master)"),
        format!(
            "next: lsaquery -p --method get --slid {me} --dlid {far} --pkey 0xffff   and   lsaquery --master -p"
        ),
    ] {
        assert!(out.stdout.contains(&named), "{named:?} in\n{}", out.stdout);
    }
    // The ibacm socket answers from the same table: the same pair, there.
    assert!(
        part_line(&out.stdout, "doors").contains(" DIFFERENT "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "ibacm socket, LID {far}: sl 0x3 (local-sa) ≠ 0x0 (master)"
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn with_opensm_frozen_the_check_says_what_it_could_not_check_and_ends() {
    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let started = Instant::now();
    let out = fabric.with_opensm_frozen(|| verify(&node, &sa, &[]));
    assert_eq!(out.status.code(), Some(5), "{}{}", out.stdout, out.stderr);
    let paths = part_line(&out.stdout, "paths");
    assert!(paths.contains(" NOT CHECKED "), "{}", out.stdout);
    assert!(
        paths.contains("the master SA at LID 1 did not give this port's table"),
        "{}",
        out.stdout
    );
    assert!(
        part_line(&out.stdout, "registrations").contains(" NOT CHECKED "),
        "{}",
        out.stdout
    );
    // A few time-outs, not one per destination.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_master_whose_answers_vary_from_ask_to_ask_is_said_so_not_called_a_difference() {
    // DFSSSP on a ring of five switches draws each path's SL at random
    // for each query: what local-sa holds is one of OpenSM's answers, and
    // OpenSM answers the same pair otherwise the next time.
    let fabric = SimulatedFabric::builder(Topology::ring(5))
        .opensm_config(["routing_engine dfsssp"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let sa = LocalSa::start(&fabric, "h3", &[]).unwrap_or_else(|e| panic!("{e}"));
    let out = verify(&fabric.node("h3").unwrap(), &sa, &[]);
    let paths = part_line(&out.stdout, "paths");
    assert!(
        paths.contains("NOT CHECKED") && paths.contains("vary from ask to ask"),
        "{}",
        out.stdout
    );
    assert!(!paths.contains("DIFFERENT"), "{}", out.stdout);
}
