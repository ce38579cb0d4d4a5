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

pub mod canary;
pub mod counters;
mod forward;
pub mod fuzzing;
mod joins;
mod loads;
pub mod local;
mod multicast;
mod notices;
pub mod path_query;
mod paths;
mod refresh;
mod respond;
#[cfg(test)]
mod tests;
mod transfers;
mod upstream;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
pub use informinfo::DeliveryConfig;
use mad_codec::attr::class_port_info::duration_to_resp_time_value;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::records::SaRecord;
use mad_codec::rmpp::RmppConfig;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, Gid, MAD_LEN, MadStatus, Method, MgmtClass,
    PathRecord, SaMad,
};
use tracing::{debug, info, warn};

pub use counters::Counters;
pub use notices::Subscriber;

use self::forward::Forwarding;
use self::joins::Memberships;
use self::local::{ConnId, LocalBody, LocalReply, LocalRequest};
use self::multicast::Member;
use self::notices::Notices;
use self::refresh::RefreshState;
use self::transfers::{Event, Transfers};
use self::upstream::{Purpose, Reply, Upstream, UpstreamConfig};
use crate::store::{Epoch, FastSet, PathStore};
use umad::MadAddress;

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

/// Who asked something, and how the answer goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asker {
    /// A port, by MAD: answers echo its request's headers.
    Mad {
        /// Where it came from.
        address: MadAddress,
        /// The request as it arrived.
        request: Bytes,
    },
    /// A local API connection, by request number.
    Local {
        /// The connection.
        conn: ConnId,
        /// Its request number.
        id: u32,
    },
}

impl Asker {
    /// True for the same request sent again (a client's retry: same
    /// port, QP and TransactionID, or the same local request).
    fn same_request(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Mad {
                    address: a,
                    request: r,
                },
                Self::Mad {
                    address: b,
                    request: q,
                },
            ) => a.lid == b.lid && a.qpn == b.qpn && r.get(8..16) == q.get(8..16),
            (Self::Local { conn: a, id: i }, Self::Local { conn: b, id: j }) => a == b && i == j,
            _ => false,
        }
    }

    /// The local connection, if that is who asked.
    fn conn(&self) -> Option<ConnId> {
        match self {
            Self::Local { conn, .. } => Some(*conn),
            Self::Mad { .. } => None,
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
    /// Reports to MAD subscribers: time-out, retries, and the misses that
    /// end a subscriber's lease.
    pub delivery: DeliveryConfig,
    /// Longest wait before registering again after the port changes: each
    /// port waits its own share of it, so that the nodes of a fabric do
    /// not all call on a new master at once.
    pub reregister_jitter: Duration,
    /// How long a multicast member that joined by MAD stays without
    /// joining again (local API members stay while connected).
    pub member_lease: Duration,
    /// How often the master is asked whether it still holds this port's
    /// registrations (see [`canary`]).
    pub audit_interval: Duration,
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
            delivery: DeliveryConfig::default(),
            reregister_jitter: Duration::from_secs(1),
            member_lease: Duration::from_secs(600),
            audit_interval: Duration::from_secs(10),
        }
    }
}

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
    /// When ClassPortInfo and the agent's own subscriptions are (re)sent.
    next_registration: Option<Instant>,
    /// When every subscription is sent again after a port change.
    next_reregistration: Option<Instant>,
    notices: Notices,
    memberships: Memberships,
    /// The master holds the canary ServiceRecord.
    canary_registered: bool,
    next_audit: Option<Instant>,
    local_out: VecDeque<LocalReply>,
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
            next_registration: Some(now),
            next_reregistration: None,
            notices: Notices::new(config.delivery),
            memberships: Memberships::default(),
            canary_registered: false,
            next_audit: Some(now + config.audit_interval),
            local_out: VecDeque::new(),
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
            subscriptions: self.notices.registry.filters() as u64,
            subscribers: self.notices.registry.subscribers() as u64,
            groups: self.memberships.groups.len() as u64,
            members: self
                .memberships
                .groups
                .values()
                .map(|g| g.members.len() as u64)
                .sum(),
            reports_in_flight: self.notices.reports_in_flight() as u64,
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
            self.next_reregistration,
            self.notices.poll_timeout(),
            self.next_lease_end(),
            self.next_audit,
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
        self.notices_timeout(now);
        self.expire_members(now);
        self.retry_groups(now);
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
            self.register_canary(now);
        }
        if self.next_audit.is_some_and(|t| t <= now) {
            self.audit(now);
        }
        if self.next_reregistration.is_some_and(|t| t <= now) {
            self.next_reregistration = None;
            self.counters.reregistrations += 1;
            info!(
                master = self.port.sm_lid,
                "registering every subscription and membership again"
            );
            self.resubscribe_all(now);
            self.rejoin_all(now);
        }
    }

    /// This port's share of the re-registration jitter: a fixed fraction,
    /// from its GUID, of [`AgentConfig::reregister_jitter`].
    fn reregister_delay(&self) -> Duration {
        let spread = self.port.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54; // 0..1023
        self.config
            .reregister_jitter
            .mul_f64(spread as f64 / 1024.0)
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
        self.forwarding.forget_answers();
        // The refresh in progress is superseded by the one starting now.
        self.upstream
            .cancel(|p| matches!(p, Purpose::Bulk { .. } | Purpose::Walk { .. }));
        self.refresh = RefreshState::Idle;
        self.next_refresh = Some(now);
        self.next_registration = Some(now);
        // Whatever the master held for this port may be gone.
        self.next_reregistration = Some(now + self.reregister_delay());
        self.handle_timeout(now);
    }

    /// Withdraws every subscription at the master (the caller gives their
    /// answers a moment to arrive before closing) and stops refreshing.
    pub fn begin_shutdown(&mut self, now: Instant) {
        self.shutting_down = true;
        self.next_refresh = None;
        self.next_registration = None;
        self.next_reregistration = None;
        self.next_audit = None;
        self.unsubscribe_all(now);
        self.leave_all(now);
        self.withdraw_canary(now);
    }

    /// A request from local API connection `conn`, numbered `id` (its
    /// answer comes from [`SaCore::poll_local`] under the same number).
    pub fn handle_local(&mut self, now: Instant, conn: ConnId, id: u32, request: LocalRequest) {
        match request {
            LocalRequest::PathQuery {
                method,
                mask,
                template,
            } => {
                if method == Method::GET || method == Method::GET_TABLE {
                    self.path_request(now, Asker::Local { conn, id }, method, mask, template);
                } else {
                    self.answer_status(
                        &Asker::Local { conn, id },
                        MadStatus::METHOD_ATTR_UNSUPPORTED,
                    );
                }
            }
            LocalRequest::Inform(ii) => self.local_inform(now, conn, id, &ii),
            LocalRequest::Join { mask, record } => {
                self.local_membership(now, conn, id, true, mask, record)
            }
            LocalRequest::Leave { mask, record } => {
                self.local_membership(now, conn, id, false, mask, record)
            }
            LocalRequest::Subscriptions => {
                let records = self.subscription_records(true);
                self.answer_local_records(conn, id, &records);
            }
            LocalRequest::Groups => {
                let records = self.group_records();
                self.answer_local_records(conn, id, &records);
            }
        }
    }

    /// Local API connection `conn` closed: everything it held goes.
    pub fn handle_local_closed(&mut self, now: Instant, conn: ConnId) {
        self.remove_subscriber(now, Subscriber::Local(conn));
        self.remove_member(now, Member::Local(conn));
        self.forget_local_waiters(conn);
        self.local_out.retain(|r| r.conn != conn);
    }

    fn answer_local_records<T: SaRecord>(&mut self, conn: ConnId, id: u32, records: &[T]) {
        let mut data = BytesMut::with_capacity(records.len() * T::STRIDE);
        mad_codec::records::put_records(&mut data, records);
        let body = LocalBody::Records {
            attribute: T::ATTRIBUTE_ID,
            stride: T::STRIDE,
            data: data.freeze(),
            truncated: false,
        };
        self.local_out.push_back(LocalReply {
            conn,
            request: id,
            status: MadStatus::OK,
            body,
        });
    }

    /// The next reply for a local API connection.
    #[must_use]
    pub fn poll_local(&mut self) -> Option<LocalReply> {
        self.local_out.pop_front()
    }

    /// True when nothing is left in flight to the master.
    pub fn is_idle(&self) -> bool {
        self.upstream.in_flight() == 0
    }

    fn send_upstream(&mut self, now: Instant, purpose: Purpose, request: &[u8]) {
        self.counters.upstream_queries += 1;
        self.upstream.send(now, purpose, request, &mut self.out);
    }

    /// Passes a port's query to the master; its answer goes back as it came.
    fn relay_upstream(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let purpose = Purpose::Relay {
            to: *source,
            request: Bytes::copy_from_slice(mad),
        };
        self.send_upstream(now, purpose, mad);
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
        if method == Method::REPORT_RESP && self.report_resp(tid) {
            return;
        }
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
            (AttributeId::INFORM_INFO, Method::SET) => self.inform_info_set(now, &source, mad),
            (AttributeId::MC_MEMBER_RECORD, Method::SET | Method::DELETE) => {
                self.membership_mad(now, &source, mad)
            }
            (AttributeId::MC_MEMBER_RECORD, Method::GET | Method::GET_TABLE) => {
                self.member_records(now, &source, mad)
            }
            (AttributeId::INFORM_INFO_RECORD, Method::GET | Method::GET_TABLE) => {
                self.inform_info_records(now, &source, mad)
            }
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

    /// Answers a Get with the first record of `data` or a GetTable with
    /// all of it (records every `offset` × 8 bytes), a table through RMPP;
    /// the callers have checked a Get's count.
    fn answer_data(
        &mut self,
        now: Instant,
        source: &MadAddress,
        request: &SaMadHeader,
        data: Bytes,
        offset: u16,
    ) {
        let peer = source.reply();
        if request.mad.method() == Method::GET {
            let header = respond::success_header(request, offset);
            let one = data.get(..usize::from(offset) * 8).unwrap_or(&data[..]);
            self.out
                .push_back(Transmit::reply(peer, respond::single(&header, one)));
        } else {
            let header = respond::success_header(request, if data.is_empty() { 0 } else { offset });
            let tid = request.mad.transaction_id_low();
            if let Some(e) = self
                .transfers
                .send(now, peer, tid, header, data, &mut self.out)
            {
                self.count_transfer(&e);
            }
        }
    }

    /// Answers a Get or GetTable with `records`: a Get needs exactly one
    /// (else ERR_NO_RECORDS or ERR_TOO_MANY_RECORDS); a GetTable gets all.
    fn answer_table<T: SaRecord>(
        &mut self,
        now: Instant,
        source: &MadAddress,
        request: &[u8],
        records: &[T],
    ) {
        let Ok((h, _)) = SaMadHeader::parse(request) else {
            return;
        };
        let h = *h;
        if h.mad.method() == Method::GET && records.len() != 1 {
            let status = if records.is_empty() {
                MadStatus::ERR_NO_RECORDS
            } else {
                MadStatus::ERR_TOO_MANY_RECORDS
            };
            return self.respond_error(source, request, status);
        }
        let mut data = BytesMut::with_capacity(records.len() * T::STRIDE);
        mad_codec::records::put_records(&mut data, records);
        self.answer_data(now, source, &h, data.freeze(), T::ATTRIBUTE_OFFSET);
    }

    /// Answers `asker` with a bare status (an error, or success with
    /// nothing to carry).
    fn answer_status(&mut self, asker: &Asker, status: MadStatus) {
        match asker {
            Asker::Mad { address, request } => self.respond_error(address, request, status),
            Asker::Local { conn, id } => {
                if status != MadStatus::OK {
                    self.counters.errors += 1;
                }
                self.local_out.push_back(LocalReply {
                    conn: *conn,
                    request: *id,
                    status,
                    body: LocalBody::Empty,
                });
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
                Purpose::Inform { filter, subscribe } => {
                    self.inform_answered(now, filter, subscribe, Some(&mad))
                }
                Purpose::Relay { to, request } => {
                    if let Some(answer) = respond::relay(&mad, &request) {
                        self.out.push_back(Transmit::reply(to.reply(), answer));
                    }
                }
                Purpose::MasterInfo => self.master_info_answered(now, &mad),
                Purpose::Membership { op } => self.membership_answered(now, op, Some(&mad)),
                Purpose::Canary(step) => self.canary_answered(now, step, Some(&mad)),
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
                            self.answer_status(&w, MadStatus::BUSY);
                        }
                    }
                    Purpose::Bulk { .. } | Purpose::Walk { .. } => self.refresh_failed(now),
                    Purpose::GidInService { .. } => {}
                    Purpose::Inform { filter, subscribe } => {
                        self.inform_answered(now, filter, subscribe, None)
                    }
                    Purpose::Relay { to, request } => {
                        self.respond_error(&to, &request, MadStatus::BUSY)
                    }
                    Purpose::MasterInfo => self.retry_registration(now),
                    Purpose::Membership { op } => self.membership_answered(now, op, None),
                    Purpose::Canary(step) => self.canary_answered(now, step, None),
                }
            }
        }
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
            redirect_qkey: umad::GSI_QKEY,
            trap_qkey: umad::GSI_QKEY,
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
