//! Ports coming and going (traps 64 and 65): the paths to a port that
//! left go from every table; this port's paths to a port that came into
//! service are asked of the master table by table — until the answer is
//! in, a partition table counts as incomplete (its paths to that port
//! may be missing).

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::debug;

use crate::agent::port_tables::PortTables;
use crate::agent::port_tables::refresh::table_query;
use crate::partitions::TableKey;
use crate::requester::Answer;

impl PortTables {
    /// Port `guid` left the fabric: every path to or from it goes, and
    /// it counts as incomplete in the default table. Returns how many
    /// records went.
    pub(in crate::agent) fn port_left(&mut self, guid: u64) -> usize {
        let removed = self.paths.store.remove_port(guid) + self.partitions.remove_port(guid);
        self.paths.mark_incomplete(guid);
        removed
    }

    /// The tables that hold paths to a port that came into service: the
    /// default table and every partition table.
    pub(in crate::agent) fn tables_for_new_port(&self) -> Vec<TableKey> {
        let partitions = self
            .partitions
            .tables()
            .map(|(p, _)| TableKey::Partition(p));
        [TableKey::Default].into_iter().chain(partitions).collect()
    }

    /// The request for `me`'s paths to `gid` in `table`
    /// ([`Purpose::GidInService`](crate::agent::master::purpose::Purpose::GidInService)); a partition table waits for its
    /// answer.
    pub(in crate::agent) fn port_paths_request(
        &mut self,
        me: Gid,
        gid: Gid,
        table: TableKey,
    ) -> Bytes {
        let (mask, mut t) = table_query(me, table);
        t.set_dgid(gid);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(mask | pr::DGID);
        if let TableKey::Partition(p) = table
            && let Some(t) = self.partitions.table_mut(p)
        {
            t.await_fetch();
        }
        b.into_bytes()
    }

    /// The paths from `me` to port `guid` (back in service), for
    /// `table`, came (or not: `None`).
    pub(in crate::agent) fn port_paths_answered(
        &mut self,
        me: u64,
        guid: u64,
        table: TableKey,
        answer: Option<&Answer>,
    ) {
        let epoch = self.refresh.epoch();
        let Some(t) = self.table_mut(table) else {
            return;
        };
        if let TableKey::Partition(_) = table {
            t.fetch_ended();
        }
        let Some(answer) = answer.filter(|a| a.status() == MadStatus::OK && !a.is_cut()) else {
            if answer.is_some_and(Answer::is_cut) {
                // Some paths did not arrive: this port's are not all held.
                t.mark_incomplete(me);
            }
            return;
        };
        let mut added = 0;
        for r in answer.records::<PathRecord>() {
            t.store.insert(*r, epoch);
            added += 1;
        }
        debug!(
            guid = format_args!("{guid:#x}"),
            %table,
            added, "paths to a port back in service"
        );
    }
}
