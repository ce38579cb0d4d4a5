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
use local_sa_core::{Address, AgentConfig, PortIdentity, Received, SaCore};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{AttributeId, Method, PathRecord, SaMadBuilder, SaRecord};

mod fixture;
use fixture::{gid, record};

fn main() {
    divan::main();
}

const SM_KEY: u64 = 0x5eed;
/// Destinations per source: 1 M records are 1000 sources × 1000.
const DESTS: u16 = 1000;

/// Source LIDs 1..=sources, destination LIDs 2001..=3000.
fn table(sources: u16) -> Vec<PathRecord> {
    (1..=sources)
        .flat_map(|s| (2001..2001 + DESTS).map(move |d| record(s, d)))
        .collect()
}

fn new_core(now: Instant) -> SaCore {
    let port = PortIdentity {
        lid: 1,
        lmc: 0,
        gid: gid(1),
        sm_lid: 4000,
        sm_sl: 0,
    };
    let mut core = SaCore::new(
        AgentConfig {
            sm_key: SM_KEY,
            ..AgentConfig::default()
        },
        port,
        now,
        1,
    );
    // Its first requests to the master go nowhere here.
    while core.poll_transmit().is_some() {}
    core
}

/// The DATA segments of a SetTable (REPLACE_SOURCES) of `records`, as a
/// loader sends them, each a shared buffer: the core is handed counted
/// references to them, as the daemon hands it the buffers it reads (so a
/// clone in the benchmark is a count, not an allocation).
fn settable_segments(records: &[PathRecord]) -> Vec<Bytes> {
    let mut b = SaMadBuilder::request(Method::SET, 7, AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(SM_KEY);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(1);
    let header: SaMadHeader = *h;
    let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
    for r in records {
        data.extend_from_slice(r.as_bytes());
    }
    // A receiver on the other end makes the sender open its window.
    let now = Instant::now();
    let config = RmppConfig {
        max_data_len: usize::MAX,
        ..RmppConfig::default()
    };
    let mut sender = Sender::new(header, data.freeze(), config, now).expect("fits RMPP");
    let mut receiver = Receiver::new(config, now);
    let mut segments = Vec::new();
    while sender.state() == TransferState::Active {
        while let Some(seg) = sender.poll_transmit(now) {
            receiver.handle_segment(now, &seg);
            segments.push(Bytes::copy_from_slice(&seg));
        }
        while let Some(ack) = receiver.poll_transmit() {
            sender.handle_control(now, &ack);
        }
    }
    for s in &segments {
        drop(s.clone());
    }
    segments
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
