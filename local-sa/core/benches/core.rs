//! The SA core in process, on one core, with no I/O: a PathRecord Get
//! taken from its bytes to the answer's bytes (decode, lookup, encode)
//! with 100 K and 1 M records cached, and a 1 M-record SetTable taken in
//! segment by segment (RMPP reassembly, checks, store). Run with
//! `cargo bench -p local-sa-core --bench core`.
#![allow(missing_docs)]

use std::time::Instant;

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use local_sa_core::{Address, Received, SaCore};

mod fixture;
use fixture::{DESTS, get_requests, new_core, settable_segments, table};

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
