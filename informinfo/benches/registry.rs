//! The registry under churn and a notice fanned out: subscribe and
//! unsubscribe through a master that answers at once, and one notice
//! matched, de-duplicated and handed to 1000 subscribers' deliveries. Run
//! with `cargo bench -p informinfo --bench registry`.
#![allow(missing_docs)]

use std::time::Instant;

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use informinfo::{
    Deliveries, DeliveryConfig, Duplicates, Effect, Filter, Registry, UpstreamResult,
};
use mad_codec::codes::{NoticeType, ProducerType};
use mad_codec::{Gid, InformInfoRepr, Notice, NoticeRepr, TrapDetails, TrapNumber};

fn main() {
    divan::main();
}

fn filter(trap: u16) -> Filter {
    Filter::of(
        &InformInfoRepr::generic_subscription(TrapNumber(trap), true, 1, 19),
        false,
    )
    .unwrap()
}

fn trap65() -> Notice {
    NoticeRepr::generic(
        NoticeType::SUBNET_MANAGEMENT,
        ProducerType::CLASS_MANAGER,
        TrapDetails::GidOutOfService {
            gid: Gid::new(Gid::DEFAULT_PREFIX, 0x77),
        },
        1,
        Gid::new(Gid::DEFAULT_PREFIX, 1),
    )
    .to_wire()
}

/// Answers every request at once, as a master that accepts everything.
fn settle(registry: &mut Registry<u32>, effects: &mut Vec<Effect<u32>>) {
    while let Some(e) = effects.pop() {
        if let Effect::Send { filter, subscribe } = e {
            registry.upstream_result(filter, subscribe, UpstreamResult::Accepted, effects);
        }
    }
}

/// One subscribe and its unsubscribe by one of 1000 subscribers holding
/// filters of 8 traps: most are local refcount changes, some go upstream.
#[divan::bench]
fn subscribe_unsubscribe_churn(bencher: Bencher<'_, '_>) {
    let mut registry = Registry::new();
    let mut fx = Vec::new();
    for s in 0..1000u32 {
        registry.subscribe(s, filter(64 + (s % 8) as u16), &mut fx);
    }
    settle(&mut registry, &mut fx);
    let mut i = 0u32;
    bencher.counter(ItemsCount::new(2usize)).bench_local(|| {
        let (s, f) = (1000 + i % 1000, filter(64 + (i % 9) as u16));
        i += 1;
        registry.subscribe(s, f, &mut fx);
        settle(&mut registry, &mut fx);
        registry.unsubscribe(&s, f, &mut fx);
        settle(&mut registry, &mut fx);
    });
}

/// One trap-65 Report fanned out: matched against the filters, checked
/// for duplicates, and a Report started to each of 1000 subscribers.
#[divan::bench]
fn fan_out_to_1000(bencher: Bencher<'_, '_>) {
    let mut registry = Registry::new();
    let mut fx = Vec::new();
    for s in 0..1000u32 {
        let trap = if s % 2 == 0 { 65 } else { 0xFFFF };
        registry.subscribe(s, filter(trap), &mut fx);
    }
    settle(&mut registry, &mut fx);
    let notice = trap65();
    let now = Instant::now();
    bencher.counter(ItemsCount::new(1000usize)).bench_local(|| {
        let mut dup = Duplicates::new(std::time::Duration::from_secs(5), 1024);
        let mut deliveries = Deliveries::new(DeliveryConfig::default(), 1);
        let (to, copies) = registry.recipients(&notice);
        if dup.first_copy(now, &notice, copies) {
            for s in to {
                black_box(deliveries.send(now, s, notice));
            }
        }
        assert!(
            !dup.first_copy(now, &notice, copies),
            "the second copy is swallowed"
        );
        deliveries
    });
}
