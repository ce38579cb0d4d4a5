//! Asking the master about LIDs one at a time, upward from LID 1, where
//! its multi-record answers come cut (a transport without RMPP, such as
//! the simulator's): the walk goes on until it is [`LidWalk::gap`] LIDs
//! past both the highest LID that answered with a record and a floor the
//! asker knows is in use (its own LIDs, the master's), and never past the
//! highest unicast LID. The agent's refresh, the distributor's fetch of
//! its own table and the description's NodeRecord walk all walk so.

use mad_codec::address::MAX_UNICAST_LID;

/// How far past the highest LID that answered a walk goes on, by default.
pub const DEFAULT_WALK_GAP: u16 = 64;

/// A walk over LIDs: which to ask next, how many are out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LidWalk {
    next: u16,
    highest: u16,
    floor: u16,
    gap: u16,
    in_flight: usize,
}

impl LidWalk {
    /// A walk from LID 1 that reaches at least `floor + gap`.
    pub fn new(floor: u16, gap: u16) -> Self {
        Self {
            next: 1,
            highest: 0,
            floor,
            gap,
            in_flight: 0,
        }
    }

    /// How far past the highest LID found it goes on.
    pub fn gap(&self) -> u16 {
        self.gap
    }

    /// The last LID the walk asks about, as far as it knows now.
    fn limit(&self) -> u16 {
        self.floor
            .max(self.highest)
            .saturating_add(self.gap)
            .min(MAX_UNICAST_LID)
    }

    /// The next LID to ask about, if fewer than `window` are out and the
    /// walk has not reached its limit; counted as out.
    pub fn next_lid(&mut self, window: usize) -> Option<u16> {
        if self.in_flight >= window.max(1) || self.next > self.limit() {
            return None;
        }
        let lid = self.next;
        self.next += 1;
        self.in_flight += 1;
        Some(lid)
    }

    /// The answer about `lid` came (`found`: with a record), or the
    /// question ended without one.
    pub fn answered(&mut self, lid: u16, found: bool) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if found {
            self.highest = self.highest.max(lid);
        }
    }

    /// Questions out.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Every LID worth asking was asked and answered.
    pub fn is_done(&self) -> bool {
        self.in_flight == 0 && self.next > self.limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The LIDs a walk asks when those in `present` answer with a
    /// record, `window` at a time.
    fn walked(floor: u16, gap: u16, window: usize, present: &[u16]) -> Vec<u16> {
        let mut w = LidWalk::new(floor, gap);
        let mut asked = Vec::new();
        while !w.is_done() {
            let batch: Vec<u16> = std::iter::from_fn(|| w.next_lid(window)).collect();
            assert!(!batch.is_empty() && batch.len() <= window);
            for lid in batch {
                asked.push(lid);
                w.answered(lid, present.contains(&lid));
            }
        }
        asked
    }

    #[test]
    fn it_goes_a_gap_past_the_highest_found_and_the_floor() {
        // Ports at 1..=3 and at 6: 4 past 6 with a gap of 4.
        assert_eq!(walked(2, 4, 3, &[1, 2, 3, 6]), (1..=10).collect::<Vec<_>>());
        // Nothing found: the floor and the gap.
        assert_eq!(walked(5, 2, 1, &[]), (1..=7).collect::<Vec<_>>());
        // A LID more than a gap above the last found is never asked.
        assert_eq!(walked(1, 2, 8, &[1, 9]).last(), Some(&3));
    }

    #[test]
    fn it_stops_at_the_highest_unicast_lid_and_keeps_to_its_window() {
        let asked = walked(MAX_UNICAST_LID - 1, DEFAULT_WALK_GAP, 64, &[]);
        assert_eq!(asked.last(), Some(&MAX_UNICAST_LID));
        let mut w = LidWalk::new(10, 10);
        assert_eq!(
            (w.next_lid(2), w.next_lid(2), w.next_lid(2)),
            (Some(1), Some(2), None)
        );
        assert_eq!(w.in_flight(), 2);
        w.answered(1, true);
        assert_eq!(w.next_lid(2), Some(3));
        assert!(!w.is_done());
    }
}
