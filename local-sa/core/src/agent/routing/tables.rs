//! `SaCore`'s side of the port's tables: it gives [`PortTables`] what
//! it needs to know of the agent (its refresh's and upkeep's contexts),
//! routes the events to it — the timers, the master's answers, a change
//! notice, a distributor's loads and lease, an administrator's refresh,
//! flush and dump — and carries out what the tables decide: requests to
//! the master, the start's registrations, the names' fetch after each
//! refresh, the answers to whoever waits.
//!
//! A load ("SetTable") is taken here whole (reassembled from RMPP, its
//! SM_Key checked), read by [`LoadCommand::read`] and applied to the
//! tables or the QoS cache (the names' loads: `names`); the wire contract
//! is [`crate::agent::port_tables::loads`]'.
//!
//! [`PortTables`]: crate::agent::port_tables::PortTables

use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::header::{RmppFlags, SaMadHeader};
use mad_codec::{ComponentMask, MadStatus, PathRecord, Records, TrapNumber};
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::counterparts::Asker;
use crate::agent::master::purpose::Purpose;
use crate::agent::port_tables::check::{check_query, speaks_of_paths};
use crate::agent::port_tables::context;
use crate::agent::port_tables::fetch::RefreshEffect;
use crate::agent::port_tables::loads::{LoadCommand, is_segment};
use crate::agent::port_tables::rules::SweepSeen;
use crate::agent::port_tables::upkeep::{CheckQuestion, LeaseWord};
use crate::agent::telemetry::Warning;
use crate::inbound::SaRequest;
use crate::load_flags;
use crate::master_activity;
use crate::partitions::TableKey;
use crate::request::LocalBody;
use crate::requester::Answer;
use crate::store::Epoch;
use crate::transfers::Event;

impl SaCore {
    /// Tells the tables what the agent is now: called whenever its
    /// settings, its port, the master's QoS or its shutting down change.
    pub(in crate::agent) fn tables_know(&mut self, now: Instant) {
        let no_qos = self.master.info().is_some_and(|m| !m.qos);
        let (upkeep, refresh) = context::of(&self.config, self.port, no_qos, self.shutting_down);
        self.tables.know(now, upkeep, refresh);
    }

    /// Says in the log how often this port refreshes, when that changed.
    pub(in crate::agent) fn say_periodic_interval(&mut self) {
        self.tables.say_periodic_interval();
    }

    /// A notice that the fabric changed (trap 128: a switch port's link
    /// went up or down). The
    /// master sweeps after it and may reroute: a port keeping its own
    /// tables refreshes once that has settled. Under a distributor's
    /// lease the distributor re-reads the fabric instead.
    pub(in crate::agent) fn fabric_changed(&mut self, now: Instant, trap: TrapNumber, lid: u16) {
        let due = match self.tables.handle_change_notice(now) {
            Ok(due) => due,
            Err(lease) => {
                debug!(
                    %trap,
                    lid,
                    distributor = lease.lid,
                    "fabric change notice: the distributor keeping this port's tables re-reads the fabric"
                );
                return;
            }
        };
        if let Some(earlier_not_logged) =
            self.telemetry
                .log_limit
                .allow(now, Warning::FabricChange, 0u32)
        {
            info!(
                %trap,
                lid,
                refresh_in_ms = due.saturating_duration_since(now).as_millis() as u64,
                earlier_not_logged,
                "the fabric changed: this port refreshes its tables once the master has rerouted"
            );
        }
    }

    /// Asks the master SM for its SMInfoRecord: its ActCount tells a
    /// heavy sweep whose change notice was lost
    /// ([`crate::master_activity`]).
    pub(in crate::agent) fn poll_sweeps(&mut self, now: Instant) {
        if self.master.asking(&Purpose::SweepPoll) {
            return;
        }
        let request = master_activity::request(self.port.sm_lid);
        self.send_upstream(now, Purpose::SweepPoll, &request);
    }

    /// The master's SMInfoRecord came: a heavy sweep no notice announced
    /// is taken as one (the port refreshes once the master has rerouted).
    pub(in crate::agent) fn sweeps_polled(&mut self, now: Instant, answer: &Answer) {
        let Some(count) = master_activity::act_count(answer) else {
            return;
        };
        let sm_lid = self.port.sm_lid;
        let Some(SweepSeen {
            rose,
            usual,
            refresh_at: due,
        }) = self.tables.handle_sweep_poll(now, (sm_lid, count))
        else {
            return;
        };
        if let Some(earlier_not_logged) =
            self.telemetry
                .log_limit
                .allow(now, Warning::HeavySweep, 0u32)
        {
            info!(
                master = sm_lid,
                smps = rose,
                light_sweeps = usual,
                refresh_in_ms = due.saturating_duration_since(now).as_millis() as u64,
                earlier_not_logged,
                "the master swept the fabric and no notice said why (a Report lost on a link that went \
                 down?): this port refreshes its tables once the master has rerouted"
            );
        }
    }

    /// Asks the master at this port's own LID for its SMInfoRecord before
    /// local-sa takes the SA class there: one that answers is a subnet
    /// manager running on this port ([`crate::sa_class`]).
    pub(in crate::agent) fn ask_master_here(&mut self, now: Instant) {
        let request = master_activity::request(self.port.lid);
        self.send_upstream(now, Purpose::MasterHere, &request);
    }

    /// The master at this port's LID answered (`Some`) or not: whether an
    /// SM runs here.
    pub(in crate::agent) fn master_here_answered(&mut self, answer: Option<&Answer>) {
        let before = self.sa_class();
        let answered = answer.and_then(master_activity::act_count).is_some();
        self.sa_class.handle_master_answer(answered);
        self.say_sa_class(before);
    }

    /// The master's sweep that this port's tables may not show has
    /// settled: what it answered before is forgotten, and until a refresh
    /// begun from now on ends, the paths asked are asked of it (a pair
    /// at a time, each kept once answered) rather than answered from the
    /// tables.
    pub(in crate::agent) fn doubt_settled(&mut self, now: Instant) {
        self.answers.forget();
        let refresh_in_s =
            (self.tables.next_refresh()).map_or(0, |t| t.saturating_duration_since(now).as_secs());
        info!(
            refresh_in_s,
            "the master has swept since this port's tables were fetched: until they are \
             refreshed, the paths asked are asked of the master (each port pair once, then kept)"
        );
    }

    /// Starts a refresh unless one is running: at start, whether the
    /// master applies QoS is asked just before the table (one small
    /// request, answered first), so that queries naming a P_Key — every
    /// ibacm and kernel query — are answered from the cache as soon as the
    /// table is in; later, this port's directory record's lease is renewed
    /// with it (at start, the registration after this refresh publishes
    /// it).
    pub(in crate::agent) fn start_refresh(&mut self, now: Instant) {
        let mut out = Vec::new();
        let Some(start) = self.tables.start_refresh(now, &mut out) else {
            return;
        };
        if start.poll_activity {
            self.poll_sweeps(now);
        }
        if start.first {
            self.ask_master_info(now);
        }
        self.carry_out_refresh(now, out);
        if !start.first {
            self.send_publication(now);
        }
    }

    /// Fetches the tables of partitions the port now holds.
    pub(in crate::agent) fn fetch_new_partitions(&mut self, now: Instant) {
        let mut out = Vec::new();
        self.tables.fetch_new_partitions(now, &mut out);
        self.carry_out_refresh(now, out);
    }

    /// The master's answer to a table's bulk GetTable.
    pub(in crate::agent) fn bulk_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: TableKey,
        answer: &Answer,
    ) {
        let mut out = Vec::new();
        self.tables
            .handle_bulk_answer(now, (epoch, table), answer, &mut out);
        self.carry_out_refresh(now, out);
    }

    /// The master's answer to a walk's query of one destination.
    pub(in crate::agent) fn walk_answered(
        &mut self,
        now: Instant,
        epoch: Epoch,
        table: TableKey,
        dlid: u16,
        answer: &Answer,
    ) {
        let mut out = Vec::new();
        self.tables
            .handle_walk_answer(now, (epoch, table, dlid), answer, &mut out);
        self.carry_out_refresh(now, out);
    }

    /// The master did not give the table: keep serving what is cached and
    /// try again after the back-off.
    pub(in crate::agent) fn refresh_failed(&mut self, now: Instant) {
        let mut out = Vec::new();
        self.tables.handle_refresh_failed(now, &mut out);
        self.carry_out_refresh(now, out);
    }

    /// Tables `cleared` picks were emptied (a flush, a new identity, a flip
    /// of the master's QoS bit): what is being fetched into them would
    /// refill them with part of their paths, and the refresh would then
    /// mark them complete. Those fetches are dropped, and the running
    /// refresh with them if it fills one of those tables. Returns whether
    /// it did; the caller says when the refresh starts again.
    pub(in crate::agent) fn abandon_fetches_into(
        &mut self,
        cleared: impl Fn(TableKey) -> bool,
    ) -> bool {
        self.master.forget(|p| match p {
            Purpose::Bulk { table, .. }
            | Purpose::Walk { table, .. }
            | Purpose::GidInService { table, .. } => cleared(*table),
            _ => false,
        });
        self.tables.abandon_refresh_into(cleared)
    }

    /// Carries out what the refresh said follows, in order.
    fn carry_out_refresh(&mut self, now: Instant, effects: Vec<RefreshEffect>) {
        for effect in effects {
            match effect {
                RefreshEffect::Ask {
                    purpose,
                    request,
                    whole_table: true,
                } => self.send_table_upstream(now, purpose, &request),
                RefreshEffect::Ask {
                    purpose, request, ..
                } => {
                    self.send_upstream(now, purpose, &request);
                }
                RefreshEffect::AnswersCut => self.answers.qos_tables_come_cut(),
                RefreshEffect::DefaultFresh {
                    epoch,
                    records,
                    swept,
                    took,
                } => self.default_table_fresh(now, epoch, (records, swept), took),
                RefreshEffect::DefaultFailed { register } => {
                    if register {
                        self.register_after_first_refresh(now);
                    }
                }
                RefreshEffect::Ended {
                    status,
                    doubt_ended,
                } => {
                    if doubt_ended {
                        info!(
                            "this port's tables are fresh since the master's sweep: answered from again"
                        );
                    }
                    self.answer_refresh_waiters(status);
                }
            }
        }
    }

    /// The default table is in: the port is ready, and what follows a
    /// refresh follows.
    fn default_table_fresh(
        &mut self,
        now: Instant,
        epoch: Epoch,
        (records, swept): (usize, usize),
        took: Option<Duration>,
    ) {
        self.answers.forget();
        info!(
            records,
            swept,
            took_ms = took.map(|t| t.as_millis() as u64),
            "this port's paths are fresh"
        );
        if self.paths_fresh(now, epoch) {
            return;
        }
        if self.naming.take_keep_after_refresh() {
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
    pub(in crate::agent) fn paths_fresh(&mut self, now: Instant, epoch: Epoch) -> bool {
        let first = self.tables.paths_fresh(now);
        self.say_periodic_interval();
        if first {
            // The fabric's size is known now. The directory loads (two
            // tables of a record per host, twice the paths' cost) and the
            // registrations follow at this port's phase, so that a fabric
            // started together asks for them spread. Whether the master
            // applies QoS is asked now if the paths came in a load (a
            // refresh asked it with the table). Names a distributor
            // loaded need no fetch.
            if !self.naming.loaded() {
                self.naming
                    .fetch_at(now + self.tables.refresh_delay(), epoch);
            }
            self.ask_master_info(now);
            self.register_after_first_refresh(now);
        }
        first
    }

    /// A load replaced this port's paths (a distributor next to the
    /// master pushed them): that is a refresh the master was not asked
    /// for. The next refresh from the master waits a whole interval, and
    /// at start the registrations and directory loads follow as after a
    /// refresh. A refresh already running goes on: its table is the
    /// master's word.
    pub(in crate::agent) fn own_paths_loaded(&mut self, now: Instant) {
        let Some(epoch) = self.tables.take_load_as_refresh(now) else {
            return;
        };
        self.paths_fresh(now, epoch);
        // Partition tables the load did not bring (a distributor sends
        // them before the default table) are fetched at this port's phase
        // of the window for the fabric the load showed.
        self.tables.fetch_partitions_at_phase(now);
    }

    /// Schedules the start's registration, once the first refresh ended
    /// (done or failed), at this port's phase of the re-registration window.
    fn register_after_first_refresh(&mut self, now: Instant) {
        let at = now + self.reregister_delay();
        self.proxy.register_at(Some(at));
    }

    /// How long this port waits before registering everything again with a
    /// new master.
    pub(in crate::agent) fn reregister_delay(&self) -> Duration {
        // The master's ClassPortInfo, the canary and this port's directory
        // record, besides what its consumers hold.
        let own = self.proxy.upstream_registrations() + 3;
        let window = self
            .config
            .pace
            .reregistration_window(self.tables.fabric_ports(), own);
        self.port.spread(window)
    }

    /// Starts a check of this port's tables against the master, unless
    /// one runs or there is nothing to check: the tables' sample and the
    /// QoS pairs a distributor loaded.
    pub(in crate::agent) fn start_table_check(&mut self, now: Instant) {
        let answers = &self.answers;
        let Some((round, sample)) =
            (self.tables).start_check(|many, phase| answers.loaded_qos_sample(many, phase))
        else {
            return;
        };
        for question in sample {
            let request = check_query(self.port.gid, question);
            self.send_upstream(now, Purpose::Check { round, question }, &request);
        }
    }

    /// The master's answer to `question`, in check `round` (`None`: it
    /// did not answer).
    pub(in crate::agent) fn check_answered(
        &mut self,
        now: Instant,
        round: u32,
        question: CheckQuestion,
        answer: Option<&Answer>,
    ) {
        let agrees = answer.map(|a| match question {
            // Not an answer about the paths: as if none came.
            _ if !speaks_of_paths(a) => true,
            CheckQuestion::Table(table, dlid) => {
                self.tables
                    .agrees_with_master((table, dlid), a, &self.port.lids())
            }
            CheckQuestion::Qos(key) => {
                let records: Vec<PathRecord> = a.records::<PathRecord>().copied().collect();
                self.answers.loaded_qos_agree(&key, &records, a.is_cut())
            }
        });
        // Once the check ended: a difference in the QoS pairs forgets
        // them, one in the tables fetches the port's own at once (under a
        // lease too: the master's word wins); no answer tries again after
        // the back-off.
        let Some(end) = self.tables.check_answered(now, round, question, agrees) else {
            return;
        };
        if end.forget_qos {
            self.answers.forget_loaded_qos();
        }
        if end.refresh {
            self.start_refresh(now);
        }
    }

    /// Refreshes this port's paths now, or joins the refresh running;
    /// `asker` hears when it ends (a local request).
    pub(in crate::agent) fn local_refresh(&mut self, now: Instant, asker: Asker) {
        info!(
            records = self.tables.records_held(),
            "a full refresh of this port's paths asked for locally"
        );
        self.tables.wait_for_refresh(asker);
        self.start_refresh(now);
    }

    /// A refresh ended (`status` OK) or failed: every waiter hears it.
    pub(in crate::agent) fn answer_refresh_waiters(&mut self, status: MadStatus) {
        let after = self.tables.records_held() as u64;
        for w in self.tables.take_refresh_waiters() {
            let body = LocalBody::CacheChange {
                before: w.before as u64,
                after,
            };
            self.reply().reply_local(&w.asker, status, body);
        }
    }

    /// Drops every cached record and kept answer (a local request): every
    /// query goes to the master until the next refresh or load fills the
    /// store again.
    pub(in crate::agent) fn local_flush(&mut self, now: Instant, asker: &Asker) {
        let before = self.tables.flush() as u64;
        self.answers.forget();
        if self.abandon_fetches_into(|_| true) {
            // The refresh that was filling the tables starts again, whole.
            self.tables.schedule_refresh(Some(now));
        }
        info!(
            dropped = before,
            "the cache was flushed by a local request; queries go to the master until the next refresh"
        );
        self.reply().reply_local(
            asker,
            MadStatus::OK,
            LocalBody::CacheChange { before, after: 0 },
        );
    }

    /// A page of the default table, or of the partition table of
    /// `partition`'s P_Key (a local request).
    pub(in crate::agent) fn local_dump(
        &mut self,
        asker: &Asker,
        from: u32,
        max: u32,
        partition: Option<u16>,
    ) {
        let max = max.min(crate::request::DUMP_PAGE) as usize;
        let page = self.tables.page(from, max, partition);
        self.reply().answer_local_records(asker, &page);
    }

    /// A Set or Delete of PathRecords: one MAD, or a segment of an RMPP
    /// transfer.
    pub(in crate::agent) fn load(&mut self, now: Instant, request: &SaRequest) {
        let Some((header, data)) = self.take_load(now, request) else {
            return;
        };
        let records = if is_segment(request) {
            Records::<PathRecord>::new(&data, header.sa.attribute_offset())
                .map(|r| r.copied().collect())
                .map_err(|_| "AttributeOffset is not that of 64-byte PathRecords")
        } else {
            Ok(vec![request.template::<PathRecord>()])
        };
        self.apply(now, request, &header, records);
    }

    /// A load's whole content — its headers and data — once it is in: at
    /// once for a single MAD, at the last segment for an RMPP transfer.
    /// A transfer without the SM_Key is refused at its first segment
    /// rather than taken in whole (the answer also ends the sender's
    /// wait); a single MAD's key is checked with its content.
    pub(in crate::agent) fn take_load(
        &mut self,
        now: Instant,
        request: &SaRequest,
    ) -> Option<(SaMadHeader, Bytes)> {
        let rmpp = request.header().rmpp;
        if !is_segment(request) {
            let data = request.mad().slice(SaMadHeader::LEN..);
            return Some((*request.header(), data));
        }
        let tid = request.tid();
        if !self.transfers.is_receiving(&request.from, tid) {
            if !rmpp.flags().contains(RmppFlags::FIRST) {
                // A segment of a transfer not (or no longer) being
                // received, such as the rest of a refused one.
                return None;
            }
            if !self.authorized(now, request.sm_key(), request.from.lid) {
                self.deny(request, request.header());
                return None;
            }
        }
        let event = self.transfers.segment(
            now,
            &request.from,
            tid,
            request.mad(),
            &mut self.outbox.mads,
        )?;
        self.reply().count_transfer(now, &event);
        let Event::Received(whole) = event else {
            return None;
        };
        let header = *SaMadHeader::parse(&whole).ok()?.0;
        Some((header, whole.slice(SaMadHeader::LEN..)))
    }

    /// Whether a load or delete carrying `carried` may change the cache:
    /// only with the configured SM_Key, and never while none is
    /// configured (said once in the log).
    pub(in crate::agent) fn authorized(&mut self, now: Instant, carried: u64, lid: u16) -> bool {
        match self.config.sm_key {
            Some(key) if key.matches(carried) => true,
            Some(_) => {
                if let Some(left_out) =
                    self.telemetry
                        .log_limit
                        .allow(now, Warning::DeniedLoad, lid)
                {
                    warn!(
                        lid,
                        earlier_not_logged = left_out,
                        "PathRecord load or delete without the SM_Key: denied"
                    );
                }
                false
            }
            None => {
                if self.telemetry.first_unkeyed_refusal() {
                    warn!(
                        lid,
                        "a PathRecord load or delete arrived, but no SM_Key is configured: every load \
                         and delete is refused until one is (--sm-key-file FILE)"
                    );
                }
                false
            }
        }
    }

    /// Answers a malformed load or delete ERR_REQ_INVALID, saying `why`
    /// in the log (limited: a peer chooses how often).
    pub(in crate::agent) fn refuse_invalid_load(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        why: &'static str,
    ) {
        self.telemetry.counters.errors += 1;
        let lid = request.from.lid;
        if let Some(left_out) = self
            .telemetry
            .log_limit
            .allow(now, Warning::InvalidLoad, lid)
        {
            warn!(
                lid,
                why,
                earlier_not_logged = left_out,
                "PathRecord load or delete refused as invalid"
            );
        }
        self.reply()
            .answer_load(request, header, MadStatus::ERR_REQ_INVALID, 0);
    }

    /// Answers a load or delete from a sender that does not own the
    /// lease running on this port's tables `ERR_REQ_DENIED`, with the
    /// owner's LID as the answer's AttributeModifier: a distributor
    /// standing by learns who is active, one fenced off learns who took
    /// over. Never two senders' tables at once.
    fn refuse_fenced(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        owner: u16,
    ) {
        let lid = request.from.lid;
        if let Some(left_out) = self
            .telemetry
            .log_limit
            .allow(now, Warning::FencedLoad, lid)
        {
            info!(
                lid,
                owner,
                earlier_not_logged = left_out,
                "a PathRecord load or delete refused: the distributor at LID owner holds this port's lease"
            );
        }
        self.reply().answer_load(
            request,
            header,
            MadStatus::ERR_REQ_DENIED,
            usize::from(owner),
        );
    }

    pub(in crate::agent) fn deny(&mut self, request: &SaRequest, header: &SaMadHeader) {
        self.telemetry.counters.denied += 1;
        self.reply()
            .answer_load(request, header, MadStatus::ERR_REQ_DENIED, 0);
    }

    /// Applies a whole Set or Delete (already reassembled if it was RMPP)
    /// whose headers are `header` and records `records`.
    fn apply(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        records: Result<Vec<PathRecord>, &'static str>,
    ) {
        if !self.authorized(now, header.sa.sm_key(), request.from.lid) {
            return self.deny(request, header);
        }
        let (method, mask) = (header.mad.method(), header.sa.component_mask());
        let flags = header.mad.attribute_modifier();
        let lid = request.from.lid;
        if let Some(lease) = self.tables.fences_off(now, lid) {
            return self.refuse_fenced(now, request, header, lease.lid);
        }
        let every = load_flags::renewal_interval(flags);
        let word = |seconds, renewal| LeaseWord {
            seconds,
            renewal,
            every,
        };
        let count = match LoadCommand::read(method, mask, flags, records) {
            Err(why) => return self.refuse_invalid_load(now, request, header, why),
            Ok(LoadCommand::QosTables {
                flags,
                mask,
                records,
            }) => return self.load_qos_tables(now, request, header, (flags, mask, &records)),
            Ok(LoadCommand::Renew {
                seconds,
                forget_qos,
            }) => {
                self.tables.handle_lease(now, (lid, word(seconds, true)));
                if forget_qos {
                    // The distributor saw the master sweep: what it
                    // answered before may not be what it answers now.
                    self.answers.forget_after_sweep();
                    debug!(
                        distributor = lid,
                        "the master swept: the answers kept from it are forgotten"
                    );
                }
                0
            }
            Ok(LoadCommand::Store {
                records,
                replace,
                partitions,
                lease,
            }) => {
                // Before the records: a whole table loaded under a lease
                // counts as the lease's refresh, not as one that starts
                // an interval.
                if let Some(seconds) = lease {
                    self.tables.handle_lease(now, (lid, word(seconds, false)));
                }
                let count = self.store_records(&records, replace, partitions);
                let me = self.port.gid.guid();
                if replace && !partitions && records.iter().any(|r| r.sgid().guid() == me) {
                    self.own_paths_loaded(now);
                }
                count
            }
            Ok(LoadCommand::Delete {
                mask,
                records,
                known_absent,
                partitions,
                lease,
            }) => {
                if let Some(seconds) = lease {
                    self.tables.handle_lease(now, (lid, word(seconds, false)));
                }
                self.delete_records(mask, &records, known_absent, partitions)
            }
        };
        self.reply()
            .answer_load(request, header, MadStatus::OK, count);
    }

    fn store_records(&mut self, records: &[PathRecord], replace: bool, partitions: bool) -> usize {
        let stored = self.tables.store_load(records, replace, partitions);
        self.answers.forget();
        info!(
            records = stored,
            offered = records.len(),
            replace,
            partitions,
            "PathRecords loaded"
        );
        stored
    }

    fn delete_records(
        &mut self,
        mask: ComponentMask,
        records: &[PathRecord],
        known_absent: bool,
        partitions: bool,
    ) -> usize {
        let removed = self
            .tables
            .delete_load(mask, records, known_absent, partitions);
        self.answers.forget();
        info!(removed, known_absent, partitions, "PathRecords deleted");
        removed
    }

    /// A Set with `QOS_TABLES`, authorized: the QoS cache takes its
    /// records (the load's AttributeModifier and ComponentMask say at
    /// which key).
    fn load_qos_tables(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        (flags, mask, records): (u32, ComponentMask, &[PathRecord]),
    ) {
        let load = match self.answers.load_qos_tables(flags, mask, records) {
            Ok(l) => l,
            Err(why) => return self.refuse_invalid_load(now, request, header, why),
        };
        info!(
            records = load.stored,
            not_kept = load.given - load.stored,
            sources = load.sources,
            key = %mask,
            "QoS tables loaded (a destination's records larger than the QoS cache's byte limit are not kept)"
        );
        self.reply()
            .answer_load(request, header, MadStatus::OK, load.stored);
    }
}
