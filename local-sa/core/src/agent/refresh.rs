//! Keeping this port's paths in the store: a bulk GetTable (SGID = ours)
//! at start, after port changes and every refresh interval. When the answer
//! comes back cut (a transport without RMPP, such as ibsim, delivers only
//! the first 256 bytes of the master's multi-MAD answer), the paths are
//! fetched one destination LID at a time instead, walking upward until
//! `walk_gap` LIDs past the highest one that answered. Records are stamped
//! with the refresh's epoch; when the refresh completes, this port's
//! records it did not see are swept and the port counts as complete.

use std::time::Instant;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::{debug, info, warn};

use super::purpose::Purpose;
use super::{RefreshState, SaCore};
use crate::requester::Answer;
use crate::store::Epoch;

/// Highest unicast LID.
const MAX_UNICAST_LID: u16 = 0xBFFF;

impl SaCore {
    /// Starts a refresh unless one is running.
    pub(super) fn start_refresh(&mut self, now: Instant) {
        if self.refresh.state != RefreshState::Idle {
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(self.port.gid);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(pr::SGID);
        debug!(
            epoch,
            master = self.port.sm_lid,
            "refreshing this port's paths"
        );
        self.refresh.state = RefreshState::Bulk { epoch };
        self.refresh.began = Some(now);
        if self.register_after_refresh {
            // At start, whether the master applies QoS is asked just
            // before the table (one small request, answered first), so
            // that queries naming a P_Key — every ibacm and kernel query —
            // are answered from the cache as soon as the table is in.
            self.ask_master_info(now);
        }
        self.send_table_upstream(now, Purpose::Bulk { epoch }, &b.into_bytes());
        // Renews this port's directory record's lease (at start, the
        // registration after this refresh publishes it).
        if !self.register_after_refresh {
            self.send_publication(now);
        }
    }

    pub(super) fn bulk_answered(&mut self, now: Instant, epoch: Epoch, answer: &Answer) {
        if self.refresh.state != (RefreshState::Bulk { epoch }) {
            return;
        }
        if answer.status() != MadStatus::OK {
            warn!(status = %answer.status(), "the master refused the bulk PathRecord table");
            return self.refresh_failed(now);
        }
        if answer.is_cut() {
            info!(
                "the bulk PathRecord table came back cut (no RMPP on this transport); fetching per destination"
            );
            let start = RefreshState::Walk {
                epoch,
                next: 1,
                highest_found: 0,
                in_flight: 0,
            };
            self.refresh.state = start;
            return self.walk(now);
        }
        self.store
            .expect_table(answer.records::<PathRecord>().count());
        for r in answer.records::<PathRecord>() {
            self.store.insert(*r, epoch);
        }
        self.finish_refresh(now, epoch);
    }

    /// Keeps `walk_window` per-destination queries in flight; finishes when
    /// the walk is past the last LID worth trying and nothing is out.
    fn walk(&mut self, now: Instant) {
        let RefreshState::Walk {
            epoch,
            mut next,
            highest_found,
            mut in_flight,
        } = self.refresh.state
        else {
            return;
        };
        let floor = highest_found
            .max(self.port.sm_lid)
            .max(*self.port.lids().end());
        let limit = floor
            .saturating_add(self.config.walk_gap)
            .min(MAX_UNICAST_LID);
        while in_flight < self.config.walk_window && next <= limit {
            let mut t = PathRecord::new_zeroed();
            t.set_sgid(self.port.gid);
            t.set_dlid(next);
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(pr::SGID | pr::DLID);
            self.send_upstream(now, Purpose::Walk { epoch, dlid: next }, &b.into_bytes());
            next += 1;
            in_flight += 1;
        }
        self.refresh.state = RefreshState::Walk {
            epoch,
            next,
            highest_found,
            in_flight,
        };
        if in_flight == 0 {
            self.finish_refresh(now, epoch);
        }
    }

    pub(super) fn walk_answered(&mut self, now: Instant, epoch: Epoch, dlid: u16, answer: &Answer) {
        let RefreshState::Walk {
            epoch: current,
            next,
            mut highest_found,
            in_flight,
        } = self.refresh.state
        else {
            return;
        };
        if current != epoch {
            return;
        }
        if answer.status() == MadStatus::OK {
            for r in answer.records::<PathRecord>() {
                self.store.insert(*r, epoch);
                highest_found = highest_found.max(dlid);
            }
        }
        self.refresh.state = RefreshState::Walk {
            epoch,
            next,
            highest_found,
            in_flight: in_flight.saturating_sub(1),
        };
        self.walk(now);
    }

    fn finish_refresh(&mut self, now: Instant, epoch: Epoch) {
        let swept = self.store.sweep_from(self.port.lids(), epoch);
        self.complete_sources.insert(self.port.gid.guid());
        self.forget_answers();
        self.counters.refreshes += 1;
        self.refresh.state = RefreshState::Idle;
        let took = self
            .refresh
            .began
            .take()
            .map(|t| now.saturating_duration_since(t));
        self.refresh.last_fresh = Some((now, took));
        info!(
            records = self.store.len(),
            swept, "this port's paths are fresh"
        );
        self.answer_refresh_waiters(MadStatus::OK);
        if self.paths_fresh(now, epoch) {
            return;
        }
        if std::mem::take(&mut self.naming.keep_after_next_refresh) {
            // A new master's directory fills again as every port
            // publishes at its phase; a fetch now would cost the master
            // two tables per port, on top of the refreshes, for a partial
            // directory. The names held stand until the next periodic
            // refresh.
            debug!("names kept until the next periodic refresh (a new master)");
        } else {
            self.start_name_fetch(now, epoch);
        }
    }

    /// What follows this port's paths being fresh, from the master or a
    /// load: the next refresh a whole interval on, the fabric's size
    /// from them, and at start the registrations and the first directory
    /// loads. Returns whether this was the start's.
    fn paths_fresh(&mut self, now: Instant, epoch: Epoch) -> bool {
        self.refresh.failures = 0;
        self.refresh.next = Some(self.next_periodic_refresh(now));
        self.fabric_ports = self.store.port_count();
        let first = self.register_after_refresh;
        if first {
            // The fabric's size is known now. The directory loads (two
            // tables of a record per host, twice the paths' cost) and the
            // registrations follow at this port's phase, so that a fabric
            // started together asks for them spread. Whether the master
            // applies QoS is asked now if the paths came in a load (a
            // refresh asked it with the table). Names a distributor
            // loaded need no fetch.
            if !self.naming.loaded {
                self.naming.fetch_at = Some((now + self.refresh_delay(), epoch));
            }
            self.ask_master_info(now);
        }
        self.registration_after_first_refresh(now);
        first
    }

    /// A load replaced this port's paths (a distributor next to the
    /// master pushed them): that is a refresh the master was not asked
    /// for. The next refresh from the master waits a whole interval, and
    /// at start the registrations and directory loads follow as after a
    /// refresh. A refresh already running goes on: its table is the
    /// master's word.
    pub(super) fn own_paths_loaded(&mut self, now: Instant) {
        if self.refresh.state != RefreshState::Idle || self.shutting_down {
            return;
        }
        self.counters.refreshes_loaded += 1;
        self.refresh.last_fresh = Some((now, None));
        self.paths_fresh(now, self.epoch);
    }

    /// Schedules the start's registration, once the first refresh ended
    /// (done or failed), at this port's phase of the re-registration window.
    fn registration_after_first_refresh(&mut self, now: Instant) {
        if std::mem::take(&mut self.register_after_refresh) {
            self.next_registration = Some(now + self.reregister_delay());
        }
    }

    /// The master did not give the table: keep serving what is cached and
    /// try again after the back-off.
    pub(super) fn refresh_failed(&mut self, now: Instant) {
        if self.refresh.state == RefreshState::Idle {
            return;
        }
        self.refresh.state = RefreshState::Idle;
        self.refresh.failures = self.refresh.failures.saturating_add(1);
        self.registration_after_first_refresh(now);
        if !self.shutting_down {
            self.refresh.next = Some(now + self.refresh_retry_delay());
        }
        // The master did not give the table: as for a query it left
        // unanswered.
        self.answer_refresh_waiters(MadStatus::BUSY);
    }
}
