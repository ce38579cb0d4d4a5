//! When each transfer next needs attention, in a heap: the next deadline
//! is found in O(1) and each expiry in O(log n), however many transfers
//! are held.
//!
//! Entries are never removed early. A transfer whose deadline moves later
//! keeps its old entry; when that entry comes due the owner finds nothing
//! to do yet and schedules the real deadline. A transfer that ends leaves
//! its entry behind until it comes due and is discarded. So at most one
//! live entry per transfer plus the stale ones of the last time-out period.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

#[derive(Debug)]
pub(super) struct Deadlines<K: Ord> {
    heap: BinaryHeap<Reverse<(Instant, K)>>,
}

impl<K: Ord + Copy> Deadlines<K> {
    pub(super) fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
        }
    }

    pub(super) fn schedule(&mut self, at: Instant, key: K) {
        self.heap.push(Reverse((at, key)));
    }

    /// The earliest entry's time; a stale entry can make this early, which
    /// costs one wake-up that finds nothing to do.
    pub(super) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Takes the earliest entry due at `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, K)> {
        if self.next()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse(entry)| entry)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn entries_come_due_in_time_order() {
        let t = Instant::now();
        let mut d = Deadlines::new();
        d.schedule(t + Duration::from_secs(3), 'c');
        d.schedule(t + Duration::from_secs(1), 'a');
        d.schedule(t + Duration::from_secs(2), 'b');
        assert_eq!(d.next(), Some(t + Duration::from_secs(1)));
        assert_eq!(d.pop_due(t), None);
        let due = t + Duration::from_secs(2);
        assert_eq!(d.pop_due(due).map(|e| e.1), Some('a'));
        assert_eq!(d.pop_due(due).map(|e| e.1), Some('b'));
        assert_eq!(d.pop_due(due), None);
        assert_eq!(d.len(), 1);
    }
}
