//! The SA core in process, on one core, with no I/O: a PathRecord Get
//! taken from its bytes to the answer's bytes (decode, lookup, encode)
//! with 100 K and 1 M records cached; the kernel's RDMA_NL_LS RESOLVE for
//! the same pairs through the kernel door (netlink decode, the agent's
//! Get by GIDs, the reply's encode); a 1 M-record SetTable taken in
//! segment by segment (RMPP reassembly, checks, store); and a dump of the
//! 1 M records page by page. Run with
//! `cargo bench -p local-sa-core --bench core`.
#![allow(missing_docs)]

use std::time::Instant;

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use local_sa_core::doors::api::{DUMP_PAGE, dump_from_after};
use local_sa_core::doors::netlink::wire::{self, PathUse, Resolve};
use local_sa_core::doors::netlink::{KernelPort, NetlinkConfig, NetlinkService};
use local_sa_core::doors::{DatagramSender, Door, Input, Output};
use local_sa_core::names::hosts::Names;
use local_sa_core::request::Request;
use local_sa_core::{Address, Received, SaCore};

mod fixture;
use fixture::{DESTS, get_requests, gid, new_core, settable_segments, table};

fn main() {
    divan::main();
}

/// A core holding `sources × 1000` records, loaded through the wire.
fn loaded_core(sources: u16) -> SaCore {
    let now = Instant::now();
    let mut core = new_core(now);
    let loader = Address::gsi(4001, 0);
    for seg in settable_segments(&table(sources)) {
        core.handle_mad(now, Received::new(loader, seg));
        while core.poll_transmit().is_some() {}
    }
    assert_eq!(
        core.store().len(),
        usize::from(sources) * usize::from(DESTS)
    );
    core
}

#[divan::bench(args = [100, 1000], sample_count = 50, sample_size = 4096)]
fn pathrecord_get(bencher: Bencher<'_, '_>, sources: u16) {
    let mut core = loaded_core(sources);
    let requests = get_requests(sources);
    let client = Address::gsi(4002, 0);
    let now = Instant::now();
    let mut i = 0usize;
    bencher.counter(ItemsCount::new(1usize)).bench_local(|| {
        let request = &requests[i % requests.len()];
        i += 1;
        core.handle_mad(now, Received::new(client, request.clone()));
        black_box(core.poll_transmit())
    });
    assert_eq!(core.counters().errors, 0, "every Get found its record");
}

/// 4096 RESOLVEs for the pairs [`get_requests`] asks, as the kernel sends
/// them for rdma_cm (GMP use: Reversible; SGID, DGID, P_Key).
fn resolve_requests(sources: u16) -> Vec<Vec<u8>> {
    (0..4096u32)
        .map(|i| {
            let s = 1 + (i.wrapping_mul(2_654_435_761) % u32::from(sources)) as u16;
            let d = 2001 + (i.wrapping_mul(40_503) % u32::from(DESTS)) as u16;
            let r = Resolve {
                device: "mlx5_0".into(),
                port: 1,
                path_use: PathUse::GMP,
                service_id: None,
                dgid: Some(gid(d)),
                sgid: Some(gid(s)),
                tclass: None,
                pkey: Some(0xFFFF),
                qos_class: None,
            };
            wire::resolve_request(i, &r).to_vec()
        })
        .collect()
}

#[divan::bench(args = [100, 1000], sample_count = 50, sample_size = 4096)]
fn netlink_resolve(bencher: Bencher<'_, '_>, sources: u16) {
    let mut core = loaded_core(sources);
    let port = KernelPort {
        agent: 0,
        device: "mlx5_0".into(),
        port_num: 1,
        port: core.port(),
    };
    const CONN: u64 = u64::MAX;
    let mut door = NetlinkService::new(NetlinkConfig::default(), CONN, vec![port], Names::new());
    let requests = resolve_requests(sources);
    let now = Instant::now();
    let mut i = 0usize;
    bencher.counter(ItemsCount::new(1usize)).bench_local(|| {
        let datagram = &requests[i % requests.len()];
        i += 1;
        let mut reply = None;
        let from = DatagramSender::Kernel;
        door.handle_input(
            now,
            Input::Datagram {
                from,
                bytes: datagram,
            },
        );
        while let Some(output) = door.poll_output() {
            match output {
                Output::Ask { id, request, .. } => {
                    core.handle_local(now, CONN, id, request);
                    while let Some(r) = core.poll_local() {
                        door.handle_reply(now, &r);
                    }
                }
                Output::Send { bytes, .. } => reply = Some(bytes),
                Output::Close { .. } | Output::Registrant { .. } => {}
            }
        }
        black_box(reply)
    });
    let c = door.counters();
    assert_eq!(
        (c.failed, c.answered, c.from_cache),
        (0, c.resolves, c.resolves),
        "every RESOLVE answered from the cache"
    );
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn dump_1m_by_pages(bencher: Bencher<'_, '_>) {
    let mut core = loaded_core(1000);
    let now = Instant::now();
    bencher
        .counter(ItemsCount::new(1_000_000usize))
        .bench_local(|| {
            let (mut from, mut records, mut id) = (0u32, 0usize, 0u32);
            loop {
                id += 1;
                core.handle_local(
                    now,
                    1,
                    id,
                    Request::Dump {
                        from,
                        max: DUMP_PAGE,
                        partition: None,
                    },
                );
                let page = core.poll_local().expect("a page");
                let last = page.body.path_records().last();
                let n = page.body.path_records().count();
                records += n;
                match last {
                    Some(r) if n == DUMP_PAGE as usize => {
                        from = dump_from_after(&r).expect("not the last pair");
                    }
                    _ => break,
                }
            }
            assert_eq!(records, 1_000_000);
        });
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn settable_ingest_1m(bencher: Bencher<'_, '_>) {
    let segments = settable_segments(&table(1000));
    let loader = Address::gsi(4001, 0);
    bencher
        .counter(ItemsCount::new(1_000_000usize))
        .with_inputs(|| new_core(Instant::now()))
        .bench_local_values(|mut core| {
            let now = Instant::now();
            for seg in &segments {
                core.handle_mad(now, Received::new(loader, seg.clone()));
                while core.poll_transmit().is_some() {}
            }
            assert_eq!(core.store().len(), 1_000_000);
            core
        });
}
