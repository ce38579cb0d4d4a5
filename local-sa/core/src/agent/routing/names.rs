//! `SaCore`'s side of the names: the names tables a distributor loads
//! (NodeRecords and the local-sa directory's ServiceRecords marked
//! `NAMES_TABLE`), and their fetch from the master after each refresh —
//! decided by the names' state ([`crate::names::fetching`]), its requests
//! sent and its answers handed back here.

use std::time::Instant;

use mad_codec::MadStatus;
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::inbound::SaRequest;
use crate::names::fetching::NameQuery;
use crate::names::hosts::Names;
use crate::names::loads::names_table;
use crate::names::state::NameTable;
use crate::requester::Answer;
use crate::store::Epoch;

impl SaCore {
    /// A Set of NodeRecords or ServiceRecords marked `NAMES_TABLE`: one
    /// MAD, or a segment of an RMPP transfer ([`crate::names::loads`]).
    pub(in crate::agent) fn names_load(&mut self, now: Instant, request: &SaRequest) {
        let Some((header, data)) = self.take_load(now, request) else {
            return;
        };
        if !self.authorized(now, header.sa.sm_key(), request.from.lid) {
            return self.deny(request, &header);
        }
        let offset = header.sa.attribute_offset();
        let (table, taken) =
            names_table(request.attribute(), &data, offset, self.port.gid.prefix());
        let Ok((names, taken)) = taken else {
            self.telemetry.counters.errors += 1;
            warn!(
                lid = request.from.lid,
                table = table.describe(),
                offset,
                "names load refused: its AttributeOffset is shorter than a record"
            );
            return self
                .reply()
                .answer_load(request, &header, MadStatus::ERR_REQ_INVALID, 0);
        };
        info!(
            table = table.describe(),
            records = taken,
            "names table loaded"
        );
        self.take_names_table(table, names);
        self.reply()
            .answer_load(request, &header, MadStatus::OK, taken);
    }

    /// Makes `names` the `table` half of the names: a fetch from the
    /// master (running or due) is given up for the loaded one.
    fn take_names_table(&mut self, table: NameTable, names: Names) {
        let epoch = self.tables.epoch();
        if self.naming.table_loaded(epoch, table, names) {
            self.master.forget(|p| matches!(p, Purpose::Names { .. }));
        }
        self.finish_name_fetch();
    }

    /// Starts fetching names for the refresh `epoch` (replacing a fetch
    /// still running).
    pub(in crate::agent) fn start_name_fetch(&mut self, now: Instant, epoch: Epoch) {
        self.master.forget(|p| matches!(p, Purpose::Names { .. }));
        for query in self.naming.start_fetch(epoch) {
            self.ask_names(now, epoch, query);
        }
    }

    /// Sends a names request of the fetch for `epoch`: a whole table as
    /// tables go (a longer wait), one port's entry as a query.
    fn ask_names(&mut self, now: Instant, epoch: Epoch, query: NameQuery) {
        let NameQuery { table, key, mad } = query;
        let purpose = Purpose::Names { epoch, table, key };
        if key.is_none() {
            self.send_table_upstream(now, purpose, &mad);
        } else {
            self.send_upstream(now, purpose, &mad);
        }
    }

    /// The master answered a names request.
    pub(in crate::agent) fn names_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        query: (NameTable, Option<u64>),
        answer: &Answer,
    ) {
        let walk = (self.port.gid.prefix(), self.config.walk_window);
        let store = self.tables.store();
        let next = self
            .naming
            .fetch_answered(epoch, query, answer, store, walk);
        for query in next {
            self.ask_names(now, epoch, query);
        }
        self.finish_name_fetch();
    }

    /// The master did not answer a names request: the names known are
    /// kept, the fetch's other requests dropped.
    pub(in crate::agent) fn names_failed(&mut self, epoch: Epoch) {
        if self.naming.fetch_failed(epoch) {
            debug!("the master did not answer a names request; keeping the names known");
            self.master.forget(|p| matches!(p, Purpose::Names { .. }));
        }
    }

    /// Takes the fetched names if both tables are in.
    pub(in crate::agent) fn finish_name_fetch(&mut self) {
        self.naming.finish_fetch();
    }
}
