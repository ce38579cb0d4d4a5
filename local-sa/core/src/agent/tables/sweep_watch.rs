//! Noticing the master's heavy sweeps without its Reports.
//!
//! OpenSM sends trap 128 before it reroutes, so a port whose path from
//! the master crossed the link that went down never gets the Report, and
//! would keep stale paths until its periodic refresh. The master's
//! SMInfoRecord tells what it did without that path: its ActCount counts
//! the SMPs the SM sent (OpenSM: `qp0_mads_sent`). A light sweep every
//! sweep interval costs it about one SMP per switch; a heavy sweep — the
//! discovery and forwarding tables after a link went up or down, when
//! routes may move — costs it one per port and more. A port keeping its
//! own tables asks for that one record every `sweep_poll`; when the count
//! rose by more than twice the smallest rise its quiet polls saw (and a
//! margin), the master swept heavily and the port refreshes as after a
//! change notice. A notice that came since the last poll already stands
//! for the rise; a master at another LID, or a count that went back (the
//! SM restarted), starts the learning again.
//!
//! While a distributor's lease runs the distributor watches the fabric:
//! nothing is polled (the tables' rules say when a poll is due:
//! `upkeep_rules`).

use std::collections::VecDeque;
use std::time::Instant;

/// Quiet rises remembered: the smallest of them is the light sweeps'.
const QUIET_RISES: usize = 8;

/// SMPs above twice the usual rise before a rise counts as a heavy
/// sweep (two light sweeps in one poll are not one).
const MARGIN: u32 = 16;

/// A rise above this is a count that went back (wrapping), not activity.
const WENT_BACK: u32 = 1 << 30;

/// What a poll of the master's ActCount saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum SweepSeen {
    /// Nothing but light sweeps (or nothing to compare yet).
    Quiet,
    /// A heavy sweep: the count rose by `rose`, light sweeps about
    /// `usual` a poll.
    Swept { rose: u32, usual: u32 },
}

/// What the port knows of the master's activity.
#[derive(Debug, Default)]
pub(in crate::agent) struct SweepWatch {
    /// The next poll, while polling.
    next: Option<Instant>,
    /// The master's LID and ActCount at the last answer.
    last: Option<(u16, u32)>,
    /// The rises of the last quiet polls.
    quiet: VecDeque<u32>,
    /// A change notice came since the last answer.
    notice_since: bool,
}

impl SweepWatch {
    /// The next poll, while polling.
    pub(in crate::agent) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// The next poll is at `at` (`None`: no polls).
    pub(in crate::agent) fn poll_at(&mut self, at: Option<Instant>) {
        self.next = at;
    }

    /// A change notice came (trap 128): the next rise is its sweep's.
    pub(in crate::agent) fn notice(&mut self) {
        self.notice_since = true;
    }

    /// The count's rise since the last answer, judged: `sm_lid`'s
    /// ActCount is `count` now.
    pub(in crate::agent) fn answered(&mut self, sm_lid: u16, count: u32) -> SweepSeen {
        let covered = std::mem::take(&mut self.notice_since);
        let Some((lid, before)) = self.last.replace((sm_lid, count)) else {
            return SweepSeen::Quiet;
        };
        let rose = count.wrapping_sub(before);
        if lid != sm_lid || rose > WENT_BACK {
            self.quiet.clear();
            return SweepSeen::Quiet;
        }
        let usual = self.quiet.iter().copied().filter(|r| *r > 0).min();
        // Without light sweeps (OpenSM's sweep_interval 0) the quiet count
        // does not move at all.
        let usual = usual.or((self.quiet.len() >= 2).then_some(0));
        if let Some(usual) = usual
            && rose > usual.saturating_mul(2).saturating_add(MARGIN)
        {
            return if covered {
                SweepSeen::Quiet
            } else {
                SweepSeen::Swept { rose, usual }
            };
        }
        if self.quiet.len() == QUIET_RISES {
            self.quiet.pop_front();
        }
        self.quiet.push_back(rose);
        SweepSeen::Quiet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls answering `counts` in turn; what each saw.
    fn seen(counts: &[u32]) -> Vec<SweepSeen> {
        let mut w = SweepWatch::default();
        counts.iter().map(|c| w.answered(1, *c)).collect()
    }

    #[test]
    fn light_sweeps_are_quiet_and_a_heavy_one_is_seen() {
        // Five SMPs a light sweep, two or three sweeps a poll; then the
        // heavy sweep after a link went down.
        let s = seen(&[313, 323, 338, 348, 363, 373, 548, 558]);
        assert_eq!(&s[..6], &[SweepSeen::Quiet; 6]);
        assert_eq!(
            s[6],
            SweepSeen::Swept {
                rose: 175,
                usual: 10
            }
        );
        assert_eq!(s[7], SweepSeen::Quiet, "after it, quiet again");
    }

    #[test]
    fn a_rise_a_notice_stood_for_is_not_seen_twice() {
        let mut w = SweepWatch::default();
        for c in [100, 110, 120] {
            w.answered(1, c);
        }
        w.notice_since = true;
        assert_eq!(w.answered(1, 400), SweepSeen::Quiet);
        assert!(matches!(w.answered(1, 700), SweepSeen::Swept { .. }));
    }

    #[test]
    fn a_new_master_or_a_restarted_one_is_learnt_again() {
        let mut w = SweepWatch::default();
        for c in [100, 110, 120] {
            w.answered(1, c);
        }
        assert_eq!(w.answered(2, 5000), SweepSeen::Quiet, "another master");
        assert_eq!(w.answered(2, 5), SweepSeen::Quiet, "its count went back");
        assert_eq!(w.answered(2, 500), SweepSeen::Quiet, "learning again");
    }

    #[test]
    fn without_light_sweeps_any_rise_past_the_margin_is_a_sweep() {
        let s = seen(&[50, 50, 50, 300]);
        assert_eq!(&s[..3], &[SweepSeen::Quiet; 3]);
        assert_eq!(
            s[3],
            SweepSeen::Swept {
                rose: 250,
                usual: 0
            }
        );
    }
}
