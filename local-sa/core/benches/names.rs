//! Name and IP resolution in the ibacm door, in process: a RESOLVE
//! message taken from its bytes to the PathRecord request for the agent,
//! by LID (no lookup), by host name and by IPv4 address, with 10 K and
//! 100 K hosts known; and reading a directory ServiceRecord into names, as
//! each refresh does for every published host. Run with
//! `cargo bench -p local-sa-core --bench names`.
#![allow(missing_docs)]

use std::net::{IpAddr, Ipv4Addr};

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use local_sa_core::doors::acm::wire::{self, Entry, Opcode, flags};
use local_sa_core::doors::acm::{AcmConfig, AcmService, Endpoint};
use local_sa_core::doors::{Door, Input, Output};
use local_sa_core::names::directory::Publication;
use local_sa_core::names::hosts::{HostAddress, NameSource, Names};
use local_sa_core::{PortIdentity, request::ConnId};

mod fixture;
use fixture::gid;

fn main() {
    divan::main();
}

fn host(i: u32) -> String {
    format!("node{i:06}")
}

fn ip(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0A00_0000 | i))
}

/// A names table of `hosts` hosts: a name and an address each.
fn names(hosts: u32) -> Names {
    let mut n = Names::new();
    for i in 0..hosts {
        let g = gid((i % 40_000) as u16 + 1);
        n.insert(HostAddress::Name(host(i)), g, NameSource::Directory);
        n.insert(HostAddress::Ip(ip(i)), g, NameSource::Directory);
    }
    n
}

fn door(hosts: u32) -> AcmService {
    let port = PortIdentity {
        lid: 1,
        lmc: 0,
        gid: gid(1),
        sm_lid: 2,
        sm_sl: 0,
    };
    let ep = Endpoint {
        agent: 0,
        port,
        dev_guid: 1,
        port_num: 1,
        phys_port_cnt: 1,
        pkey: 0xFFFF,
        addresses: vec![],
    };
    let mut d = AcmService::new(
        AcmConfig {
            max_pending: usize::MAX,
        },
        vec![ep],
        Names::new(),
    );
    d.set_learned_names(std::sync::Arc::new(names(hosts)));
    d
}

fn resolve(dest: &HostAddress) -> Vec<u8> {
    wire::request(
        Opcode::RESOLVE,
        [0; 3],
        &[Entry::for_address(flags::DEST, dest)],
        0,
    )
    .to_vec()
}

/// 4096 messages for destinations spread over the table.
fn messages(hosts: u32, by: fn(u32) -> HostAddress) -> Vec<Vec<u8>> {
    (0..4096u32)
        .map(|i| resolve(&by(i.wrapping_mul(2_654_435_761) % hosts)))
        .collect()
}

fn run(bencher: Bencher<'_, '_>, hosts: u32, by: fn(u32) -> HostAddress) {
    let mut d = door(hosts);
    let msgs = messages(hosts, by);
    let conn: ConnId = 1;
    let mut i = 0usize;
    let now = std::time::Instant::now();
    bencher.counter(ItemsCount::new(1usize)).bench_local(|| {
        let bytes = &msgs[i % msgs.len()];
        d.handle_input(now, Input::Message { conn, bytes });
        let output = d.poll_output();
        i += 1;
        // The agent's answer never comes: forget the request so that the
        // door's table stays the same size.
        d.handle_input(now, Input::Closed { conn });
        assert!(matches!(output, Some(Output::Ask { .. })));
        black_box(output)
    });
}

#[divan::bench(args = [10_000, 100_000], sample_count = 50, sample_size = 4096)]
fn resolve_by_lid(bencher: Bencher<'_, '_>, hosts: u32) {
    run(bencher, hosts, |i| {
        HostAddress::Lid((i % 40_000) as u16 + 1)
    });
}

#[divan::bench(args = [10_000, 100_000], sample_count = 50, sample_size = 4096)]
fn resolve_by_name(bencher: Bencher<'_, '_>, hosts: u32) {
    run(bencher, hosts, |i| HostAddress::Name(host(i)));
}

#[divan::bench(args = [10_000, 100_000], sample_count = 50, sample_size = 4096)]
fn resolve_by_ipv4(bencher: Bencher<'_, '_>, hosts: u32) {
    run(bencher, hosts, |i| HostAddress::Ip(ip(i)));
}

/// One published host's record read into the names table.
#[divan::bench(sample_count = 50, sample_size = 4096)]
fn directory_record_to_names(bencher: Bencher<'_, '_>) {
    let p = Publication::new("node000017", vec![ip(17), "fd00::17".parse().unwrap()]).unwrap();
    let record = p.record(gid(17), 1800);
    let mut n = Names::new();
    bencher.counter(ItemsCount::new(1usize)).bench_local(|| {
        let (g, p) = Publication::from_record(black_box(&record)).unwrap();
        p.add_to(g, &mut n);
    });
}
