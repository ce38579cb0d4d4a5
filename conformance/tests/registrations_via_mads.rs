//! lsaquery's registrations sent straight to OpenSM as MADs: a
//! subscription that receives a real trap and is withdrawn afterwards (also
//! when the subscriber is stopped by a signal), and a multicast group
//! created, listed and left.

use std::time::Duration;

use conformance::saquery::parse_printed_records;
use conformance::{Node, SimulatedFabric, Topology, eventually};
use mad_codec::Gid;

fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn subscriptions(node: &Node<'_>) -> usize {
    let out = node.saquery(["-I"]).unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    parse_printed_records(&out.stdout).len()
}

#[test]
fn a_subscriber_receives_trap_65_and_unsubscribes() {
    let fabric = fabric();
    let node = fabric.node("h2").unwrap();
    let gone = fabric.node("h9").unwrap().port().unwrap();
    let mut sub = node
        .lsaquery()
        .args([
            "--master",
            "--subscribe",
            "65",
            "--count",
            "1",
            "--duration",
            "60",
            "--json",
        ])
        .serve_requests()
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || subscriptions(&node) == 1),
        "{}",
        sub.stderr()
    );
    fabric.unlink("h9", 1).unwrap();
    let status = sub.wait_timeout(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        sub.stderr()
    );
    let line = sub.stdout();
    let expected_gid = Gid::new(Gid::DEFAULT_PREFIX, gone.guid).to_string();
    assert!(line.contains("\"record\":\"Notice\""), "{line}");
    assert!(line.contains("\"trap_num\":65"), "{line}");
    assert!(
        line.contains(&format!("\"gid\":\"{expected_gid}\"")),
        "the unplugged host: {line}"
    );
    assert!(
        sub.stderr().contains("unsubscribed after 1 notice"),
        "{}",
        sub.stderr()
    );
    assert_eq!(subscriptions(&node), 0, "nothing left at OpenSM");
}

#[test]
fn sigterm_withdraws_the_subscription() {
    let fabric = fabric();
    let node = fabric.node("h3").unwrap();
    let sub = node
        .lsaquery()
        .args(["--master", "--subscribe", "all"])
        .serve_requests()
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || subscriptions(&node) == 1),
        "{}",
        sub.stderr()
    );
    let status = sub.stop(Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "a signalled subscriber exits cleanly: {status:?}"
    );
    assert_eq!(
        subscriptions(&node),
        0,
        "the subscription went with the subscriber"
    );
}

#[test]
fn a_group_is_created_listed_and_left() {
    let fabric = fabric();
    let node = fabric.node("h5").unwrap();
    let groups = || parse_printed_records(&node.saquery(["-g"]).unwrap().stdout).len();
    assert_eq!(groups(), 1, "only the IPoIB broadcast group");
    let out = node
        .lsaquery()
        .args(["--master", "--join", "::", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    let json = out.stdout.trim();
    assert!(json.contains("\"join_state\":1"), "{json}");
    let mgid = json
        .split("\"mgid\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    assert!(
        mgid.starts_with("ff12:a01b:"),
        "an SA-assigned MGID: {mgid}"
    );
    assert_eq!(groups(), 2);
    let out = node
        .lsaquery()
        .args(["--master", "--leave", &mgid])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(
        groups(),
        1,
        "the last full member left, so the group is gone"
    );
    // Leaving again: OpenSM rejects a leave from a group that is gone.
    let out = node
        .lsaquery()
        .args(["--master", "--leave", &mgid])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.contains("0x0200"), "{}", out.stderr);
}
