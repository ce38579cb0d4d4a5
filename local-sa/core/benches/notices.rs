//! The registration proxy in the SA core, on one core, with no I/O: one
//! Report from the master fanned out to 1000 subscribers — local API
//! connections (a notice queued for each), or MAD subscribers (a Report
//! MAD built for each, and its ReportResp taken back) — and a local
//! subscribe/unsubscribe of a filter the port already holds. Run with
//! `cargo bench -p local-sa-core --bench notices`.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use bytes::BytesMut;
use divan::Bencher;
use divan::counter::ItemsCount;
use local_sa_core::request::Request;
use local_sa_core::{Address, AgentConfig, PortIdentity, Received, SaCore};
use mad_codec::codes::{NoticeType, ProducerType};
use mad_codec::zerocopy::FromBytes;
use mad_codec::{
    AttributeId, Gid, InformInfoRepr, MadHeader, MadStatus, Method, NoticeRepr, SaMad,
    SaMadBuilder, TrapDetails, TrapNumber,
};

fn main() {
    divan::main();
}

const MY_LID: u16 = 1;
const MASTER_LID: u16 = 4000;
const SUBSCRIBERS: u32 = 1000;

fn master() -> Address {
    Address::gsi(MASTER_LID, 0)
}

/// A core whose master accepts everything it is asked at once.
fn new_core(now: Instant) -> SaCore {
    let port = PortIdentity {
        lid: MY_LID,
        lmc: 0,
        gid: Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0001),
        sm_lid: MASTER_LID,
        sm_sl: 0,
    };
    // Started long enough ago that the registrations following its first
    // table (within the start's shortest window) are out by `now`.
    let start = now - Duration::from_secs(2);
    let mut core = SaCore::new(AgentConfig::default(), port, start, 1);
    answer_the_master(&mut core, start);
    core.handle_timeout(now);
    answer_the_master(&mut core, now);
    core
}

/// Answers every request the core sent the master with its success
/// response; drops everything else it sent.
fn answer_the_master(core: &mut SaCore, now: Instant) {
    while let Some(t) = core.poll_transmit() {
        if t.dest.lid != MASTER_LID {
            continue;
        }
        let mut resp = BytesMut::from(&t.mad[..]);
        let Ok((h, _)) = MadHeader::mut_from_prefix(&mut resp[..]) else {
            continue;
        };
        if h.method().is_response() {
            continue;
        }
        h.set_method(Method::GET_RESP);
        h.set_status(MadStatus::OK);
        core.handle_mad(now, Received::new(master(), resp.freeze()));
    }
}

fn subscribe_all() -> mad_codec::InformInfo {
    InformInfoRepr::generic_subscription(TrapNumber::ALL, true, 0, 19).to_wire()
}

/// The `n`th Report: a group created (each one a different notice, so
/// none is taken for a duplicate of another).
fn report(n: u64) -> bytes::Bytes {
    let notice = NoticeRepr::generic(
        NoticeType::INFORMATIONAL,
        ProducerType::CLASS_MANAGER,
        TrapDetails::McGroupCreated {
            mgid: Gid::new(0xff12_1234_0000_0000, n),
        },
        MASTER_LID,
        Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0fa0),
    )
    .to_wire();
    SaMadBuilder::request(Method::REPORT, n, AttributeId::NOTICE)
        .record(&notice)
        .into_bytes()
}

/// A Report to 1000 local API connections: matched, checked for
/// duplicates, and a notice queued for each.
#[divan::bench(sample_count = 100)]
fn report_to_1000_local_connections(bencher: Bencher<'_, '_>) {
    let now = Instant::now();
    let mut core = new_core(now);
    for conn in 1..=u64::from(SUBSCRIBERS) {
        core.handle_local(now, conn, 1, Request::Inform(subscribe_all()));
        answer_the_master(&mut core, now);
    }
    while core.poll_local().is_some() {}
    let mut n = 0u64;
    bencher
        .counter(ItemsCount::new(SUBSCRIBERS))
        .bench_local(|| {
            n += 1;
            core.handle_mad(now, Received::new(master(), report(n)));
            let mut notices = 0;
            while core.poll_local().is_some() {
                notices += 1;
            }
            while core.poll_transmit().is_some() {}
            assert_eq!(notices, SUBSCRIBERS);
        });
}

/// A Report to 1000 MAD subscribers: a Report MAD built for each under its
/// own TransactionID, and each one's ReportResp taken back.
#[divan::bench(sample_count = 100)]
fn report_to_1000_mad_subscribers(bencher: Bencher<'_, '_>) {
    let now = Instant::now();
    let mut core = new_core(now);
    for qpn in 100..100 + SUBSCRIBERS {
        let set = SaMadBuilder::request(Method::SET, qpn.into(), AttributeId::INFORM_INFO)
            .record(&subscribe_all())
            .into_bytes();
        let from = Address {
            qpn,
            ..Address::gsi(MY_LID, 0)
        };
        core.handle_mad(now, Received::new(from, set));
        answer_the_master(&mut core, now);
    }
    let mut n = 0u64;
    bencher
        .counter(ItemsCount::new(SUBSCRIBERS))
        .bench_local(|| {
            n += 1;
            core.handle_mad(now, Received::new(master(), report(n)));
            let mut reports = 0;
            while let Some(t) = core.poll_transmit() {
                let Ok(m) = SaMad::parse(&t.mad) else {
                    continue;
                };
                if m.mad().method() != Method::REPORT {
                    continue;
                }
                reports += 1;
                let mut resp = BytesMut::from(&t.mad[..]);
                if let Ok((h, _)) = MadHeader::mut_from_prefix(&mut resp[..]) {
                    h.set_method(Method::REPORT_RESP);
                }
                core.handle_mad(now, Received::new(t.dest, resp.freeze()));
            }
            assert_eq!(reports, SUBSCRIBERS);
        });
    assert_eq!(core.counters().leases_ended, 0, "every Report was answered");
}

/// A local connection subscribes to a filter the port already holds and
/// unsubscribes: reference counts only, nothing for the master.
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn local_subscribe_unsubscribe_held_filter(bencher: Bencher<'_, '_>) {
    let now = Instant::now();
    let mut core = new_core(now);
    core.handle_local(now, 1, 1, Request::Inform(subscribe_all()));
    answer_the_master(&mut core, now);
    let unsubscribe = InformInfoRepr::generic_subscription(TrapNumber::ALL, false, 0, 19).to_wire();
    let upstream = core.counters().upstream_queries;
    bencher.counter(ItemsCount::new(2usize)).bench_local(|| {
        core.handle_local(now, 2, 1, Request::Inform(subscribe_all()));
        core.handle_local(now, 2, 2, Request::Inform(unsubscribe));
        while core.poll_local().is_some() {}
    });
    assert_eq!(core.counters().upstream_queries, upstream);
}
