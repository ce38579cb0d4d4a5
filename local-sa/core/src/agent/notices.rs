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

use std::collections::HashMap;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use informinfo::{
    Deliveries, DeliveryConfig, DeliveryEvent, Duplicates, Effect, Filter, Refusal, Registry,
    Reply, UpstreamResult,
};
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::inform_info_record::mask as iir;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfo, Gid, InformInfo, InformInfoRecord, InformInfoRepr, MadHeader,
    MadStatus, Method, Notice, PathRecord, SaMad, SaMadBuilder, TrapDetails, TrapNumber,
};
use tracing::{debug, info, warn};

use super::local::{ConnId, LocalBody, LocalReply};
use super::upstream::Purpose;
use super::{Asker, SaCore, Transmit, records_data, respond};
use umad::MadAddress;

/// RespTimeValue of the agent's subscriptions (2^19 × 4.096 µs ≈ 2 s).
const SUBSCRIPTION_RESP_TIME: u8 = 19;

/// The traps the agent itself subscribes to.
const CORE_TRAPS: [TrapNumber; 2] = [TrapNumber::GID_IN_SERVICE, TrapNumber::GID_OUT_OF_SERVICE];

/// How long duplicate Reports of one notice are expected.
const DUPLICATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

/// Who holds a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subscriber {
    /// The agent itself.
    Core,
    /// A port that subscribed with a MAD, known by its GID and QP.
    Mad {
        /// The subscriber port's GID.
        gid: Gid,
        /// The QP its Set came from (where its Reports go).
        qpn: u32,
    },
    /// A local API connection.
    Local(ConnId),
}

/// The agent's notice and subscription state.
#[derive(Debug)]
pub(crate) struct Notices {
    pub(crate) registry: Registry<Subscriber>,
    duplicates: Duplicates,
    deliveries: Deliveries<Subscriber>,
    /// Where each MAD subscriber's Reports go.
    addresses: HashMap<Subscriber, MadAddress>,
    /// Requests waiting for the master's answer.
    waiting: HashMap<(Subscriber, Filter), Vec<Asker>>,
    /// When unanswered subscription requests are tried again.
    next_retry: Option<Instant>,
}

impl Notices {
    pub(crate) fn new(delivery: DeliveryConfig) -> Self {
        Self {
            registry: Registry::new(),
            duplicates: Duplicates::new(DUPLICATE_WINDOW, 4096),
            // Report TIDs have the top bit set; requests to the master
            // do not.
            deliveries: Deliveries::new(delivery, 0x8000_0000),
            addresses: HashMap::new(),
            waiting: HashMap::new(),
            next_retry: None,
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        [self.deliveries.poll_timeout(), self.next_retry]
            .into_iter()
            .flatten()
            .min()
    }

    /// Reports to MAD subscribers waiting for their ReportResp.
    pub(crate) fn reports_in_flight(&self) -> usize {
        self.deliveries.in_flight()
    }
}

/// The filter of the agent's own subscription to `trap`.
fn core_filter(trap: TrapNumber) -> Filter {
    let ii = InformInfoRepr::generic_subscription(trap, true, 1, SUBSCRIPTION_RESP_TIME);
    Filter::of(&ii, true)
        .unwrap_or_else(|_| unreachable!("a generic trap 64/65 subscription is valid"))
}

impl SaCore {
    /// Asks the master what it supports and subscribes the agent to traps
    /// 64 and 65.
    pub(super) fn register(&mut self, now: Instant) {
        if self.master_qos.is_none() && !self.upstream.is_pending(&Purpose::MasterInfo) {
            let req =
                SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
            self.send_upstream(now, Purpose::MasterInfo, &req);
        }
        let mut effects = Vec::new();
        for trap in CORE_TRAPS {
            self.notices
                .registry
                .subscribe(Subscriber::Core, core_filter(trap), &mut effects);
        }
        self.apply_inform_effects(now, effects);
    }

    /// Every subscription again at the master (a new master, a restart,
    /// ClientReregister).
    pub(super) fn resubscribe_all(&mut self, now: Instant) {
        let mut effects = Vec::new();
        self.notices.registry.reregister_all(&mut effects);
        self.apply_inform_effects(now, effects);
    }

    /// Withdraws every subscription at the master (shutdown).
    pub(super) fn unsubscribe_all(&mut self, now: Instant) {
        let holders: Vec<Subscriber> = self.notices.registry.holdings().map(|(s, _)| *s).collect();
        let mut effects = Vec::new();
        for s in holders {
            self.notices.registry.remove_subscriber(&s, &mut effects);
        }
        self.apply_inform_effects(now, effects);
    }

    /// Carries out what the registry asks.
    fn apply_inform_effects(&mut self, now: Instant, effects: Vec<Effect<Subscriber>>) {
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
                    for asker in self
                        .notices
                        .waiting
                        .remove(&(subscriber, filter))
                        .unwrap_or_default()
                    {
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
                    for asker in self
                        .notices
                        .waiting
                        .remove(&(subscriber, filter))
                        .unwrap_or_default()
                    {
                        self.answer_asker(&asker, status);
                    }
                    if subscriber == Subscriber::Core {
                        warn!(%status, ?filter, "the master refused the agent's own subscription");
                    }
                }
            }
        }
    }

    fn answer_asker(&mut self, asker: &Asker, status: MadStatus) {
        match asker {
            Asker::Mad { address, request } => self.answer_inform_set(address, request, status),
            Asker::Local { .. } => self.answer_status(asker, status),
        }
    }

    /// Answers a Set(InformInfo) MAD as OpenSM does: GetResp with the
    /// request's InformInfo, AttributeOffset 4; an error echoes the request.
    fn answer_inform_set(&mut self, to: &MadAddress, request: &[u8], status: MadStatus) {
        if status != MadStatus::OK {
            return self.respond_error(to, request, status);
        }
        let Ok((h, data)) = SaMadHeader::parse(request) else {
            return;
        };
        let header = respond::success_header(h, InformInfo::ATTRIBUTE_OFFSET);
        let ii = data.get(..InformInfo::LEN).unwrap_or(data);
        self.out
            .push_back(Transmit::reply(to.reply(), respond::single(&header, ii)));
    }

    /// The master answered (or not) a subscription request.
    pub(super) fn inform_answered(
        &mut self,
        now: Instant,
        filter: Filter,
        subscribe: bool,
        mad: Option<&[u8]>,
    ) {
        let result = match mad
            .map(|m| SaMad::parse(m).map_or(MadStatus::ERR_REQ_INVALID, |m| m.mad().status()))
        {
            Some(MadStatus::OK) => {
                debug!(
                    ?filter,
                    subscribe, "the master confirmed a subscription change"
                );
                UpstreamResult::Accepted
            }
            Some(status) => {
                warn!(?filter, subscribe, %status, "the master refused a subscription change");
                UpstreamResult::Refused(status.0)
            }
            None => UpstreamResult::NoAnswer,
        };
        let mut effects = Vec::new();
        self.notices
            .registry
            .upstream_result(filter, subscribe, result, &mut effects);
        self.apply_inform_effects(now, effects);
        if self.notices.registry.has_stalled() && !self.shutting_down {
            let at = now + self.config.retry_backoff;
            self.notices.next_retry = Some(self.notices.next_retry.map_or(at, |t| t.min(at)));
        }
    }

    /// A Set(InformInfo) from a port.
    pub(super) fn inform_info_set(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let Ok(wire) = m.record::<InformInfo>() else {
            return self.respond_error(source, mad, MadStatus::ERR_REQ_INVALID);
        };
        let ii = InformInfoRepr::parse(wire);
        let trusted = m.sa().sm_key() == self.config.sm_key;
        let filter = match Filter::of(&ii, trusted) {
            Ok(f) => f,
            Err(e) => {
                debug!(lid = source.lid, error = %e, "InformInfo refused");
                return self.respond_error(source, mad, MadStatus::ERR_REQ_INVALID);
            }
        };
        let Some(gid) = self.gid_of(source) else {
            // OpenSM: an unknown requester LID is ERR_REQ_INVALID.
            return self.respond_error(source, mad, MadStatus::ERR_REQ_INVALID);
        };
        let subscriber = Subscriber::Mad {
            gid,
            qpn: source.qpn,
        };
        let asker = Asker::Mad {
            address: *source,
            request: Bytes::copy_from_slice(mad),
        };
        if ii.subscribe == 1 {
            self.notices.addresses.insert(subscriber, source.reply());
        }
        self.subscription_request(now, subscriber, filter, ii.subscribe == 1, asker);
    }

    /// A local connection's InformInfo (subscribe or unsubscribe).
    pub(super) fn local_inform(&mut self, now: Instant, conn: ConnId, id: u32, wire: &InformInfo) {
        let ii = InformInfoRepr::parse(wire);
        // Local consumers are on this node: as trusted as the agent.
        match Filter::of(&ii, true) {
            Ok(filter) => {
                let asker = Asker::Local { conn, id };
                self.subscription_request(
                    now,
                    Subscriber::Local(conn),
                    filter,
                    ii.subscribe == 1,
                    asker,
                );
            }
            Err(_) => self.answer_status(&Asker::Local { conn, id }, MadStatus::ERR_REQ_INVALID),
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
        let mut effects = Vec::new();
        let reply = if subscribe {
            self.notices.registry.subscribe(s, filter, &mut effects)
        } else {
            self.notices.registry.unsubscribe(&s, filter, &mut effects)
        };
        match reply {
            Reply::Done => self.answer_asker(&asker, MadStatus::OK),
            Reply::Pending => self
                .notices
                .waiting
                .entry((s, filter))
                .or_default()
                .push(asker),
            // OpenSM answers an unsubscribe it cannot match this way.
            Reply::NotHeld => self.answer_asker(&asker, MadStatus::ERR_REQ_INVALID),
        }
        self.apply_inform_effects(now, effects);
        if !subscribe && self.notices.registry.holdings().all(|(h, _)| *h != s) {
            self.notices.addresses.remove(&s);
            self.notices.deliveries.forget(&s);
        }
    }

    /// Everything `s` holds goes: its connection closed, its lease ended,
    /// its port left the fabric.
    pub(super) fn remove_subscriber(&mut self, now: Instant, s: Subscriber) {
        let mut effects = Vec::new();
        let n = self.notices.registry.remove_subscriber(&s, &mut effects);
        self.notices.addresses.remove(&s);
        self.notices.deliveries.forget(&s);
        self.notices.waiting.retain(|(w, _), _| *w != s);
        if n > 0 {
            info!(subscriber = ?s, subscriptions = n, "subscriber removed");
        }
        self.apply_inform_effects(now, effects);
    }

    /// The GID of the port a MAD came from: its GRH, or the port the store
    /// knows at its LID.
    fn gid_of(&self, source: &MadAddress) -> Option<Gid> {
        if let Some(grh) = source.grh {
            return Some(grh.gid);
        }
        if self.port.lids().contains(&source.lid) {
            return Some(self.port.gid);
        }
        let (guid, _) = self.store.port_at(source.lid)?;
        Some(Gid::new(self.port.gid.prefix(), guid))
    }

    /// A Report from the master: answered at once, passed on once.
    pub(super) fn report(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let mut resp = BytesMut::from(mad);
        if let Ok((h, _)) = MadHeader::mut_from_prefix(&mut resp[..]) {
            h.set_method(Method::REPORT_RESP);
            h.set_status(MadStatus::OK);
        }
        self.out
            .push_back(Transmit::reply(source.reply(), resp.freeze()));
        if source.lid != self.port.sm_lid {
            // Anyone can send a Report: only the master's count.
            self.counters.denied += 1;
            warn!(
                lid = source.lid,
                master = self.port.sm_lid,
                "a Report not from the master SM: ignored"
            );
            return;
        }
        let Ok(notice) = SaMad::parse(mad).and_then(|m| m.record::<Notice>().copied()) else {
            return;
        };
        let (recipients, copies) = self.notices.registry.recipients(&notice);
        if !self.notices.duplicates.first_copy(now, &notice, copies) {
            debug!("a duplicate Report of a notice already passed on");
            return;
        }
        self.counters.notices += 1;
        for s in recipients {
            match s {
                Subscriber::Core => self.act_on_notice(now, &notice),
                Subscriber::Mad { .. } => self.send_report(now, s, notice),
                Subscriber::Local(conn) => {
                    self.local_out.push_back(LocalReply {
                        conn,
                        request: 0,
                        status: MadStatus::OK,
                        body: LocalBody::Notice(notice),
                    });
                }
            }
        }
        if let TrapDetails::GidOutOfService { gid } = notice.details() {
            // OpenSM drops the subscriptions of a port that left; so do we.
            let gone: Vec<Subscriber> = self
                .notices
                .registry
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
        let Some(to) = self.notices.addresses.get(&s).copied() else {
            return;
        };
        let (tid, ended) = self.notices.deliveries.send(now, s, notice);
        self.counters.reports_sent += 1;
        self.out
            .push_back(Transmit::reply(to, report_mad(tid, &notice)));
        if let Some(gone) = ended {
            self.lease_ended(now, gone);
        }
    }

    /// A ReportResp: true if it answered one of our Reports.
    pub(super) fn report_resp(&mut self, tid: u32) -> bool {
        self.notices.deliveries.acknowledged(tid).is_some()
    }

    fn lease_ended(&mut self, now: Instant, s: Subscriber) {
        warn!(subscriber = ?s, "a subscriber stopped answering Reports: its subscriptions end");
        self.counters.leases_ended += 1;
        self.remove_subscriber(now, s);
    }

    /// Report resends, lease ends, and subscription retries that are due.
    pub(super) fn notices_timeout(&mut self, now: Instant) {
        for event in self.notices.deliveries.handle_timeout(now) {
            match event {
                DeliveryEvent::Resend {
                    subscriber,
                    tid,
                    notice,
                } => {
                    if let Some(to) = self.notices.addresses.get(&subscriber).copied() {
                        self.out
                            .push_back(Transmit::reply(to, report_mad(tid, &notice)));
                    }
                }
                DeliveryEvent::LeaseEnded { subscriber } => self.lease_ended(now, subscriber),
            }
        }
        if self.notices.next_retry.is_some_and(|t| t <= now) {
            self.notices.next_retry = None;
            let mut effects = Vec::new();
            self.notices.registry.retry(&mut effects);
            self.apply_inform_effects(now, effects);
        }
    }

    /// What the agent does with a notice it subscribed to.
    fn act_on_notice(&mut self, now: Instant, notice: &Notice) {
        match notice.details() {
            TrapDetails::GidOutOfService { gid } => {
                let removed = self.store.remove_port(gid.guid());
                self.complete_sources.remove(&gid.guid());
                self.forwarding.forget_answers();
                info!(%gid, removed, "port out of service (trap 65)");
            }
            TrapDetails::GidInService { gid } => {
                info!(%gid, "port in service (trap 64)");
                let purpose = Purpose::GidInService { guid: gid.guid() };
                if self.upstream.is_pending(&purpose) {
                    return;
                }
                let mut t = PathRecord::new_zeroed();
                t.set_sgid(self.port.gid);
                t.set_dgid(gid);
                let mut b = SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD)
                    .record(&t);
                b.header_mut().sa.set_component_mask(pr::SGID | pr::DGID);
                self.forwarding.forget_answers();
                self.send_upstream(now, purpose, &b.into_bytes());
            }
            other => debug!(?other, "notice ignored by the agent"),
        }
    }

    pub(super) fn gid_in_service_answered(&mut self, mad: &[u8], guid: u64, truncated: bool) {
        let Ok(m) = SaMad::parse(mad) else { return };
        if m.mad().status() != MadStatus::OK {
            return;
        }
        let data = records_data(&m, self.cut_at(truncated));
        let mut added = 0;
        for r in mad_codec::Records::<PathRecord>::with_standard_stride(&data) {
            self.store.insert(*r, self.epoch);
            added += 1;
        }
        debug!(
            guid = format_args!("{guid:#x}"),
            added, "paths to a port back in service"
        );
    }

    pub(super) fn master_info_answered(&mut self, now: Instant, mad: &[u8]) {
        match SaMad::parse(mad)
            .and_then(|m| m.record::<ClassPortInfo>().map(|c| (m.mad().status(), *c)))
        {
            Ok((MadStatus::OK, cpi)) => {
                let qos = cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0;
                debug!(qos, "master SA ClassPortInfo");
                self.master_qos = Some(qos);
            }
            _ => self.retry_registration(now),
        }
    }

    pub(super) fn retry_registration(&mut self, now: Instant) {
        if !self.shutting_down {
            let at = now + self.config.retry_backoff;
            self.next_registration = Some(self.next_registration.map_or(at, |t| t.min(at)));
        }
    }

    /// InformInfoRecord Get/GetTable: about this port's subscribers it is
    /// answered here, otherwise by the master.
    pub(super) fn inform_info_records(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let mask = m.sa().component_mask();
        let mut template = InformInfoRecord::new_zeroed();
        let n = m.data().len().min(InformInfoRecord::LEN);
        template.as_mut_bytes()[..n].copy_from_slice(&m.data()[..n]);
        let local_gids: Vec<Gid> = self.subscriber_gids();
        let about_us =
            mask.contains(iir::SUBSCRIBER_GID) && local_gids.contains(&template.subscriber_gid());
        if !about_us {
            return self.relay_upstream(now, source, mad);
        }
        let trusted = m.sa().sm_key() == self.config.sm_key;
        let records: Vec<InformInfoRecord> = self
            .subscription_records(trusted)
            .into_iter()
            .filter(|r| r.subscriber_gid() == template.subscriber_gid())
            .filter(|r| !mask.contains(iir::ENUM) || r.enumeration() == template.enumeration())
            .collect();
        self.answer_table(now, source, mad, &records);
    }

    /// Every subscription of this port, as InformInfoRecords: a MAD
    /// subscriber's under its GID, the agent's and local connections'
    /// under this port's (each distinct filter once). QPNs are shown only
    /// to trusted askers, as OpenSM does.
    pub(super) fn subscription_records(&self, trusted: bool) -> Vec<InformInfoRecord> {
        let mut seen = std::collections::BTreeSet::new();
        for (s, filter) in self.notices.registry.holdings() {
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
            .notices
            .registry
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
fn report_mad(tid: u32, notice: &Notice) -> Bytes {
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
