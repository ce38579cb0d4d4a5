//! Keeping this port's paths in the store, decided by the tables
//! themselves: a bulk GetTable (SGID = ours) at start, after port changes
//! and every refresh interval, then one (SGID = ours, P_Key) for each
//! partition table the port keeps ([`PortTables::wanted_partitions`]),
//! one table after the other. When an answer comes back cut (a transport
//! without RMPP, such as ibsim, delivers only the first 256 bytes of the
//! master's multi-MAD answer), that table's paths are fetched one
//! destination LID at a time instead, walking upward until `walk_gap` LIDs
//! past the highest one that answered. Records are stamped with the
//! refresh's epoch; when a table completes, this port's records in it that
//! the refresh did not see are swept and the port counts as complete in
//! it. The default table's completion makes the port ready; the refresh
//! ends after the last partition's.
//!
//! [`PortTables`] takes the refresh's events (start, an answer, a failure)
//! with what it needs to know of the agent ([`RefreshContext`](super::context::RefreshContext)) and says
//! what follows as [`RefreshEffect`]s, which `SaCore` carries out: the
//! requests to send, the default table being fresh, the refresh's end.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMadBuilder};
use tracing::{debug, info, warn};

use crate::agent::counterparts::RefreshWaiter;
use crate::agent::master::purpose::Purpose;
use crate::agent::port_tables::PortTables;
use crate::agent::port_tables::refresh::RefreshState;
use crate::lid_walk::LidWalk;
use crate::partitions::{TableKey, partition_of};
use crate::requester::Answer;
use crate::store::Epoch;

/// What follows from the refresh's events, for `SaCore` to carry out.
#[derive(Debug)]
pub(in crate::agent) enum RefreshEffect {
    /// Ask the master: a whole table (with a table's attempts), or one
    /// destination's paths.
    Ask {
        purpose: Purpose,
        request: Bytes,
        whole_table: bool,
    },
    /// The master's multi-MAD answers come cut (no RMPP on the transport).
    AnswersCut,
    /// The default table is in, `records` (this port's records it did
    /// not renew, `swept`, are gone): the port is ready. `took`: since
    /// the refresh began.
    DefaultFresh {
        epoch: Epoch,
        records: usize,
        swept: usize,
        took: Option<Duration>,
    },
    /// The default table could not be had: what waited for the first
    /// refresh goes on without it (`register`: the start's registration
    /// waited for it).
    DefaultFailed { register: bool },
    /// The refresh is over; whoever waited for it gets `status`.
    /// `doubt_ended`: it was the refresh that ends the doubt after a
    /// sweep of the master (the tables answer again).
    Ended {
        status: MadStatus,
        doubt_ended: bool,
    },
}

/// A refresh that started: what the agent sends before its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct RefreshStart {
    /// The start's refresh: the agent registers after it, and asks the
    /// master whether it applies QoS just before the table (one small
    /// request, answered first), so that queries naming a P_Key are
    /// answered from the cache as soon as the table is in.
    pub(in crate::agent) first: bool,
    /// The master's activity has no count yet to judge the next sweep
    /// by: it is polled now, before the tables, so that a sweep while
    /// they are fetched is a change the polls see (no blind start).
    pub(in crate::agent) poll_activity: bool,
}

impl PortTables {
    /// Starts a refresh at `now`, the default table first, unless one is
    /// running; it sees whatever change was due by now.
    pub(in crate::agent) fn start_refresh(
        &mut self,
        now: Instant,
        out: &mut Vec<RefreshEffect>,
    ) -> Option<RefreshStart> {
        let ctx = self.refresh_ctx;
        if self.refresh.is_running() {
            return None;
        }
        self.refresh_begins(now);
        let start = RefreshStart {
            first: self.refresh.registers_after(),
            poll_activity: self.needs_sweep_baseline(),
        };
        let epoch = self.refresh.begin(now, false);
        debug!(
            epoch,
            master = ctx.port.sm_lid,
            "refreshing this port's paths"
        );
        self.fetch(epoch, TableKey::Default, out);
        Some(start)
    }

    /// Fetches the tables of the partitions wanted but not held complete
    /// (the port's P_Key table changed), unless a refresh is running (it
    /// fetches them, or they are asked again a second later).
    pub(in crate::agent) fn fetch_new_partitions(
        &mut self,
        now: Instant,
        out: &mut Vec<RefreshEffect>,
    ) {
        let ctx = self.refresh_ctx;
        if ctx.shutting_down {
            return;
        }
        if self.refresh.is_running() {
            self.refresh
                .schedule_partitions(now + Duration::from_secs(1));
            return;
        }
        let first = self.missing_partitions().first().copied();
        if let Some(p) = first {
            let epoch = self.refresh.begin(now, true);
            self.fetch(epoch, TableKey::Partition(p), out);
        }
    }

    /// The partitions whose tables this port keeps: every one its P_Key
    /// table holds, but for the one its default table's paths carry when
    /// the master applies no QoS (those answers are the default table's).
    /// While the master's QoS is unknown, every one.
    pub(in crate::agent) fn wanted_partitions(&self) -> Vec<u16> {
        let ctx = self.refresh_ctx;
        let default = self
            .paths
            .store
            .from_lid(ctx.port.lid)
            .next()
            .map(|r| partition_of(r.pkey()));
        self.partitions
            .held()
            .iter()
            .copied()
            .filter(|p| !(ctx.no_qos && Some(*p) == default))
            .collect()
    }

    /// The partitions wanted whose tables are not held complete.
    fn missing_partitions(&self) -> Vec<u16> {
        let ctx = self.refresh_ctx;
        let me = ctx.port.gid.guid();
        self.wanted_partitions()
            .into_iter()
            .filter(|p| self.partitions.table(*p).is_none_or(|t| !t.is_complete(me)))
            .collect()
    }

    /// Asks the master for table `table` of this port's paths, in bulk.
    fn fetch(&mut self, epoch: Epoch, table: TableKey, out: &mut Vec<RefreshEffect>) {
        let ctx = self.refresh_ctx;
        let (mask, t) = table.query(ctx.port.gid);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(mask);
        self.refresh.advance(RefreshState::Bulk { epoch, table });
        out.push(RefreshEffect::Ask {
            purpose: Purpose::Bulk { epoch, table },
            request: b.into_bytes(),
            whole_table: true,
        });
    }

    /// The master's answer to the bulk GetTable of `table`.
    pub(in crate::agent) fn handle_bulk_answer(
        &mut self,
        now: Instant,
        (epoch, table): (Epoch, TableKey),
        answer: &Answer,
        out: &mut Vec<RefreshEffect>,
    ) {
        let ctx = self.refresh_ctx;
        if self.refresh.state() != (RefreshState::Bulk { epoch, table }) {
            return;
        }
        if answer.status() != MadStatus::OK {
            warn!(status = %answer.status(), %table, "the master refused a bulk PathRecord table");
            if table == TableKey::Default {
                return self.handle_refresh_failed(now, out);
            }
            // That partition's queries go on being asked per pair; the
            // other tables are fetched, and that one alone is asked again
            // after the back-off.
            let retry = now + ctx.backoff.after(self.refresh.failures());
            self.refresh.schedule_partitions(retry);
            return self.fetch_after(epoch, table, out);
        }
        if answer.is_cut() {
            out.push(RefreshEffect::AnswersCut);
            if table == TableKey::Default {
                info!(
                    "the bulk PathRecord table came back cut (no RMPP on this transport); fetching per destination"
                );
            }
            // The walk reaches past this port's own LIDs and the master's.
            let floor = ctx.port.sm_lid.max(*ctx.port.lids().end());
            let start = RefreshState::Walk {
                epoch,
                table,
                walk: LidWalk::new(floor, ctx.walk_gap),
            };
            self.refresh.advance(start);
            return self.walk(now, out);
        }
        if let Some(t) = self.table_mut(table) {
            t.store.expect_table(answer.records::<PathRecord>().count());
            for r in answer.records::<PathRecord>() {
                t.store.insert(*r, epoch);
            }
        }
        self.finish_table(now, epoch, table, out);
    }

    /// Keeps `walk_window` per-destination queries in flight; finishes when
    /// the walk is past the last LID worth trying and nothing is out.
    fn walk(&mut self, now: Instant, out: &mut Vec<RefreshEffect>) {
        let ctx = self.refresh_ctx;
        let RefreshState::Walk {
            epoch,
            table,
            mut walk,
        } = self.refresh.state()
        else {
            return;
        };
        let (mask, mut t) = table.query(ctx.port.gid);
        let mut asked = Vec::new();
        while let Some(dlid) = walk.next_lid(ctx.walk_window) {
            asked.push(dlid);
        }
        self.refresh
            .advance(RefreshState::Walk { epoch, table, walk });
        if walk.is_done() {
            return self.finish_table(now, epoch, table, out);
        }
        for dlid in asked {
            t.set_dlid(dlid);
            let mut b =
                SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(mask | pr::DLID);
            out.push(RefreshEffect::Ask {
                purpose: Purpose::Walk { epoch, table, dlid },
                request: b.into_bytes(),
                whole_table: false,
            });
        }
    }

    /// The master's answer to the walk's query of destination `dlid`.
    pub(in crate::agent) fn handle_walk_answer(
        &mut self,
        now: Instant,
        (epoch, table, dlid): (Epoch, TableKey, u16),
        answer: &Answer,
        out: &mut Vec<RefreshEffect>,
    ) {
        let RefreshState::Walk {
            epoch: current,
            table: current_table,
            mut walk,
        } = self.refresh.state()
        else {
            return;
        };
        if current != epoch || current_table != table {
            return;
        }
        let mut found = false;
        if answer.status() == MadStatus::OK
            && let Some(t) = self.table_mut(table)
        {
            for r in answer.records::<PathRecord>() {
                t.store.insert(*r, epoch);
                found = true;
            }
        }
        walk.answered(dlid, found);
        self.refresh
            .advance(RefreshState::Walk { epoch, table, walk });
        self.walk(now, out);
    }

    /// Table `table` is in: this port's records in it that the refresh
    /// did not see go, and the next table is asked, or the refresh ends.
    fn finish_table(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: TableKey,
        out: &mut Vec<RefreshEffect>,
    ) {
        let ctx = self.refresh_ctx;
        let (lids, me) = (ctx.port.lids(), ctx.port.gid.guid());
        let (swept, records) = self.table_mut(table).map_or((0, 0), |t| {
            t.mark_complete(me);
            (t.store.sweep_from(lids, epoch), t.store.len())
        });
        match table {
            TableKey::Default => {
                let took = self
                    .refresh
                    .take_began()
                    .map(|t| now.saturating_duration_since(t));
                self.counts.refreshes += 1;
                self.refresh.made_fresh(now, took);
                out.push(RefreshEffect::DefaultFresh {
                    epoch,
                    records,
                    swept,
                    took,
                });
            }
            TableKey::Partition(_) => {
                debug!(%table, records, swept, "this port's paths on a partition are fresh");
            }
        }
        self.fetch_after(epoch, table, out);
    }

    /// Asks for the table after `table`, or ends the refresh.
    fn fetch_after(&mut self, epoch: Epoch, table: TableKey, out: &mut Vec<RefreshEffect>) {
        let ctx = self.refresh_ctx;
        let candidates = if self.refresh.only_missing() {
            self.missing_partitions()
        } else {
            self.wanted_partitions()
        };
        let next = candidates
            .into_iter()
            .map(TableKey::Partition)
            .find(|t| *t > table);
        match next {
            Some(next) if !ctx.shutting_down => self.fetch(epoch, next, out),
            _ => self.finish_refresh(out),
        }
    }

    /// The last table is in: tables no longer wanted go, and whoever
    /// waited for the refresh is answered.
    fn finish_refresh(&mut self, out: &mut Vec<RefreshEffect>) {
        let wanted = self.wanted_partitions();
        self.partitions.retain(|p| wanted.contains(&p));
        self.refresh.stop();
        if !self.partitions.held().is_empty() {
            info!(
                tables = wanted.len(),
                records = self.partitions.records(),
                "this port's partition tables are fresh"
            );
        }
        out.push(RefreshEffect::Ended {
            status: MadStatus::OK,
            doubt_ended: self.upkeep.refresh_ended(),
        });
    }

    /// Tables `cleared` picks were emptied (a flush, a new identity, a flip
    /// of the master's QoS bit): a running refresh that fills one of them
    /// would mark it complete with part of its paths, so it stops. Returns
    /// whether it did (the caller forgets the requests and says when the
    /// refresh starts again).
    pub(in crate::agent) fn abandon_refresh_into(
        &mut self,
        cleared: impl Fn(TableKey) -> bool,
    ) -> bool {
        let Some(running) = self.refresh.table() else {
            return false;
        };
        if !cleared(running) {
            return false;
        }
        self.refresh.stop();
        true
    }

    /// The master did not give the table being fetched: what is cached is
    /// served, and the table asked again after the back-off.
    pub(in crate::agent) fn handle_refresh_failed(
        &mut self,
        now: Instant,
        out: &mut Vec<RefreshEffect>,
    ) {
        let ctx = self.refresh_ctx;
        let Some(table) = self.refresh.table() else {
            return;
        };
        self.refresh.pause();
        if table != TableKey::Default {
            // The default table is in: only the partitions' are asked
            // again, after the back-off.
            self.refresh.stop();
            if !ctx.shutting_down {
                let retry = now + ctx.backoff.after(self.refresh.failures());
                self.refresh.schedule_partitions(retry);
            }
            out.push(RefreshEffect::Ended {
                status: MadStatus::BUSY,
                doubt_ended: false,
            });
            return;
        }
        self.refresh.failed();
        // The doubt waits for the next refresh.
        self.upkeep.refresh_failed();
        out.push(RefreshEffect::DefaultFailed {
            register: self.refresh.take_register_after(),
        });
        if !ctx.shutting_down {
            let retry = now + ctx.backoff.after(self.refresh.failures());
            self.refresh.schedule(Some(retry));
        }
        // The master did not give the table: as for a query it left
        // unanswered.
        out.push(RefreshEffect::Ended {
            status: MadStatus::BUSY,
            doubt_ended: false,
        });
    }
}

// What follows the port's paths being fresh, or the port's master or
// identity changing.
impl PortTables {
    /// The port's master or its identity changed at `now` (`at_once`: its
    /// identity, and the tables were emptied): the refresh running is
    /// dropped (when it began is kept: the one that replaces it counts
    /// its time from then), the next comes at once if the tables are
    /// empty or an administrator waits for it, else at this port's phase
    /// of the refresh window; the agent registers without waiting for it.
    pub(in crate::agent) fn restart_refresh(&mut self, now: Instant, at_once: bool) {
        self.refresh.pause();
        let due = if at_once || self.refresh.awaited() {
            now
        } else {
            now + self.refresh_delay()
        };
        self.refresh.schedule(Some(due));
        self.refresh.register_now();
    }

    /// This port's paths are fresh at `now` (a refresh completed, or a
    /// load of its own table): the fabric's size is the default table's
    /// port count from now on, the next refresh of its own is a periodic
    /// interval on, and the master's activity is polled. True (once) if
    /// the agent waited for this to register: the start's.
    pub(in crate::agent) fn paths_fresh(&mut self, now: Instant) -> bool {
        self.refresh.completed(self.paths.store.port_count());
        let next = self.next_periodic_refresh(now);
        self.refresh.schedule(Some(next));
        self.start_sweep_polls(now);
        self.refresh.take_register_after()
    }
}

// The refresh's state as `SaCore` reads and sets it (`refresh`).
impl PortTables {
    /// The epoch the tables' records are stamped with now.
    pub(in crate::agent) fn epoch(&self) -> Epoch {
        self.refresh.epoch()
    }

    /// A load of the port's own table made its paths fresh at `now`: it
    /// counts as the port's refresh (its epoch returned), unless a
    /// refresh is running (its table is the master's word) or the agent
    /// is shutting down.
    pub(in crate::agent) fn take_load_as_refresh(&mut self, now: Instant) -> Option<Epoch> {
        if self.refresh.is_running() || self.refresh_ctx.shutting_down {
            return None;
        }
        self.counts.refreshes_loaded += 1;
        self.refresh.made_fresh(now, None);
        Some(self.refresh.epoch())
    }

    /// Ports of the fabric, as the last complete refresh showed them (0
    /// before one).
    pub(in crate::agent) fn fabric_ports(&self) -> usize {
        self.refresh.fabric_ports()
    }

    /// Everyone who waited for the refresh, to be answered.
    pub(in crate::agent) fn take_refresh_waiters(&mut self) -> Vec<RefreshWaiter> {
        self.refresh.take_waiters()
    }

    /// When the next refresh is due.
    pub(in crate::agent) fn next_refresh(&self) -> Option<Instant> {
        self.refresh.next()
    }

    /// The next refresh is due at `at` (or never: `None`).
    pub(in crate::agent) fn schedule_refresh(&mut self, at: Option<Instant>) {
        self.refresh.schedule(at)
    }

    /// The agent waits for its first refresh before it registers.
    pub(in crate::agent) fn registers_after(&self) -> bool {
        self.refresh.registers_after()
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use mad_codec::SaRecord as _;
    use mad_codec::header::SaMadHeader;
    use mad_codec::zerocopy::{FromBytes, IntoBytes};

    use super::*;
    use crate::agent::port_tables::context::{Backoff, RefreshContext};
    use crate::config::PortIdentity;
    use mad_codec::Gid;
    use mad_codec::zerocopy::FromZeros;

    const ME: u16 = 2;
    const MASTER: u16 = 1;

    fn gid(lid: u16) -> Gid {
        Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + u64::from(lid))
    }

    fn ctx() -> RefreshContext {
        RefreshContext {
            port: PortIdentity {
                lid: ME,
                lmc: 0,
                gid: gid(ME),
                sm_lid: MASTER,
                sm_sl: 0,
            },
            walk_gap: 4,
            walk_window: 3,
            no_qos: false,
            shutting_down: false,
            backoff: Backoff {
                base: Duration::from_secs(10),
                longest_window: Duration::from_secs(80),
                phase: 0.5,
            },
        }
    }

    fn path(d: u16) -> PathRecord {
        let mut r = PathRecord::new_zeroed();
        r.set_sgid(gid(ME));
        r.set_dgid(gid(d));
        r.set_slid(ME);
        r.set_dlid(d);
        r.set_pkey(0xFFFF);
        r
    }

    /// The master's answer to `request`: `status`, these records.
    fn answer(request: &Bytes, status: MadStatus, records: &[PathRecord]) -> Answer {
        let (h, _) = SaMadHeader::parse(request).unwrap();
        let mut h = *h;
        h.mad.set_method(h.mad.method().response());
        h.mad.set_status(status);
        h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        let mut mad = BytesMut::from(h.as_bytes());
        for r in records {
            mad.extend_from_slice(r.as_bytes());
        }
        Answer::whole(mad.freeze()).unwrap()
    }

    /// The asks among `out`, as (purpose, request).
    fn asks(out: &[RefreshEffect]) -> Vec<(Purpose, Bytes)> {
        out.iter()
            .filter_map(|e| match e {
                RefreshEffect::Ask {
                    purpose, request, ..
                } => Some((purpose.clone(), request.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_bulk_table_fills_the_store_sweeps_the_rest_and_ends_the_refresh() {
        let now = Instant::now();
        let mut t = PortTables::new(now, (PortTables::test_context().0, ctx()));
        let mut out = Vec::new();
        assert!(t.start_refresh(now, &mut out).is_some());
        assert!(
            t.start_refresh(now, &mut Vec::new()).is_none(),
            "one at a time"
        );
        let [(Purpose::Bulk { epoch, table }, request)] = &asks(&out)[..] else {
            panic!("{out:?}")
        };
        let q = PathRecord::read_from_prefix(&request[SaMadHeader::LEN..])
            .unwrap()
            .0;
        assert_eq!((q.sgid(), *table), (gid(ME), TableKey::Default));
        let later = now + Duration::from_secs(2);
        let a = answer(request, MadStatus::OK, &[path(3), path(4)]);
        let mut out = Vec::new();
        t.handle_bulk_answer(later, (*epoch, *table), &a, &mut out);
        assert!(
            matches!(
                out[..],
                [
                    RefreshEffect::DefaultFresh { swept: 0, took: Some(took), .. },
                    RefreshEffect::Ended { status: MadStatus::OK, .. }
                ] if took == Duration::from_secs(2)
            ),
            "{out:?}"
        );
        assert_eq!(t.paths.store.len(), 2);
        assert!(!t.refresh.is_running());
    }

    #[test]
    fn a_cut_answer_is_walked_a_window_at_a_time_past_the_gap() {
        let now = Instant::now();
        let mut t = PortTables::new(now, (PortTables::test_context().0, ctx()));
        let mut out = Vec::new();
        t.start_refresh(now, &mut out);
        let (Purpose::Bulk { epoch, table }, request) = asks(&out)[0].clone() else {
            panic!()
        };
        let cut = Answer::cut(
            answer(&request, MadStatus::OK, &[path(3)]).mad().clone(),
            64,
        )
        .unwrap();
        let mut out = Vec::new();
        t.handle_bulk_answer(now, (epoch, table), &cut, &mut out);
        assert!(matches!(out[0], RefreshEffect::AnswersCut));
        let walk: Vec<u16> = asks(&out)
            .iter()
            .map(|(p, _)| match p {
                Purpose::Walk { dlid, .. } => *dlid,
                p => panic!("{p:?}"),
            })
            .collect();
        assert_eq!(walk, [1, 2, 3], "walk_window at a time");
        // LIDs 1..=3 answer (3 has a path), then nothing past the gap.
        let mut ended = false;
        let mut pending: Vec<(u16, Bytes)> = asks(&out)
            .into_iter()
            .map(|(p, r)| match p {
                Purpose::Walk { dlid, .. } => (dlid, r),
                _ => unreachable!(),
            })
            .collect();
        let mut asked = Vec::new();
        while let Some((dlid, request)) = pending.pop() {
            asked.push(dlid);
            let records = if dlid == 3 { vec![path(3)] } else { Vec::new() };
            let status = if records.is_empty() {
                MadStatus::ERR_NO_RECORDS
            } else {
                MadStatus::OK
            };
            let mut out = Vec::new();
            let a = answer(&request, status, &records);
            t.handle_walk_answer(now, (epoch, table, dlid), &a, &mut out);
            ended |= out.iter().any(|e| {
                matches!(
                    e,
                    RefreshEffect::Ended {
                        status: MadStatus::OK,
                        ..
                    }
                )
            });
            pending.extend(asks(&out).into_iter().map(|(p, r)| match p {
                Purpose::Walk { dlid, .. } => (dlid, r),
                _ => unreachable!(),
            }));
        }
        asked.sort_unstable();
        // Past this port's and the master's LIDs and LID 3, the gap of 4.
        assert_eq!(asked, (1..=7).collect::<Vec<u16>>());
        assert!(ended);
        assert_eq!(t.paths.store.len(), 1);
    }

    #[test]
    fn a_refused_default_table_is_asked_again_after_the_backoff_at_the_port_s_phase() {
        let now = Instant::now();
        let mut t = PortTables::new(now, (PortTables::test_context().0, ctx()));
        for failures in 1..=3u32 {
            let mut out = Vec::new();
            t.refresh.schedule(None);
            t.start_refresh(now, &mut out);
            let (Purpose::Bulk { epoch, table }, request) = asks(&out)[0].clone() else {
                panic!()
            };
            let busy = answer(&request, MadStatus::BUSY, &[]);
            let mut out = Vec::new();
            t.handle_bulk_answer(now, (epoch, table), &busy, &mut out);
            assert!(
                matches!(
                    out[..],
                    [
                        RefreshEffect::DefaultFailed { register },
                        RefreshEffect::Ended {
                            status: MadStatus::BUSY,
                            ..
                        }
                    ] if register == (failures == 1)
                ),
                "the start's registration follows the first failure only: {out:?}"
            );
            // 10 s, then half of a window of 10, 20, 40 s.
            let window = 10u64 << (failures - 1);
            let expected = now + Duration::from_secs(10) + Duration::from_secs(window) / 2;
            assert_eq!(t.refresh.next(), Some(expected), "after failure {failures}");
            assert_eq!(t.refresh.failures(), failures);
        }
    }
}
