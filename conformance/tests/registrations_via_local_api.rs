//! lsaquery's registrations through local-sa's local API (its default): a
//! subscriber that receives a real trap, a membership in a group whose
//! MGID OpenSM assigns, held while lsaquery runs and left when it stops,
//! and this node's registrations listed with -I, -m and -g.

use std::time::Duration;

use conformance::saquery::parse_printed_records;
use conformance::{LocalSa, SimulatedFabric, Topology, eventually};
use mad_codec::Gid;

#[test]
fn subscribe_join_and_list_through_the_local_api() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let socket = fabric.dir().join("h5.sock");
    let socket = socket.to_str().unwrap();
    let mut sa =
        LocalSa::start(&fabric, "h5", &["--api-socket", socket]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    let lsaquery = |args: &[&str]| {
        node.lsaquery()
            .arg("--api-socket")
            .arg(socket)
            .args(args)
            .output()
            .unwrap()
    };

    // -I: local-sa's own subscriptions (traps 64, 65 and 128).
    let out = lsaquery(&["-I"]);
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(
        parse_printed_records(&out.stdout).len(),
        3,
        "{}",
        out.stdout
    );

    // A subscriber waits for one notice about a host that is unplugged.
    let mut subscriber = node
        .lsaquery()
        .args(["--api-socket", socket, "--subscribe", "65", "--count", "1"])
        .args(["--duration", "60", "--json"])
        .spawn()
        .unwrap();
    sa.wait_until("the subscriber", Duration::from_secs(30), |c| {
        c["subscribers"] == 2
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let gone = fabric.node("h9").unwrap().port().unwrap().guid;
    fabric.unlink("h9", 1).unwrap();
    let status = subscriber.wait_timeout(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        subscriber.stderr()
    );
    let line = subscriber.stdout();
    assert!(line.contains("\"trap_num\":65"), "{line}");
    assert!(
        line.contains(&format!(
            "\"gid\":\"{}\"",
            Gid::new(Gid::DEFAULT_PREFIX, gone)
        )),
        "{line}"
    );

    // A membership in a group OpenSM creates and names, held while the
    // joining lsaquery runs.
    let member = node
        .lsaquery()
        .args(["--api-socket", socket, "--join", "::", "--json"])
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(30), || member
            .stdout()
            .contains("\"join_state\":1")),
        "{}",
        member.stderr()
    );
    let out = lsaquery(&["-m", "--json"]);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stdout.contains("\"mgid\":\"ff12:a01b:"),
        "an SA-assigned MGID: {}",
        out.stdout
    );
    assert!(out.stdout.contains("\"join_state\":1"), "{}", out.stdout);
    // A filter makes it a query of the SA (this node's local-sa, by MAD),
    // not a listing of the API's.
    let mlid = out
        .stdout
        .split("\"mlid\":")
        .nth(1)
        .and_then(|r| r.split([',', '}']).next())
        .unwrap_or_else(|| panic!("an MLID in {}", out.stdout))
        .to_owned();
    let out = lsaquery(&["MCMR", "--mlid", &mlid]);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("MCMember Record dump:")
            && out.stdout.contains(&format!(
                "\t\tmlid....................{:#x}\n",
                mlid.parse::<u16>().unwrap()
            )),
        "{}",
        out.stdout
    );
    // --leave is for memberships joined by MAD; through the API the member
    // leaves by stopping.
    let out = lsaquery(&["--leave", "ff12:a01b::1"]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--sa-lid"), "{}", out.stderr);
    let status = member.stop(Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert!(
        eventually(Duration::from_secs(30), || {
            let out = lsaquery(&["-g"]);
            out.status.success() && parse_printed_records(&out.stdout).is_empty()
        }),
        "the group is no longer held"
    );
    let out = node.saquery(["-g"]).unwrap();
    assert_eq!(
        parse_printed_records(&out.stdout).len(),
        1,
        "OpenSM is back to the IPoIB broadcast group alone: {}",
        out.stdout
    );

    // No local-sa at the socket: a clear error, exit status 4.
    let out = node
        .lsaquery()
        .args(["--api-socket", "/nonexistent/local-sa.sock", "-I"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot reach local-sa's local API"),
        "{}",
        out.stderr
    );
}
