//! The port's tables and their upkeep, held together: the default table,
//! the partitions' tables, the refresh that fetches them from the master
//! and who keeps them fresh (this port or a distributor's lease). Each
//! member owns its state behind its own methods; this groups them so
//! that [`SaCore`](crate::agent::SaCore) holds one concern, not four fields.

pub(in crate::agent) mod cache_control;
pub(in crate::agent) mod check;
pub(in crate::agent) mod kept;
pub(in crate::agent) mod loads;
pub(in crate::agent) mod port_paths;
pub(in crate::agent) mod refresh;
pub(in crate::agent) mod refresh_state;
pub(in crate::agent) mod upkeep;
pub(in crate::agent) mod upkeep_rules;

use std::time::Instant;

use crate::agent::tables::refresh_state::Refresh;
use crate::agent::tables::upkeep::Upkeep;
use crate::partitions::{Partitions, PathTable, TableKey};

/// The port's tables, their refresh and their upkeep.
#[derive(Debug)]
pub(in crate::agent) struct PortTables {
    /// The default table: the paths asked without a P_Key.
    pub(in crate::agent) paths: PathTable,
    /// The tables of the port's partitions.
    pub(in crate::agent) partitions: Partitions,
    /// Where the refresh of this port's tables stands.
    pub(in crate::agent) refresh: Refresh,
    /// Who keeps the tables fresh (this port, or a distributor's lease),
    /// and the checks of tables it did not fetch.
    pub(in crate::agent) upkeep: Upkeep,
}

impl PortTables {
    /// Empty tables, the first refresh due at `now`.
    pub(in crate::agent) fn new(now: Instant) -> Self {
        Self {
            paths: PathTable::default(),
            partitions: Partitions::default(),
            refresh: Refresh::new(now),
            upkeep: Upkeep::default(),
        }
    }

    /// The table `table` of this port's paths, to fill; `None` for a
    /// partition the port no longer holds.
    pub(in crate::agent) fn table_mut(&mut self, table: TableKey) -> Option<&mut PathTable> {
        match table {
            TableKey::Default => Some(&mut self.paths),
            TableKey::Partition(p) => self.partitions.table_mut(p),
        }
    }

    /// The port's identity changed: no record held is this port's any
    /// more (the partitions it holds stay).
    pub(in crate::agent) fn clear(&mut self) {
        self.paths.clear();
        self.partitions.clear();
    }
}
