//! What each node holds as far as a distributor knows.

use mad_codec::PathRecord;

/// What a node holds as far as the distributor knows: what it was sent
/// (or, in a snapshot, what an earlier run sent it).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SentTables {
    /// Its default table.
    pub default: Vec<PathRecord>,
    /// Its partition tables' records, each in its P_Key's partition.
    pub partitions: Vec<PathRecord>,
}
