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

use std::time::Duration;

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
}

impl Default for MasterPace {
    fn default() -> Self {
        Self {
            paths_per_second: 250_000,
            registrations_per_second: 5_000,
            min_window: Duration::from_secs(1),
            max_window: Duration::from_secs(300),
        }
    }
}

impl MasterPace {
    /// The window over which the refreshes of a fabric of `ports` ports
    /// spread.
    pub fn refresh_window(&self, ports: usize) -> Duration {
        self.window(ports as f64 * ports as f64, self.paths_per_second)
    }

    /// The window over which the re-registrations of a fabric of `ports`
    /// ports, each holding about `registrations`, spread.
    pub fn reregistration_window(&self, ports: usize, registrations: usize) -> Duration {
        self.window(
            ports as f64 * registrations as f64,
            self.registrations_per_second,
        )
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

#[cfg(test)]
mod tests {
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
        };
        assert_eq!(pace.refresh_window(usize::MAX), Duration::from_secs(5));
        assert_eq!(pace.reregistration_window(0, 0), Duration::from_secs(5));
    }
}
