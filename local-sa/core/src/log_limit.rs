//! Warnings a peer can cause at will (loads with a wrong key, Reports from
//! anyone, queries to a dead master) at most once per kind and source per
//! window: the first at once, then, at the first one after the window, a
//! line that also says how many were left out. A peer flooding the agent
//! costs the log one line a minute per LID (or user, for local
//! connections), not one per MAD.
//!
//! Each machine that warns keys its limiter by its own enum of warnings,
//! so that what is counted together is said by a type, not by a string.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Sources remembered at most; past it every new source shares one entry
/// (source 0, "from many").
const MAX_SOURCES: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// When the last line for it was written.
    logged: Instant,
    /// How many were left out since.
    left_out: u64,
}

/// Which warnings of kinds `K` may be written now.
#[derive(Debug)]
pub struct LogLimit<K> {
    window: Duration,
    entries: HashMap<(K, u32), Entry>,
}

impl<K: Copy + Eq + Hash> LogLimit<K> {
    /// At most one line per kind and source per `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            entries: HashMap::new(),
        }
    }

    /// Whether a warning of `kind` from `source` (a LID, a user ID) at
    /// `now` is written: `Some(n)` when it is, `n` being how many of its
    /// kind from there were left out before it; `None` when it is left
    /// out (and counted).
    pub fn allow(&mut self, now: Instant, kind: K, source: impl Into<u32>) -> Option<u64> {
        let lid: u32 = source.into();
        if self.entries.len() >= MAX_SOURCES && !self.entries.contains_key(&(kind, lid)) {
            let window = self.window;
            self.entries
                .retain(|_, e| now.saturating_duration_since(e.logged) < window);
        }
        let key = if self.entries.len() >= MAX_SOURCES && !self.entries.contains_key(&(kind, lid)) {
            (kind, 0)
        } else {
            (kind, lid)
        };
        match self.entries.get_mut(&key) {
            Some(e) if now.saturating_duration_since(e.logged) < self.window => {
                e.left_out += 1;
                None
            }
            Some(e) => {
                let left_out = e.left_out;
                *e = Entry {
                    logged: now,
                    left_out: 0,
                };
                Some(left_out)
            }
            None => {
                self.entries.insert(
                    key,
                    Entry {
                        logged: now,
                        left_out: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

/// How logs show the master's answer to a request: its status, or that
/// none came.
pub(crate) fn answer_status(status: Option<mad_codec::MadStatus>) -> String {
    status.map_or_else(|| "no answer".to_owned(), |s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    enum Warning {
        Denied,
        Invalid,
    }
    use Warning::{Denied, Invalid};

    #[test]
    fn one_line_per_source_per_window_then_a_count() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(Duration::from_secs(60));
        assert_eq!(l.allow(t0, Denied, 17u16), Some(0));
        for i in 1..=412 {
            assert_eq!(l.allow(t0 + Duration::from_millis(i), Denied, 17u16), None);
        }
        assert_eq!(l.allow(t0, Denied, 18u16), Some(0), "another source");
        assert_eq!(l.allow(t0, Invalid, 17u16), Some(0), "another kind");
        let later = t0 + Duration::from_secs(61);
        assert_eq!(l.allow(later, Denied, 17u16), Some(412));
        assert_eq!(l.allow(later, Denied, 17u16), None);
    }

    #[test]
    fn many_sources_share_one_entry() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(Duration::from_secs(60));
        let written = (1..=5000u16)
            .filter(|lid| l.allow(t0, Denied, *lid).is_some())
            .count();
        assert_eq!(written, MAX_SOURCES + 1, "then one for all the others");
        assert!(l.entries.len() <= MAX_SOURCES + 1);
    }
}
