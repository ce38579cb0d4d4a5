//! How long a port waits before calling on the master SA after an event
//! that makes every port of the fabric call at once: a new master SM, a
//! client-reregister request, a master found to have lost its state.
//!
//! Each port acts at its own point of a window (its phase, from its GUID),
//! and the window grows with the fabric, so that all ports together stay
//! within what the master may be asked per second. A port knows the
//! fabric's size from its own PathRecord table: it holds a path to every
//! port. Two kinds of work are paced:
//!
//! * a refresh costs the master one path per port of the fabric, so the
//!   fabric's refreshes together cost N² paths: the window is
//!   N² / `paths_per_second`;
//! * re-registration costs the master one request per subscription and
//!   membership a port holds, and each port assumes the others hold as
//!   many as it does: the window is N × own / `registrations_per_second`.
//!
//! Both are kept between `min_window` (also the window while the fabric's
//! size is unknown) and `max_window`. What is cached is served meanwhile.
//!
//! The upkeep is bounded too, over the long run rather than after an
//! event: a port that keeps its own tables refreshes them no more often
//! than [`MasterPace::upkeep_interval`], the time in which what the
//! fabric's refreshes cost — each port's N paths and, after them, its two
//! names tables of N records each: 3N² records — at `path_cost` of the
//! master's time each, takes `upkeep_share_percent` of it.
//!
//! The same registrations rate paces every registration a port sends, not
//! only re-registration: a port's share of it (the rate over the fabric's
//! ports, as if every port sent at once) refills a [`TokenBucket`], and at
//! most [`MasterPace::registrations_in_flight`] are out at a time. A local
//! user who joins a thousand groups and closes the connection then costs
//! the master a steady trickle of leaves, not a thousand at once (which
//! would overflow its queue, and under the simulator wedge the fabric).

use std::time::{Duration, Instant};

/// What the fabric's local-sa agents together may ask of a master SA per
/// second after an event that concerns them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MasterPace {
    /// PathRecords per second the fabric's refreshes together may ask the
    /// master to compute.
    pub paths_per_second: u32,
    /// Subscription and membership requests per second the fabric's ports
    /// together may send the master.
    pub registrations_per_second: u32,
    /// Shortest window; the window while the fabric's size is unknown.
    pub min_window: Duration,
    /// Longest window.
    pub max_window: Duration,
    /// Subscription and membership requests one port may have out to the
    /// master at once (at least 1).
    pub registrations_in_flight: usize,
    /// The master's time per record it puts in a whole-table answer (a
    /// path of a port's table, a host of a names table; OpenSM: 0.2–0.25
    /// µs of CPU a path measured under the simulator, 1.7 µs reported on
    /// a busier one).
    pub path_cost: Duration,
    /// The share of the master's time, in percent, that the refreshes of
    /// ports keeping their own tables may take over the long run.
    pub upkeep_share_percent: u8,
}

/// The master's time for one poll of its activity, as the pace counts
/// it: a Get and its one SMInfoRecord (a model figure, many times the
/// 1–2 µs OpenSM takes per record of a table).
pub const ACTIVITY_POLL_COST: Duration = Duration::from_micros(20);

impl Default for MasterPace {
    fn default() -> Self {
        Self {
            paths_per_second: 250_000,
            registrations_per_second: 5_000,
            min_window: Duration::from_secs(1),
            max_window: Duration::from_secs(300),
            registrations_in_flight: 16,
            path_cost: Duration::from_micros(1),
            upkeep_share_percent: 5,
        }
    }
}

impl MasterPace {
    /// The window over which the refreshes of a fabric of `ports` ports
    /// spread.
    pub fn refresh_window(&self, ports: usize) -> Duration {
        self.window(ports as f64 * ports as f64, self.paths_per_second)
    }

    /// The shortest time between two refreshes of a port of a fabric of
    /// `ports` ports that keeps its own tables: every port refreshing
    /// that often (its table and its two names tables after it, 3 ×
    /// `ports` records) costs the master 3 × `ports`² × `path_cost` per
    /// interval, `upkeep_share_percent` of it. Zero while the fabric's
    /// size is unknown; a day at most (and with a share of 0).
    pub fn upkeep_interval(&self, ports: usize) -> Duration {
        let day = Duration::from_secs(86_400);
        if self.upkeep_share_percent == 0 {
            return day;
        }
        let paths = 3.0 * ports as f64 * ports as f64;
        let secs =
            paths * self.path_cost.as_secs_f64() * 100.0 / f64::from(self.upkeep_share_percent);
        Duration::try_from_secs_f64(secs).unwrap_or(day).min(day)
    }

    /// The shortest time between two polls of the master's activity by a
    /// port of a fabric of `ports` ports that keeps its own tables: every
    /// port polling that often costs the master `ports` ×
    /// [`ACTIVITY_POLL_COST`] per interval, a fifth of
    /// `upkeep_share_percent` of its time (1 % by default: at 10,000
    /// ports, a poll each 20 s). Zero while the fabric's size is unknown;
    /// a day at most (and with a share of 0).
    pub fn activity_poll_interval(&self, ports: usize) -> Duration {
        let day = Duration::from_secs(86_400);
        if self.upkeep_share_percent == 0 {
            return day;
        }
        let share = f64::from(self.upkeep_share_percent) / 5.0 / 100.0;
        let secs = ports as f64 * ACTIVITY_POLL_COST.as_secs_f64() / share;
        Duration::try_from_secs_f64(secs).unwrap_or(day).min(day)
    }

    /// The window over which the re-registrations of a fabric of `ports`
    /// ports, each holding about `registrations`, spread.
    pub fn reregistration_window(&self, ports: usize, registrations: usize) -> Duration {
        self.window(
            ports as f64 * registrations as f64,
            self.registrations_per_second,
        )
    }

    /// Registrations per second one port of a fabric of `ports` ports may
    /// send: its share of [`MasterPace::registrations_per_second`] (all
    /// of it while the fabric's size is unknown), and never less than
    /// [`MIN_PORT_REGISTRATION_RATE`], so that a port of a very large
    /// fabric still gets its consumers' few registrations through.
    pub fn port_registration_rate(&self, ports: usize) -> f64 {
        let rate = f64::from(self.registrations_per_second.max(1));
        (rate / ports.max(1) as f64)
            .max(MIN_PORT_REGISTRATION_RATE)
            .min(rate)
    }

    /// The time `work` takes at `rate` per second, within the bounds.
    fn window(&self, work: f64, rate: u32) -> Duration {
        let secs = work / f64::from(rate.max(1));
        let max = self.max_window.max(self.min_window);
        Duration::try_from_secs_f64(secs)
            .unwrap_or(max)
            .clamp(self.min_window, max)
    }
}

/// The slowest a port's registrations go, whatever the fabric's size.
pub const MIN_PORT_REGISTRATION_RATE: f64 = 1.0;

/// How many registrations a port may send together before its pace holds
/// it back: a job's few joins go at once, a flood goes at the pace.
pub const REGISTRATION_BURST: u32 = 32;

/// A rate with a burst: sends are allowed at `rate` a second on average,
/// up to `burst` at once after a quiet spell (the generic cell rate
/// algorithm, on integer time: the same calls give the same answers).
/// Sans-IO: the time comes with every call.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// Time between two sends at the rate.
    interval: Duration,
    burst: u32,
    /// When the next send would be due if every send so far had gone at
    /// the rate; `None` before the first.
    due: Option<Instant>,
}

impl TokenBucket {
    /// Full, refilling at `rate` a second (a send a day if `rate` is not
    /// a positive number) up to `burst`.
    pub fn new(rate: f64, burst: u32) -> Self {
        Self {
            interval: interval(rate),
            burst: burst.max(1),
            due: None,
        }
    }

    /// Sends a second.
    pub fn rate(&self) -> f64 {
        1.0 / self.interval.as_secs_f64()
    }

    /// Refills at `rate` from now on.
    pub fn set_rate(&mut self, rate: f64) {
        self.interval = interval(rate);
    }

    /// Takes a token if one is there at `now`.
    pub fn try_take(&mut self, now: Instant) -> bool {
        let due = self.due.map_or(now, |d| d.max(now));
        if due.saturating_duration_since(now) > self.tolerance() {
            return false;
        }
        self.due = Some(due + self.interval);
        true
    }

    /// When the next token is there: `None` while one is (the bucket has
    /// not been emptied).
    pub fn next_token(&self) -> Option<Instant> {
        let due = self.due?;
        Some(due.checked_sub(self.tolerance()).unwrap_or(due))
    }

    /// How far ahead of the rate a burst may run.
    fn tolerance(&self) -> Duration {
        self.interval.saturating_mul(self.burst - 1)
    }
}

/// The time between two sends at `rate` a second: at least a nanosecond,
/// a day if `rate` is not a positive number.
fn interval(rate: f64) -> Duration {
    let day = Duration::from_secs(86_400);
    if rate.is_finite() && rate > 0.0 {
        Duration::try_from_secs_f64(1.0 / rate)
            .unwrap_or(day)
            .clamp(Duration::from_nanos(1), day)
    } else {
        day
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_activity_polls_of_a_large_fabric_keep_within_their_share() {
        let pace = MasterPace::default();
        assert_eq!(pace.activity_poll_interval(1_000), Duration::from_secs(2));
        assert_eq!(pace.activity_poll_interval(10_000), Duration::from_secs(20));
        assert_eq!(
            pace.activity_poll_interval(50_000),
            Duration::from_secs(100)
        );
    }

    use super::*;

    #[test]
    fn windows_grow_with_the_fabric_within_their_bounds() {
        let pace = MasterPace::default();
        // A small fabric: the shortest window.
        assert_eq!(pace.refresh_window(0), Duration::from_secs(1));
        assert_eq!(pace.refresh_window(128), Duration::from_secs(1));
        // 2,048 ports: 4.2 M paths at 250,000 a second.
        let w = pace.refresh_window(2048);
        assert!(
            w > Duration::from_secs(16) && w < Duration::from_secs(17),
            "{w:?}"
        );
        // 10,000 ports: 400 s, held at 300.
        assert_eq!(pace.refresh_window(10_000), Duration::from_secs(300));
        // 10,000 ports holding 4 registrations each: 8 s at 5,000 a second.
        assert_eq!(
            pace.reregistration_window(10_000, 4),
            Duration::from_secs(8)
        );
        assert_eq!(pace.reregistration_window(512, 4), Duration::from_secs(1));
    }

    #[test]
    fn odd_settings_give_a_bounded_window() {
        let pace = MasterPace {
            paths_per_second: 0,
            registrations_per_second: 1,
            min_window: Duration::from_secs(5),
            max_window: Duration::from_secs(2),
            registrations_in_flight: 1,
            ..MasterPace::default()
        };
        assert_eq!(pace.refresh_window(usize::MAX), Duration::from_secs(5));
        assert_eq!(pace.reregistration_window(0, 0), Duration::from_secs(5));
    }

    #[test]
    fn the_upkeep_interval_keeps_the_fabrics_refreshes_within_their_share() {
        let pace = MasterPace::default();
        assert_eq!(pace.upkeep_interval(0), Duration::ZERO, "size unknown");
        // 1,000 ports: 3 × 10⁶ records (paths and names) at 1 µs is 3 s
        // of the master's time, 5 % of 60 s.
        assert_eq!(pace.upkeep_interval(1_000), Duration::from_secs(60));
        // 10,000 ports: 300 s of the master's time per round, every
        // 6,000 s.
        assert_eq!(pace.upkeep_interval(10_000), Duration::from_secs(6_000));
        let none = MasterPace {
            upkeep_share_percent: 0,
            ..pace
        };
        assert_eq!(none.upkeep_interval(10), Duration::from_secs(86_400));
        assert_eq!(
            pace.upkeep_interval(usize::MAX),
            Duration::from_secs(86_400)
        );
    }

    #[test]
    fn a_ports_registration_rate_is_its_share_of_the_fabrics() {
        let pace = MasterPace::default();
        assert_eq!(pace.port_registration_rate(0), 5_000.0, "size unknown");
        assert_eq!(pace.port_registration_rate(100), 50.0);
        assert_eq!(
            pace.port_registration_rate(1_000_000),
            MIN_PORT_REGISTRATION_RATE,
            "never slower than the floor"
        );
        let slow = MasterPace {
            registrations_per_second: 0,
            ..pace
        };
        assert_eq!(slow.port_registration_rate(10), 1.0);
    }

    #[test]
    fn a_bucket_lets_a_burst_through_then_holds_to_its_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 4);
        assert_eq!(b.next_token(), None, "full");
        let taken = (0..10).filter(|_| b.try_take(t0)).count();
        assert_eq!(taken, 4, "the burst");
        assert_eq!(b.next_token(), Some(t0 + Duration::from_millis(100)));
        assert!(!b.try_take(t0 + Duration::from_millis(99)));
        assert!(b.try_take(t0 + Duration::from_millis(100)));
        // At the rate after that: ten in a second.
        let second = (1..=1000)
            .map(|ms| t0 + Duration::from_millis(100 + ms))
            .filter(|t| b.try_take(*t))
            .count();
        assert_eq!(second, 10);
        // A long quiet spell fills it up to the burst, no further.
        let later = t0 + Duration::from_secs(60);
        let taken = (0..10).filter(|_| b.try_take(later)).count();
        assert_eq!(taken, 4);
        // A slower rate from now on: its burst, then one a second.
        b.set_rate(1.0);
        assert_eq!(b.rate(), 1.0);
        let soon = later + Duration::from_millis(500);
        assert_eq!((0..10).filter(|_| b.try_take(soon)).count(), 4);
        assert!(!b.try_take(soon + Duration::from_millis(999)));
        assert!(b.try_take(soon + Duration::from_secs(1)));
        // A rate that is no rate: a send a day.
        let mut never = TokenBucket::new(0.0, 1);
        assert!(never.try_take(t0));
        assert!(!never.try_take(t0 + Duration::from_secs(3600)));
    }
}
