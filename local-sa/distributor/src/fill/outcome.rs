//! How each node of a distribution fared.

use mad_codec::Gid;

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
