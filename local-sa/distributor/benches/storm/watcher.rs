//! A model of `lsaquery --distribute --compute --watch` after its fill:
//! every [`INTERVAL`] it reads the fabric's description again (the
//! GetTables of every record type, which the model master charges for
//! the model's fabric) and renews every node's lease (a Set with LEASE
//! and RENEW_ONLY, one MAD each); after a reroute it is told of (the
//! notice reaches it on the master's node), it waits [`SETTLE`], reads
//! the description, computes every node's tables again (virtual time at
//! [`ENGINE_PATHS_PER_SECOND`]), checks [`CHECK`] changed pairs against
//! the master (Gets, 16 at a time) and pushes each node whose records
//! changed a Set of them (no REPLACE_SOURCES: only what changed) under
//! the lease, `window` nodes at a time, over RMPP when they do not fit
//! one MAD. Its port sends as the fill's distributor's does.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use local_sa_core::Address;
use local_sa_core::load_flags::{RENEW_ONLY, with_lease};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{RmppConfig, Sender};
use mad_codec::zerocopy::{FromZeros as _, IntoBytes};
use mad_codec::{AttributeId, Method, PathRecord, SaMad, SaMadBuilder, SaRecord};

use crate::distributor::{SM_KEY, transmit_pushes};
use crate::fixture::gid;

/// Between re-reads of the description and lease renewals (the
/// watch's `--watch-interval` default).
pub(crate) const INTERVAL: Duration = Duration::from_secs(60);

/// The lease every push and renewal gives (three intervals and the
/// settle time, the default).
pub(crate) const LEASE: u16 = 185;

/// After a notice, before the description is read (`--settle`).
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// Changed pairs checked against the master (`--watch-check`).
const CHECK: usize = 64;

/// The engine's rate on the distributor's cores: 25 M paths a second a
/// core (BENCHMARKS.md), four cores.
const ENGINE_PATHS_PER_SECOND: f64 = 100e6;

/// The description's record types, each one GetTable.
const DESCRIPTION: [AttributeId; 6] = [
    AttributeId::NODE_RECORD,
    AttributeId::PORT_INFO_RECORD,
    AttributeId::LINK_RECORD,
    AttributeId::LINEAR_FORWARDING_TABLE_RECORD,
    AttributeId::PKEY_TABLE_RECORD,
    AttributeId::GUID_INFO_RECORD,
];

/// Queries the watch keeps at the master at once (`--master-window`).
const MASTER_WINDOW: usize = 16;

/// TransactionIDs of the watch's queries to the master.
const MASTER_TID: u64 = 1 << 41;

/// Where an event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing to do but the interval.
    Quiet,
    /// A change was told: the description is read at this time.
    Settling(Instant),
    /// The description's queries are out.
    Reading,
    /// Computing until this time.
    Computing(Instant),
    /// The check's Gets are out.
    Checking,
    /// Pushing the changes.
    Pushing,
}

/// The watch.
pub(crate) struct Watcher {
    pub(crate) lid: u16,
    master: u16,
    hosts: u16,
    window: usize,
    phase: Phase,
    next_interval: Instant,
    /// Queries for the master not yet sent, and those out.
    asks: VecDeque<Bytes>,
    out_at_master: usize,
    next_tid: u64,
    /// The records each node is to be sent (after a reroute).
    changes: BTreeMap<u16, Vec<PathRecord>>,
    /// Nodes still to push to, and pushes under way.
    todo: VecDeque<u16>,
    sending: BTreeMap<u16, Sender>,
    /// Single-MAD sends waiting for the port (renewals).
    outbox: Vec<(Address, Bytes)>,
    /// When the last push of the event was acknowledged.
    pub(crate) pushed_at: Option<Instant>,
    /// Nodes pushed to, records in their pushes.
    pub(crate) nodes_pushed: u64,
    pub(crate) records_pushed: u64,
    /// Renewals sent.
    pub(crate) renewals: u64,
    pub(crate) retries: u64,
}

impl Watcher {
    /// A watch at `lid`, starting at `now` with its first interval.
    pub(crate) fn new(lid: u16, master: u16, hosts: u16, window: usize, now: Instant) -> Self {
        Self {
            lid,
            master,
            hosts,
            window: window.max(1),
            phase: Phase::Quiet,
            next_interval: now + INTERVAL,
            asks: VecDeque::new(),
            out_at_master: 0,
            next_tid: MASTER_TID,
            changes: BTreeMap::new(),
            todo: VecDeque::new(),
            sending: BTreeMap::new(),
            outbox: Vec::new(),
            pushed_at: None,
            nodes_pushed: 0,
            records_pushed: 0,
            renewals: 0,
            retries: 0,
        }
    }

    /// A reroute changed these records (the new ones, by source node):
    /// the watch hears of it now.
    pub(crate) fn rerouted(&mut self, now: Instant, changes: BTreeMap<u16, Vec<PathRecord>>) {
        self.changes = changes;
        self.phase = Phase::Settling(now + SETTLE);
    }

    /// Whether it has nothing under way.
    pub(crate) fn is_done(&self) -> bool {
        self.sending.is_empty() && self.todo.is_empty()
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        let phase = match self.phase {
            Phase::Settling(t) | Phase::Computing(t) => Some(t),
            _ => None,
        };
        let pushes = self.sending.values().filter_map(Sender::poll_timeout);
        [Some(self.next_interval), phase]
            .into_iter()
            .flatten()
            .chain(pushes)
            .min()
    }

    /// Does what is due; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        if now >= self.next_interval {
            self.next_interval = now + INTERVAL;
            self.read_description();
            self.renew_all();
        }
        match self.phase {
            Phase::Settling(t) if t <= now => {
                self.phase = Phase::Reading;
                self.read_description();
            }
            Phase::Computing(t) if t <= now => {
                self.phase = Phase::Checking;
                self.ask_check();
            }
            _ => {}
        }
        for s in self.sending.values_mut() {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
        }
        self.flush(now)
    }

    /// A MAD from `from`: an answer of the master, or a node's ACK or
    /// answer.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Vec<(Address, Bytes)> {
        if from.lid == self.master {
            self.out_at_master = self.out_at_master.saturating_sub(1);
            if self.out_at_master == 0 && self.asks.is_empty() {
                self.master_done(now);
            }
        } else if let Ok(m) = SaMad::parse(mad) {
            let h = m.header();
            let control = h.rmpp.is_active()
                && matches!(
                    h.rmpp.rmpp_type(),
                    RmppType::ACK | RmppType::STOP | RmppType::ABORT
                );
            if control {
                if let Some(s) = self.sending.get_mut(&from.lid) {
                    s.handle_control(now, mad);
                }
            } else if h.mad.method().is_response()
                && h.mad.transaction_id() == push_tid(from.lid)
                && self.sending.remove(&from.lid).is_some()
                && self.todo.is_empty()
                && self.sending.is_empty()
            {
                // The last node's answer to its push.
                self.pushed_at = Some(now);
            }
        }
        self.flush(now)
    }

    /// Every query of the current step answered.
    fn master_done(&mut self, now: Instant) {
        match self.phase {
            Phase::Reading => {
                let paths = f64::from(self.hosts) * f64::from(self.hosts);
                let compute = Duration::from_secs_f64(paths / ENGINE_PATHS_PER_SECOND);
                self.phase = Phase::Computing(now + compute);
            }
            Phase::Checking => {
                self.phase = Phase::Pushing;
                self.todo = self.changes.keys().copied().collect();
            }
            _ => {}
        }
    }

    fn query(&mut self, bytes: Bytes) {
        self.asks.push_back(bytes);
    }

    fn read_description(&mut self) {
        for attribute in DESCRIPTION {
            self.next_tid += 1;
            let q = SaMadBuilder::request(Method::GET_TABLE, self.next_tid, attribute).into_bytes();
            self.query(q);
        }
    }

    /// Gets of up to [`CHECK`] changed pairs, spread over the nodes.
    fn ask_check(&mut self) {
        let pairs: Vec<(u16, u16)> = self
            .changes
            .iter()
            .flat_map(|(s, records)| records.iter().map(move |r| (*s, r.dlid())))
            .collect();
        let step = pairs.len().div_ceil(CHECK).max(1);
        for (s, d) in pairs.into_iter().step_by(step).take(CHECK) {
            self.next_tid += 1;
            let mut t = PathRecord::new_zeroed();
            t.set_sgid(gid(s));
            t.set_dgid(gid(d));
            let mut b = SaMadBuilder::request(Method::GET, self.next_tid, AttributeId::PATH_RECORD)
                .record(&t);
            b.header_mut().sa.set_component_mask(pr::SGID | pr::DGID);
            self.query(b.into_bytes());
        }
        if self.asks.is_empty() {
            self.phase = Phase::Pushing;
            self.todo = self.changes.keys().copied().collect();
        }
    }

    fn renew_all(&mut self) {
        for node in 1..=self.hosts {
            let mut b = SaMadBuilder::request(Method::SET, 0x77, AttributeId::PATH_RECORD)
                .record(&PathRecord::new_zeroed());
            b.header_mut().sa.set_sm_key(SM_KEY);
            b.header_mut()
                .mad
                .set_attribute_modifier(with_lease(RENEW_ONLY, LEASE));
            let mut mad = BytesMut::from(&b.into_bytes()[..]);
            mad.resize(256, 0);
            self.outbox.push((Address::gsi(node, 0), mad.freeze()));
            self.renewals += 1;
        }
    }

    /// Starts pushes up to the window, and sends what is due.
    fn flush(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let master = Address::gsi(self.master, 0);
        let mut out = std::mem::take(&mut self.outbox);
        while self.out_at_master < MASTER_WINDOW {
            let Some(q) = self.asks.pop_front() else {
                break;
            };
            self.out_at_master += 1;
            out.push((master, q));
        }
        while self.phase == Phase::Pushing && self.sending.len() < self.window {
            let Some(node) = self.todo.pop_front() else {
                break;
            };
            let records = self.changes.get(&node).cloned().unwrap_or_default();
            if let Some(s) = push(node, &records, now) {
                self.nodes_pushed += 1;
                self.records_pushed += records.len() as u64;
                self.sending.insert(node, s);
            }
        }
        let pushes = self.sending.iter_mut().map(|(&node, s)| (node, s));
        for node in transmit_pushes(pushes, now, &mut out) {
            self.sending.remove(&node);
            self.retries += 1;
            self.todo.push_back(node);
        }
        if self.phase == Phase::Pushing && self.todo.is_empty() && self.sending.is_empty() {
            self.phase = Phase::Quiet;
        }
        out
    }
}

/// The TransactionID of the push to `node`.
fn push_tid(node: u16) -> u64 {
    MASTER_TID - 1 - u64::from(node)
}

/// A Set of `records` (changed, not the whole table) for `node`, under
/// the lease.
fn push(node: u16, records: &[PathRecord], now: Instant) -> Option<Sender> {
    let mut b = SaMadBuilder::request(Method::SET, push_tid(node), AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(SM_KEY);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(with_lease(0, LEASE));
    let header: SaMadHeader = *h;
    let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
    for r in records {
        data.extend_from_slice(r.as_bytes());
    }
    Sender::new(header, data.freeze(), RmppConfig::default(), now).ok()
}
