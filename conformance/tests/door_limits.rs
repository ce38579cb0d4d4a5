//! What local users can make local-sa hold through its sockets is bounded:
//! connections per user and in all (the local API's and the ibacm
//! protocol's together), and the replies queued for a client that never
//! reads them. A refused connection is closed at once and counted; a
//! client that stops reading is disconnected and its queue freed; everyone
//! else is served as before.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use conformance::{LocalSa, SimulatedFabric, Topology, closed_by_peer, command_as_user};
use local_sa_core::doors::api::{self, Frame, kind};
use local_sa_core::request::{Lookup, PathQuery, Request};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Method, PathRecord};

/// Sends HELLO on `stream` and reads the answer's kind.
fn hello(stream: &mut UnixStream) -> u8 {
    stream
        .write_all(&api::request_frame(&Request::Hello, 1).encode())
        .unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut rest = vec![0u8; Frame::announced(len).unwrap()];
    stream.read_exact(&mut rest).unwrap();
    Frame::decode(&rest).unwrap().kind
}

/// True if the daemon closed `stream` within a moment.
fn closed(stream: &UnixStream) -> bool {
    closed_by_peer(stream, Duration::from_millis(100))
}

fn connect(path: &Path) -> UnixStream {
    UnixStream::connect(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn connections_past_a_users_share_are_closed_and_counted() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &["--max-connections-per-user", "40"])
        .unwrap_or_else(|e| panic!("{e}"));
    // 30 on the local API, 20 on the ibacm socket: one user's 50 (all
    // checked well within the 30 s a silent new connection is given).
    let api: Vec<UnixStream> = (0..30).map(|_| connect(sa.api_socket())).collect();
    let acm: Vec<UnixStream> = (0..20).map(|_| connect(sa.acm_socket())).collect();
    let (api_refused, mut kept): (Vec<UnixStream>, Vec<UnixStream>) =
        api.into_iter().partition(closed);
    let acm_refused = acm.iter().filter(|s| closed(s)).count();
    assert_eq!(
        api_refused.len() + acm_refused,
        10,
        "40 kept, the rest closed"
    );
    sa.wait_until("the refusals counted", Duration::from_secs(5), |c| {
        c["door_refused_per_user"] == 10 && c["door_connections"] == 40
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // The admitted ones work; once some close, new ones get in.
    assert_eq!(hello(&mut kept[0]), kind::HELLO_ANSWER);
    kept.truncate(5);
    drop(acm);
    sa.wait_until("connections given back", Duration::from_secs(5), |c| {
        c["door_connections"] <= 25
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut fresh = connect(sa.api_socket());
    assert_eq!(hello(&mut fresh), kind::HELLO_ANSWER);
    let (_, log) = sa.stop();
    assert_eq!(
        log.matches("this user has too many open").count(),
        1,
        "ten refusals, one log line:\n{log}"
    );
}

#[test]
fn a_client_that_stops_reading_is_disconnected_and_others_are_served() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let me = fabric.node("h2").unwrap().port().unwrap();
    // Every path from this port, asked again and again, answers never read.
    let mut template = PathRecord::new_zeroed();
    template.set_slid(me.lid);
    let query = Request::PathQuery {
        query: PathQuery {
            method: Method::GET_TABLE,
            mask: pr::SLID,
            template,
        },
        lookup: Lookup::Anywhere,
    };
    let mut greedy = connect(sa.api_socket());
    let mut sent = 0u32;
    for id in 1..=40_000u32 {
        if greedy
            .write_all(&api::request_frame(&query, id).encode())
            .is_err()
        {
            break; // disconnected
        }
        sent += 1;
    }
    sa.wait_until("the slow reader dropped", Duration::from_secs(30), |c| {
        c["door_slow_readers"] == 1 && c["door_connections"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}: {sent} requests sent"));
    let mut other = connect(sa.api_socket());
    assert_eq!(hello(&mut other), kind::HELLO_ANSWER);
}

/// Under the simulator the daemon has 1024 descriptors whatever its
/// open-files limit (umad2sim's table): 1,300 connections used to crash it
/// at the 1024th. It keeps 128 back and closes the connections past that.
#[test]
fn thirteen_hundred_connections_under_the_simulator_are_refused_past_the_reserve() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &["--max-connections-per-user", "2000"])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut served = Vec::new();
    let mut refused = 0;
    for _ in 0..1300 {
        let mut s = connect(sa.api_socket());
        // A refused connection may be closed before the HELLO is written.
        let _ = s.write_all(&api::request_frame(&Request::Hello, 1).encode());
        let mut len = [0u8; 4];
        match s.read_exact(&mut len) {
            Ok(()) => served.push(s),
            Err(_) => refused += 1,
        }
    }
    assert_eq!(served.len(), 1024 - 128, "{refused} refused");
    sa.wait_until("the refusals counted", Duration::from_secs(5), |c| {
        c["door_refused_total"] == 1300 - (1024 - 128)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    drop(served);
    // Once the daemon has seen them close, a new client gets in.
    sa.wait_until("connections given back", Duration::from_secs(10), |c| {
        c["door_connections"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut fresh = connect(sa.api_socket());
    assert_eq!(hello(&mut fresh), kind::HELLO_ANSWER);
    let (status, _) = sa.stop();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "a clean exit");
}

/// Under the simulator's open-files limit (896 connections in all), an
/// unprivileged user who opens 1,300 connections holds a quarter of them;
/// root's `lsaquery -I` and another user's clients are served meanwhile.
#[test]
fn one_unprivileged_user_cannot_lock_out_root_or_another_user() {
    const NOBODY: u32 = 65534;
    const ANOTHER: u32 = 65533;
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let flood = env!("CARGO_BIN_EXE_api-flood");
    let api = sa.api_socket().to_owned();
    let mut holder = command_as_user(NOBODY, flood)
        .arg("--api-socket")
        .arg(&api)
        .args(["--connections", "1300", "--hold-s", "120"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(
        first.trim(),
        "connections=1300 served=224 refused=1076",
        "a quarter of 896"
    );
    // Root is served, ten times out of ten.
    let node = fabric.node("h2").unwrap();
    for _ in 0..10 {
        let out = node
            .lsaquery()
            .arg("--api-socket")
            .arg(&api)
            .arg("-I")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    }
    // So is another unprivileged user.
    let other = command_as_user(ANOTHER, flood)
        .arg("--api-socket")
        .arg(&api)
        .args(["--connections", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&other.stdout);
    assert!(
        text.starts_with("connections=5 served=5 refused=0"),
        "{text}{}",
        String::from_utf8_lossy(&other.stderr)
    );
    sa.wait_until("the refusals counted", Duration::from_secs(5), |c| {
        c["door_refused_per_user"] == 1076
    })
    .unwrap_or_else(|e| panic!("{e}"));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let (status, log) = sa.stop();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "a clean exit");
    assert_eq!(
        log.matches("this user has too many open").count(),
        1,
        "1,076 refusals, one log line"
    );
}
