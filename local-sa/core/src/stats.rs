//! What the flat [`Counters`](crate::Counters) cannot say: the answers a
//! port gave by attribute, method and status, how long the master took to
//! answer, as a histogram, and how path queries were answered in the last
//! minute. All are bounded: a peer choosing attribute IDs cannot grow the
//! series past [`MAX_ANSWER_SERIES`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mad_codec::{AttributeId, MadStatus, Method};

/// Distinct (attribute, method, status) series kept; answers of any
/// further combination are counted in [`AnswerCounts::others`].
pub const MAX_ANSWER_SERIES: usize = 128;

/// One series of answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AnswerKey {
    /// The request's attribute.
    pub attribute: AttributeId,
    /// The request's method.
    pub method: Method,
    /// The status answered.
    pub status: MadStatus,
}

/// Answers sent to the port's askers, by series.
#[derive(Debug, Clone, Default)]
pub struct AnswerCounts {
    series: BTreeMap<AnswerKey, u64>,
    others: u64,
}

impl AnswerCounts {
    /// Counts one answer.
    pub fn count(&mut self, key: AnswerKey) {
        if let Some(n) = self.series.get_mut(&key) {
            *n += 1;
        } else if self.series.len() < MAX_ANSWER_SERIES {
            self.series.insert(key, 1);
        } else {
            self.others += 1;
        }
    }

    /// Each series and its count, in key order.
    pub fn series(&self) -> impl Iterator<Item = (AnswerKey, u64)> + '_ {
        self.series.iter().map(|(k, n)| (*k, *n))
    }

    /// Answers past the series limit.
    pub fn others(&self) -> u64 {
        self.others
    }
}

/// The upper bounds of [`LatencyHistogram`]'s buckets, in microseconds:
/// from the fabric's round trip to OpenSM's worst queueing.
pub const LATENCY_BOUNDS_MICROS: [u64; 14] = [
    250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 10_000_000,
];

/// How long answers took, cumulative by bucket as Prometheus keeps them.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    /// Observations at most each bound (not cumulative; see
    /// [`Self::cumulative`]).
    buckets: [u64; LATENCY_BOUNDS_MICROS.len()],
    count: u64,
    sum_micros: u64,
}

impl LatencyHistogram {
    /// Records one answer that took `took`.
    pub fn observe(&mut self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        if let Some(i) = LATENCY_BOUNDS_MICROS.iter().position(|b| micros <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum_micros = self.sum_micros.saturating_add(micros);
    }

    /// (bound in microseconds, observations at most that long), each
    /// bucket counting those below it too.
    pub fn cumulative(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        LATENCY_BOUNDS_MICROS
            .iter()
            .zip(self.buckets.iter().scan(0u64, |sum, n| {
                *sum += n;
                Some(*sum)
            }))
            .map(|(b, n)| (*b, n))
    }

    /// Observations in all.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their total, in microseconds.
    pub fn sum_micros(&self) -> u64 {
        self.sum_micros
    }
}

/// The width of one [`LastMinute`] bucket.
const RECENT_BUCKET: Duration = Duration::from_secs(10);

/// Buckets in [`LastMinute`]: the current one and the five before it.
const RECENT_BUCKETS: usize = 6;

/// Path queries answered from the cache and not (forwarded, or waiting for
/// the master) in the last minute, in ten-second buckets: what a port
/// does now, where the totals since start say what it has done.
#[derive(Debug, Clone, Default)]
pub struct LastMinute {
    /// When bucket 0 began; the first query sets it.
    origin: Option<Instant>,
    /// (bucket number since `origin`, from the cache, not from it).
    buckets: [(u64, u64, u64); RECENT_BUCKETS],
}

impl LastMinute {
    /// Counts one query answered from the cache at `now`.
    pub fn hit(&mut self, now: Instant) {
        self.bucket(now).1 += 1;
    }

    /// Counts one query the cache could not answer at `now`.
    pub fn miss(&mut self, now: Instant) {
        self.bucket(now).2 += 1;
    }

    /// (from the cache, not from it) in the minute before `now`: the
    /// current bucket and the five before it, so between 50 and 60 s.
    pub fn totals(&self, now: Instant) -> (u64, u64) {
        let Some(origin) = self.origin else {
            return (0, 0);
        };
        let current = Self::number(origin, now);
        let oldest = current.saturating_sub(RECENT_BUCKETS as u64 - 1);
        self.buckets
            .iter()
            .filter(|(n, ..)| (oldest..=current).contains(n))
            .fold((0, 0), |(h, m), (_, bh, bm)| (h + bh, m + bm))
    }

    fn number(origin: Instant, now: Instant) -> u64 {
        let since = now.saturating_duration_since(origin);
        since.as_secs() / RECENT_BUCKET.as_secs()
    }

    /// `now`'s bucket, emptied first if it last held an older one.
    fn bucket(&mut self, now: Instant) -> &mut (u64, u64, u64) {
        let origin = *self.origin.get_or_insert(now);
        let n = Self::number(origin, now);
        let slot = &mut self.buckets[(n % RECENT_BUCKETS as u64) as usize];
        if slot.0 != n {
            *slot = (n, 0, 0);
        }
        slot
    }
}

/// A port's breakdowns.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Answers to the port's askers (MADs), by attribute, method, status.
    pub answers: AnswerCounts,
    /// How long the master took to answer this port's requests.
    pub upstream_latency: LatencyHistogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(attribute: u16, status: u16) -> AnswerKey {
        AnswerKey {
            attribute: AttributeId(attribute),
            method: Method::GET_TABLE,
            status: MadStatus(status),
        }
    }

    #[test]
    fn answers_are_counted_by_series_up_to_the_limit() {
        let mut a = AnswerCounts::default();
        a.count(key(0x35, 0));
        a.count(key(0x35, 0));
        a.count(key(0x35, 0x0300));
        assert_eq!(
            a.series().collect::<Vec<_>>(),
            [(key(0x35, 0), 2), (key(0x35, 0x0300), 1)]
        );
        for attribute in 0..1000 {
            a.count(key(attribute, 0x000C));
        }
        assert_eq!(a.series().count(), MAX_ANSWER_SERIES);
        assert_eq!(a.others(), 1000 - (MAX_ANSWER_SERIES as u64 - 2));
    }

    #[test]
    fn the_last_minute_forgets_what_is_older() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut m = LastMinute::default();
        assert_eq!(m.totals(t0), (0, 0));
        m.hit(at(0));
        m.hit(at(5));
        m.miss(at(25));
        assert_eq!(m.totals(at(30)), (2, 1));
        // At 60 s the bucket of 0–9 s has left the window.
        m.hit(at(60));
        assert_eq!(m.totals(at(60)), (1, 1));
        // A bucket reused for a later ten seconds starts empty.
        m.miss(at(85));
        assert_eq!(m.totals(at(85)), (1, 1));
        // Quiet for ten minutes: nothing is recent.
        assert_eq!(m.totals(at(700)), (0, 0));
        m.miss(at(700));
        assert_eq!(m.totals(at(700)), (0, 1));
    }

    #[test]
    fn latencies_fall_in_cumulative_buckets() {
        let mut h = LatencyHistogram::default();
        h.observe(Duration::from_micros(100));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(60));
        let buckets: Vec<(u64, u64)> = h.cumulative().collect();
        assert_eq!(buckets[0], (250, 1));
        assert_eq!(buckets[4], (5_000, 2));
        assert_eq!(
            buckets.last(),
            Some(&(10_000_000, 2)),
            "60 s is past the last bound"
        );
        assert_eq!((h.count(), h.sum_micros()), (3, 60_003_100));
    }
}
