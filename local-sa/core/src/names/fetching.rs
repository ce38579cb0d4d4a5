//! Fetching the names from the master, decided by the names' state: after
//! each refresh of the paths, two tables in bulk —
//!
//! * NodeRecords of channel adapters (GetTable, NodeType = CA): the first
//!   word of a port's NodeDescription names its GID (`node17 mlx5_0` →
//!   `node17`); where several ports share a name, the first one seen
//!   keeps it;
//! * the directory ServiceRecords every local-sa publishes
//!   ([`crate::names::directory`]; GetTable, ServiceID = the directory's): a
//!   host name and up to four IP addresses per port. They win over
//!   NodeDescriptions.
//!
//! When an answer comes back cut (a transport without RMPP), the table is
//! fetched port by port instead — a NodeRecord GetTable by LID and a
//! directory ServiceRecord Get by GID for each port the PathRecords show,
//! `window` at a time — as the paths are. The new names replace the old
//! ones when both tables are in (from the master, or in a distributor's
//! loads); a fetch that the master does not answer leaves the old ones in
//! place.
//!
//! Each call says which requests follow ([`NameQuery`]); the agent sends
//! them.

use bytes::Bytes;
use mad_codec::codes::NodeType;
use mad_codec::{Gid, MadStatus, NodeRecord, ServiceRecord};
use tracing::{debug, info, warn};

use super::directory::Publication;
use super::hosts::{self, HostAddress, NameSource, Names};
use super::queries;
use super::state::{NameState, NameTable, TableFetch};
use crate::requester::Answer;
use crate::store::{Epoch, PathStore};

/// A names request for the master: `table` whole (`key` = `None`), or
/// one port's entry (a base LID for NodeRecords, a port GUID for the
/// directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameQuery {
    pub(crate) table: NameTable,
    pub(crate) key: Option<u64>,
    /// The request, a whole MAD.
    pub(crate) mad: Bytes,
}

impl NameQuery {
    fn new(table: NameTable, key: Option<u64>, prefix: u64) -> Self {
        let mad = match table {
            NameTable::Nodes => queries::adapters(key.map(|lid| lid as u16)),
            NameTable::Directory => queries::directory(key.map(|guid| Gid::new(prefix, guid))),
        };
        Self { table, key, mad }
    }
}

impl NameState {
    /// Starts fetching both tables for the refresh `epoch` from the
    /// master (replacing a fetch still running): the two whole tables'
    /// requests.
    pub(crate) fn start_fetch(&mut self, epoch: Epoch) -> [NameQuery; 2] {
        self.begin_fetch(epoch, false);
        [NameTable::Nodes, NameTable::Directory].map(|t| NameQuery::new(t, None, 0))
    }

    /// The master answered a names request of the fetch for `epoch`:
    /// the requests that follow (a cut table walked port by port, the
    /// ports from `store`, `window` out at a time, GIDs under `prefix`).
    /// Returns nothing for an answer to a fetch that is over.
    pub(crate) fn fetch_answered(
        &mut self,
        epoch: Epoch,
        query: (NameTable, Option<u64>),
        answer: &Answer,
        store: &PathStore,
        (prefix, window): (u64, usize),
    ) -> Vec<NameQuery> {
        let (table, key) = query;
        let Some(fetch) = self.fetch_from_master(epoch) else {
            return Vec::new();
        };
        let status = answer.status();
        if key.is_none() && status != MadStatus::OK && status != MadStatus::ERR_NO_RECORDS {
            warn!(%status, table = table.describe(), "the master refused the names table; keeping the names known");
            self.abandon_fetch();
            return Vec::new();
        }
        if key.is_none() && answer.is_cut() {
            let todo: Vec<u64> = match table {
                NameTable::Nodes => store.ports().map(|(_, p)| u64::from(p.lid)).collect(),
                NameTable::Directory => store.ports().map(|(guid, _)| guid).collect(),
            };
            debug!(
                table = table.describe(),
                ports = todo.len(),
                "the names table came back cut; fetching port by port"
            );
            *fetch.table(table) = TableFetch::Walk { todo, in_flight: 0 };
        } else {
            if status == MadStatus::OK {
                match table {
                    NameTable::Nodes => {
                        add_node_names(prefix, answer.records::<NodeRecord>(), fetch.names(table));
                    }
                    NameTable::Directory if key.is_some() => {
                        let record = answer.record::<ServiceRecord>();
                        add_directory_names([&record], fetch.names(table));
                    }
                    NameTable::Directory => {
                        add_directory_names(answer.records::<ServiceRecord>(), fetch.names(table));
                    }
                }
            }
            match fetch.table(table) {
                TableFetch::Walk { in_flight, .. } => *in_flight = in_flight.saturating_sub(1),
                t => *t = TableFetch::Done,
            }
        }
        self.walk(table, prefix, window)
    }

    /// Keeps `window` port queries of `table` in flight.
    fn walk(&mut self, table: NameTable, prefix: u64, window: usize) -> Vec<NameQuery> {
        let mut ask = Vec::new();
        let Some(fetch) = self.fetch() else {
            return ask;
        };
        let state = fetch.table(table);
        if let TableFetch::Walk { todo, in_flight } = state {
            while *in_flight < window {
                let Some(key) = todo.pop() else { break };
                ask.push(NameQuery::new(table, Some(key), prefix));
                *in_flight += 1;
            }
            if todo.is_empty() && *in_flight == 0 {
                *state = TableFetch::Done;
            }
        }
        ask
    }

    /// The master did not answer a request of the fetch for `epoch`: the
    /// names known are kept. True if that fetch was running (its other
    /// requests are for nothing now).
    pub(crate) fn fetch_failed(&mut self, epoch: Epoch) -> bool {
        let running = self.fetch_from_master(epoch).is_some();
        if running {
            self.abandon_fetch();
        }
        running
    }

    /// A distributor's load brought `table`'s names (a fetch from the
    /// master, running or due, is given up for the loaded one: true when
    /// one is). `epoch`: the refresh the load stands for.
    pub(crate) fn table_loaded(&mut self, epoch: Epoch, table: NameTable, names: Names) -> bool {
        self.tables_loaded += 1;
        let replaces_fetch = !self.fetching_loads();
        if replaces_fetch {
            self.begin_fetch(epoch, true);
        }
        if let Some(fetch) = self.fetch() {
            *fetch.names(table) = names;
            *fetch.table(table) = TableFetch::Done;
        }
        replaces_fetch
    }

    /// Takes the fetched names if both tables are in (one fetched from
    /// the master is counted).
    pub(crate) fn finish_fetch(&mut self) {
        let Some(fetched) = self.take_finished() else {
            return;
        };
        if !fetched.loaded {
            self.fetches += 1;
        }
        let count = fetched.names.len();
        tracing::trace!(names = count, "names fetched");
        if self.replace(fetched.names) {
            info!(names = count, "host names and addresses from the master SA");
        }
    }
}

/// Adds the host names of `records`' channel adapters (a port's first
/// word of NodeDescription) to `names`, the first port seen keeping a
/// shared name. Returns how many records were a CA's.
pub(crate) fn add_node_names<'a>(
    prefix: u64,
    records: impl IntoIterator<Item = &'a NodeRecord>,
    names: &mut Names,
) -> usize {
    let mut adapters = 0;
    for r in records {
        if r.node_type() != NodeType::CA {
            continue;
        }
        adapters += 1;
        if let Some(name) = hosts::host_name(&r.description()) {
            names.insert_if_absent(
                HostAddress::Name(name.to_owned()),
                Gid::new(prefix, r.port_guid()),
                NameSource::NodeDescription,
            );
        }
    }
    adapters
}

/// Adds what `records` that are directory entries publish to `names`.
/// Returns how many were.
pub(crate) fn add_directory_names<'a>(
    records: impl IntoIterator<Item = &'a ServiceRecord>,
    names: &mut Names,
) -> usize {
    let mut entries = 0;
    for r in records {
        if let Some((gid, p)) = Publication::from_record(r) {
            entries += 1;
            p.add_to(gid, names);
        }
    }
    entries
}
