//! How each node of a distribution fared.

use mad_codec::Gid;

use super::tally::Tally;
use crate::sent_tables::SentTables;

/// How one node fared.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeOutcome {
    /// Everything it needed was sent and acknowledged.
    pub done: bool,
    /// It needed nothing (a delta with no change).
    pub unchanged: bool,
    /// Records it stored, and removed.
    pub stored: u64,
    /// Records it removed.
    pub deleted: u64,
    /// Partition tables it took whole, and partition tables' records it
    /// stored (whole or changed) and removed.
    pub partition_tables: u64,
    /// Partition tables' records it stored.
    pub partition_stored: u64,
    /// Partition tables' records it removed.
    pub partition_deleted: u64,
    /// Tables at QoS keys it took, and their records it stored.
    pub qos_tables: u64,
    /// Their records it stored.
    pub qos_stored: u64,
    /// Its local-sa does not take tables at QoS keys (it asks its own).
    pub qos_refused: bool,
    /// Its local-sa does not take names loads (it fetches its own).
    pub names_refused: bool,
}

/// One node, at the end.
pub struct NodeReport {
    /// Its lowest LID.
    pub lid: u16,
    /// Its port GID.
    pub gid: Gid,
    /// What it took.
    pub outcome: NodeOutcome,
    /// Why it failed for good, if it did.
    pub failure: Option<String>,
    /// What it holds as far as the distributor knows.
    pub holds: SentTables,
}

/// What a distribution's nodes took, in all.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pushed {
    /// Nodes that took something, and nodes that failed.
    pub nodes: usize,
    /// Nodes that failed.
    pub failed: usize,
    /// PathRecords stored and removed, default and partition tables.
    pub stored: u64,
    /// PathRecords removed.
    pub deleted: u64,
    /// Loads and deletes sent.
    pub transfers: u64,
    /// PathRecords the master answered for tables it had to give.
    pub master_path_records: u64,
}

impl Pushed {
    /// What the nodes of `reports` took, with `tally`'s transfers and the
    /// master's PathRecords.
    pub fn of(reports: &[NodeReport], tally: &Tally) -> Self {
        let sum = |field: fn(&NodeOutcome) -> u64| reports.iter().map(|n| field(&n.outcome)).sum();
        Self {
            nodes: reports.iter().filter(|n| n.took_changes()).count(),
            failed: reports.iter().filter(|n| n.failure.is_some()).count(),
            stored: sum(|o| o.stored + o.partition_stored),
            deleted: sum(|o| o.deleted + o.partition_deleted),
            transfers: tally.transfers,
            master_path_records: tally.path_records,
        }
    }
}

impl NodeReport {
    /// It took everything it needed, and something changed.
    pub fn took_changes(&self) -> bool {
        self.outcome.done && !self.outcome.unchanged
    }

    /// Why it failed, in a line naming it, if it did.
    pub fn failure_line(&self) -> Option<String> {
        self.failure
            .as_ref()
            .map(|why| format!("LID {} ({}): {why}", self.lid, self.gid))
    }
}
