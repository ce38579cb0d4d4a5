//! The SA agent's logic, without I/O: a state machine fed MADs and the
//! time, producing MADs to send (quinn-proto's shape).
//!
//! * [`SaCore::handle_mad`] with every MAD the port receives;
//! * [`SaCore::poll_transmit`] until it returns `None`, after every call;
//! * [`SaCore::handle_timeout`] at [`SaCore::poll_timeout`];
//! * [`SaCore::handle_port_change`] when the port's LID or SM changes.
//!
//! The agent answers PathRecord Get/GetTable from its [`PathStore`],
//! forwards what it cannot answer to the master SA (coalescing identical
//! queries, keeping answers for a while), keeps the store filled (a bulk
//! GetTable of this port's paths at start, on SM change and periodically,
//! falling back to per-destination queries when the bulk answer comes back
//! cut; traps 64/65 for ports coming and going), accepts PathRecord loads
//! and deletes carrying the configured SM_Key, and answers ClassPortInfo.
//! Anything else gets MAD status 0x000C.

pub mod counters;
mod forward;
pub mod fuzzing;
mod loads;
pub mod path_query;
mod refresh;
mod respond;
#[cfg(test)]
mod tests;
mod transfers;
mod upstream;

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::class_port_info::{cap2, duration_to_resp_time_value};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::records::SaRecord;
use mad_codec::rmpp::RmppConfig;
use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, Gid, InformInfoRepr, MAD_LEN, MadHeader,
    MadStatus, Method, MgmtClass, Notice, PathRecord, SaMad, SaMadBuilder, TrapDetails, TrapNumber,
};
use tracing::{debug, info, warn};

pub use counters::Counters;

use self::forward::{Answer, Forwarding, QueryKey, Waiter};
use self::path_query::{Knowledge, Outcome};
use self::refresh::RefreshState;
use self::transfers::{Event, Transfers};
use self::upstream::{Purpose, Reply, Upstream, UpstreamConfig};
use crate::store::{Epoch, FastSet, PathStore};
use crate::umad::MadAddress;

/// A MAD to put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where it goes.
    pub dest: MadAddress,
    /// The MAD (up to 256 bytes; shorter ones are answers at their exact
    /// length).
    pub mad: Bytes,
    /// For requests: how long the kernel should wait for the answer.
    pub timeout_ms: u32,
}

impl Transmit {
    /// An answer or control MAD: nothing to wait for.
    pub(crate) fn reply(dest: MadAddress, mad: Bytes) -> Self {
        Self {
            dest,
            mad,
            timeout_ms: 0,
        }
    }
}

/// This port, as the agent needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortIdentity {
    /// Base LID.
    pub lid: u16,
    /// LID mask count.
    pub lmc: u8,
    /// GID index 0.
    pub gid: Gid,
    /// The master SM's LID (where the master SA is).
    pub sm_lid: u16,
    /// SL to reach it.
    pub sm_sl: u8,
}

impl PortIdentity {
    fn lids(&self) -> std::ops::RangeInclusive<u16> {
        let span = (1u16 << self.lmc.min(7)) - 1;
        self.lid..=self.lid.saturating_add(span)
    }

    fn master(&self) -> MadAddress {
        MadAddress::gsi(self.sm_lid, self.sm_sl)
    }
}

/// How the agent behaves.
#[derive(Debug, Clone, Copy)]
pub struct AgentConfig {
    /// The SM_Key that loads and deletes must carry.
    pub sm_key: u64,
    /// How long each request to the master waits for its answer.
    pub upstream_timeout: Duration,
    /// Attempts after the first for requests to the master.
    pub upstream_retries: u32,
    /// How often this port's paths are refreshed from the master.
    pub refresh_interval: Duration,
    /// How long a refresh or subscription that failed waits to try again.
    pub retry_backoff: Duration,
    /// How long the master's answer to a forwarded query is reused.
    pub answer_ttl: Duration,
    /// How long a forwarded query's "no such record" is reused.
    pub negative_ttl: Duration,
    /// Most forwarded answers kept.
    pub max_cached_answers: usize,
    /// Per-destination queries in flight during a refresh walk.
    pub walk_window: usize,
    /// LIDs past the highest one found after which a walk stops.
    pub walk_gap: u16,
    /// RMPP timers and limits (loads, answers, upstream tables).
    pub rmpp: RmppConfig,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            sm_key: 1,
            upstream_timeout: Duration::from_millis(1000),
            upstream_retries: 3,
            refresh_interval: Duration::from_secs(600),
            retry_backoff: Duration::from_secs(5),
            answer_ttl: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(5),
            max_cached_answers: 65_536,
            walk_window: 16,
            walk_gap: 64,
            rmpp: RmppConfig::default(),
        }
    }
}

/// RespTimeValue of the agent's subscriptions (2^19 × 4.096 µs ≈ 2 s).
const SUBSCRIPTION_RESP_TIME: u8 = 19;

/// The traps the agent subscribes to at the master.
const TRAPS: [TrapNumber; 2] = [TrapNumber::GID_IN_SERVICE, TrapNumber::GID_OUT_OF_SERVICE];

/// An SA agent for one port.
#[derive(Debug)]
pub struct SaCore {
    config: AgentConfig,
    port: PortIdentity,
    store: PathStore,
    complete_sources: FastSet<u64>,
    /// Whether the master applies QoS policy; `None` until its
    /// ClassPortInfo arrives (QoS-sensitive queries are forwarded till then).
    master_qos: Option<bool>,
    epoch: Epoch,
    refresh: RefreshState,
    next_refresh: Option<Instant>,
    /// Traps we hold a subscription for at the master.
    subscribed: HashSet<TrapNumber>,
    next_registration: Option<Instant>,
    upstream: Upstream,
    forwarding: Forwarding,
    transfers: Transfers,
    out: VecDeque<Transmit>,
    counters: Counters,
    shutting_down: bool,
}

impl SaCore {
    /// An agent for `port`; it starts filling its store at once.
    pub fn new(config: AgentConfig, port: PortIdentity, now: Instant) -> Self {
        let upstream_config = UpstreamConfig {
            timeout: config.upstream_timeout,
            retries: config.upstream_retries,
            rmpp: config.rmpp,
        };
        // TransactionIDs of a restarted agent should not collide with late
        // answers to the previous one's.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos() | 1);
        let mut agent = Self {
            config,
            port,
            store: PathStore::new(),
            complete_sources: FastSet::default(),
            master_qos: None,
            epoch: 0,
            refresh: RefreshState::Idle,
            next_refresh: Some(now),
            subscribed: HashSet::new(),
            next_registration: Some(now),
            upstream: Upstream::new(upstream_config, port.master(), seed),
            forwarding: Forwarding::new(
                config.answer_ttl,
                config.negative_ttl,
                config.max_cached_answers,
            ),
            transfers: Transfers::new(config.rmpp),
            out: VecDeque::new(),
            counters: Counters::default(),
            shutting_down: false,
        };
        agent.handle_timeout(now);
        agent
    }

    /// The port as the agent knows it.
    pub fn port(&self) -> PortIdentity {
        self.port
    }

    /// The counters, with the gauges read now.
    pub fn counters(&self) -> Counters {
        Counters {
            records: self.store.len() as u64,
            upstream_in_flight: self.upstream.in_flight() as u64,
            queries_waiting: self.forwarding.waiting() as u64,
            transfers_active: self.transfers.in_progress() as u64,
            ..self.counters
        }
    }

    /// The PathRecord store.
    pub fn store(&self) -> &PathStore {
        &self.store
    }

    /// True once this port's paths have been fetched completely.
    pub fn is_ready(&self) -> bool {
        self.complete_sources.contains(&self.port.gid.guid())
    }

    /// The next MAD to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// When [`SaCore::handle_timeout`] must next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.upstream.poll_timeout(),
            self.transfers.poll_timeout(),
            self.next_refresh,
            self.next_registration,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Does whatever is due at `now`: retries and failures upstream, RMPP
    /// resends, refreshes, (re)registrations.
    pub fn handle_timeout(&mut self, now: Instant) {
        for reply in self.upstream.handle_timeout(now, &mut self.out) {
            self.upstream_reply(now, reply);
        }
        for event in self.transfers.handle_timeout(now, &mut self.out) {
            self.count_transfer(&event);
        }
        self.forwarding.prune(now);
        if self.shutting_down {
            return;
        }
        if self.next_refresh.is_some_and(|t| t <= now) {
            self.next_refresh = None;
            self.start_refresh(now);
        }
        if self.next_registration.is_some_and(|t| t <= now) {
            self.next_registration = None;
            self.register(now);
        }
    }

    /// The port changed: a new LID, or a new master SM (SM change, client
    /// reregister). Refreshes everything and registers again with the
    /// master.
    pub fn handle_port_change(&mut self, now: Instant, port: PortIdentity) {
        let master_changed = port.sm_lid != self.port.sm_lid || port.sm_sl != self.port.sm_sl;
        let me_changed =
            port.lid != self.port.lid || port.lmc != self.port.lmc || port.gid != self.port.gid;
        info!(
            ?port,
            master_changed, me_changed, "port changed; refreshing and registering again"
        );
        self.port = port;
        if master_changed {
            for reply in self.upstream.set_master(port.master()) {
                self.upstream_reply(now, reply);
            }
        }
        if me_changed {
            self.store.clear();
            self.complete_sources.clear();
        }
        self.master_qos = None;
        self.subscribed.clear();
        self.forwarding.forget_answers();
        // The refresh in progress is superseded by the one starting now.
        self.upstream
            .cancel(|p| matches!(p, Purpose::Bulk { .. } | Purpose::Walk { .. }));
        self.refresh = RefreshState::Idle;
        self.next_refresh = Some(now);
        self.next_registration = Some(now);
        self.handle_timeout(now);
    }

    /// Withdraws the subscriptions at the master (the caller gives their
    /// answers a moment to arrive before closing) and stops refreshing.
    pub fn begin_shutdown(&mut self, now: Instant) {
        self.shutting_down = true;
        self.next_refresh = None;
        self.next_registration = None;
        let traps: Vec<TrapNumber> = self.subscribed.drain().collect();
        for trap in traps {
            self.send_subscription(now, trap, false);
        }
    }

    /// True when nothing is left in flight to the master.
    pub fn is_idle(&self) -> bool {
        self.upstream.in_flight() == 0
    }

    fn send_upstream(&mut self, now: Instant, purpose: Purpose, request: &[u8]) {
        self.counters.upstream_queries += 1;
        self.upstream.send(now, purpose, request, &mut self.out);
    }

    /// Asks the master what it supports and subscribes to traps 64 and 65.
    fn register(&mut self, now: Instant) {
        if self.master_qos.is_none() && !self.upstream.is_pending(&Purpose::MasterInfo) {
            let req =
                SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
            self.send_upstream(now, Purpose::MasterInfo, &req);
        }
        for trap in TRAPS {
            let purpose = Purpose::Subscription {
                trap,
                subscribe: true,
            };
            if !self.subscribed.contains(&trap) && !self.upstream.is_pending(&purpose) {
                self.send_subscription(now, trap, true);
            }
        }
    }

    fn send_subscription(&mut self, now: Instant, trap: TrapNumber, subscribe: bool) {
        // OpenSM records the source QP (1) and unsubscribes only on an
        // identical record, so both directions use the same values.
        let info = InformInfoRepr::generic_subscription(trap, subscribe, 1, SUBSCRIPTION_RESP_TIME);
        let req = SaMadBuilder::request(Method::SET, 0, AttributeId::INFORM_INFO)
            .record(&info.to_wire())
            .into_bytes();
        self.send_upstream(now, Purpose::Subscription { trap, subscribe }, &req);
    }

    /// Handles one MAD the port received: `status` is the transport's (0,
    /// or an errno when our own request came back undeliverable).
    pub fn handle_mad(&mut self, now: Instant, source: MadAddress, status: u32, mad: &[u8]) {
        // One packet carries at most one MAD; anything past it is not part
        // of the MAD (and must not be echoed back in an answer).
        let mad = &mad[..mad.len().min(MAD_LEN)];
        let Ok((h, _)) = SaMadHeader::parse(mad) else {
            self.counters.malformed += 1;
            debug!(
                len = mad.len(),
                lid = source.lid,
                "dropping a MAD shorter than the SA headers"
            );
            return;
        };
        if h.mad.mgmt_class() != MgmtClass::SUBN_ADM {
            self.counters.malformed += 1;
            return;
        }
        let method = h.mad.method();
        let tid = h.mad.transaction_id_low();
        if status != 0 || method.is_response() {
            if let Some(reply) = self
                .upstream
                .handle(now, &source, status, mad, &mut self.out)
            {
                self.upstream_reply(now, reply);
            }
            return;
        }
        let rmpp = &h.rmpp;
        if rmpp.is_active()
            && rmpp.rmpp_type() != RmppType::DATA
            && rmpp.rmpp_type() != RmppType::NONE
        {
            // ACK/STOP/ABORT: for an answer we send, or (ABORT) a load.
            let peer = source.reply();
            if self.transfers.is_sending(&peer, tid) {
                if let Some(e) = self.transfers.control(now, &peer, tid, mad, &mut self.out) {
                    self.count_transfer(&e);
                }
            } else if self.transfers.is_receiving(&source, tid) {
                if let Some(e) = self
                    .transfers
                    .segment(now, &source, tid, mad, &mut self.out)
                {
                    self.count_transfer(&e);
                }
            }
            return;
        }
        if h.mad.check_versions().is_err() {
            self.respond_error(&source, mad, MadStatus::BAD_VERSION);
            return;
        }
        match (h.mad.attribute_id(), method) {
            (AttributeId::PATH_RECORD, Method::GET | Method::GET_TABLE) => {
                self.path_query(now, &source, mad)
            }
            (AttributeId::PATH_RECORD, Method::SET | Method::DELETE) => {
                self.load(now, &source, mad)
            }
            (AttributeId::CLASS_PORT_INFO, Method::GET) => self.class_port_info(&source, h),
            (AttributeId::NOTICE, Method::REPORT) => self.report(now, &source, mad),
            (attr, method) => {
                debug!(
                    ?attr,
                    ?method,
                    lid = source.lid,
                    "unsupported method/attribute"
                );
                self.respond_error(&source, mad, MadStatus::METHOD_ATTR_UNSUPPORTED);
            }
        }
    }

    fn respond_error(&mut self, source: &MadAddress, request: &[u8], status: MadStatus) {
        self.counters.errors += 1;
        if let Some(mad) = respond::error(request, status) {
            self.out.push_back(Transmit::reply(source.reply(), mad));
        }
    }

    fn count_transfer(&mut self, e: &Event) {
        match e {
            Event::Sent | Event::Received(_) => self.counters.rmpp_transfers += 1,
            Event::Aborted => self.counters.rmpp_aborts += 1,
        }
    }

    /// A PathRecord Get/GetTable.
    fn path_query(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let method = m.mad().method();
        let mask = m.sa().component_mask();
        let template = padded_record(m.data());
        let master_qos = self.master_qos.unwrap_or(true);
        let k = Knowledge {
            store: &self.store,
            subnet_prefix: self.port.gid.prefix(),
            complete_sources: &self.complete_sources,
            master_qos,
        };
        match path_query::evaluate(&k, method, mask, &template) {
            Outcome::Records(records) => {
                self.counters.hits += 1;
                self.answer_records(now, source, m.header(), &records);
            }
            Outcome::Status(status) => {
                self.counters.hits += 1;
                self.respond_error(source, mad, status);
            }
            Outcome::Forward(reason) => {
                self.counters.misses += 1;
                debug!(
                    ?reason,
                    lid = source.lid,
                    ?mask,
                    "forwarding a PathRecord query"
                );
                let key = QueryKey::new(method, mask, template);
                if let Some(answer) = self.forwarding.cached(now, &key).cloned() {
                    self.counters.answer_cache_hits += 1;
                    let waiter = Waiter {
                        requester: *source,
                        request: Bytes::copy_from_slice(mad),
                    };
                    self.answer_waiter(now, &waiter, &answer);
                    return;
                }
                let waiter = Waiter {
                    requester: *source,
                    request: Bytes::copy_from_slice(mad),
                };
                if self.forwarding.wait(key, waiter) {
                    self.send_upstream(now, Purpose::Forward(key), mad);
                } else {
                    self.counters.coalesced += 1;
                }
            }
        }
    }

    /// Answers a Get with its one record or a GetTable with all, through
    /// RMPP.
    fn answer_records(
        &mut self,
        now: Instant,
        source: &MadAddress,
        request: &SaMadHeader,
        records: &[PathRecord],
    ) {
        if request.mad.method() == Method::GET {
            // One MAD, built in one allocation: the common case.
            let header = respond::success_header(request, PathRecord::ATTRIBUTE_OFFSET);
            let one = records.first().map_or(&[][..], |r| r.as_bytes());
            let answer = respond::single(&header, one);
            self.out.push_back(Transmit::reply(source.reply(), answer));
            return;
        }
        let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
        for r in records {
            data.extend_from_slice(r.as_bytes());
        }
        self.answer_data(now, source, request, data.freeze());
    }

    fn answer_data(
        &mut self,
        now: Instant,
        source: &MadAddress,
        request: &SaMadHeader,
        data: Bytes,
    ) {
        let peer = source.reply();
        if request.mad.method() == Method::GET {
            let header = respond::success_header(request, PathRecord::ATTRIBUTE_OFFSET);
            let one = data.get(..PathRecord::LEN).unwrap_or(&data[..]);
            self.out
                .push_back(Transmit::reply(peer, respond::single(&header, one)));
        } else {
            let offset = if data.is_empty() {
                0
            } else {
                PathRecord::ATTRIBUTE_OFFSET
            };
            let header = respond::success_header(request, offset);
            let tid = request.mad.transaction_id_low();
            if let Some(e) = self
                .transfers
                .send(now, peer, tid, header, data, &mut self.out)
            {
                self.count_transfer(&e);
            }
        }
    }

    fn answer_waiter(&mut self, now: Instant, w: &Waiter, answer: &Answer) {
        if answer.status != MadStatus::OK {
            self.respond_error(&w.requester, &w.request, answer.status);
            return;
        }
        let Ok((h, _)) = SaMadHeader::parse(&w.request) else {
            return;
        };
        let h = *h;
        self.answer_data(now, &w.requester, &h, answer.data.clone());
    }

    /// What came back from the master.
    fn upstream_reply(&mut self, now: Instant, reply: Reply) {
        match reply {
            Reply::Answer {
                purpose,
                mad,
                truncated,
            } => match purpose {
                Purpose::Forward(key) => self.forward_answered(now, &key, &mad, truncated),
                Purpose::Bulk { epoch } => self.bulk_answered(now, epoch, &mad, truncated),
                Purpose::Walk { epoch, dlid } => {
                    self.walk_answered(now, epoch, dlid, &mad, truncated)
                }
                Purpose::GidInService { guid } => {
                    self.gid_in_service_answered(&mad, guid, truncated)
                }
                Purpose::Subscription { trap, subscribe } => {
                    self.subscription_answered(now, trap, subscribe, &mad)
                }
                Purpose::MasterInfo => self.master_info_answered(now, &mad),
            },
            Reply::Failed { purpose } => {
                self.counters.upstream_failures += 1;
                warn!(
                    ?purpose,
                    master = self.upstream.master().lid,
                    "the master SA did not answer"
                );
                match purpose {
                    Purpose::Forward(key) => {
                        for w in self.forwarding.release(&key) {
                            self.respond_error(&w.requester, &w.request, MadStatus::BUSY);
                        }
                    }
                    Purpose::Bulk { .. } | Purpose::Walk { .. } => self.refresh_failed(now),
                    Purpose::GidInService { .. } => {}
                    Purpose::Subscription {
                        subscribe: true, ..
                    }
                    | Purpose::MasterInfo => {
                        self.retry_registration(now);
                    }
                    Purpose::Subscription {
                        subscribe: false, ..
                    } => {}
                }
            }
        }
    }

    fn retry_registration(&mut self, now: Instant) {
        if !self.shutting_down {
            let at = now + self.config.retry_backoff;
            self.next_registration = Some(self.next_registration.map_or(at, |t| t.min(at)));
        }
    }

    fn forward_answered(&mut self, now: Instant, key: &QueryKey, mad: &[u8], truncated: bool) {
        if truncated {
            // The master's table did not arrive whole (a transport without
            // RMPP): pass its answer on as it came, so that the asker sees
            // exactly what the master sent, and keep nothing.
            for w in self.forwarding.release(key) {
                if let Some(relayed) = respond::relay(mad, &w.request) {
                    self.out
                        .push_back(Transmit::reply(w.requester.reply(), relayed));
                }
            }
            return;
        }
        let Ok(m) = SaMad::parse(mad) else { return };
        let status = m.mad().status();
        let data = if status != MadStatus::OK {
            Bytes::new()
        } else if key.method() == Method::GET {
            Bytes::copy_from_slice(m.data().get(..PathRecord::LEN).unwrap_or_default())
        } else {
            records_data(&m, None)
        };
        let answer = Answer { status, data };
        for w in self.forwarding.answered(now, key, answer.clone()) {
            self.answer_waiter(now, &w, &answer);
        }
    }

    fn subscription_answered(
        &mut self,
        now: Instant,
        trap: TrapNumber,
        subscribe: bool,
        mad: &[u8],
    ) {
        let status = SaMad::parse(mad).map_or(MadStatus::ERR_REQ_INVALID, |m| m.mad().status());
        if !subscribe {
            return;
        }
        if status.is_ok() {
            info!(%trap, master = self.upstream.master().lid, "subscribed at the master SA");
            self.subscribed.insert(trap);
        } else {
            warn!(%trap, status = %status, "the master SA refused the subscription");
            self.retry_registration(now);
        }
    }

    fn master_info_answered(&mut self, now: Instant, mad: &[u8]) {
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

    /// A Report from the master: answer it, then act on the notice.
    fn report(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let mut resp = BytesMut::from(mad);
        if let Ok((h, _)) = MadHeader::mut_from_prefix(&mut resp[..]) {
            h.set_method(Method::REPORT_RESP);
            h.set_status(MadStatus::OK);
        }
        self.out
            .push_back(Transmit::reply(source.reply(), resp.freeze()));
        if source.lid != self.port.sm_lid {
            // Only the master's notices change the store: anyone can send a
            // Report.
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
        self.counters.notices += 1;
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
            other => debug!(?other, "notice ignored"),
        }
    }

    fn gid_in_service_answered(&mut self, mad: &[u8], guid: u64, truncated: bool) {
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

    /// Where the whole records of an answer from the master end: all of
    /// it, or the part of a cut answer the transport delivered intact.
    fn cut_at(&self, truncated: bool) -> Option<usize> {
        truncated.then(|| self.config.rmpp.segment_data())
    }

    /// ClassPortInfo of this agent: no redirect, GSI Q_Keys, and a response
    /// time that covers asking the master.
    fn class_port_info(&mut self, source: &MadAddress, request: &SaMadHeader) {
        let cpi = ClassPortInfoRepr {
            base_version: 1,
            class_version: MgmtClass::SA_CLASS_VERSION,
            // None of the capability bits describes what this agent serves
            // (PathRecord queries and loads), so none is claimed.
            capability_mask: 0,
            capability_mask2: 0,
            resp_time_value: duration_to_resp_time_value(self.config.upstream_timeout),
            redirect_qp: 1,
            redirect_qkey: crate::umad::GSI_QKEY,
            trap_qkey: crate::umad::GSI_QKEY,
            ..ClassPortInfoRepr::default()
        }
        .to_wire();
        let header = respond::success_header(request, request.sa.attribute_offset());
        let mut data = [0u8; MAD_LEN - SaMadHeader::LEN];
        data[..ClassPortInfo::LEN].copy_from_slice(cpi.as_bytes());
        self.out.push_back(Transmit::reply(
            source.reply(),
            respond::single(&header, &data),
        ));
    }
}

/// The template record of a request whose data may be shorter than a
/// record (a sender that did not pad its MAD): missing bytes are zero.
fn padded_record(data: &[u8]) -> PathRecord {
    let mut r = PathRecord::new_zeroed();
    let n = data.len().min(PathRecord::LEN);
    r.as_mut_bytes()[..n].copy_from_slice(&data[..n]);
    r
}

/// The whole PathRecords of an answer, back to back; of a cut answer only
/// those within its first `intact` data bytes.
fn records_data(m: &SaMad<'_>, cut: Option<usize>) -> Bytes {
    let Ok(records) = m.records::<PathRecord>() else {
        return Bytes::new();
    };
    let whole = cut.map_or(records.len(), |intact| intact / records.stride().max(1));
    let mut out = BytesMut::with_capacity(whole * PathRecord::LEN);
    for r in records.take(whole) {
        out.extend_from_slice(r.as_bytes());
    }
    out.freeze()
}
