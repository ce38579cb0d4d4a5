//! One notice, several Reports: when the master holds several of this
//! port's filters that match one notice (trap 65 and "all traps", say), it
//! sends one Report per filter. Subscribers must get the notice once.
//!
//! [`Duplicates::first_copy`] is told, with each Report, how many copies
//! the master sends of it (the number of matching filters it holds); the
//! first copy passes and the expected others are swallowed. Copies that
//! never come are forgotten after a window, so a later, genuinely new and
//! identical notice passes.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mad_codec::Notice;
use mad_codec::zerocopy::IntoBytes;

/// Notice bytes that identify it: all but NoticeToggle/NoticeCount (bytes
/// 8–9), which OpenSM leaves uninitialised and may differ between copies.
type Identity = [u8; 78];

fn identity(n: &Notice) -> Identity {
    let b = n.as_bytes();
    let mut id = [0u8; 78];
    id[..8].copy_from_slice(&b[..8]);
    id[8..].copy_from_slice(&b[10..]);
    id
}

#[derive(Debug)]
struct Expected {
    identity: Identity,
    remaining: usize,
    until: Instant,
}

/// Copies still expected of recent notices.
#[derive(Debug)]
pub struct Duplicates {
    expected: VecDeque<Expected>,
    window: Duration,
    limit: usize,
}

impl Duplicates {
    /// Copies are expected for `window` after the first; at most `limit`
    /// notices are remembered (the oldest go first).
    pub fn new(window: Duration, limit: usize) -> Self {
        Self {
            expected: VecDeque::new(),
            window,
            limit: limit.max(1),
        }
    }

    /// True if this Report of `notice` is the first copy (deliver it);
    /// false for an expected duplicate (swallow it). `copies` is how many
    /// Reports the master sends of this notice.
    pub fn first_copy(&mut self, now: Instant, notice: &Notice, copies: usize) -> bool {
        self.expected.retain(|e| e.until > now && e.remaining > 0);
        let id = identity(notice);
        if let Some(i) = self.expected.iter().position(|e| e.identity == id) {
            self.expected[i].remaining -= 1;
            if self.expected[i].remaining == 0 {
                self.expected.remove(i);
            }
            return false;
        }
        if copies > 1 {
            if self.expected.len() >= self.limit {
                self.expected.pop_front();
            }
            self.expected.push_back(Expected {
                identity: id,
                remaining: copies - 1,
                until: now + self.window,
            });
        }
        true
    }

    /// Notices with copies still expected.
    pub fn len(&self) -> usize {
        self.expected.len()
    }

    /// True when no copy is expected.
    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::codes::{NoticeType, ProducerType};
    use mad_codec::{Gid, NoticeRepr, TrapDetails};

    use super::*;

    fn notice(port: u64) -> Notice {
        NoticeRepr::generic(
            NoticeType::SUBNET_MANAGEMENT,
            ProducerType::CLASS_MANAGER,
            TrapDetails::GidOutOfService {
                gid: Gid::new(Gid::DEFAULT_PREFIX, port),
            },
            1,
            Gid::new(Gid::DEFAULT_PREFIX, 1),
        )
        .to_wire()
    }

    #[test]
    fn each_notice_passes_once_however_many_copies_come() {
        let t0 = Instant::now();
        let mut d = Duplicates::new(Duration::from_secs(5), 100);
        let mut a = notice(0x77);
        assert!(d.first_copy(t0, &a, 3));
        a.set_count(5); // OpenSM's count bytes differ between copies
        assert!(!d.first_copy(t0, &a, 3));
        assert!(!d.first_copy(t0, &a, 3));
        assert!(d.is_empty(), "all copies came");
        assert!(d.first_copy(t0, &a, 3), "the same event again is news");
        assert!(d.first_copy(t0, &notice(0x78), 1), "another notice");
        assert!(
            d.first_copy(t0, &notice(0x78), 1),
            "one copy expected: nothing swallowed"
        );
    }

    #[test]
    fn copies_that_never_come_are_forgotten() {
        let t0 = Instant::now();
        let mut d = Duplicates::new(Duration::from_secs(5), 2);
        assert!(d.first_copy(t0, &notice(1), 2));
        assert!(
            d.first_copy(t0 + Duration::from_secs(6), &notice(1), 2),
            "after the window"
        );
        assert!(d.first_copy(t0, &notice(2), 2));
        assert!(d.first_copy(t0, &notice(3), 2));
        assert!(d.len() <= 2, "bounded");
    }
}
