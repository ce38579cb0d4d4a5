//! What the agent holds of host names (see `names` for how they are
//! fetched and published).

use std::sync::Arc;
use std::time::Instant;

use super::upstream_purpose::NameTable;
use crate::directory::Publication;
use crate::naming::Names;
use crate::store::Epoch;

/// Where the fetch of one table stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TableFetch {
    /// The bulk GetTable is out.
    Bulk,
    /// Fetching port by port: the keys still to ask for (a base LID for
    /// NodeRecords, a port GUID for the directory) and how many are out.
    Walk { todo: Vec<u64>, in_flight: usize },
    /// In.
    Done,
}

/// A fetch of both tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NameFetch {
    pub(super) epoch: Epoch,
    /// The tables come in loads from a distributor, not from the master
    /// (a table still `Bulk` is awaited).
    pub(super) loaded: bool,
    pub(super) nodes: TableFetch,
    pub(super) directory: TableFetch,
    pub(super) from_nodes: Names,
    pub(super) from_directory: Names,
}

impl NameFetch {
    pub(super) fn table(&mut self, table: NameTable) -> &mut TableFetch {
        match table {
            NameTable::Nodes => &mut self.nodes,
            NameTable::Directory => &mut self.directory,
        }
    }
}

/// What the agent knows of names, and what it publishes.
#[derive(Debug, Default)]
pub(super) struct NameState {
    /// The names from the last complete fetch, shared with the ibacm door
    /// (a large table is held once).
    pub(super) names: Arc<Names>,
    /// Bumped whenever `names` changes.
    pub(super) generation: u64,
    pub(super) fetch: Option<NameFetch>,
    /// When the fetch for a refresh's epoch starts (after the first
    /// refresh, at the port's phase).
    pub(super) fetch_at: Option<(Instant, Epoch)>,
    /// The next refresh follows a new master (or one that lost its
    /// state): the names are kept rather than fetched after it.
    pub(super) keep_after_next_refresh: bool,
    /// Names came in a distributor's load: the start's fetch from the
    /// master is not needed.
    pub(super) loaded: bool,
    /// What this port publishes in the directory.
    pub(super) publication: Option<Publication>,
    /// The master holds this port's directory record.
    pub(super) published: bool,
}
