//! Soak: a long working life for one local-sa — connect→resolve→close
//! cycles on its ibacm socket and on its local API, subscriptions made and
//! withdrawn, PathRecord loads, SIGHUPs meanwhile — after which its
//! resident memory and open descriptors are what they were after the
//! first tenth of it (within 5 %): nothing a client does and undoes stays
//! behind.
//!
//! Full size (`SOAK_SCALE=1`, `scripts/long-tests.sh`): 1,000,000 cycles
//! on each socket, 100,000 subscribe/unsubscribe pairs, 1,000 loads. Every
//! test run does a hundredth of it (the default `SOAK_SCALE=0.01`).

// The consumer client registration_proxy uses; this test needs a part.
#[allow(dead_code)]
mod api_client;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use api_client::Client;
use conformance::acm_client::{ACK, RESOLVE, path_dlid, read_reply, resolve_lid};
use conformance::saquery::path_record_dump;
use conformance::{LocalSa, SimulatedFabric, Topology};
use local_sa_core::doors::api::{self, Frame};
use local_sa_core::request::{Lookup, PathQuery, Request};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, MadStatus, Method, PathRecord, TrapNumber};

/// The SM_Key loads carry.
const KEY: &str = "0x50a";

/// The fraction of the full soak to run.
fn scale() -> f64 {
    std::env::var("SOAK_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.01)
}

/// What the daemon holds: resident memory (KiB) and open descriptors.
#[derive(Debug, Clone, Copy)]
struct Footprint {
    rss_kib: u64,
    fds: usize,
}

/// What the daemon holds once it is idle again: the reload that ends each
/// tenth logged as done, no client left but the subscriber, then the least
/// of a few readings — a reading can catch a descriptor the daemon holds
/// for a moment (the counters file being written, a configuration file
/// being read), which is not one it keeps.
fn settled_footprint(sa: &mut LocalSa<'_>, reloads: usize) -> Footprint {
    let reloaded = Instant::now();
    while sa.stderr().matches("configuration reloaded").count() < reloads {
        assert!(
            reloaded.elapsed() < Duration::from_secs(20),
            "SIGHUP number {reloads} never reloaded:\n{}",
            sa.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    sa.wait_until(
        "only the subscriber connected",
        Duration::from_secs(20),
        |c| c.get("door_connections") == Some(&1),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let readings: Vec<Footprint> = (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(20));
            footprint(sa.pid())
        })
        .collect();
    Footprint {
        rss_kib: readings.iter().map(|f| f.rss_kib).min().unwrap(),
        fds: readings.iter().map(|f| f.fds).min().unwrap(),
    }
}

fn footprint(pid: u32) -> Footprint {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    Footprint { rss_kib, fds }
}

/// One ibacm client's life: connect, resolve the path to `dlid`, close.
fn acm_cycle(socket: &Path, dlid: u16, tid: u64) {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(&resolve_lid(dlid, tid)).unwrap();
    let (op, status, _, body) = read_reply(&mut s).unwrap();
    assert_eq!((op, status), (RESOLVE | ACK, 0), "cycle {tid}");
    assert_eq!(path_dlid(&body), Some(dlid));
}

/// One local API client's life: connect, ask for the path from `slid` to
/// `dlid`, close.
fn api_cycle(socket: &Path, slid: u16, dlid: u16, id: u32) {
    let mut s = UnixStream::connect(socket).unwrap();
    let mut template = PathRecord::new_zeroed();
    template.set_slid(slid);
    template.set_dlid(dlid);
    let request = Request::PathQuery {
        query: PathQuery {
            method: Method::GET,
            mask: pr::SLID | pr::DLID,
            template,
        },
        lookup: Lookup::Anywhere,
    };
    s.write_all(&api::request_frame(&request, id).encode())
        .unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut rest = vec![0u8; Frame::announced(len).unwrap()];
    s.read_exact(&mut rest).unwrap();
    let frame = Frame::decode(&rest).unwrap();
    assert_eq!(frame.request, id);
    assert_eq!(api::status(&frame), MadStatus::OK, "cycle {id}");
}

#[test]
fn connections_subscriptions_loads_and_reloads_leave_memory_and_descriptors_flat() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa =
        LocalSa::start(&fabric, "h2", &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap().lid;
    let far = fabric.node("h9").unwrap().port().unwrap().lid;
    let full = |n: f64| ((n * scale()) as u64).max(10);
    let (cycles, subscriptions, loads) = (full(1e6), full(1e5), full(1e3));
    // A small load, pushed again and again over the same records.
    let file = fabric.dir().join("soak-load.txt");
    let records: String = (1..=3u16)
        .map(|d| {
            let mut r = PathRecord::new_zeroed();
            r.set_sgid(Gid::new(Gid::DEFAULT_PREFIX, 0x5000));
            r.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, 0x6000 + u64::from(d)));
            r.set_slid(3000);
            r.set_dlid(3000 + d);
            r.set_pkey(0xFFFF);
            r.set_reversible(true);
            path_record_dump(&r)
        })
        .collect();
    std::fs::write(&file, records).unwrap();
    let file = file.to_string_lossy().into_owned();

    let mut subscriber = Client::connect(sa.api_socket());
    // local-sa's own subscriptions (traps 64 and 65) are listed too.
    let subscribed_before = subscriber.list_subscriptions();
    let mut tenths = Vec::new();
    for tenth in 0..10u64 {
        for i in 0..cycles / 10 {
            let n = tenth * (cycles / 10) + i;
            acm_cycle(sa.acm_socket(), far, n);
            api_cycle(sa.api_socket(), me, far, n as u32 + 1);
        }
        for _ in 0..subscriptions / 10 {
            assert_eq!(subscriber.subscribe(TrapNumber(64), true), MadStatus::OK);
            assert_eq!(subscriber.subscribe(TrapNumber(64), false), MadStatus::OK);
        }
        for _ in 0..(loads / 10).max(1) {
            let out = node
                .lsaquery()
                .args(["--load", &file, "--replace", "--smkey", KEY])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        }
        sa.hang_up();
        tenths.push(settled_footprint(&mut sa, tenth as usize + 1));
        eprintln!("tenth {}: {:?}", tenth + 1, tenths.last().unwrap());
    }
    let (first, last) = (tenths[0], tenths[9]);
    let within = |a: f64, b: f64| (b - a).abs() <= a * 0.05;
    assert!(
        within(first.rss_kib as f64, last.rss_kib as f64),
        "resident memory grew: {tenths:?}"
    );
    assert!(
        within(first.fds as f64, last.fds as f64),
        "open descriptors grew: {tenths:?}"
    );
    assert_eq!(
        subscriber.list_subscriptions(),
        subscribed_before,
        "none of the consumer's left"
    );
    drop(subscriber);
    let (status, _) = sa.stop();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "a clean exit");
}
