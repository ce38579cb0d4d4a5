//! What local users make local-sa ask the master, under abuse, against
//! OpenSM: a local user's connection joins a thousand groups (or
//! subscribes ten thousand filters, or asks five thousand distinct
//! queries only the master can answer) through local-sa's local API and
//! closes.
//!
//! * Every door keeps answering while local-sa works through the backlog:
//!   a root HELLO on the local API, an ibacm RESOLVE and a PathRecord Get
//!   over QP1 from another node, each within a second, during the leaves
//!   (before, the burst of a thousand Deletes wedged the simulated fabric
//!   and local-sa answered nothing, ever).
//! * An unprivileged user's joins and subscriptions past its limits are
//!   refused with ERR_NO_RESOURCES (it once took every multicast LID of
//!   the fabric); root's are not.
//! * Afterwards OpenSM holds nothing of theirs, and local-sa's counters
//!   agree with it.
//! * The log says so in a line or two, not one per group.
//! * Queries beyond what the master gets through in time are answered
//!   BUSY by local-sa, and the fabric goes on working for everyone (a
//!   burst of five thousand once wedged the simulated fabric).
//!
//! OpenSM's view is read from its SA database dump (`sa_db_dump`), which
//! shows every record; queries through the simulator show only the first
//! few of a table (SIMULATOR.md).

#[allow(dead_code)]
mod api_client;

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use api_client::Client;
use conformance::opensm_dump::SaDump;
use conformance::{LocalSa, SimulatedFabric, Topology, acm_client, command_as_user};
use mad_codec::Gid;

/// The uid and gid of `nobody`, an unprivileged user.
const NOBODY: u32 = 65534;

fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(4, 4, 2))
        .opensm_config(["sa_db_dump TRUE", "sweep_interval 1"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The flood client, run as root (`as_nobody` false) or as nobody.
fn flood(api: &Path, as_nobody: bool, args: &[&str]) -> Command {
    let program = env!("CARGO_BIN_EXE_api-flood");
    let mut cmd = if as_nobody {
        command_as_user(NOBODY, program)
    } else {
        Command::new(program)
    };
    cmd.arg("--api-socket").arg(api).args(args);
    cmd
}

/// `key=value` of the flood's summary line.
fn summary(out: &Output, key: &str) -> u64 {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "api-flood: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {text}"))
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn port_gid(fabric: &SimulatedFabric, node: &str) -> Gid {
    Gid::new(
        Gid::DEFAULT_PREFIX,
        fabric.node(node).unwrap().port().unwrap().guid,
    )
}

/// An MGID of the flood's (`ff12:401b:ffff::1:N`).
fn flooded(mgid: Gid) -> bool {
    mgid.prefix() == 0xff12_401b_ffff_0000 && mgid.guid() >> 16 == 1
}

/// How long a HELLO takes on a new local API connection.
fn hello(api: &Path) -> Duration {
    let start = Instant::now();
    let mut c = Client::connect(api);
    assert_eq!(c.hello(), 20, "a HELLO answer: GID, LID, SM LID");
    start.elapsed()
}

/// How long an ibacm RESOLVE of `lid` takes on a new connection.
fn resolve(acm: &Path, lid: u16) -> Duration {
    let start = Instant::now();
    let mut s = UnixStream::connect(acm).unwrap();
    s.write_all(&acm_client::resolve_lid(lid, 7)).unwrap();
    let (_, status, _, body) = acm_client::read_reply(&mut s).unwrap();
    assert_eq!(
        (status, acm_client::path_dlid(&body)),
        (0, Some(lid)),
        "a path"
    );
    start.elapsed()
}

/// Lines of `log` naming a flooded group.
fn lines_about_the_flood(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("mgid=ff12:401b:ffff::1:"))
        .collect()
}

/// How many lines of `log` contain `text`.
fn lines_with(log: &str, text: &str) -> usize {
    log.lines().filter(|l| l.contains(text)).count()
}

/// How many flooded groups OpenSM holds `port` in.
fn flooded_held(d: &SaDump, port: Gid) -> usize {
    d.groups
        .iter()
        .filter(|g| flooded(g.mgid) && g.members.iter().any(|(p, _)| *p == port))
        .count()
}

#[test]
fn a_thousand_joins_then_a_close_every_door_answers_during_the_leaves() {
    let fabric = fabric();
    // Root may create 16 times 64 groups.
    let args = ["--max-group-creations-per-user", "64"];
    let mut sa = LocalSa::start(&fabric, "h5", &args).unwrap_or_else(|e| panic!("{e}"));
    let me = fabric.node("h5").unwrap().port().unwrap();
    let other = fabric.node("h6").unwrap().port().unwrap();
    let port = port_gid(&fabric, "h5");

    // Root's connection joins a thousand new groups, reads every answer
    // and closes.
    let out = flood(sa.api_socket(), false, &["--joins", "1000"])
        .output()
        .unwrap();
    let closed = unix_ms();
    assert_eq!(summary(&out, "ok"), 1000);
    // Another node watches local-sa's QP1 meanwhile.
    let watch = fabric
        .node("h6")
        .unwrap()
        .command(env!("CARGO_BIN_EXE_qp1-watch"))
        .args(["--sa-lid", &me.lid.to_string()])
        .args(["--dlid", &other.lid.to_string()])
        .args(["--every-ms", "100", "--for-s", "120"])
        .spawn()
        .unwrap();

    // While local-sa leaves the groups at OpenSM: a HELLO and an ibacm
    // RESOLVE, each timed.
    let (mut hellos, mut resolves) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while sa.counter("groups") > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the leaves never ended: {:?}\n{}",
            sa.counters(),
            sa.stderr()
        );
        hellos.push(hello(sa.api_socket()));
        resolves.push(resolve(sa.acm_socket(), other.lid));
        std::thread::sleep(Duration::from_millis(100));
    }
    let done = unix_ms();
    // The watch's answers during the leaves.
    std::thread::sleep(Duration::from_millis(300));
    let watched = watch.stdout();
    watch.stop(Duration::from_secs(2));
    let during: Vec<&str> = watched
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(sent, _)| sent.parse::<u128>().is_ok_and(|t| t >= closed && t <= done))
        .map(|(_, took)| took)
        .collect();

    assert!(
        hellos.len() >= 3 && during.len() >= 10,
        "the leaves took {} ms: too few samples ({} HELLOs, {} Gets)",
        done - closed,
        hellos.len(),
        during.len()
    );
    let slowest = |d: &[Duration]| d.iter().max().copied().unwrap_or_default();
    eprintln!(
        "leaves took {} ms; slowest HELLO {:?} of {}, RESOLVE {:?} of {}; QP1 Gets: {}",
        done - closed,
        slowest(&hellos),
        hellos.len(),
        slowest(&resolves),
        resolves.len(),
        during.join(" ")
    );
    assert!(
        slowest(&hellos) < Duration::from_secs(1),
        "HELLOs took {hellos:?}"
    );
    assert!(
        slowest(&resolves) < Duration::from_secs(1),
        "RESOLVEs took {resolves:?}"
    );
    for took in &during {
        let us: u64 = took
            .parse()
            .unwrap_or_else(|_| panic!("a QP1 Get went unanswered: {watched}"));
        assert!(us < 1_000_000, "a QP1 Get took {us} µs: {watched}");
    }

    // OpenSM holds none of the groups for the port, and local-sa agrees.
    let dump = fabric.opensm_dir().join("opensm-sa.dump");
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| {
        flooded_held(d, port) == 0
    });
    assert!(
        held,
        "OpenSM still holds flooded groups for the port: {d:?}"
    );
    sa.wait_until("nothing left to register", Duration::from_secs(30), |c| {
        c["registrations_in_flight"] == 0 && c["registrations_waiting"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let c = sa.counters();
    assert_eq!((c["groups"], c["members"]), (0, 0));
    assert_eq!((c["leaves_given_up"], c["upstream_failures"]), (0, 0));

    // A line or two about the thousand groups, not one each.
    let log = sa.stderr();
    let lines = lines_about_the_flood(&log);
    assert!(lines.len() <= 2, "{lines:#?}");
}

#[test]
fn an_unprivileged_users_joins_stop_at_its_limits_and_roots_do_not() {
    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let port = port_gid(&fabric, "h5");
    let api = sa.api_socket().to_owned();

    // Root holds a hundred groups on a connection that stays open.
    let mut root = flood(&api, false, &["--joins", "100", "--hold-s", "600"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut sa = sa;
    sa.wait_until("root's hundred groups", Duration::from_secs(60), |c| {
        c["groups"] == 100
    })
    .unwrap_or_else(|e| panic!("{e}"));

    // Nobody joins a thousand: the hundred that exist count against its
    // 64 groups; the rest would be more groups.
    let out = flood(&api, true, &["--joins", "1000"]).output().unwrap();
    assert_eq!(
        (summary(&out, "ok"), summary(&out, "no_resources")),
        (64, 936)
    );
    // Then a hundred new ones, one at a time: it may create 16.
    let out = flood(
        &api,
        true,
        &["--joins", "100", "--first", "5000", "--window", "1"],
    )
    .output()
    .unwrap();
    assert_eq!(
        (summary(&out, "ok"), summary(&out, "no_resources")),
        (16, 84)
    );
    // (The counters file is written every second.)
    sa.wait_until("the refusals counted", Duration::from_secs(10), |c| {
        (c["refused_groups"], c["refused_group_creations"]) == (936, 84)
    })
    .unwrap_or_else(|e| panic!("{e}"));

    // --status names both users.
    let status = fabric
        .node("h5")
        .unwrap()
        .lsaquery()
        .args(["--status", "--api-socket", api.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", status.stderr);
    assert!(
        status
            .stdout
            .contains("uid 0: 100 groups (100 created), 0 subscriptions; 0 refused"),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains("uid 65534: 0 groups (0 created), 0 subscriptions; 1020 refused"),
        "{}",
        status.stdout
    );

    // OpenSM never held more than root's hundred and nobody's sixteen;
    // once nobody's connections closed, root's hundred.
    let dump = fabric.opensm_dir().join("opensm-sa.dump");
    let ours = |d: &SaDump| flooded_held(d, port);
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| ours(d) == 100);
    assert!(
        held,
        "OpenSM holds {} flooded groups for the port",
        ours(&d)
    );
    assert_eq!(sa.counter("groups"), 100);

    // One line for the refusals of that user, not a thousand.
    let log = sa.stderr();
    assert_eq!(lines_with(&log, "past its owner's limit"), 1, "{log}");
    assert!(lines_about_the_flood(&log).len() <= 2);

    root.kill().unwrap();
    root.wait().unwrap();
    sa.wait_until("root's groups left", Duration::from_secs(60), |c| {
        c["groups"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| ours(d) == 0);
    assert!(
        held,
        "OpenSM holds {} flooded groups for the port",
        ours(&d)
    );
}

#[test]
fn ten_thousand_subscriptions_from_one_user_stop_at_its_limit_and_go_at_close() {
    let fabric = fabric();
    let mut sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let port = port_gid(&fabric, "h5");
    let dump = fabric.opensm_dir().join("opensm-sa.dump");
    let own = |d: &SaDump| d.traps_of(port) == [64, 65, 128];
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), own);
    assert!(held, "local-sa's own subscriptions: {:?}", d.traps_of(port));

    let out = flood(sa.api_socket(), true, &["--subscriptions", "10000"])
        .output()
        .unwrap();
    assert_eq!(
        (summary(&out, "ok"), summary(&out, "no_resources")),
        (256, 9744)
    );
    assert!(hello(sa.api_socket()) < Duration::from_secs(1));
    sa.wait_until(
        "the connection's subscriptions gone",
        Duration::from_secs(60),
        |c| c["subscriptions"] == 3 && c["registrations_waiting"] == 0,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), own);
    assert!(held, "OpenSM still holds {:?}", d.traps_of(port));
    assert_eq!(sa.counter("refused_subscriptions"), 9744);

    let log = sa.stderr();
    assert_eq!(lines_with(&log, "past its owner's limit"), 1, "{log}");
    assert!(lines_with(&log, "WARN") <= 3, "{log}");
}

#[test]
fn leaves_a_silent_master_missed_are_retried_asked_about_and_converge() {
    let fabric = fabric();
    let mut sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let port = port_gid(&fabric, "h5");
    let dump = fabric.opensm_dir().join("opensm-sa.dump");
    let ours = |d: &SaDump| flooded_held(d, port);
    let mut root = flood(
        sa.api_socket(),
        false,
        &["--joins", "200", "--hold-s", "600"],
    )
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
    sa.wait_until("200 groups", Duration::from_secs(60), |c| {
        c["groups"] == 200
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, held) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| ours(d) == 200);
    assert!(held, "OpenSM holds the 200 groups");

    // OpenSM stops answering (stopped, not killed: under ibsim a MAD to a
    // LID nobody serves comes back undelivered at once); the connection
    // goes, and with it the 200 groups.
    let opensm = fabric.opensm_pid().expect("OpenSM runs").to_string();
    let signal = |name: &str| {
        let status = Command::new("kill").args([name, &opensm]).status().unwrap();
        assert!(status.success(), "kill {name} {opensm}");
    };
    signal("-STOP");
    root.kill().unwrap();
    root.wait().unwrap();
    // Long enough for the first Deletes to fail (four attempts of a
    // second) and their first retries to come due.
    std::thread::sleep(Duration::from_secs(12));
    assert!(hello(sa.api_socket()) < Duration::from_secs(1));
    let log = sa.stderr();
    let unanswered = lines_with(&log, "did not answer a leave");
    assert_eq!(unanswered, 1, "one line a minute: {log}");
    assert!(
        lines_with(&log, "the master SA did not answer") <= 1,
        "{log}"
    );
    assert!(sa.counter("registrations_in_flight") <= 16);

    // OpenSM is back: it applies the Deletes it had queued, local-sa asks
    // before each retry, and both end up with nothing of the groups.
    signal("-CONT");
    sa.wait_until("every group left", Duration::from_secs(120), |c| {
        c["groups"] == 0 && c["registrations_waiting"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| ours(d) == 0);
    assert!(held, "OpenSM still holds {} of them", ours(&d));
    let c = sa.counters();
    assert_eq!(c["leaves_given_up"], 0);
    assert!(
        c["groups_gone_at_master"] > 0,
        "some Deletes OpenSM applied late were found done: {c:?}"
    );
}

#[test]
fn five_thousand_queries_for_the_master_leave_the_fabric_working() {
    let fabric = fabric();
    let mut sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    // Any user may ask; all five thousand at once, on one connection.
    let out = flood(
        sa.api_socket(),
        true,
        &["--path-queries", "5000", "--window", "5000"],
    )
    .output()
    .unwrap();
    let (answered, busy, other) = (
        summary(&out, "answered"),
        summary(&out, "busy"),
        summary(&out, "other"),
    );
    assert_eq!(answered, 5000);
    // Unknown LIDs: the master's NO_RECORDS for what it was asked, BUSY
    // for what waited too long or found too many waiting.
    assert!(other > 0 && other + busy == 5000, "{out:?}");
    sa.wait_until("the refusals counted", Duration::from_secs(10), |c| {
        c["upstream_refused"] == busy && c["upstream_in_flight"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sa.counter("umad_sends_dropped"), 0);
    assert!(hello(sa.api_socket()) < Duration::from_secs(1));
    // Another node's client is answered by OpenSM: nothing wedged.
    let c = fabric.node("h6").unwrap().saquery(["-c"]).unwrap();
    assert!(c.status.success(), "{}", c.stderr);
    let log = sa.stderr();
    assert!(lines_with(&log, "WARN") <= 2, "{log}");
}
