//! The master SM's activity, as its SMInfoRecord tells it: a heavy sweep
//! seen without the notice that announced it.
//!
//! OpenSM sends trap 128 before it reroutes, so a port whose path from
//! the master crossed the link that went down never gets the Report; and
//! a SIGHUP (a QoS policy or partitions changed) makes it sweep without
//! any notice at all. The master's SMInfoRecord tells what it did: its
//! ActCount counts the SMPs the SM sent (OpenSM: `qp0_mads_sent`). A light
//! sweep every sweep interval costs it about one SMP per switch; a heavy
//! sweep — discovery, and the forwarding tables, QoS policy and
//! partitions OpenSM reads again — costs it one per port and more.
//! [`MasterActivity`] judges each count it is given: a rise of more than
//! twice the smallest rise its quiet polls saw (and a margin) is a heavy
//! sweep, unless a notice came since the last count (it stands for the
//! rise); a poll whose answer came later after the one before than the
//! quiet polls' usually do spans more light sweeps, and may rise in
//! proportion (a master busy with tables answers some polls seconds
//! late); a master at another LID, or a count that went back (the SM
//! restarted), starts the learning again. Told the fabric's switches, it
//! takes no rise above what light sweeps cost in the time a poll spanned
//! (an SMP a switch a sweep) for theirs, so that heavy sweeps seen before
//! any light one are not learnt as the usual.
//!
//! No blind start: a rise judged before any quiet one was known (the
//! first polls after a start, or after a new master) is judged again at
//! each count until a window of quiet polls is learnt, so that a sweep
//! in a watcher's first seconds is seen one poll late rather than taken
//! for the usual.
//!
//! Used by the agent's own upkeep and by the distributor's watch.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::attr::sm_info_record::mask as smir;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, SaMadBuilder, SmInfoRecord};

use crate::requester::Answer;

/// Quiet rises remembered: the smallest of them is the light sweeps'.
const QUIET_RISES: usize = 8;

/// SMPs above twice the usual rise before a rise counts as a heavy
/// sweep (two light sweeps in one poll are not one).
const MARGIN: u32 = 16;

/// OpenSM's default sweep interval: a light sweep every this.
const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// A rise above this is a count that went back (wrapping), not activity.
const WENT_BACK: u32 = 1 << 30;

/// What a count of the master's activity showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Nothing but light sweeps (or nothing to compare yet).
    Quiet,
    /// A heavy sweep no notice announced: the count rose by `rose`, light
    /// sweeps about `usual` a poll.
    Swept {
        /// The count's rise since the last poll.
        rose: u32,
        /// The smallest rise of the quiet polls remembered.
        usual: u32,
    },
}

/// A rise of a poll judged quiet.
#[derive(Debug, Clone, Copy)]
struct QuietRise {
    /// By how much the count rose.
    rose: u32,
    /// The time the poll spanned.
    spanned: Duration,
    /// Judged before a settled quiet rise was known to judge it by:
    /// judged again at each count until the window is full.
    provisional: bool,
    /// A notice came before it: it stands for the rise.
    covered: bool,
}

/// What the polls have seen of the master's activity.
#[derive(Debug, Default, Clone)]
pub struct MasterActivity {
    /// The master's LID and ActCount at the last count, and when it came.
    last: Option<(u16, u32, Instant)>,
    /// The rises of the last quiet polls.
    quiet: VecDeque<QuietRise>,
    /// A change notice came since the last count.
    notice_since: bool,
    /// The fabric's switches, if known
    /// ([`MasterActivity::with_switches`]).
    switches: Option<u32>,
}

impl MasterActivity {
    /// Polls of a fabric of `switches` switches: a light sweep costs the
    /// master about one SMP a switch, and a poll spans at most one more
    /// sweep than the time it spanned holds sweep intervals (OpenSM's
    /// default, 10 s), so no rise above that is taken for the light
    /// sweeps' — polls that start while heavy sweeps follow each other (a
    /// port that went and came back) do not learn them as the usual.
    pub fn with_switches(mut self, switches: usize) -> Self {
        self.switches = Some(u32::try_from(switches.max(1)).unwrap_or(u32::MAX));
        self
    }

    /// What light sweeps cost a poll that spanned `spanned` at most, if
    /// the switches are known.
    fn light_at_most(&self, spanned: Duration) -> Option<u32> {
        let sweeps = spanned.as_secs().div_ceil(SWEEP_INTERVAL.as_secs()) + 1;
        self.switches
            .map(|s| u32::try_from(u64::from(s).saturating_mul(sweeps)).unwrap_or(u32::MAX))
    }

    /// A change notice came (trap 128): the next rise is its sweep's.
    pub fn notice(&mut self) {
        self.notice_since = true;
    }

    /// The quiet rises remembered, oldest first.
    pub fn quiet_rises(&self) -> impl Iterator<Item = u32> + '_ {
        self.quiet.iter().map(|q| q.rose)
    }

    /// Whether a count was taken: the next one is judged against it.
    pub fn has_count(&self) -> bool {
        self.last.is_some()
    }

    /// The master at `sm_lid` says, in an answer that came at `at`, that
    /// its ActCount is `count`: what that shows. A heavy sweep seen late
    /// (a provisional rise judged again) is told at this count.
    pub fn counted(&mut self, sm_lid: u16, count: u32, at: Instant) -> Activity {
        let covered = std::mem::take(&mut self.notice_since);
        let Some((lid, before, then)) = self.last.replace((sm_lid, count, at)) else {
            return Activity::Quiet;
        };
        let rose = count.wrapping_sub(before);
        if lid != sm_lid || rose > WENT_BACK {
            self.quiet.clear();
            return Activity::Quiet;
        }
        let spanned = at.saturating_duration_since(then);
        let usual = self.usual(spanned);
        if let Some(usual) = usual
            && rose > self.light_at_most_over(usual, spanned)
        {
            return if covered {
                Activity::Quiet
            } else {
                Activity::Swept { rose, usual }
            };
        }
        if self.quiet.len() == QUIET_RISES {
            self.quiet.pop_front();
        }
        // Judged by provisional rises alone, it is provisional too: two
        // heavy sweeps first are each other's usual until a light one
        // comes.
        let settled = self.quiet.iter().any(|q| !q.provisional && q.rose > 0);
        self.quiet.push_back(QuietRise {
            rose,
            spanned,
            provisional: !settled,
            covered,
        });
        self.judge_provisional()
    }

    /// The smallest positive rise of the quiet polls remembered.
    fn smallest(&self) -> Option<u32> {
        self.quiet_rises().filter(|r| *r > 0).min()
    }

    /// The usual rise of a poll that spanned `spanned`: the smallest
    /// quiet one (no more than light sweeps cost it, the switches
    /// known), if there is one to go by.
    fn usual(&self, spanned: Duration) -> Option<u32> {
        match (self.smallest(), self.light_at_most(spanned)) {
            (Some(u), Some(most)) => Some(u.min(most)),
            (Some(u), None) => Some(u),
            (None, Some(most)) => Some(most),
            // Without light sweeps (OpenSM's sweep_interval 0) the quiet
            // count does not move at all: a whole window of polls saw
            // none. Fewer quiet polls than that may just be quicker than
            // the sweeps (a watch polling every 2 s).
            (None, None) => (self.quiet.len() == QUIET_RISES).then_some(0),
        }
    }

    /// Judges again the provisional rises (taken as quiet before a
    /// settled quiet rise was known) against what the window knows now:
    /// one past the light sweeps' bound was a heavy sweep (the largest is
    /// told, and every such one leaves the window). Once the window is
    /// full they are quiet for good.
    fn judge_provisional(&mut self) -> Activity {
        let heavy: Vec<(usize, u32)> = (0..self.quiet.len())
            .filter(|i| self.quiet[*i].provisional)
            .filter_map(|i| {
                let q = self.quiet[i];
                let usual = self.usual_besides(i)?;
                (q.rose > self.light_at_most_over(usual, q.spanned)).then_some((i, usual))
            })
            .collect();
        let swept = (heavy.iter())
            .filter(|(i, _)| !self.quiet[*i].covered)
            .map(|(i, usual)| (self.quiet[*i].rose, *usual))
            .max();
        for (i, _) in heavy.iter().rev() {
            self.quiet.remove(*i);
        }
        if self.quiet.len() == QUIET_RISES {
            for q in &mut self.quiet {
                q.provisional = false;
            }
        }
        swept.map_or(Activity::Quiet, |(rose, usual)| Activity::Swept {
            rose,
            usual,
        })
    }

    /// The usual rise to judge the `i`th quiet rise by: the smallest
    /// positive rise of the others (no more than light sweeps cost its
    /// span, the switches known). None without either: a rise among
    /// polls that saw no other may be the first light sweep of polls
    /// quicker than the sweeps.
    fn usual_besides(&self, i: usize) -> Option<u32> {
        let smallest = (self.quiet.iter().enumerate())
            .filter(|(j, o)| *j != i && o.rose > 0)
            .map(|(_, o)| o.rose)
            .min();
        let most = self.light_at_most(self.quiet[i].spanned);
        match (smallest, most) {
            (Some(u), Some(most)) => Some(u.min(most)),
            (u, most) => u.or(most),
        }
    }

    /// The most light sweeps may raise the count in a poll that spanned
    /// `spanned`, their usual rise a poll being `usual`: twice that and a
    /// margin, the twice in proportion when the poll spanned longer than
    /// the quiet polls usually do (their median: one answered early or
    /// late does not move it).
    fn light_at_most_over(&self, usual: u32, spanned: Duration) -> u32 {
        let mut spans: Vec<Duration> = (self.quiet.iter())
            .map(|q| q.spanned)
            .filter(|t| !t.is_zero())
            .collect();
        spans.sort_unstable();
        let longer = match spans.get(spans.len() / 2) {
            Some(typical) if spanned > *typical => spanned.as_secs_f64() / typical.as_secs_f64(),
            _ => 1.0,
        };
        let twice = (f64::from(usual) * 2.0 * longer).min(f64::from(u32::MAX)) as u32;
        twice.saturating_add(MARGIN)
    }
}

/// The Get of the SMInfoRecord of the SM at `sm_lid`.
pub fn request(sm_lid: u16) -> Bytes {
    let mut t = SmInfoRecord::new_zeroed();
    t.set_lid(sm_lid);
    let mut b = SaMadBuilder::request(Method::GET, 0, AttributeId::SM_INFO_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(smir::LID);
    b.into_bytes()
}

/// The ActCount an answer to [`request`] carries, if it is one.
pub fn act_count(answer: &Answer) -> Option<u32> {
    (answer.status() == MadStatus::OK && answer.data().len() >= SmInfoRecord::LEN)
        .then(|| answer.record::<SmInfoRecord>().act_count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls every 30 s answering `counts` in turn; what each saw.
    fn seen(counts: &[u32]) -> Vec<Activity> {
        let mut w = MasterActivity::default();
        let mut clock = Clock::every(30);
        counts
            .iter()
            .map(|c| w.counted(1, *c, clock.tick()))
            .collect()
    }

    /// Answers coming a fixed time apart.
    struct Clock {
        at: Instant,
        every: Duration,
    }

    impl Clock {
        fn every(secs: u64) -> Self {
            Self {
                at: Instant::now(),
                every: Duration::from_secs(secs),
            }
        }

        fn tick(&mut self) -> Instant {
            self.at += self.every;
            self.at
        }
    }

    #[test]
    fn light_sweeps_are_quiet_and_a_heavy_one_is_seen() {
        // Five SMPs a light sweep, two or three sweeps a poll; then the
        // heavy sweep after a link went down.
        let s = seen(&[313, 323, 338, 348, 363, 373, 548, 558]);
        assert_eq!(&s[..6], &[Activity::Quiet; 6]);
        assert_eq!(
            s[6],
            Activity::Swept {
                rose: 175,
                usual: 10
            }
        );
        assert_eq!(s[7], Activity::Quiet, "after it, quiet again");
    }

    #[test]
    fn heavy_sweeps_before_any_light_one_are_not_learnt_as_the_usual_when_the_switches_are_known() {
        let mut clock = Clock::every(30);
        // Polls every 4 s start as a port goes and comes back: two heavy
        // sweeps, no light one yet.
        let counts = [1000, 1157, 1157, 1157, 1329, 1329, 1495];
        let mut blind = MasterActivity::default();
        let blind: Vec<Activity> = counts
            .iter()
            .map(|c| blind.counted(1, *c, clock.tick()))
            .collect();
        assert!(
            blind.iter().all(|a| *a == Activity::Quiet),
            "without the fabric's size, they pass for light sweeps"
        );
        let mut told = MasterActivity::default().with_switches(5);
        let swept: Vec<usize> = (counts.iter().enumerate())
            .filter(|(_, c)| matches!(told.counted(1, **c, clock.tick()), Activity::Swept { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(swept, [1, 4, 6], "each heavy sweep");
        // Light sweeps of a large fabric, three a poll, stay quiet.
        let mut large = MasterActivity::default().with_switches(500);
        for (i, c) in [0, 1500, 3000, 4500, 6000].iter().enumerate() {
            assert_eq!(
                large.counted(1, *c, clock.tick()),
                Activity::Quiet,
                "poll {i}"
            );
        }
    }

    #[test]
    fn polls_quicker_than_the_light_sweeps_do_not_take_the_first_for_a_heavy_one() {
        let mut clock = Clock::every(2);
        // 783 switches, a light sweep every 10 s, a poll every 2 s: four
        // quiet polls, then the first light sweep.
        let counts = [0, 0, 0, 0, 0, 783, 783, 783, 783, 783, 1566];
        let mut told = MasterActivity::default().with_switches(783);
        for (i, c) in counts.iter().enumerate() {
            assert_eq!(
                told.counted(1, *c, clock.tick()),
                Activity::Quiet,
                "poll {i}"
            );
        }
        let mut blind = MasterActivity::default();
        for (i, c) in counts.iter().enumerate() {
            assert_eq!(
                blind.counted(1, *c, clock.tick()),
                Activity::Quiet,
                "poll {i}"
            );
        }
        // A heavy sweep after that is seen by both.
        assert!(matches!(
            told.counted(1, 200_000, clock.tick()),
            Activity::Swept { .. }
        ));
        assert!(matches!(
            blind.counted(1, 200_000, clock.tick()),
            Activity::Swept { .. }
        ));
    }

    #[test]
    fn a_heavy_sweep_in_the_first_polls_is_seen_one_poll_late_not_learnt_as_the_usual() {
        // Polls every 30 s from a start: the first rise is a SIGHUP's
        // heavy sweep (142 SMPs), then light sweeps of five SMPs each.
        let s = seen(&[1000, 1142 + 15, 1142 + 30, 1142 + 45, 1142 + 60]);
        assert_eq!(&s[..2], &[Activity::Quiet; 2], "nothing to judge it by yet");
        assert_eq!(
            s[2],
            Activity::Swept {
                rose: 157,
                usual: 15
            },
            "seen once a light sweep's rise is known"
        );
        assert_eq!(&s[3..], &[Activity::Quiet; 2], "told once");
        // Two heavy sweeps first (a port that went and came back): both
        // are judged again, and told once.
        let s = seen(&[0, 150, 300, 315, 330]);
        let swept: Vec<usize> = (s.iter().enumerate())
            .filter(|(_, a)| matches!(a, Activity::Swept { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(swept, [3], "{s:?}");
        let mut clock = Clock::every(30);
        let mut w = MasterActivity::default();
        for c in [0, 150, 300, 315, 330] {
            w.counted(1, c, clock.tick());
        }
        assert_eq!(w.quiet_rises().collect::<Vec<_>>(), [15, 15], "both left");
        // A notice covered the first rise: not told again.
        let mut clock = Clock::every(30);
        let mut w = MasterActivity::default();
        w.counted(1, 0, clock.tick());
        w.notice();
        assert_eq!(w.counted(1, 157, clock.tick()), Activity::Quiet);
        assert_eq!(w.counted(1, 172, clock.tick()), Activity::Quiet);
        assert_eq!(
            w.quiet_rises().collect::<Vec<_>>(),
            [15],
            "gone from the window"
        );
    }

    #[test]
    fn quiet_rises_judged_without_a_usual_become_final_with_a_full_window() {
        let mut counts = vec![0, 15];
        counts.extend((2..=QUIET_RISES as u32 + 1).map(|i| 15 * i));
        let s = seen(&counts);
        assert!(s.iter().all(|a| *a == Activity::Quiet), "{s:?}");
        // A smaller rise later does not turn the old ones into sweeps.
        let mut clock = Clock::every(30);
        let mut w = MasterActivity::default();
        for c in &counts {
            w.counted(1, *c, clock.tick());
        }
        let last = *counts.last().unwrap();
        assert_eq!(w.counted(1, last + 3, clock.tick()), Activity::Quiet);
    }

    #[test]
    fn the_switches_bound_a_first_rise_by_the_time_it_spanned() {
        // Five switches; the first count 40 s after the baseline (a long
        // fill): five light sweeps' SMPs are quiet, a heavy sweep is not.
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut w = MasterActivity::default().with_switches(5);
        w.counted(1, 0, at(0));
        assert_eq!(w.counted(1, 25, at(40)), Activity::Quiet);
        let mut w = MasterActivity::default().with_switches(5);
        w.counted(1, 0, at(0));
        assert!(matches!(
            w.counted(1, 25 + 161, at(40)),
            Activity::Swept { .. }
        ));
    }

    #[test]
    fn a_rise_a_notice_stood_for_is_not_seen_twice() {
        let mut clock = Clock::every(30);
        let mut w = MasterActivity::default();
        for c in [100, 110, 120] {
            w.counted(1, c, clock.tick());
        }
        w.notice();
        assert_eq!(w.counted(1, 400, clock.tick()), Activity::Quiet);
        assert!(matches!(
            w.counted(1, 700, clock.tick()),
            Activity::Swept { .. }
        ));
    }

    #[test]
    fn a_new_master_or_a_restarted_one_is_learnt_again() {
        let mut clock = Clock::every(30);
        let mut w = MasterActivity::default();
        for c in [100, 110, 120] {
            w.counted(1, c, clock.tick());
        }
        assert_eq!(
            w.counted(2, 5000, clock.tick()),
            Activity::Quiet,
            "another master"
        );
        assert_eq!(
            w.counted(2, 5, clock.tick()),
            Activity::Quiet,
            "its count went back"
        );
        assert_eq!(
            w.counted(2, 500, clock.tick()),
            Activity::Quiet,
            "learning again"
        );
    }

    #[test]
    fn without_light_sweeps_any_rise_past_the_margin_is_a_sweep() {
        // A window of quiet polls that saw no light sweep: there are none.
        let mut counts = vec![50; QUIET_RISES + 1];
        counts.push(300);
        let s = seen(&counts);
        assert!(s[..=QUIET_RISES].iter().all(|a| *a == Activity::Quiet));
        assert_eq!(
            s[QUIET_RISES + 1],
            Activity::Swept {
                rose: 250,
                usual: 0
            }
        );
    }

    #[test]
    fn a_poll_the_master_answered_late_spans_more_light_sweeps_and_is_not_a_heavy_one() {
        // 783 switches, a light sweep every 10 s, polls every 30 s whose
        // answers come 20 to 50 s apart while the master is busy: two to
        // five light sweeps a poll.
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut w = MasterActivity::default();
        let polls = [(0, 0), (30, 2349), (50, 3915), (80, 6264), (130, 10179)];
        for (i, (t, c)) in polls.iter().enumerate() {
            assert_eq!(w.counted(1, *c, at(*t)), Activity::Quiet, "poll {i}");
        }
        // A heavy sweep (every port's PortInfo, every switch's forwarding
        // tables) in a poll as late is still seen.
        assert!(matches!(
            w.counted(1, 10179 + 3915 + 193_222, at(180)),
            Activity::Swept { .. }
        ));
        // On a small fabric (five switches, polls every 5 s), a heavy
        // sweep of 161 SMPs in a poll answered ten times late.
        let mut small = MasterActivity::default();
        for (i, t) in (0..6).enumerate() {
            let c = 5 * i as u32;
            assert_eq!(small.counted(1, c, at(5 * t)), Activity::Quiet);
        }
        assert!(matches!(
            small.counted(1, 25 + 50 + 161, at(75)),
            Activity::Swept { .. }
        ));
    }
}
