//! The tables' timers in one place: when something of theirs is next
//! due ([`PortTables::poll_timeout`]), and at a time which of them is
//! ([`PortTables::take_due`]), in the order `SaCore` carries them out
//! ([`Due::ORDER`]).

use std::time::Instant;

use crate::agent::port_tables::PortTables;

/// What of the tables can fall due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Due {
    /// The sweep the tables are in doubt of has settled: queries go to
    /// the master until the refresh that follows.
    DoubtSettled,
    /// The refresh timer (the upkeep's rules then say whether the
    /// refresh goes ahead).
    Refresh,
    /// A check of tables this port did not fetch.
    Check,
    /// A poll of the master's activity.
    SweepPoll,
    /// The tables of partitions the port now holds.
    Partitions,
}

impl Due {
    /// Every one, in the order they are taken at one time: a doubt
    /// settles before a refresh due at the same moment, which then ends
    /// it.
    pub(in crate::agent) const ORDER: [Self; 5] = [
        Self::DoubtSettled,
        Self::Refresh,
        Self::Check,
        Self::SweepPoll,
        Self::Partitions,
    ];
}

impl PortTables {
    /// When something of the tables is next due, if anything is.
    pub(in crate::agent) fn poll_timeout(&self) -> Option<Instant> {
        [
            self.refresh.next(),
            self.refresh.partitions_next(),
            self.next_sweep_poll(),
            self.upkeep.check_next(),
            self.upkeep.doubt_settles(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether `due` is due at `now`. Each is taken once: its timer moves
    /// on or is cleared, except a check's, which starting it clears.
    pub(in crate::agent) fn take_due(&mut self, due: Due, now: Instant) -> bool {
        match due {
            Due::DoubtSettled => {
                let settled = self.upkeep.take_doubt_settled(now);
                self.counts.doubts += u64::from(settled);
                settled
            }
            Due::Refresh => self.refresh.take_due(now),
            Due::Check => self.upkeep.check_due(now),
            Due::SweepPoll => self.take_sweep_poll_due(now),
            Due::Partitions => self.refresh.take_partitions_due(now),
        }
    }
}
