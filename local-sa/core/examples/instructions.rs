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

use bytes::Bytes;
use local_sa_core::{Address, Received, SaCore};

#[path = "../benches/fixture/mod.rs"]
mod fixture;
use fixture::{DESTS, get_requests, new_core, settable_segments, table};

/// Sources in the table (`SOURCES` in the environment; 100 by default).
fn sources() -> u16 {
    std::env::var("SOURCES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100)
}

const GETS: u32 = 100_000;

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
    let mut core = new_core(now);
    let sources = sources();
    let (segments, requests) = (settable_segments(&table(sources)), get_requests(sources));
    // Each MAD is handed over as a counted reference, the way the daemon
    // hands over the buffer it read: make the buffers shared first, so the
    // count is the core's work and not the first clone's allocation (the
    // segments come shared).
    for b in &requests {
        drop(b.clone());
    }
    let started = Instant::now();
    measured_ingest(&mut core, now, &segments);
    let ingest = started.elapsed();
    assert_eq!(
        core.store().len(),
        usize::from(sources) * usize::from(DESTS)
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
