//! The node's administrators' hold on the cache, through the local API:
//! a full refresh now (answered when it ends, with the records before and
//! after), a flush (every record dropped: queries go to the master until
//! the next refresh or load), and a dump, page by page. Who may ask is the
//! daemon's to check ([`crate::request::Request::is_admin`]).

use std::time::Instant;

use mad_codec::MadStatus;
use tracing::info;

use crate::agent::SaCore;
use crate::agent::counterparts::{Asker, RefreshWaiter};
use crate::request::{ConnId, LocalBody};

impl SaCore {
    /// Refreshes this port's paths now, or joins the refresh running;
    /// `asker` hears when it ends.
    pub(in crate::agent) fn local_refresh(&mut self, now: Instant, asker: Asker) {
        let before = self.records_held();
        info!(
            records = before,
            "a full refresh of this port's paths asked for locally"
        );
        self.tables.refresh.wait(RefreshWaiter { asker, before });
        self.start_refresh(now);
    }

    /// A refresh ended (`status` OK) or failed: every waiter hears it.
    pub(in crate::agent) fn answer_refresh_waiters(&mut self, status: MadStatus) {
        let after = self.records_held() as u64;
        for w in self.tables.refresh.take_waiters() {
            let body = LocalBody::CacheChange {
                before: w.before as u64,
                after,
            };
            self.reply_local(&w.asker, status, body);
        }
    }

    /// Forgets the refresh waiters of connection `conn` (it closed).
    pub(in crate::agent) fn forget_refresh_waiters(&mut self, conn: ConnId) {
        self.tables
            .refresh
            .forget_waiters(|w| matches!(w.asker, Asker::Local { conn: c, .. } if c == conn));
    }

    /// Drops every cached record and kept answer; no source counts as
    /// complete, so every query goes to the master until the next refresh
    /// or load fills the store again.
    pub(in crate::agent) fn local_flush(&mut self, now: Instant, asker: &Asker) {
        let before = self.records_held() as u64;
        self.tables.paths.clear();
        self.tables.partitions.clear();
        self.answers.forget();
        if self.abandon_fetches_into(|_| true) {
            // The refresh that was filling the tables starts again, whole.
            self.tables.refresh.schedule(Some(now));
        }
        info!(
            dropped = before,
            "the cache was flushed by a local request; queries go to the master until the next refresh"
        );
        self.reply_local(
            asker,
            MadStatus::OK,
            LocalBody::CacheChange { before, after: 0 },
        );
    }

    /// Records in the default table and the partition tables.
    fn records_held(&self) -> usize {
        self.tables.paths.store.len() + self.tables.partitions.records()
    }

    /// A page of the cache.
    /// A page of the default table, or of the partition table of
    /// `partition`'s P_Key (empty if there is none).
    pub(in crate::agent) fn local_dump(
        &mut self,
        asker: &Asker,
        from: u32,
        max: u32,
        partition: Option<u16>,
    ) {
        let max = max.min(crate::request::DUMP_PAGE) as usize;
        let table = match partition {
            None => Some(&self.tables.paths),
            Some(pkey) => self.tables.partitions.table(pkey),
        };
        let page = table.map_or_else(Vec::new, |t| t.store.page(from, max));
        self.answer_local_records(asker, &page);
    }
}
