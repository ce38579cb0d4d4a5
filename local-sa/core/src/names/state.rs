//! What the agent holds of names: the names from the last complete fetch
//! (or load, or kept file) with a generation that moves when they change,
//! the fetch running, when the next is due, and this port's directory
//! record. The agent sends the requests (`fetching` and `publishing`
//! decide them); only these methods change this state.
//!
//! Invariant: the names are replaced whole, never changed in place (the
//! ibacm door holds the same table), and every replacement moves the
//! generation.

use std::sync::Arc;
use std::time::Instant;

use super::directory::Publication;
use super::hosts::Names;
use crate::store::Epoch;

/// Which table names come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTable {
    /// Channel adapters' NodeRecords (their NodeDescriptions).
    Nodes,
    /// The local-sa directory's ServiceRecords.
    Directory,
}

impl NameTable {
    /// The table's name (for logs).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Nodes => "NodeRecords",
            Self::Directory => "directory ServiceRecords",
        }
    }
}

/// Where the fetch of one table stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableFetch {
    /// The bulk GetTable is out.
    Bulk,
    /// Fetching port by port: the keys still to ask for (a base LID for
    /// NodeRecords, a port GUID for the directory) and how many are out.
    Walk { todo: Vec<u64>, in_flight: usize },
    /// In.
    Done,
}

/// A fetch of both tables (from the master, or in a distributor's loads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameFetch {
    epoch: Epoch,
    /// The tables come in loads from a distributor, not from the master
    /// (a table still `Bulk` is awaited).
    loaded: bool,
    nodes: TableFetch,
    directory: TableFetch,
    from_nodes: Names,
    from_directory: Names,
}

impl NameFetch {
    fn new(epoch: Epoch, loaded: bool) -> Self {
        Self {
            epoch,
            loaded,
            nodes: TableFetch::Bulk,
            directory: TableFetch::Bulk,
            from_nodes: Names::new(),
            from_directory: Names::new(),
        }
    }

    /// Where `table`'s fetch stands.
    pub(crate) fn table(&mut self, table: NameTable) -> &mut TableFetch {
        match table {
            NameTable::Nodes => &mut self.nodes,
            NameTable::Directory => &mut self.directory,
        }
    }

    /// The names gathered from `table` so far.
    pub(crate) fn names(&mut self, table: NameTable) -> &mut Names {
        match table {
            NameTable::Nodes => &mut self.from_nodes,
            NameTable::Directory => &mut self.from_directory,
        }
    }

    fn is_done(&self) -> bool {
        self.nodes == TableFetch::Done && self.directory == TableFetch::Done
    }
}

/// A fetch that ended with both tables in.
#[derive(Debug)]
pub(crate) struct FetchedNames {
    /// They came in a distributor's loads.
    pub(crate) loaded: bool,
    /// The directory's names, the NodeRecords' filling in the rest.
    pub(crate) names: Names,
}

/// What the agent knows of names, and what it publishes.
#[derive(Debug, Default)]
pub(crate) struct NameState {
    /// The names from the last complete fetch, shared with the ibacm door
    /// (a large table is held once).
    names: Arc<Names>,
    /// Bumped whenever `names` changes.
    generation: u64,
    fetch: Option<NameFetch>,
    /// When the fetch for a refresh's epoch starts (after the first
    /// refresh, at the port's phase).
    fetch_at: Option<(Instant, Epoch)>,
    /// The next refresh follows a new master (or one that lost its
    /// state): the names are kept rather than fetched after it.
    keep_after_next_refresh: bool,
    /// Names came in a distributor's load (or the kept file): the
    /// start's fetch from the master is not needed.
    loaded: bool,
    /// What this port publishes in the directory.
    publication: Option<Publication>,
    /// The master holds this port's directory record.
    published: bool,
    /// Names tables a distributor loaded (`name_tables_loaded`).
    pub(super) tables_loaded: u64,
    /// Fetches from the master that completed (`name_fetches`).
    pub(super) fetches: u64,
}

impl NameState {
    /// Adds the names' counters and gauge to `c`.
    pub(crate) fn add_counts(&self, c: &mut crate::counters::Counters) {
        c.names = self.names.len() as u64;
        c.name_tables_loaded += self.tables_loaded;
        c.name_fetches += self.fetches;
    }

    /// The names known (the table is replaced whole when they change).
    pub(crate) fn names(&self) -> &Arc<Names> {
        &self.names
    }

    /// A number that moves whenever the names do.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Takes `names` if they differ from those known; true if they did.
    pub(crate) fn replace(&mut self, names: Names) -> bool {
        if names == *self.names {
            return false;
        }
        self.names = Arc::new(names);
        self.generation += 1;
        true
    }

    /// Takes `names` kept from a previous run: they stand for the start's
    /// fetch.
    pub(crate) fn take_kept(&mut self, names: Names) {
        self.replace(names);
        self.loaded = true;
    }

    /// Names came in a load or the kept file (not fetched at start).
    pub(crate) fn loaded(&self) -> bool {
        self.loaded
    }

    /// The names are the master's or a distributor's (fetched, loaded or
    /// kept), not only this port's own: worth keeping across a restart.
    pub(crate) fn worth_keeping(&self) -> bool {
        self.fetches > 0 || self.loaded
    }

    /// The fetch for `epoch` starts at `at`.
    pub(crate) fn fetch_at(&mut self, at: Instant, epoch: Epoch) {
        self.fetch_at = Some((at, epoch));
    }

    /// When the next fetch starts.
    pub(crate) fn next_fetch(&self) -> Option<Instant> {
        self.fetch_at.map(|(t, _)| t)
    }

    /// The epoch of the fetch due at `now`, once.
    pub(crate) fn take_fetch_due(&mut self, now: Instant) -> Option<Epoch> {
        let (at, epoch) = self.fetch_at?;
        (at <= now).then(|| {
            self.fetch_at = None;
            epoch
        })
    }

    /// Whether the names are kept, not fetched, after the next refresh.
    pub(crate) fn keep_after_next_refresh(&mut self, keep: bool) {
        self.keep_after_next_refresh = keep;
    }

    /// True (once) if the names are kept after this refresh.
    pub(crate) fn take_keep_after_refresh(&mut self) -> bool {
        std::mem::take(&mut self.keep_after_next_refresh)
    }

    /// A fetch of both tables for `epoch` begins, replacing any running
    /// or due; `loaded`: they come in a distributor's loads.
    pub(crate) fn begin_fetch(&mut self, epoch: Epoch, loaded: bool) {
        self.fetch_at = None;
        self.fetch = Some(NameFetch::new(epoch, loaded));
        self.loaded |= loaded;
    }

    /// The fetch from the master for `epoch`, if that is the one running.
    pub(crate) fn fetch_from_master(&mut self, epoch: Epoch) -> Option<&mut NameFetch> {
        self.fetch
            .as_mut()
            .filter(|f| f.epoch == epoch && !f.loaded)
    }

    /// The fetch running, whichever it is.
    pub(crate) fn fetch(&mut self) -> Option<&mut NameFetch> {
        self.fetch.as_mut()
    }

    /// A fetch of loaded tables is running.
    pub(crate) fn fetching_loads(&self) -> bool {
        self.fetch.as_ref().is_some_and(|f| f.loaded)
    }

    /// The fetch running is given up (the names known are kept).
    pub(crate) fn abandon_fetch(&mut self) {
        self.fetch = None;
    }

    /// The fetch, once both its tables are in.
    pub(crate) fn take_finished(&mut self) -> Option<FetchedNames> {
        let fetch = self.fetch.take_if(|f| f.is_done())?;
        let mut names = fetch.from_directory;
        names.fill_from(&fetch.from_nodes);
        Some(FetchedNames {
            loaded: fetch.loaded,
            names,
        })
    }

    /// This port's directory record from now; true if it changed.
    pub(crate) fn set_publication(&mut self, publication: Option<Publication>) -> bool {
        if publication == self.publication {
            return false;
        }
        self.publication = publication;
        true
    }

    /// This port's directory record.
    pub(crate) fn publication(&self) -> Option<&Publication> {
        self.publication.as_ref()
    }

    /// The master holds this port's directory record.
    pub(crate) fn published(&self) -> bool {
        self.published
    }

    /// Whether the master holds it from now; returns whether it did.
    pub(crate) fn set_published(&mut self, published: bool) -> bool {
        std::mem::replace(&mut self.published, published)
    }
}
