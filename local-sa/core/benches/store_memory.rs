//! Memory the PathRecord store holds per cached record: the growth of the
//! process's resident set (VmRSS, what `ps` shows an operator) while 1 M
//! and then 100 K records (1000 destinations per source) are inserted as a
//! load or a refresh inserts them; the same for one node's own table (one
//! source, a record to each of 8,191 or 9,999 other hosts, inserted as a
//! bulk load inserts it: room for the table made first, then the records);
//! the same for four partition tables of such a node (what each P_Key of
//! the port beyond the default table costs); and the memory the names
//! table holds
//! per host (a 10-byte host name and an IPv4 address, as the directory
//! gives them) for 10 K and 100 K hosts. Allocator overhead and the spare
//! capacity of growing tables are included. Run with
//! `cargo bench -p local-sa-core --bench store_memory`.
#![allow(missing_docs)]

use local_sa_core::names::hosts::{HostAddress, NameSource, Names};
use local_sa_core::partitions::Partitions;
use local_sa_core::store::PathStore;

mod fixture;
use fixture::record;

/// The resident set size in bytes, from /proc/self/status.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn store_of(sources: u16) -> (PathStore, usize) {
    let before = rss();
    let mut store = PathStore::new();
    for s in 1..=sources {
        for d in 2001..3001u16 {
            store.insert(record(s, d), 1);
        }
    }
    let bytes = rss().saturating_sub(before);
    (store, bytes)
}

fn own_table_of(hosts: u16) -> (PathStore, usize) {
    let before = rss();
    let mut store = PathStore::new();
    store.expect_table(usize::from(hosts) - 1);
    for d in 2..=hosts {
        store.insert(record(1, d), 1);
    }
    let bytes = rss().saturating_sub(before);
    (store, bytes)
}

/// Partition tables of one node in `hosts`, one per P_Key 0x8001..,
/// each filled as a refresh fills it.
const PARTITIONS: u16 = 4;

fn partition_tables_of(hosts: u16) -> (Partitions, usize) {
    let before = rss();
    let mut partitions = Partitions::default();
    let pkeys: Vec<u16> = (1..=PARTITIONS).map(|p| 0x8000 | p).collect();
    partitions.set_held(&pkeys);
    for pkey in pkeys {
        let t = partitions.table_mut(pkey).expect("held");
        t.store.expect_table(usize::from(hosts) - 1);
        for d in 2..=hosts {
            let mut r = record(1, d);
            r.set_pkey(pkey);
            t.store.insert(r, 1);
        }
    }
    let bytes = rss().saturating_sub(before);
    (partitions, bytes)
}

fn names_of(hosts: u32) -> (Names, usize) {
    let before = rss();
    let mut names = Names::new();
    for i in 0..hosts {
        let gid = fixture::gid((i % 40_000) as u16 + 1);
        names.insert(
            HostAddress::Name(format!("node{i:06}")),
            gid,
            NameSource::Directory,
        );
        let ip = std::net::Ipv4Addr::from(0x0A00_0000 | i);
        names.insert(HostAddress::Ip(ip.into()), gid, NameSource::Directory);
    }
    let bytes = rss().saturating_sub(before);
    (names, bytes)
}

/// The argument after `flag`, if given.
fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(n) = value_of(&args, "--hosts") {
        let hosts: u32 = n.parse().expect("a number of hosts");
        let (names, bytes) = names_of(hosts);
        println!(
            "  {hosts:>9} hosts ({} names and addresses): {:>6.1} MiB, {:>5.1} bytes per host",
            names.len(),
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / f64::from(hosts),
        );
        return;
    }
    if let Some(n) = value_of(&args, "--own") {
        let hosts: u16 = n.parse().expect("a number of hosts");
        let (store, bytes) = own_table_of(hosts);
        println!(
            "  {:>9} records of one source: {:>6.2} MiB, {:>5.1} bytes per record",
            store.len(),
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / store.len() as f64,
        );
        return;
    }
    if let Some(n) = value_of(&args, "--partitions") {
        let hosts: u16 = n.parse().expect("a number of hosts");
        let (partitions, bytes) = partition_tables_of(hosts);
        let per_table = bytes as f64 / f64::from(PARTITIONS);
        println!(
            "  {PARTITIONS} partition tables of {} records each: {:>6.2} MiB, {:>6.2} MiB per partition, {:>5.1} bytes per record",
            partitions.records() / usize::from(PARTITIONS),
            bytes as f64 / (1024.0 * 1024.0),
            per_table / (1024.0 * 1024.0),
            bytes as f64 / partitions.records() as f64,
        );
        return;
    }
    // One size per process, so that memory freed by one measurement cannot
    // be reused by the next.
    if let Some(n) = value_of(&args, "--sources") {
        let sources: u16 = n.parse().expect("a number of sources");
        let (store, bytes) = store_of(sources);
        let n = store.len();
        println!(
            "  {n:>9} records: {:>6.1} MiB, {:>5.1} bytes per record (each record itself is 64)",
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / n as f64,
        );
        return;
    }
    // `cargo bench` passes --bench; `cargo test --benches` runs this too,
    // briefly: one small store.
    let sizes: &[u16] = if args.iter().any(|a| a == "--bench") {
        &[100, 1000]
    } else {
        &[10]
    };
    println!("PathStore memory (resident set growth, 1000 destinations per source)");
    let me = std::env::current_exe().expect("this benchmark's path");
    let run = |flag: &str, n: u32| {
        let out = std::process::Command::new(&me)
            .args([flag, &n.to_string()])
            .output()
            .expect("run");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    };
    for sources in sizes {
        run("--sources", u32::from(*sources));
    }
    println!("One node's own table (resident set growth)");
    let own: &[u32] = if sizes.len() > 1 {
        &[8192, 10_000]
    } else {
        &[100]
    };
    for n in own {
        run("--own", *n);
    }
    println!("A node's partition tables (resident set growth)");
    for n in own {
        run("--partitions", *n);
    }
    println!("Names table memory (resident set growth; a host name and an IPv4 address per host)");
    let hosts: &[u32] = if sizes.len() > 1 {
        &[10_000, 100_000]
    } else {
        &[1000]
    };
    for n in hosts {
        run("--hosts", *n);
    }
}
