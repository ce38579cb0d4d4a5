//! The port's tables and their upkeep, held together: the default table,
//! the partitions' tables, the refresh that fetches them from the master
//! and who keeps them fresh (this port or a distributor's lease). Each
//! member owns its state behind its own methods; this groups them so
//! that [`SaCore`](super::SaCore) holds one concern, not four fields.

use std::time::Instant;

use super::refresh_state::Refresh;
use super::upkeep::Upkeep;
use crate::partitions::{Partitions, PathTable, TableKey};

/// The port's tables, their refresh and their upkeep.
#[derive(Debug)]
pub(super) struct PortTables {
    /// The default table: the paths asked without a P_Key.
    pub(super) paths: PathTable,
    /// The tables of the port's partitions.
    pub(super) partitions: Partitions,
    /// Where the refresh of this port's tables stands.
    pub(super) refresh: Refresh,
    /// Who keeps the tables fresh (this port, or a distributor's lease),
    /// and the checks of tables it did not fetch.
    pub(super) upkeep: Upkeep,
}

impl PortTables {
    /// Empty tables, the first refresh due at `now`.
    pub(super) fn new(now: Instant) -> Self {
        Self {
            paths: PathTable::default(),
            partitions: Partitions::default(),
            refresh: Refresh::new(now),
            upkeep: Upkeep::default(),
        }
    }

    /// The table `table` of this port's paths, to fill; `None` for a
    /// partition the port no longer holds.
    pub(super) fn table_mut(&mut self, table: TableKey) -> Option<&mut PathTable> {
        match table {
            TableKey::Default => Some(&mut self.paths),
            TableKey::Partition(p) => self.partitions.table_mut(p),
        }
    }

    /// The port's identity changed: no record held is this port's any
    /// more (the partitions it holds stay).
    pub(super) fn clear(&mut self) {
        self.paths.clear();
        self.partitions.clear();
    }
}
