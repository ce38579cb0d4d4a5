//! The node's administrators' hold on the cache, through the local API:
//! a full refresh now (answered when it ends, with the records before and
//! after), a flush (every record dropped: queries go to the master until
//! the next refresh or load), and a dump, page by page. Who may ask is the
//! daemon's to check ([`crate::request::Request::is_admin`]). The tables'
//! side is here; `SaCore` answers the askers.

use mad_codec::PathRecord;

use crate::agent::counterparts::{Asker, RefreshWaiter};
use crate::agent::port_tables::PortTables;
use crate::request::ConnId;

impl PortTables {
    /// Records in the default table and the partition tables.
    pub(in crate::agent) fn records_held(&self) -> usize {
        self.paths.store.len() + self.partitions.records()
    }

    /// `asker` waits for the next refresh to end; the records held now
    /// are the "before" it is told then.
    pub(in crate::agent) fn wait_for_refresh(&mut self, asker: Asker) {
        let before = self.records_held();
        self.refresh.wait(RefreshWaiter { asker, before });
    }

    /// Forgets the refresh waiters of connection `conn` (it closed).
    pub(in crate::agent) fn forget_refresh_waiters(&mut self, conn: ConnId) {
        self.refresh
            .forget_waiters(|w| matches!(w.asker, Asker::Local { conn: c, .. } if c == conn));
    }

    /// Drops every record; no source counts as complete any more. Returns
    /// how many were held.
    pub(in crate::agent) fn flush(&mut self) -> usize {
        let before = self.records_held();
        self.paths.clear();
        self.partitions.clear();
        before
    }

    /// A page of `max` records from `from` of the default table, or of the
    /// partition table of `partition`'s P_Key (empty if there is none).
    pub(in crate::agent) fn page(
        &self,
        from: u32,
        max: usize,
        partition: Option<u16>,
    ) -> Vec<PathRecord> {
        let table = match partition {
            None => Some(&self.paths),
            Some(pkey) => self.partitions.table(pkey),
        };
        table.map_or_else(Vec::new, |t| t.store.page(from, max))
    }
}
