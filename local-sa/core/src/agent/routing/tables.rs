//! `SaCore`'s side of the names fetched after each refresh: the requests
//! the names' state decides ([`crate::names::fetching`]) sent to the
//! master, its answers handed back.

use std::time::Instant;

use tracing::debug;

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::names::fetching::NameQuery;
use crate::names::state::NameTable;
use crate::requester::Answer;
use crate::store::Epoch;

impl SaCore {
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
        let store = &self.tables.paths.store;
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

    /// Takes the fetched names if both tables are in (a fetch from the
    /// master is counted).
    pub(in crate::agent) fn finish_name_fetch(&mut self) {
        if self.naming.finish_fetch() == Some(true) {
            self.telemetry.counters.name_fetches += 1;
        }
    }
}
