//! Host names from the master SA, for the ibacm door's name and IP
//! resolution, and this port's entry in the directory that gives them.
//!
//! After each refresh of the paths, two tables are fetched in bulk:
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
//! `walk_window` at a time — as the paths are. The new
//! names replace the old ones when both tables are in; a fetch that the
//! master does not answer leaves the old ones in place.
//!
//! This port's own directory record is registered with the agent's other
//! registrations, renewed at every refresh (its lease is three refresh
//! intervals, so that a node that died without withdrawing it drops out),
//! and withdrawn at shutdown.

pub(in crate::agent) mod loads;

use crate::log_limit::answer_status;
use std::sync::Arc;
use std::time::Instant;

use mad_codec::codes::NodeType;
use mad_codec::{AttributeId, Gid, MadStatus, Method, NodeRecord, SaMadBuilder, ServiceRecord};
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::names::directory::{self, Publication};
use crate::names::hosts::{self, HostAddress, NameSource, Names};
use crate::names::queries;
use crate::names::state::{NameTable, TableFetch};
use crate::requester::Answer;
use crate::store::Epoch;

impl SaCore {
    /// The names and addresses learned from the master SA (shared: the
    /// table is replaced whole when it changes, never changed in place).
    pub fn names(&self) -> &Arc<Names> {
        self.naming.names()
    }

    /// A number that changes whenever [`SaCore::names`] does.
    pub fn names_generation(&self) -> u64 {
        self.naming.generation()
    }

    /// Publishes `publication` as this port's directory record (`None`
    /// withdraws it).
    pub fn publish(&mut self, now: Instant, publication: Option<Publication>) {
        let withdraw = publication.is_none();
        if !self.naming.set_publication(publication) {
            return;
        }
        if withdraw {
            self.withdraw_publication(now);
        } else if !self.shutting_down {
            self.send_publication(now);
        }
    }

    /// The directory record's lease: three refresh intervals, at least a
    /// minute.
    fn publication_lease(&self) -> u32 {
        let secs = self.config.refresh_interval.as_secs().saturating_mul(3);
        u32::try_from(secs.max(60)).unwrap_or(u32::MAX - 1)
    }

    /// Registers (or renews) this port's directory record.
    pub(super) fn send_publication(&mut self, now: Instant) {
        let Some(p) = self.naming.publication() else {
            return;
        };
        if self
            .master
            .requester
            .any_pending(|p| *p == Purpose::Publish { register: true })
        {
            return;
        }
        let record = p.record(self.port.gid, self.publication_lease());
        let mut b =
            SaMadBuilder::request(Method::SET, 0, AttributeId::SERVICE_RECORD).record(&record);
        b.header_mut().sa.set_component_mask(directory::set_mask());
        self.send_upstream(now, Purpose::Publish { register: true }, &b.into_bytes());
    }

    /// Withdraws this port's directory record if the master holds it.
    pub(super) fn withdraw_publication(&mut self, now: Instant) {
        if !self.naming.set_published(false) {
            return;
        }
        let (mask, r) = directory::record_of(self.port.gid);
        let mut b =
            SaMadBuilder::request(Method::DELETE, 0, AttributeId::SERVICE_RECORD).record(&r);
        b.header_mut().sa.set_component_mask(mask);
        self.send_upstream(now, Purpose::Publish { register: false }, &b.into_bytes());
    }

    /// The master answered a directory Set or Delete (`None`: it did not).
    pub(super) fn publication_answered(&mut self, register: bool, status: Option<MadStatus>) {
        match (register, status) {
            (true, Some(MadStatus::OK)) => {
                if !self.naming.set_published(true) {
                    debug!("this port's directory record is registered at the master");
                }
            }
            (true, other) => warn!(
                status = %answer_status(other),
                "the master did not take this port's directory record; other nodes will not \
                 resolve this host's name or addresses until the next refresh"
            ),
            (false, _) => {}
        }
    }

    /// Starts fetching names for the refresh `epoch` (replacing a fetch
    /// still running).
    pub(super) fn start_name_fetch(&mut self, now: Instant, epoch: Epoch) {
        self.master
            .requester
            .forget(|p| matches!(p, Purpose::Names { .. }));
        self.naming.begin_fetch(epoch, false);
        for table in [NameTable::Nodes, NameTable::Directory] {
            self.ask_names(now, epoch, table, None);
        }
    }

    /// Asks for `table`, whole (`key` = `None`) or for one port.
    fn ask_names(&mut self, now: Instant, epoch: Epoch, table: NameTable, key: Option<u64>) {
        let mad = match table {
            NameTable::Nodes => queries::adapters(key.map(|lid| lid as u16)),
            NameTable::Directory => {
                queries::directory(key.map(|guid| Gid::new(self.port.gid.prefix(), guid)))
            }
        };
        let purpose = Purpose::Names { epoch, table, key };
        if key.is_none() {
            self.send_table_upstream(now, purpose, &mad);
        } else {
            self.send_upstream(now, purpose, &mad);
        }
    }

    /// The master answered a names request.
    pub(super) fn names_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: NameTable,
        key: Option<u64>,
        answer: &Answer,
    ) {
        let prefix = self.port.gid.prefix();
        let walk_keys: Vec<u64> = if key.is_none() && answer.is_cut() {
            match table {
                NameTable::Nodes => self
                    .tables
                    .paths
                    .store
                    .ports()
                    .map(|(_, p)| u64::from(p.lid))
                    .collect(),
                NameTable::Directory => self
                    .tables
                    .paths
                    .store
                    .ports()
                    .map(|(guid, _)| guid)
                    .collect(),
            }
        } else {
            Vec::new()
        };
        let Some(fetch) = self.naming.fetch_from_master(epoch) else {
            return;
        };
        let status = answer.status();
        if key.is_none() && status != MadStatus::OK && status != MadStatus::ERR_NO_RECORDS {
            warn!(%status, table = table.describe(), "the master refused the names table; keeping the names known");
            self.naming.abandon_fetch();
            return;
        }
        if key.is_none() && answer.is_cut() {
            debug!(
                table = table.describe(),
                ports = walk_keys.len(),
                "the names table came back cut; fetching port by port"
            );
            *fetch.table(table) = TableFetch::Walk {
                todo: walk_keys,
                in_flight: 0,
            };
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
        self.walk_names(now, epoch, table);
    }

    /// The master did not answer a names request: keep the names known.
    pub(super) fn names_failed(&mut self, epoch: Epoch) {
        if self.naming.fetch_from_master(epoch).is_some() {
            self.naming.abandon_fetch();
            self.master
                .requester
                .forget(|p| matches!(p, Purpose::Names { .. }));
        }
    }

    /// Keeps `walk_window` port queries of `table` in flight; takes the
    /// new names when both tables are in.
    fn walk_names(&mut self, now: Instant, epoch: Epoch, table: NameTable) {
        let window = self.config.walk_window;
        let mut ask = Vec::new();
        let Some(fetch) = self.naming.fetch() else {
            return;
        };
        let state = fetch.table(table);
        if let TableFetch::Walk { todo, in_flight } = state {
            while *in_flight < window {
                let Some(key) = todo.pop() else { break };
                ask.push(key);
                *in_flight += 1;
            }
            if todo.is_empty() && *in_flight == 0 {
                *state = TableFetch::Done;
            }
        }
        for key in ask {
            self.ask_names(now, epoch, table, Some(key));
        }
        self.finish_name_fetch();
    }

    /// Takes the fetched names if both tables are in.
    pub(super) fn finish_name_fetch(&mut self) {
        let Some(fetched) = self.naming.take_finished() else {
            return;
        };
        if !fetched.loaded {
            self.telemetry.counters.name_fetches += 1;
        }
        let count = fetched.names.len();
        tracing::trace!(names = count, "names fetched");
        if self.naming.replace(fetched.names) {
            info!(names = count, "host names and addresses from the master SA");
        }
    }
}

/// Adds the host names of `records`' channel adapters (a port's first
/// word of NodeDescription) to `names`, the first port seen keeping a
/// shared name. Returns how many records were a CA's.
pub(super) fn add_node_names<'a>(
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
pub(super) fn add_directory_names<'a>(
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
