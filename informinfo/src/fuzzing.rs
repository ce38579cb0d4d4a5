//! The fuzz harness of the registry (`fuzz/fuzz_targets/registry_ops.rs`;
//! `tests/fuzz_corpus.rs` replays the corpus on stable Rust).
//!
//! The input is a sequence of operations by a few subscribers on a few
//! filters, interleaved with a fake master that accepts, refuses or
//! ignores each request the registry sends, and with re-registrations.
//! Beside the registry runs a model: the set of (subscriber, filter) pairs
//! held, changed only by the operations and by the Refuse effects.
//!
//! The harness panics when the registry breaks its contract:
//! - what it says is held differs from the model;
//! - a subscriber waiting for an answer gets none, or two;
//! - it sends a request for a filter that already has one in flight;
//! - once every request is answered, the master does not hold exactly the
//!   distinct filters someone holds (one upstream subscription per key).

use std::collections::{BTreeMap, BTreeSet};

use mad_codec::{Gid, InformInfoRepr, TrapNumber};

use crate::filter::Filter;
use crate::registry::{Effect, Registry, Reply, UpstreamResult};

fn filter(i: u8) -> Filter {
    let mut f = Filter::of(
        &InformInfoRepr::generic_subscription(TrapNumber(64 + u16::from(i % 4)), true, 1, 19),
        false,
    )
    .expect("a valid subscription");
    if i & 4 != 0 {
        f.gid = Gid::new(Gid::DEFAULT_PREFIX, 1);
    }
    f
}

#[derive(Default)]
struct World {
    registry: Registry<u8>,
    /// (subscriber, filter) held, as the operations and refusals say.
    model: BTreeSet<(u8, Filter)>,
    /// Subscribers waiting for Confirm/Refuse, per filter.
    waiting: BTreeSet<(u8, Filter)>,
    /// Requests the master has not answered yet, in order.
    requests: Vec<(Filter, bool)>,
    /// What the master holds.
    master: BTreeSet<Filter>,
}

impl World {
    fn apply(&mut self, effects: Vec<Effect<u8>>) {
        for e in effects {
            match e {
                Effect::Send { filter, subscribe } => {
                    assert!(
                        !self.requests.iter().any(|(f, _)| *f == filter),
                        "a second request for one filter while the first is out"
                    );
                    self.requests.push((filter, subscribe));
                }
                Effect::Confirm { subscriber, filter } => {
                    assert!(
                        self.waiting.remove(&(subscriber, filter)),
                        "a confirmation nobody waited for"
                    );
                }
                Effect::Refuse {
                    subscriber, filter, ..
                } => {
                    self.waiting.remove(&(subscriber, filter));
                    self.model.remove(&(subscriber, filter));
                }
            }
        }
    }

    fn answer(&mut self, pick: u8, how: u8) {
        if self.requests.is_empty() {
            return;
        }
        let (filter, subscribe) = self
            .requests
            .remove(usize::from(pick) % self.requests.len());
        let result = match how % 5 {
            0 if subscribe => UpstreamResult::Refused(0x0200),
            1 => UpstreamResult::NoAnswer,
            _ => {
                if subscribe {
                    self.master.insert(filter);
                } else {
                    self.master.remove(&filter);
                }
                UpstreamResult::Accepted
            }
        };
        let mut fx = Vec::new();
        self.registry
            .upstream_result(filter, subscribe, result, &mut fx);
        self.apply(fx);
    }

    fn check_holdings(&self) {
        let held: BTreeSet<(u8, Filter)> = self.registry.holdings().map(|(s, f)| (*s, f)).collect();
        assert_eq!(
            held, self.model,
            "the registry and the model disagree on who holds what"
        );
    }
}

/// Runs the operations in `data`; see the module docs.
pub fn registry_ops(data: &[u8]) {
    let mut w = World::default();
    for op in data.chunks_exact(3) {
        let (kind, s, f) = (op[0] % 8, op[1] % 6, filter(op[2]));
        let mut fx = Vec::new();
        match kind {
            0 | 1 => match w.registry.subscribe(s, f, &mut fx) {
                Reply::Done => {
                    w.model.insert((s, f));
                }
                Reply::Pending => {
                    let newly = w.model.insert((s, f));
                    if newly {
                        w.waiting.insert((s, f));
                    }
                }
                Reply::NotHeld => panic!("subscribe answered NotHeld"),
            },
            2 => match w.registry.unsubscribe(&s, f, &mut fx) {
                Reply::NotHeld => assert!(!w.model.contains(&(s, f)), "NotHeld for a held filter"),
                _ => {
                    assert!(w.model.remove(&(s, f)), "unsubscribed what was not held");
                }
            },
            3 => {
                w.registry.remove_subscriber(&s, &mut fx);
                w.model.retain(|(h, _)| *h != s);
                w.waiting.retain(|(h, _)| *h != s);
            }
            4 | 5 => w.answer(op[1], op[2]),
            6 => {
                // The master forgets everything (a restart); the registry
                // is told so.
                w.master.clear();
                w.requests.clear();
                w.registry.reregister_all(&mut fx);
            }
            _ => w.registry.retry(&mut fx),
        }
        w.apply(fx);
        w.check_holdings();
    }
    // Let the master answer everything, retrying what got no answer.
    for _ in 0..64 {
        if w.requests.is_empty() {
            let mut fx = Vec::new();
            w.registry.retry(&mut fx);
            w.apply(fx);
            if w.requests.is_empty() {
                break;
            }
        }
        w.answer(0, 2);
        w.check_holdings();
    }
    assert!(
        w.requests.is_empty() && w.registry.in_flight() == 0,
        "requests still unanswered"
    );
    assert!(
        w.waiting.is_empty(),
        "subscribers still waiting: {:?}",
        w.waiting
    );
    let held: BTreeSet<Filter> = w.model.iter().map(|(_, f)| *f).collect();
    assert_eq!(
        w.master, held,
        "the master must hold exactly the distinct filters held locally"
    );
    let by_filter: BTreeMap<Filter, usize> = w.registry.at_master().map(|f| (f, 1)).collect();
    assert_eq!(by_filter.len(), w.registry.filters());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_runs_hold_the_contract() {
        registry_ops(&[]);
        // Two subscribe to one filter, the master confirms, one leaves,
        // the other leaves: one subscribe, one unsubscribe upstream.
        registry_ops(&[0, 0, 1, 0, 1, 1, 4, 0, 2, 2, 0, 1, 2, 1, 1, 4, 0, 2]);
        // Refusals, silence, restarts and retries, every combination of a
        // small alphabet.
        for seed in 0u32..400 {
            let data: Vec<u8> = (0..60u32)
                .map(|i| (seed.wrapping_mul(2_654_435_761) >> (i % 24)) as u8 ^ i as u8)
                .collect();
            registry_ops(&data);
        }
    }
}
