//! Names tables pushed by a distributor next to the master
//! (docs/wire-contract.md): a Set of NodeRecords or of directory
//! ServiceRecords with `NAMES_TABLE` in AttributeModifier and the
//! SM_Key, one MAD or an RMPP transfer, is that table whole — what the
//! port would otherwise fetch from the master after its paths.
//!
//! The two tables arrive as two loads. Each completes its half of a names
//! fetch (a fetch from the master still running is given up: the
//! distributor's tables are as new); when both halves are in, the names
//! are replaced as after a fetch. A port whose names came in a load does
//! not fetch them from the master at start; after a periodic refresh from
//! the master it does, as before (the master's word then).
//!
//! The answer is a GetResp holding, in AttributeModifier, how many
//! records were names records (channel adapters, directory entries);
//! others in the table are skipped. Records are trusted as a path load's
//! are: the SM_Key is what vouches for them.

use std::time::Instant;

use mad_codec::{AttributeId, MadStatus, NodeRecord, Records, ServiceRecord};
use tracing::{info, warn};

use super::{add_directory_names, add_node_names};
use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::inbound::SaRequest;
use crate::names::hosts::Names;
use crate::names::state::{NameTable, TableFetch};

impl SaCore {
    /// A Set of NodeRecords or ServiceRecords marked `NAMES_TABLE`: one
    /// MAD, or a segment of an RMPP transfer.
    pub(in crate::agent) fn names_load(&mut self, now: Instant, request: &SaRequest) {
        let Some((header, data)) = self.take_load(now, request) else {
            return;
        };
        if !self.authorized(now, header.sa.sm_key(), request.from.lid) {
            return self.deny(request, &header);
        }
        let offset = header.sa.attribute_offset();
        let prefix = self.port.gid.prefix();
        let mut names = Names::new();
        let (table, taken) = match request.attribute() {
            AttributeId::NODE_RECORD => (
                NameTable::Nodes,
                Records::<NodeRecord>::new(&data, offset)
                    .map(|r| add_node_names(prefix, r, &mut names)),
            ),
            _ => (
                NameTable::Directory,
                Records::<ServiceRecord>::new(&data, offset)
                    .map(|r| add_directory_names(r, &mut names)),
            ),
        };
        let Ok(taken) = taken else {
            self.telemetry.counters.errors += 1;
            warn!(
                lid = request.from.lid,
                table = table.describe(),
                offset,
                "names load refused: its AttributeOffset is shorter than a record"
            );
            return self.answer_load(request, &header, MadStatus::ERR_REQ_INVALID, 0);
        };
        self.telemetry.counters.name_tables_loaded += 1;
        info!(
            table = table.describe(),
            records = taken,
            "names table loaded"
        );
        self.take_names_table(table, names);
        self.answer_load(request, &header, MadStatus::OK, taken);
    }

    /// Makes `names` the `table` half of the names: a fetch from the
    /// master (running or due) is given up for the loaded one.
    fn take_names_table(&mut self, table: NameTable, names: Names) {
        if !self.naming.fetching_loads() {
            self.master
                .requester
                .forget(|p| matches!(p, Purpose::Names { .. }));
            self.naming.begin_fetch(self.tables.refresh.epoch(), true);
        }
        let Some(fetch) = self.naming.fetch() else {
            return;
        };
        *fetch.names(table) = names;
        *fetch.table(table) = TableFetch::Done;
        self.finish_name_fetch();
    }
}
