//! The SA core in process, on one core, with no I/O: a PathRecord Get
//! taken from its bytes to the answer's bytes (decode, lookup, encode)
//! with 100 K and 1 M records cached, and a 1 M-record SetTable taken in
//! segment by segment (RMPP reassembly, checks, store). Run with
//! `cargo bench -p local-sa-core --bench core`.
#![allow(missing_docs)]

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use local_sa_core::{Address, Received, SaCore};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Method, PathRecord, SaMadBuilder};

mod fixture;
use fixture::{DESTS, new_core, settable_segments, table};

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

/// Get requests for pairs spread over the whole table.
fn get_requests(sources: u16) -> Vec<Bytes> {
    (0..4096u32)
        .map(|i| {
            let s = 1 + (i.wrapping_mul(2_654_435_761) % u32::from(sources)) as u16;
            let d = 2001 + (i.wrapping_mul(40_503) % u32::from(DESTS)) as u16;
            let mut t = PathRecord::new_zeroed();
            t.set_slid(s);
            t.set_dlid(d);
            let mut b = SaMadBuilder::request(Method::GET, u64::from(i), AttributeId::PATH_RECORD)
                .record(&t);
            b.header_mut().sa.set_component_mask(pr::SLID | pr::DLID);
            let mut mad = BytesMut::from(&b.into_bytes()[..]);
            mad.resize(256, 0);
            mad.freeze()
        })
        .collect()
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
