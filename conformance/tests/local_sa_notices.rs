//! Ports leaving and joining the fabric: unplugging a host (ibsim
//! `Unlink`) makes OpenSM report trap 65, and every local-sa drops the
//! host's paths; plugging it back in (trap 64) brings them back, equal to
//! OpenSM's.

use std::time::Duration;

use conformance::saquery::{parse_printed_records, printed_answer};
use conformance::{LocalSa, Node, SimulatedFabric, Topology};
use mad_codec::{Gid, MadStatus};

/// Status and record bytes of a PathRecord Get for `pair` from `node`,
/// to local-sa (no `aim`) or to OpenSM (`--master`).
fn get(node: &Node<'_>, aim: &[&str], pair: &str) -> (MadStatus, Vec<u8>) {
    let out = node
        .lsaquery()
        .args(aim)
        .args(["--src-to-dst", pair, "--method", "get", "-d"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, data) =
        printed_answer(&out.stdout).unwrap_or_else(|| panic!("no answer: {}", out.stderr));
    let record = if status.is_ok() {
        data[..64].to_vec()
    } else {
        Vec::new()
    };
    (status, record)
}

#[test]
fn unplugging_a_host_removes_its_paths_from_every_local_sa_and_plugging_it_back_restores_them() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(10, 10, 4))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut agents: Vec<LocalSa<'_>> = ["h5", "h50"]
        .iter()
        .map(|n| LocalSa::start(&fabric, n, &[]).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let gone = fabric.node("h77").unwrap().port().unwrap().lid;
    let before: Vec<u64> = agents.iter().map(|a| a.counter("records")).collect();
    let nodes: Vec<Node<'_>> = agents
        .iter()
        .map(|a| fabric.node(a.node()).unwrap())
        .collect();
    let pairs: Vec<String> = nodes
        .iter()
        .map(|n| format!("{}:{gone}", n.port().unwrap().lid))
        .collect();
    for (node, pair) in nodes.iter().zip(&pairs) {
        assert_eq!(
            get(node, &[], pair).0,
            MadStatus::OK,
            "{pair} before the unplug"
        );
    }

    fabric.unlink("h77", 1).unwrap_or_else(|e| panic!("{e}"));
    for (a, n) in agents.iter_mut().zip(&before) {
        a.wait_until("trap 65 handled", Duration::from_secs(60), |c| {
            c["notices"] >= 1 && c["records"] == n - 1
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    for (node, pair) in nodes.iter().zip(&pairs) {
        let (ours, theirs) = (get(node, &[], pair), get(node, &["--master"], pair));
        assert_eq!(ours.0, MadStatus::ERR_NO_RECORDS, "{pair} after the unplug");
        assert_eq!(ours.0, theirs.0, "local-sa and OpenSM agree on {pair}");
    }

    fabric.relink("h77", 1).unwrap_or_else(|e| panic!("{e}"));
    for (a, n) in agents.iter_mut().zip(&before) {
        a.wait_until("trap 64 handled", Duration::from_secs(60), |c| {
            c["notices"] >= 2 && c["records"] == *n
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    for (node, pair) in nodes.iter().zip(&pairs) {
        let (ours, theirs) = (get(node, &[], pair), get(node, &["--master"], pair));
        assert_eq!(ours.0, MadStatus::OK, "{pair} after the replug");
        assert_eq!(ours, theirs, "the path {pair} equals OpenSM's again");
    }

    // SIGTERM: local-sa withdraws its two subscriptions at OpenSM and exits 0.
    let subscriptions = |node: &Node<'_>| {
        let gid = Gid::new(Gid::DEFAULT_PREFIX, node.port().unwrap().guid).to_string();
        let out = node
            .lsaquery()
            .args(["--master", "-I", &gid])
            .output()
            .unwrap();
        parse_printed_records(&out.stdout).len()
    };
    assert_eq!(subscriptions(&nodes[0]), 2, "traps 64 and 65 while it runs");
    let (status, log) = agents.remove(0).stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "exit {status:?}:\n{log}"
    );
    assert_eq!(subscriptions(&nodes[0]), 0, "nothing left at the master");
}
