//! `lsaquery --status` against a local-sa on the fabric: the port, the
//! master SA (OpenSM), the table it fetched and when, in words and in
//! JSON; and a clear failure, with a hint, where no local-sa listens.

use conformance::{LocalSa, SimulatedFabric, Topology};

#[test]
fn status_shows_the_port_its_master_and_its_table() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let records = sa.counter("records");
    let status = |args: &[&str]| {
        node.lsaquery()
            .arg("--status")
            .arg("--api-socket")
            .arg(sa.api_socket())
            .args(args)
            .output()
            .unwrap()
    };

    let out = status(&[]);
    assert!(out.status.success(), "{}", out.stderr);
    let text = &out.stdout;
    assert!(
        text.contains(&format!(
            ", LID {}, SM LID {}; master SA at LID {}\n",
            me.lid, me.sm_lid, me.sm_lid
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  paths        {records} (complete table), refreshed "
        )),
        "{text}"
    );
    assert!(text.contains(&format!("pid {}", sa.pid())), "{text}");

    let out = status(&["--json"]);
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(json["schema"], 1);
    assert_eq!(json["records"], records);
    assert_eq!(json["lid"], me.lid);
    assert_eq!(json["table"], "complete");
    assert_eq!(json["port_state"], "Active");
    assert!(json["last_refresh_took_ms"].is_u64(), "{json}");
    assert!(json["recent_warnings"].is_array(), "{json}");

    let none = fabric.dir().join("nobody.sock");
    let out = node
        .lsaquery()
        .args(["--status", "--api-socket", none.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", out.stderr);
    assert!(out.stderr.contains("is local-sa running"), "{}", out.stderr);

    // A query on a node where no local-sa runs: the hint, not only the
    // transport's status.
    let other = fabric.node("h9").unwrap();
    let there = other.port().unwrap();
    let out = other
        .lsaquery()
        .args([
            "-p",
            "--slid",
            &there.lid.to_string(),
            "--dlid",
            &me.lid.to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("is local-sa running on this port? --master asks the master SA"),
        "{}",
        out.stderr
    );
}
