//! Reports to subscribers that receive them as MADs: each sent under its
//! own TransactionID, resent until a ReportResp comes or the attempts run
//! out. A subscriber that misses `max_misses` notices in a row has stopped
//! answering: its lease ends and the caller removes it (and, if it was the
//! last holder of a filter, the upstream subscription goes with it).
//!
//! Sans-IO: the caller builds and sends the Report MADs (the TransactionID
//! is given), feeds ReportResps to [`Deliveries::acknowledged`] and calls
//! [`Deliveries::handle_timeout`] at [`Deliveries::poll_timeout`].

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use mad_codec::Notice;

/// Retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryConfig {
    /// How long each attempt waits for the ReportResp.
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
    /// Consecutive notices a subscriber may miss before its lease ends.
    pub max_misses: u32,
    /// Most Reports waiting for an answer at once; beyond it, the oldest
    /// counts as missed.
    pub max_in_flight: usize,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_millis(500),
            retries: 3,
            max_misses: 3,
            max_in_flight: 4096,
        }
    }
}

/// What the caller must do after a time-out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryEvent<S> {
    /// Send the Report again, same TransactionID.
    Resend {
        /// To whom.
        subscriber: S,
        /// Its TransactionID.
        tid: u32,
        /// The notice.
        notice: Notice,
    },
    /// The subscriber stopped answering: remove it.
    LeaseEnded {
        /// Who.
        subscriber: S,
    },
}

#[derive(Debug)]
struct InFlight<S> {
    subscriber: S,
    notice: Notice,
    attempts_left: u32,
    deadline: Instant,
    sent: Instant,
}

/// Reports waiting for their ReportResp.
#[derive(Debug)]
pub struct Deliveries<S> {
    config: DeliveryConfig,
    in_flight: HashMap<u32, InFlight<S>>,
    misses: HashMap<S, u32>,
    next_tid: u32,
}

impl<S: Clone + Eq + Hash> Deliveries<S> {
    /// No Reports yet; TransactionIDs start at `first_tid`.
    pub fn new(config: DeliveryConfig, first_tid: u32) -> Self {
        Self {
            config,
            in_flight: HashMap::new(),
            misses: HashMap::new(),
            next_tid: first_tid,
        }
    }

    /// A Report of `notice` to `subscriber` is about to go out: returns its
    /// TransactionID, and any subscriber whose lease ended to make room.
    pub fn send(&mut self, now: Instant, subscriber: S, notice: Notice) -> (u32, Option<S>) {
        let mut ended = None;
        if self.in_flight.len() >= self.config.max_in_flight {
            let oldest = self
                .in_flight
                .iter()
                .min_by_key(|(_, f)| f.sent)
                .map(|(t, _)| *t);
            if let Some(f) = oldest.and_then(|t| self.in_flight.remove(&t)) {
                ended = self.missed(f.subscriber);
            }
        }
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        let flight = InFlight {
            subscriber,
            notice,
            attempts_left: self.config.retries,
            deadline: now + self.config.timeout,
            sent: now,
        };
        self.in_flight.insert(tid, flight);
        (tid, ended)
    }

    /// A ReportResp under `tid`: the subscriber is alive. Returns who it
    /// was from, if the Report was ours.
    pub fn acknowledged(&mut self, tid: u32) -> Option<S> {
        let f = self.in_flight.remove(&tid)?;
        self.misses.remove(&f.subscriber);
        Some(f.subscriber)
    }

    /// Forgets everything about `subscriber` (it was removed).
    pub fn forget(&mut self, subscriber: &S) {
        self.in_flight.retain(|_, f| f.subscriber != *subscriber);
        self.misses.remove(subscriber);
    }

    /// When [`Deliveries::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.in_flight.values().map(|f| f.deadline).min()
    }

    /// Resends what is due and ends the leases of subscribers that missed
    /// too many notices.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<DeliveryEvent<S>> {
        let mut events = Vec::new();
        let mut gave_up = Vec::new();
        for (tid, f) in &mut self.in_flight {
            if f.deadline > now {
                continue;
            }
            if f.attempts_left == 0 {
                gave_up.push(*tid);
                continue;
            }
            f.attempts_left -= 1;
            f.deadline = now + self.config.timeout;
            events.push(DeliveryEvent::Resend {
                subscriber: f.subscriber.clone(),
                tid: *tid,
                notice: f.notice,
            });
        }
        for tid in gave_up {
            if let Some(f) = self.in_flight.remove(&tid)
                && let Some(s) = self.missed(f.subscriber)
            {
                events.retain(
                    |e| !matches!(e, DeliveryEvent::Resend { subscriber, .. } if *subscriber == s),
                );
                events.push(DeliveryEvent::LeaseEnded { subscriber: s });
            }
        }
        events
    }

    /// Counts a missed notice; returns the subscriber if its lease ended.
    fn missed(&mut self, subscriber: S) -> Option<S> {
        let n = self.misses.entry(subscriber.clone()).or_insert(0);
        *n += 1;
        if *n < self.config.max_misses {
            return None;
        }
        self.forget(&subscriber);
        Some(subscriber)
    }

    /// Reports waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;

    use super::*;

    fn config() -> DeliveryConfig {
        DeliveryConfig {
            timeout: Duration::from_millis(100),
            retries: 2,
            max_misses: 2,
            max_in_flight: 8,
        }
    }

    #[test]
    fn a_report_is_resent_until_acknowledged() {
        let t0 = Instant::now();
        let mut d = Deliveries::new(config(), 100);
        let (tid, _) = d.send(t0, "a", Notice::new_zeroed());
        assert_eq!(tid, 100);
        let ev = d.handle_timeout(t0 + Duration::from_millis(100));
        assert!(matches!(ev[..], [DeliveryEvent::Resend { tid: 100, .. }]));
        assert_eq!(d.acknowledged(100), Some("a"));
        assert_eq!(d.acknowledged(100), None, "once");
        assert!(d.handle_timeout(t0 + Duration::from_secs(9)).is_empty());
    }

    #[test]
    fn a_subscriber_that_stops_answering_loses_its_lease() {
        let t0 = Instant::now();
        let mut d = Deliveries::new(config(), 1);
        let mut now = t0;
        let mut ended = Vec::new();
        for _ in 0..2 {
            d.send(now, "mute", Notice::new_zeroed());
            for _ in 0..4 {
                now += Duration::from_millis(100);
                for e in d.handle_timeout(now) {
                    if let DeliveryEvent::LeaseEnded { subscriber } = e {
                        ended.push(subscriber);
                    }
                }
            }
        }
        assert_eq!(
            ended,
            ["mute"],
            "after two missed notices, each tried three times"
        );
        assert_eq!(d.in_flight(), 0);
    }

    #[test]
    fn an_answer_resets_the_count_and_the_backlog_is_bounded() {
        let t0 = Instant::now();
        let mut d = Deliveries::new(config(), 1);
        let (t1, _) = d.send(t0, "a", Notice::new_zeroed());
        let mut now = t0;
        for _ in 0..3 {
            now += Duration::from_millis(100);
            d.handle_timeout(now);
        }
        let (t2, _) = d.send(now, "a", Notice::new_zeroed());
        assert_eq!(d.acknowledged(t2), Some("a"), "one missed, then an answer");
        assert_eq!(d.acknowledged(t1), None, "the first was given up");
        let mut ended = None;
        for _ in 0..20 {
            let (_, e) = d.send(now, "b", Notice::new_zeroed());
            ended = ended.or(e);
        }
        assert!(d.in_flight() <= 8);
        assert_eq!(
            ended,
            Some("b"),
            "a subscriber that lets Reports pile up loses its lease"
        );
    }
}
