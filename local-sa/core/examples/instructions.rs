//! Instructions per PathRecord Get and per SetTable record, counted by
//! callgrind, which counts the same on any machine however busy it is:
//!
//! ```text
//! cargo build --release -p local-sa-core --example instructions
//! valgrind --tool=callgrind --toggle-collect='*measured_*' \
//!     target/release/examples/instructions
//! ```
//!
//! `measured_ingest` takes 100 000 records (100 sources × 1000; `SOURCES`
//! in the environment sets the sources) in as a SetTable, segment by
//! segment; `measured_gets` answers 100 000 Gets for pairs spread over
//! them. Divide callgrind's inclusive cost of each by its count. The
//! program also prints the wall-clock time of each, for what it is worth
//! on a busy machine.

use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use local_sa_core::{Address, AgentConfig, PortIdentity, Received, SaCore};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, Gid, Method, Mtu, PathRecord, PathRecordRepr, Rate, SaMadBuilder, SaRecord,
    Selector,
};

const SM_KEY: u64 = 0x5eed;
/// Sources in the table (`SOURCES` in the environment; 100 by default).
fn sources() -> u16 {
    std::env::var("SOURCES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100)
}

const DESTS: u16 = 1000;
const GETS: u32 = 100_000;

fn gid(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 | u64::from(lid))
}

fn record(slid: u16, dlid: u16) -> PathRecord {
    PathRecordRepr {
        sgid: gid(slid),
        dgid: gid(dlid),
        slid,
        dlid,
        reversible: true,
        pkey: 0xFFFF,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::MTU_4096,
        rate_selector: Selector::Exactly,
        rate: Rate::GBPS_100,
        packet_life_selector: Selector::Exactly,
        packet_life: 18,
        ..PathRecordRepr::default()
    }
    .to_wire()
}

/// The DATA segments of a SetTable of the whole table.
fn segments() -> Vec<Bytes> {
    let mut b = SaMadBuilder::request(Method::SET, 7, AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(SM_KEY);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(1);
    let header: SaMadHeader = *h;
    let mut data = BytesMut::new();
    for s in 1..=sources() {
        for d in 2001..2001 + DESTS {
            data.extend_from_slice(record(s, d).as_bytes());
        }
    }
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
    segments
}

fn requests() -> Vec<Bytes> {
    (0..4096u32)
        .map(|i| {
            let s = 1 + (i.wrapping_mul(2_654_435_761) % u32::from(sources())) as u16;
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

#[inline(never)]
fn measured_ingest(core: &mut SaCore, now: Instant, segments: &[Bytes]) {
    let loader = Address::gsi(4001, 0);
    for seg in segments {
        core.handle_mad(now, Received::new(loader, seg.clone()));
        while core.poll_transmit().is_some() {}
    }
}

#[inline(never)]
fn measured_gets(core: &mut SaCore, now: Instant, requests: &[Bytes]) {
    let client = Address::gsi(4002, 0);
    for i in 0..GETS as usize {
        let request = &requests[i % requests.len()];
        core.handle_mad(now, Received::new(client, request.clone()));
        black_box(core.poll_transmit());
    }
}

fn main() {
    let now = Instant::now();
    let port = PortIdentity {
        lid: 1,
        lmc: 0,
        gid: gid(1),
        sm_lid: 4000,
        sm_sl: 0,
    };
    let config = AgentConfig {
        sm_key: SM_KEY,
        ..AgentConfig::default()
    };
    let mut core = SaCore::new(config, port, now, 1);
    while core.poll_transmit().is_some() {}
    let (segments, requests) = (segments(), requests());
    // Each MAD is handed over as a counted reference, the way the daemon
    // hands over the buffer it read: make the buffers shared first, so the
    // count is the core's work and not the first clone's allocation.
    for b in segments.iter().chain(&requests) {
        drop(b.clone());
    }
    let started = Instant::now();
    measured_ingest(&mut core, now, &segments);
    let ingest = started.elapsed();
    assert_eq!(
        core.store().len(),
        usize::from(sources()) * usize::from(DESTS)
    );
    let started = Instant::now();
    measured_gets(&mut core, now, &requests);
    let gets = started.elapsed();
    assert_eq!(core.counters().errors, 0, "every Get found its record");
    let records = core.store().len();
    println!(
        "{records} records ingested ({:.0} ns each), {GETS} Gets answered ({:.0} ns each)",
        ingest.as_nanos() as f64 / records as f64,
        gets.as_nanos() as f64 / f64::from(GETS)
    );
}
