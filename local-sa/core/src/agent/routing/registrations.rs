//! `SaCore`'s side of the registration proxy: the MADs and local
//! requests that register, the master's Reports, the answers to the
//! proxy's requests — each handed to the [`RegistrationProxy`] — and its
//! [`ProxyEffect`]s carried out in order. What a notice the agent
//! subscribed to does to the tables, and what happens when the master
//! lost the port's registrations, are here too: they reach beyond the
//! proxy.
//!
//! [`RegistrationProxy`]: crate::agent::registration_proxy::RegistrationProxy

use std::time::Instant;

use bytes::Bytes;
use informinfo::Filter;
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromBytes;
use mad_codec::{
    AttributeId, ClassPortInfo, ComponentMask, Gid, InformInfo, InformInfoRecord, InformInfoRepr,
    MadHeader, MadStatus, McMemberRecord, Method, Notice, SaMadBuilder, TrapDetails,
};
use tracing::{debug, info, warn};

use crate::address::{Address, Transmit};
use crate::agent::counterparts::{Asker, Member, Subscriber};
use crate::agent::master::purpose::{CanaryStep, Purpose};
use crate::agent::registration_proxy::effect::ProxyEffect;
use crate::agent::telemetry::Warning;
use crate::agent::{MasterInfo, SaCore};
use crate::inbound::SaRequest;
use crate::memberships::{Change, JoinAnswer, OpId};
use crate::partitions::TableKey;
use crate::requester::Answer;
use crate::respond;

impl SaCore {
    /// Carries out the registration proxy's effects, in order; `master`
    /// is the master's answer that led to them, if one did (a join's
    /// answer passes it on as it came).
    pub(in crate::agent) fn carry_out(
        &mut self,
        now: Instant,
        effects: impl IntoIterator<Item = ProxyEffect>,
        master: Option<&Bytes>,
    ) {
        for effect in effects {
            match effect {
                ProxyEffect::Send { purpose, request } => {
                    self.send_upstream(now, purpose, &request)
                }
                ProxyEffect::AnswerInform { asker, status } => self.answer_inform(&asker, status),
                ProxyEffect::AnswerJoin { asker, answer } => {
                    self.answer_membership(&asker, answer, master)
                }
                ProxyEffect::Transmit(t) => self.outbox.mads.push_back(t),
                ProxyEffect::Local(reply) => self.outbox.local.push_back(reply),
                ProxyEffect::Notice(notice) => self.act_on_notice(now, &notice),
                ProxyEffect::RetryRegistration => self.retry_registration(now),
                ProxyEffect::MasterLostState => self.master_lost_state(now),
            }
        }
    }

    /// The agent's own registrations: the master's ClassPortInfo, its
    /// subscriptions, its canary.
    pub(in crate::agent) fn register(&mut self, now: Instant) {
        self.ask_master_info(now);
        let subscriptions = self.proxy.subscribe_own();
        self.carry_out(now, subscriptions, None);
        let canary = self.proxy.register_canary(|p| self.master.asking(p));
        self.carry_out(now, canary, None);
    }

    /// Asks the master's ClassPortInfo unless this master's is known or
    /// asked: until one says whether the master applies QoS, queries
    /// naming a P_Key, SL, ServiceID, QoS class or TClass (every ibacm and
    /// kernel query) go to the master.
    pub(in crate::agent) fn ask_master_info(&mut self, now: Instant) {
        let known = (self.master.info()).is_some_and(|m| m.sm_lid == self.port.sm_lid);
        if !known && !self.master.asking(&Purpose::MasterInfo) {
            let req =
                SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
            self.send_upstream(now, Purpose::MasterInfo, &req);
        }
    }

    /// The canary's audit, when due.
    pub(in crate::agent) fn audit(&mut self, now: Instant) {
        let audit = self.proxy.audit(now, |p| self.master.asking(p));
        self.carry_out(now, audit, None);
    }

    /// The master answered (or not) a canary request.
    pub(in crate::agent) fn canary_answered(
        &mut self,
        now: Instant,
        step: CanaryStep,
        status: Option<MadStatus>,
    ) {
        let next = (self.proxy).canary_answered(now, step, status, |p| self.master.asking(p));
        self.carry_out(now, next, None);
    }

    /// The master answered (or not) a subscription request.
    pub(in crate::agent) fn inform_answered(
        &mut self,
        now: Instant,
        filter: Filter,
        subscribe: bool,
        status: Option<MadStatus>,
    ) {
        let effects = self.proxy.inform_answered(now, filter, subscribe, status);
        self.carry_out(now, effects, None);
    }

    /// The master answered a membership request, or did not (`None`).
    pub(in crate::agent) fn membership_answered(
        &mut self,
        now: Instant,
        op: OpId,
        answer: Option<&Answer>,
    ) {
        let effects = self.proxy.membership_answered(now, op, answer);
        self.carry_out(now, effects, answer.map(Answer::mad));
    }

    /// Everything a subscriber and a member hold goes (a local
    /// connection closed).
    pub(in crate::agent) fn release_registrations(
        &mut self,
        now: Instant,
        subscriber: Subscriber,
        member: Member,
    ) {
        let subscriptions = self.proxy.remove_subscriber(now, subscriber);
        self.carry_out(now, subscriptions, None);
        let memberships = self.proxy.remove_member(now, member);
        self.carry_out(now, memberships, None);
    }

    /// A Set(InformInfo) from a port.
    pub(in crate::agent) fn inform_info_set(&mut self, now: Instant, request: SaRequest) {
        let Some(wire) = request.record::<InformInfo>() else {
            return self
                .reply()
                .respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let ii = InformInfoRepr::parse(&wire);
        let trusted = self.trusted(request.sm_key());
        let filter = match Filter::of(&ii, trusted) {
            Ok(f) => f,
            Err(e) => {
                debug!(lid = request.from.lid, error = %e, "InformInfo refused");
                return self
                    .reply()
                    .respond_error(&request, MadStatus::ERR_REQ_INVALID);
            }
        };
        let Some(gid) = self.gid_of(&request.from) else {
            // OpenSM: an unknown requester LID is ERR_REQ_INVALID.
            return self
                .reply()
                .respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let subscriber = Subscriber::Mad {
            gid,
            qpn: request.from.qpn,
        };
        let subscribe = ii.subscribe == 1;
        if subscribe {
            self.proxy.note_address(subscriber, request.reply_to());
        }
        let asker = Asker::Mad(request);
        let effects = (self.proxy).subscription_request(now, subscriber, filter, subscribe, asker);
        self.carry_out(now, effects, None);
    }

    /// A local program's InformInfo (subscribe or unsubscribe).
    pub(in crate::agent) fn local_inform(&mut self, now: Instant, asker: Asker, wire: &InformInfo) {
        let Some(conn) = asker.conn() else { return };
        let ii = InformInfoRepr::parse(wire);
        // Local consumers are on this node: as trusted as the agent.
        let Ok(filter) = Filter::of(&ii, true) else {
            return self
                .reply()
                .answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        };
        let s = Subscriber::Local(conn);
        let effects = (self.proxy).subscription_request(now, s, filter, ii.subscribe == 1, asker);
        self.carry_out(now, effects, None);
    }

    /// Answers a subscribe or unsubscribe: a Set(InformInfo) MAD as
    /// OpenSM does (GetResp with the request's InformInfo, AttributeOffset
    /// 4; an error echoes the request), a local program with the status.
    fn answer_inform(&mut self, asker: &Asker, status: MadStatus) {
        let Asker::Mad(request) = asker else {
            return self.reply().answer_status(asker, status);
        };
        if status != MadStatus::OK {
            return self.reply().respond_error(request, status);
        }
        let header = respond::success_header(request.header(), InformInfo::ATTRIBUTE_OFFSET);
        let data = request.data();
        let ii = data.get(..InformInfo::LEN).unwrap_or(data);
        self.outbox.mads.push_back(Transmit::reply(
            request.reply_to(),
            respond::single(&header, ii),
        ));
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
        let (guid, _) = self.tables.port_at(source.lid)?;
        Some(Gid::new(self.port.gid.prefix(), guid))
    }

    /// A Report: answered at once; the master's passed on once.
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
            if let Some(left_out) = self
                .telemetry
                .log_limit
                .allow(now, Warning::StrayReport, lid)
            {
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
        let effects = self.proxy.notice(now, notice);
        self.carry_out(now, effects, None);
    }

    /// What the agent does with a notice it subscribed to.
    fn act_on_notice(&mut self, now: Instant, notice: &Notice) {
        match notice.details() {
            TrapDetails::GidOutOfService { gid } => {
                let removed = self.tables.port_left(gid.guid());
                self.answers.forget_port(gid.guid());
                if let Some(earlier_not_logged) =
                    self.telemetry.log_limit.allow(now, Warning::PortGone, 0u32)
                {
                    info!(%gid, removed, earlier_not_logged, "port out of service (trap 65)");
                }
            }
            TrapDetails::GidInService { gid } => {
                if let Some(earlier_not_logged) =
                    self.telemetry.log_limit.allow(now, Warning::PortCame, 0u32)
                {
                    info!(%gid, earlier_not_logged, "port in service (trap 64)");
                }
                self.answers.forget_port(gid.guid());
                for table in self.tables.tables_for_new_port() {
                    self.fetch_paths_to(now, gid, table);
                }
            }
            TrapDetails::McGroupCreated { mgid } => {
                let effects = self.proxy.group_notice(now, mgid, true);
                self.carry_out(now, effects, None);
            }
            TrapDetails::McGroupDeleted { mgid } => {
                let effects = self.proxy.group_notice(now, mgid, false);
                self.carry_out(now, effects, None);
            }
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
    /// service) in `table`, unless that is being asked.
    fn fetch_paths_to(&mut self, now: Instant, gid: Gid, table: TableKey) {
        let purpose = Purpose::GidInService {
            guid: gid.guid(),
            table,
        };
        if self.master.asking(&purpose) {
            return;
        }
        let request = self.tables.port_paths_request(self.port.gid, gid, table);
        self.send_upstream(now, purpose, &request);
    }

    /// The master's ClassPortInfo came (or the master did not say).
    pub(in crate::agent) fn master_info_answered(&mut self, now: Instant, answer: &Answer) {
        let cpi = ClassPortInfo::parse(answer.data()).ok().copied();
        match (answer.status(), cpi) {
            (MadStatus::OK, Some(cpi)) => {
                let qos = cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0;
                debug!(qos, "master SA ClassPortInfo");
                if self.master.info().is_some_and(|m| m.qos != qos) {
                    // The QoS cache's keys depend on whether the master
                    // applies QoS, and the partition tables on its policy;
                    // the next refresh (at this port's phase) fetches the
                    // tables then wanted.
                    self.answers.forget();
                    self.tables.clear_partitions();
                    self.abandon_fetches_into(|t| t != TableKey::Default);
                    self.tables.refresh_by_phase(now);
                }
                self.master.learned(MasterInfo {
                    qos,
                    sm_lid: self.port.sm_lid,
                });
                self.tables_know(now);
            }
            _ => self.retry_registration(now),
        }
        self.release_qos_waiters(now);
    }

    /// Registers again after the back-off — except at start, where the
    /// registration follows the first refresh whatever failed before it
    /// (the ClassPortInfo asked with the table).
    pub(in crate::agent) fn retry_registration(&mut self, now: Instant) {
        if !self.shutting_down && !self.tables.registers_after() {
            let at = now + self.config.retry_backoff;
            self.proxy.register_by(at);
        }
    }

    /// Registers (or renews) this port's directory record, unless that
    /// is being asked.
    pub(in crate::agent) fn send_publication(&mut self, now: Instant) {
        let purpose = Purpose::Publish { register: true };
        if self.master.asking(&purpose) {
            return;
        }
        let interval = self.config.refresh_interval;
        if let Some(request) = self.naming.publication_request(self.port.gid, interval) {
            self.send_upstream(now, purpose, &request);
        }
    }

    /// Withdraws this port's directory record if the master holds it.
    pub(in crate::agent) fn withdraw_publication(&mut self, now: Instant) {
        if let Some(request) = self.naming.withdrawal_request(self.port.gid) {
            self.send_upstream(now, Purpose::Publish { register: false }, &request);
        }
    }

    /// Everything the master held for this port is gone: subscriptions,
    /// memberships, the canary, and (perhaps) its view of the paths.
    fn master_lost_state(&mut self, now: Instant) {
        info!(
            master = self.port.sm_lid,
            "the master SA lost this port's registrations (restarted?): registering again"
        );
        self.master.forget_info();
        self.tables_know(now);
        self.proxy.register_at(Some(now));
        let again = now + self.reregister_delay();
        self.proxy.reregister_at(Some(again));
        self.tables.refresh_at_phase(now);
        self.naming.keep_after_next_refresh(true);
    }

    /// InformInfoRecord Get/GetTable: about this port's subscribers it is
    /// answered here, otherwise by the master.
    pub(in crate::agent) fn inform_info_records(&mut self, now: Instant, request: SaRequest) {
        let template = request.template::<InformInfoRecord>();
        let trusted = self.trusted(request.sm_key());
        match (self.proxy).inform_info_records(&template, request.mask(), trusted) {
            Some(records) => self.reply().answer_table(now, &request, &records),
            None => self.relay_upstream(now, request),
        }
    }

    /// A Set (join) or Delete (leave) of an MCMemberRecord MAD.
    pub(in crate::agent) fn membership_mad(&mut self, now: Instant, request: SaRequest) {
        if !self.port.lids().contains(&request.from.lid) {
            // Members are this port's processes; another port joins
            // through its own SA.
            debug!(
                lid = request.from.lid,
                "a join or leave from another port: refused"
            );
            return self
                .reply()
                .respond_error(&request, MadStatus::ERR_REQ_INVALID);
        }
        let Some(record) = request.record::<McMemberRecord>() else {
            return self
                .reply()
                .respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let (join, mask) = (request.method() == Method::SET, request.mask());
        let asker = Asker::Mad(request);
        let change = Change {
            join,
            member: asker.member(),
            renews: true,
            mask,
            record,
            asker,
            may_create: false,
        };
        let effects = self.proxy.membership_change(now, change);
        self.carry_out(now, effects, None);
    }

    /// A local program's join or leave.
    pub(in crate::agent) fn local_membership(
        &mut self,
        now: Instant,
        asker: Asker,
        join: bool,
        mask: ComponentMask,
        mut record: McMemberRecord,
    ) {
        let Some(conn) = asker.conn() else { return };
        // A local program joins as this port, whatever it filled in.
        record.set_port_gid(self.port.gid);
        let change = Change {
            join,
            member: Member::Local(conn),
            renews: false,
            asker,
            mask: mask | mc::PORT_GID,
            record,
            may_create: false,
        };
        let effects = self.proxy.membership_change(now, change);
        self.carry_out(now, effects, None);
    }

    /// Answers a join or a leave: a record, the master's answer passed on
    /// as it came, or a status.
    fn answer_membership(&mut self, asker: &Asker, answer: JoinAnswer, master: Option<&Bytes>) {
        match (answer, asker, master) {
            (JoinAnswer::Joined(r) | JoinAnswer::Left(r), _, _) => {
                self.reply().answer_record(asker, &r)
            }
            (JoinAnswer::Master { .. }, Asker::Mad(request), Some(mad)) => {
                self.reply().relay_to(request, mad)
            }
            (
                JoinAnswer::Master {
                    record: Some(r), ..
                },
                _,
                _,
            ) => self.reply().answer_record(asker, &r),
            (JoinAnswer::Master { status, .. } | JoinAnswer::Refused(status), _, _) => {
                self.reply().answer_status(asker, status)
            }
        }
    }

    /// MCMemberRecord Get/GetTable: about a group this port holds, answered
    /// here; otherwise by the master.
    pub(in crate::agent) fn member_records(&mut self, now: Instant, request: SaRequest) {
        let Some(template) = request.record::<McMemberRecord>() else {
            return self.relay_upstream(now, request);
        };
        let trusted = self.trusted(request.sm_key());
        match self.proxy.member_record(&template, request.mask(), trusted) {
            Some(record) => self.reply().answer_table(now, &request, &[record]),
            None => self.relay_upstream(now, request),
        }
    }
}
