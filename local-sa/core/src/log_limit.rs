//! Warnings a peer can cause at will (loads with a wrong key, Reports from
//! anyone, queries to a dead master) at most once per kind and source per
//! window: the first at once, then, at the first one after the window, a
//! line that also says how many were left out. A peer flooding the agent
//! costs the log one line a minute per LID (or user, for local
//! connections), not one per MAD.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Sources remembered at most; past it every new source shares one entry
/// (source 0, "from many").
const MAX_SOURCES: usize = 1024;

/// What a warning is about, for counting.
pub type Kind = &'static str;

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// When the last line for it was written.
    logged: Instant,
    /// How many were left out since.
    left_out: u64,
}

/// Which warnings may be written now.
#[derive(Debug)]
pub struct LogLimit {
    window: Duration,
    entries: HashMap<(Kind, u32), Entry>,
}

impl LogLimit {
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
    pub fn allow(&mut self, now: Instant, kind: Kind, source: impl Into<u32>) -> Option<u64> {
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

    #[test]
    fn one_line_per_source_per_window_then_a_count() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(Duration::from_secs(60));
        assert_eq!(l.allow(t0, "denied", 17u16), Some(0));
        for i in 1..=412 {
            assert_eq!(
                l.allow(t0 + Duration::from_millis(i), "denied", 17u16),
                None
            );
        }
        assert_eq!(l.allow(t0, "denied", 18u16), Some(0), "another source");
        assert_eq!(l.allow(t0, "invalid", 17u16), Some(0), "another kind");
        let later = t0 + Duration::from_secs(61);
        assert_eq!(l.allow(later, "denied", 17u16), Some(412));
        assert_eq!(l.allow(later, "denied", 17u16), None);
    }

    #[test]
    fn many_sources_share_one_entry() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(Duration::from_secs(60));
        let written = (1..=5000u16)
            .filter(|lid| l.allow(t0, "denied", *lid).is_some())
            .count();
        assert_eq!(written, MAX_SOURCES + 1, "then one for all the others");
        assert!(l.entries.len() <= MAX_SOURCES + 1);
    }
}
