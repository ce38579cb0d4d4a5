//! What of the tables can fall due, in the order `SaCore` carries them
//! out ([`Due::ORDER`]); when the next is
//! ([`PortTables::poll_timeout`](super::PortTables::poll_timeout)) and
//! which are at a time
//! ([`PortTables::take_due`](super::PortTables::take_due)) are the
//! tables'.

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
