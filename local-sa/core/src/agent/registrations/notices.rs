//! Notices and the subscriptions that bring them: the master's Reports,
//! and everyone on this port who wants them — the agent itself (traps
//! 64/65 keep its store current), ports that subscribe with InformInfo
//! MADs, and local API connections.
//!
//! The master holds one subscription per distinct filter of this port
//! ([`informinfo::Registry`]), whoever and however many hold it here. Each
//! Report is answered at once, passed only once however many held filters
//! match it ([`informinfo::Duplicates`]), and handed to every holder whose
//! filter matches: acted on by the agent, sent on to MAD subscribers as a
//! Report of their own (resent until answered; a subscriber that stops
//! answering loses its subscriptions), queued for local connections.
//!
//! InformInfoRecord queries about this port's subscribers are answered
//! here; others go to the master.

use std::time::Instant;

use informinfo::{DeliveryEvent, Effect, Filter, Refusal, Reply, UpstreamResult};
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::inform_info_record::mask as iir;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, FromZeros};
use mad_codec::{
    AttributeId, ClassPortInfo, Gid, InformInfo, InformInfoRecord, InformInfoRepr, MadHeader,
    MadStatus, Method, Notice, PathRecord, SaMadBuilder, TrapDetails, TrapNumber,
};
use tracing::{debug, info, warn};

use crate::address::{Address, Transmit};
use crate::agent::counterparts::{Asker, Subscriber};
use crate::agent::master::purpose::Purpose;
use crate::agent::master::waiters::Join;
use crate::agent::tables::refresh::table_query;
use crate::agent::{MasterInfo, SaCore};
use crate::inbound::SaRequest;
use crate::partitions::TableKey;
use crate::request::{LocalBody, LocalReply};
use crate::requester::Answer;
use crate::respond;

/// RespTimeValue of the agent's subscriptions (2^19 × 4.096 µs ≈ 2 s).
const SUBSCRIPTION_RESP_TIME: u8 = 19;

/// The traps the agent itself subscribes to: ports coming and going
/// (64/65), and a switch port's link going up or down (128), after which
/// the master sweeps and may reroute. (Not trap 144, a port's local
/// changes: it says nothing of routes, and every restarting SM-capable
/// port raises one.)
const CORE_TRAPS: [TrapNumber; 3] = [
    TrapNumber::GID_IN_SERVICE,
    TrapNumber::GID_OUT_OF_SERVICE,
    TrapNumber::LINK_STATE_CHANGE,
];

/// The traps the agent subscribes to while the port is in some multicast
/// group: its members hear of the group's deletion and re-creation.
const GROUP_TRAPS: [TrapNumber; 2] = [TrapNumber::MC_GROUP_CREATED, TrapNumber::MC_GROUP_DELETED];

/// The filter of the agent's own subscription to `trap`.
fn core_filter(trap: TrapNumber) -> Filter {
    let ii = InformInfoRepr::generic_subscription(trap, true, 1, SUBSCRIPTION_RESP_TIME);
    Filter::of(&ii, true).unwrap_or_else(|_| unreachable!("a generic trap subscription is valid"))
}

impl SaCore {
    /// Asks the master what it supports and subscribes the agent to its
    /// own traps (64, 65, 128).
    pub(in crate::agent) fn register(&mut self, now: Instant) {
        self.ask_master_info(now);
        let mut effects = Vec::new();
        for trap in CORE_TRAPS {
            self.proxy.subscriptions.registry_mut().subscribe(
                Subscriber::Core,
                core_filter(trap),
                &mut effects,
            );
        }
        self.apply_inform_effects(now, effects);
    }

    /// Asks the master's ClassPortInfo unless this master's is known or
    /// asked: until one says whether the master applies QoS, queries
    /// naming a P_Key, SL, ServiceID, QoS class or TClass (every ibacm and
    /// kernel query) go to the master.
    pub(in crate::agent) fn ask_master_info(&mut self, now: Instant) {
        let known = (self.master.policy.info()).is_some_and(|m| m.sm_lid == self.port.sm_lid);
        if !known
            && !self
                .master
                .requester
                .any_pending(|p| *p == Purpose::MasterInfo)
        {
            let req =
                SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
            self.send_upstream(now, Purpose::MasterInfo, &req);
        }
    }

    /// Holds traps 66/67 while the port is in some multicast group, and
    /// only then: every such trap in the fabric reaches every subscriber.
    pub(in crate::agent) fn follow_group_traps(&mut self, now: Instant) {
        let wanted = self.proxy.memberships.groups() > 0 && !self.shutting_down;
        if !self.proxy.subscriptions.hold_group_traps(wanted) {
            return;
        }
        let mut effects = Vec::new();
        for trap in GROUP_TRAPS {
            let registry = self.proxy.subscriptions.registry_mut();
            if wanted {
                registry.subscribe(Subscriber::Core, core_filter(trap), &mut effects);
            } else {
                registry.unsubscribe(&Subscriber::Core, core_filter(trap), &mut effects);
            }
        }
        self.apply_inform_effects(now, effects);
    }

    /// Every subscription again at the master (a new master, a restart,
    /// ClientReregister).
    pub(in crate::agent) fn resubscribe_all(&mut self, now: Instant) {
        let mut effects = Vec::new();
        self.proxy
            .subscriptions
            .registry_mut()
            .reregister_all(&mut effects);
        self.apply_inform_effects(now, effects);
    }

    /// Withdraws every subscription at the master (shutdown).
    pub(in crate::agent) fn unsubscribe_all(&mut self, now: Instant) {
        let holders: Vec<Subscriber> = self
            .proxy
            .subscriptions
            .registry()
            .holdings()
            .map(|(s, _)| *s)
            .collect();
        let mut effects = Vec::new();
        // Only the filters go: Reports in flight are still delivered, and
        // requests waiting for the master still get its answer, in the
        // moment the daemon gives the withdrawals.
        let registry = self.proxy.subscriptions.registry_mut();
        for s in holders {
            registry.remove_subscriber(&s, &mut effects);
        }
        self.apply_inform_effects(now, effects);
    }

    /// Carries out what the registry asks.
    pub(in crate::agent) fn apply_inform_effects(
        &mut self,
        now: Instant,
        effects: Vec<Effect<Subscriber>>,
    ) {
        for effect in effects {
            match effect {
                Effect::Send { filter, subscribe } => {
                    let ii = filter
                        .inform_info(subscribe, 1, SUBSCRIPTION_RESP_TIME)
                        .to_wire();
                    let req = SaMadBuilder::request(Method::SET, 0, AttributeId::INFORM_INFO)
                        .record(&ii)
                        .into_bytes();
                    self.send_upstream(now, Purpose::Inform { filter, subscribe }, &req);
                }
                Effect::Confirm { subscriber, filter } => {
                    for asker in self.proxy.subscriptions.answered(subscriber, filter) {
                        self.answer_asker(&asker, MadStatus::OK);
                    }
                }
                Effect::Refuse {
                    subscriber,
                    filter,
                    reason,
                } => {
                    let status = match reason {
                        Refusal::Master(s) => MadStatus(s),
                        Refusal::NoAnswer => MadStatus::BUSY,
                    };
                    for asker in self.proxy.subscriptions.answered(subscriber, filter) {
                        self.answer_asker(&asker, status);
                    }
                    self.proxy.settle_subscriber(subscriber, Some(filter));
                    if subscriber == Subscriber::Core {
                        warn!(%status, %filter, "the master refused the agent's own subscription");
                    }
                }
            }
        }
    }

    fn answer_asker(&mut self, asker: &Asker, status: MadStatus) {
        match asker {
            Asker::Mad(request) => self.answer_inform_set(request, status),
            Asker::Local { .. } => self.answer_status(asker, status),
        }
    }

    /// Answers a Set(InformInfo) MAD as OpenSM does: GetResp with the
    /// request's InformInfo, AttributeOffset 4; an error echoes the request.
    fn answer_inform_set(&mut self, request: &SaRequest, status: MadStatus) {
        if status != MadStatus::OK {
            return self.respond_error(request, status);
        }
        let header = respond::success_header(request.header(), InformInfo::ATTRIBUTE_OFFSET);
        let data = request.data();
        let ii = data.get(..InformInfo::LEN).unwrap_or(data);
        self.outbox.mads.push_back(Transmit::reply(
            request.reply_to(),
            respond::single(&header, ii),
        ));
    }

    /// The master answered (or not) a subscription request.
    pub(in crate::agent) fn inform_answered(
        &mut self,
        now: Instant,
        filter: Filter,
        subscribe: bool,
        status: Option<MadStatus>,
    ) {
        let result = match status {
            Some(MadStatus::OK) => {
                debug!(
                    %filter,
                    subscribe, "the master confirmed a subscription change"
                );
                UpstreamResult::Accepted
            }
            Some(status) => {
                if let Some(earlier_not_logged) =
                    self.telemetry
                        .log_limit
                        .allow(now, "subscription refused", 0u32)
                {
                    warn!(
                        %filter,
                        subscribe,
                        %status,
                        earlier_not_logged,
                        "the master refused a subscription change"
                    );
                }
                UpstreamResult::Refused(status.0)
            }
            None => UpstreamResult::NoAnswer,
        };
        let mut effects = Vec::new();
        self.proxy.subscriptions.registry_mut().upstream_result(
            filter,
            subscribe,
            result,
            &mut effects,
        );
        self.apply_inform_effects(now, effects);
        if self.proxy.subscriptions.registry().has_stalled() && !self.shutting_down {
            let at = now + self.config.retry_backoff;
            self.proxy.subscriptions.retry_by(at);
        }
    }

    /// A Set(InformInfo) from a port.
    pub(in crate::agent) fn inform_info_set(&mut self, now: Instant, request: SaRequest) {
        let Some(wire) = request.record::<InformInfo>() else {
            return self.respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let ii = InformInfoRepr::parse(&wire);
        let trusted = self.trusted(request.sm_key());
        let filter = match Filter::of(&ii, trusted) {
            Ok(f) => f,
            Err(e) => {
                debug!(lid = request.from.lid, error = %e, "InformInfo refused");
                return self.respond_error(&request, MadStatus::ERR_REQ_INVALID);
            }
        };
        let Some(gid) = self.gid_of(&request.from) else {
            // OpenSM: an unknown requester LID is ERR_REQ_INVALID.
            return self.respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let subscriber = Subscriber::Mad {
            gid,
            qpn: request.from.qpn,
        };
        if ii.subscribe == 1 {
            self.proxy
                .subscriptions
                .note_address(subscriber, request.reply_to());
        }
        let subscribe = ii.subscribe == 1;
        self.subscription_request(now, subscriber, filter, subscribe, Asker::Mad(request));
    }

    /// A local program's InformInfo (subscribe or unsubscribe).
    pub(in crate::agent) fn local_inform(&mut self, now: Instant, asker: Asker, wire: &InformInfo) {
        let Some(conn) = asker.conn() else { return };
        let ii = InformInfoRepr::parse(wire);
        // Local consumers are on this node: as trusted as the agent.
        match Filter::of(&ii, true) {
            Ok(filter) => {
                let subscriber = Subscriber::Local(conn);
                self.subscription_request(now, subscriber, filter, ii.subscribe == 1, asker);
            }
            Err(_) => self.answer_status(&asker, MadStatus::ERR_REQ_INVALID),
        }
    }

    fn subscription_request(
        &mut self,
        now: Instant,
        s: Subscriber,
        filter: Filter,
        subscribe: bool,
        asker: Asker,
    ) {
        if subscribe && let Err(refusal) = self.proxy.admit_subscription(s, filter, self.owners()) {
            self.registration_refused(now, refusal);
            self.proxy.subscriptions.settle(&s);
            return self.answer_asker(&asker, MadStatus::ERR_NO_RESOURCES);
        }
        let mut effects = Vec::new();
        let reply = if subscribe {
            self.proxy
                .subscriptions
                .registry_mut()
                .subscribe(s, filter, &mut effects)
        } else {
            self.proxy
                .subscriptions
                .registry_mut()
                .unsubscribe(&s, filter, &mut effects)
        };
        match reply {
            Reply::Done => self.answer_asker(&asker, MadStatus::OK),
            Reply::Pending => {
                if let Join::Full(asker) =
                    self.proxy.subscriptions.wait_for_master(s, filter, asker)
                {
                    // The same subscription asked again and again while the
                    // master is asked: the first ones get its answer.
                    self.answer_asker(&asker, MadStatus::BUSY);
                }
            }
            // OpenSM answers an unsubscribe it cannot match this way.
            Reply::NotHeld => self.answer_asker(&asker, MadStatus::ERR_REQ_INVALID),
        }
        self.apply_inform_effects(now, effects);
        self.proxy.settle_subscriber(s, Some(filter));
        self.proxy.subscriptions.settle(&s);
    }

    /// Everything `s` holds goes: its connection closed, its lease ended,
    /// its port left the fabric.
    pub(in crate::agent) fn remove_subscriber(&mut self, now: Instant, s: Subscriber) {
        let mut effects = Vec::new();
        let n = self.proxy.subscriptions.remove(&s, &mut effects);
        self.proxy.settle_subscriber(s, None);
        if n > 0
            && let Some(earlier_not_logged) =
                self.telemetry
                    .log_limit
                    .allow(now, "subscriber removed", 0u32)
        {
            info!(
                subscriber = %s,
                subscriptions = n,
                earlier_not_logged,
                "subscriber removed"
            );
        }
        self.apply_inform_effects(now, effects);
    }

    /// The GID of the port a MAD came from: its GRH, or the port the store
    /// knows at its LID.
    fn gid_of(&self, source: &Address) -> Option<Gid> {
        if let Some(grh) = source.grh {
            return Some(grh.gid);
        }
        if self.port.lids().contains(&source.lid) {
            return Some(self.port.gid);
        }
        let (guid, _) = self.tables.paths.store.port_at(source.lid)?;
        Some(Gid::new(self.port.gid.prefix(), guid))
    }

    /// A Report from the master: answered at once, passed on once.
    pub(in crate::agent) fn report(&mut self, now: Instant, request: &SaRequest) {
        let mut resp = request.mad().to_vec();
        if let Ok((h, _)) = MadHeader::mut_from_prefix(&mut resp[..]) {
            h.set_method(Method::REPORT_RESP);
            h.set_status(MadStatus::OK);
        }
        self.outbox
            .mads
            .push_back(Transmit::reply(request.reply_to(), resp.into()));
        if request.from.lid != self.port.sm_lid {
            // Anyone can send a Report: only the master's count.
            self.telemetry.counters.denied += 1;
            let lid = request.from.lid;
            if let Some(left_out) = self.telemetry.log_limit.allow(now, "stray report", lid) {
                warn!(
                    lid,
                    master = self.port.sm_lid,
                    earlier_not_logged = left_out,
                    "a Report not from the master SM: ignored"
                );
            }
            return;
        }
        let Some(notice) = request.record::<Notice>() else {
            return;
        };
        let Some(recipients) = self.proxy.subscriptions.recipients(now, &notice) else {
            debug!("a duplicate Report of a notice already passed on");
            return;
        };
        self.telemetry.counters.notices += 1;
        for s in recipients {
            match s {
                Subscriber::Core => self.act_on_notice(now, &notice),
                Subscriber::Mad { .. } => self.send_report(now, s, notice),
                Subscriber::Local(conn) => {
                    self.outbox.local.push_back(LocalReply {
                        conn,
                        request: 0,
                        answers: None,
                        status: MadStatus::OK,
                        from_master: false,
                        body: LocalBody::Notice(notice),
                    });
                }
            }
        }
        if let TrapDetails::GidOutOfService { gid } = notice.details() {
            // OpenSM drops the subscriptions of a port that left; so do we.
            let gone: Vec<Subscriber> = self
                .proxy
                .subscriptions
                .registry()
                .holdings()
                .map(|(s, _)| *s)
                .filter(|s| matches!(s, Subscriber::Mad { gid: g, .. } if *g == gid))
                .collect();
            for s in gone {
                self.remove_subscriber(now, s);
            }
        }
    }

    fn send_report(&mut self, now: Instant, s: Subscriber, notice: Notice) {
        let Some((to, tid, ended)) = self.proxy.subscriptions.report(now, s, notice) else {
            return;
        };
        self.telemetry.counters.reports_sent += 1;
        self.outbox
            .mads
            .push_back(Transmit::reply(to, report_mad(tid, &notice)));
        if let Some(gone) = ended {
            self.lease_ended(now, gone);
        }
    }

    /// A ReportResp: true if it answered one of our Reports.
    pub(in crate::agent) fn report_resp(&mut self, tid: u32) -> bool {
        self.proxy.subscriptions.acknowledged(tid)
    }

    fn lease_ended(&mut self, now: Instant, s: Subscriber) {
        if let Some(earlier_not_logged) =
            self.telemetry
                .log_limit
                .allow(now, "subscriber silent", 0u32)
        {
            warn!(
                subscriber = %s,
                earlier_not_logged,
                "a subscriber stopped answering Reports: its subscriptions end"
            );
        }
        self.telemetry.counters.leases_ended += 1;
        self.remove_subscriber(now, s);
    }

    /// Report resends, lease ends, and subscription retries that are due.
    pub(in crate::agent) fn notices_timeout(&mut self, now: Instant) {
        for event in self.proxy.subscriptions.deliveries_due(now) {
            match event {
                DeliveryEvent::Resend {
                    subscriber,
                    tid,
                    notice,
                } => {
                    if let Some(to) = self.proxy.subscriptions.address(&subscriber) {
                        self.outbox
                            .mads
                            .push_back(Transmit::reply(to, report_mad(tid, &notice)));
                    }
                }
                DeliveryEvent::LeaseEnded { subscriber } => self.lease_ended(now, subscriber),
            }
        }
        if self.proxy.subscriptions.take_retry_due(now) {
            let mut effects = Vec::new();
            self.proxy.subscriptions.registry_mut().retry(&mut effects);
            self.apply_inform_effects(now, effects);
        }
    }

    /// What the agent does with a notice it subscribed to.
    fn act_on_notice(&mut self, now: Instant, notice: &Notice) {
        match notice.details() {
            TrapDetails::GidOutOfService { gid } => {
                let removed = self.tables.paths.store.remove_port(gid.guid())
                    + self.tables.partitions.remove_port(gid.guid());
                self.tables.paths.mark_incomplete(gid.guid());
                self.answers.forget_port(gid.guid());
                if let Some(earlier_not_logged) =
                    self.telemetry.log_limit.allow(now, "trap 65", 0u32)
                {
                    info!(%gid, removed, earlier_not_logged, "port out of service (trap 65)");
                }
            }
            TrapDetails::GidInService { gid } => {
                if let Some(earlier_not_logged) =
                    self.telemetry.log_limit.allow(now, "trap 64", 0u32)
                {
                    info!(%gid, earlier_not_logged, "port in service (trap 64)");
                }
                self.answers.forget_port(gid.guid());
                let partitions = self
                    .tables
                    .partitions
                    .tables()
                    .map(|(p, _)| TableKey::Partition(p));
                let tables: Vec<TableKey> =
                    [TableKey::Default].into_iter().chain(partitions).collect();
                for table in tables {
                    self.fetch_paths_to(now, gid, table);
                }
            }
            TrapDetails::McGroupCreated { mgid } => self.group_notice(now, mgid, true),
            TrapDetails::McGroupDeleted { mgid } => self.group_notice(now, mgid, false),
            TrapDetails::LinkStateChange { lid } => {
                self.fabric_changed(now, notice.trap_number(), lid)
            }
            _ => debug!(
                trap = %notice.trap_number(),
                "notice ignored by the agent"
            ),
        }
    }

    /// Asks the master for this port's paths to `gid` (which came into
    /// service) in table `table`. A partition table counts as incomplete
    /// until the answer is in: its paths to that port may be missing.
    fn fetch_paths_to(&mut self, now: Instant, gid: Gid, table: TableKey) {
        let purpose = Purpose::GidInService {
            guid: gid.guid(),
            table,
        };
        if self.master.requester.any_pending(|p| *p == purpose) {
            return;
        }
        let (mask, mut t) = table_query(self.port.gid, table);
        t.set_dgid(gid);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(mask | pr::DGID);
        if let TableKey::Partition(p) = table
            && let Some(t) = self.tables.partitions.table_mut(p)
        {
            t.await_fetch();
        }
        self.send_upstream(now, purpose, &b.into_bytes());
    }

    /// The paths to a port back in service, for `table`, came (or not).
    pub(in crate::agent) fn gid_in_service_answered(
        &mut self,
        guid: u64,
        table: TableKey,
        answer: Option<&Answer>,
    ) {
        let (epoch, me) = (self.tables.refresh.epoch(), self.port.gid.guid());
        let Some(t) = self.tables.table_mut(table) else {
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

    pub(in crate::agent) fn master_info_answered(&mut self, now: Instant, answer: &Answer) {
        let cpi = ClassPortInfo::parse(answer.data()).ok().copied();
        match (answer.status(), cpi) {
            (MadStatus::OK, Some(cpi)) => {
                let qos = cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0;
                debug!(qos, "master SA ClassPortInfo");
                if self.master.policy.info().is_some_and(|m| m.qos != qos) {
                    // The QoS cache's keys depend on whether the master
                    // applies QoS, and the partition tables on its policy;
                    // the next refresh (at this port's phase) fetches the
                    // tables then wanted.
                    self.answers.forget();
                    self.tables.partitions.clear();
                    self.abandon_fetches_into(|t| t != TableKey::Default);
                    let due = (self.tables.refresh.next())
                        .map_or(now, |t| t.min(now + self.refresh_delay()));
                    self.tables.refresh.schedule(Some(due));
                }
                self.master.policy.learned(MasterInfo {
                    qos,
                    sm_lid: self.port.sm_lid,
                });
            }
            _ => self.retry_registration(now),
        }
        self.release_qos_waiters(now);
    }

    /// Registers again after the back-off — except at start, where the
    /// registration follows the first refresh whatever failed before it
    /// (the ClassPortInfo asked with the table).
    pub(in crate::agent) fn retry_registration(&mut self, now: Instant) {
        if !self.shutting_down && !self.tables.refresh.registers_after() {
            let at = now + self.config.retry_backoff;
            self.proxy.schedule.register_by(at);
        }
    }

    /// InformInfoRecord Get/GetTable: about this port's subscribers it is
    /// answered here, otherwise by the master.
    pub(in crate::agent) fn inform_info_records(&mut self, now: Instant, request: SaRequest) {
        let mask = request.mask();
        let template = request.template::<InformInfoRecord>();
        let local_gids: Vec<Gid> = self.subscriber_gids();
        let about_us =
            mask.contains(iir::SUBSCRIBER_GID) && local_gids.contains(&template.subscriber_gid());
        if !about_us {
            return self.relay_upstream(now, request);
        }
        let trusted = self.trusted(request.sm_key());
        let records: Vec<InformInfoRecord> = self
            .subscription_records(trusted)
            .into_iter()
            .filter(|r| r.subscriber_gid() == template.subscriber_gid())
            .filter(|r| !mask.contains(iir::ENUM) || r.enumeration() == template.enumeration())
            .collect();
        self.answer_table(now, &request, &records);
    }

    /// Every subscription of this port, as InformInfoRecords: a MAD
    /// subscriber's under its GID, the agent's and local connections'
    /// under this port's (each distinct filter once). QPNs are shown only
    /// to trusted askers, as OpenSM does.
    pub(in crate::agent) fn subscription_records(&self, trusted: bool) -> Vec<InformInfoRecord> {
        let mut seen = std::collections::BTreeSet::new();
        for (s, filter) in self.proxy.subscriptions.registry().holdings() {
            let (gid, qpn) = match s {
                Subscriber::Mad { gid, qpn } => (*gid, *qpn),
                Subscriber::Core | Subscriber::Local(_) => (self.port.gid, 1),
            };
            seen.insert((gid, filter, qpn));
        }
        seen.into_iter()
            .map(|(gid, filter, qpn)| {
                let mut r = InformInfoRecord::new_zeroed();
                r.set_subscriber_gid(gid);
                let qpn = if trusted { qpn } else { 0 };
                r.set_inform_info(
                    filter
                        .inform_info(true, qpn, SUBSCRIPTION_RESP_TIME)
                        .to_wire(),
                );
                r
            })
            .collect()
    }

    fn subscriber_gids(&self) -> Vec<Gid> {
        let mut gids: Vec<Gid> = self
            .proxy
            .subscriptions
            .registry()
            .holdings()
            .map(|(s, _)| match s {
                Subscriber::Mad { gid, .. } => *gid,
                _ => self.port.gid,
            })
            .collect();
        gids.push(self.port.gid);
        gids.sort();
        gids.dedup();
        gids
    }
}

/// A Report of `notice` under TransactionID `tid`.
fn report_mad(tid: u32, notice: &Notice) -> bytes::Bytes {
    SaMadBuilder::request(Method::REPORT, u64::from(tid), AttributeId::NOTICE)
        .record(notice)
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_own_filters_are_the_generic_trap_subscriptions() {
        let f = core_filter(TrapNumber::GID_OUT_OF_SERVICE);
        assert_eq!(
            (f.trap_or_device, f.gid, f.lid_range_begin),
            (65, Gid::ZERO, 0xFFFF)
        );
        let ii = f.inform_info(false, 1, SUBSCRIPTION_RESP_TIME);
        assert_eq!(
            ii,
            InformInfoRepr::generic_subscription(TrapNumber(65), false, 1, SUBSCRIPTION_RESP_TIME)
        );
    }
}
