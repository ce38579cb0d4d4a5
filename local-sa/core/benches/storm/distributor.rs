//! A model distributor next to the master: it holds every node's
//! PathRecords (as from a dump: computing them costs the master SA
//! nothing here), asks the master once for the two names tables (the
//! channel adapters' NodeRecords and the local-sa directory), and pushes
//! each node the names tables (NAMES_TABLE) and then its own paths
//! (REPLACE_SOURCES), each a Set with the SM_Key over RMPP, `window`
//! nodes at a time, the next node as soon as one has all three. A
//! transfer that aborts or is refused is tried again, from the node's
//! first, after the others.
//!
//! The model master's names tables are empty (it charges a record per
//! host for them, but builds none), so the names pushed are one record
//! that is no host's: the nodes take the load as their names and skip
//! the fetch, which is what the master's load depends on.
//!
//! Given a ServiceID (on a master that applies QoS), it then does what
//! `lsaquery --distribute --service-id` does: asks the master for each
//! node's table at that ServiceID (a GetTable of SGID, P_Key and
//! ServiceID, received over RMPP: the master computes these, a dump does
//! not carry its QoS levels) and pushes it to the node as a QoS table
//! (QOS_TABLES: the key record, then the master's records).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromBytes as _, FromZeros as _, IntoBytes};
use mad_codec::{
    AttributeId, MadStatus, Method, NodeRecord, PathRecord, SaMad, SaMadBuilder, SaRecord,
    ServiceRecord,
};

use local_sa_core::Address;

use crate::fixture::{gid, record as path};

/// The SM_Key the distributor and the cores share.
pub(crate) const SM_KEY: u64 = 0x5eed;

/// REPLACE_SOURCES (docs/wire-contract.md).
const REPLACE_SOURCES: u32 = 1;

/// NAMES_TABLE (docs/wire-contract.md).
const NAMES_TABLE: u32 = 1;

/// QOS_TABLES (docs/wire-contract.md).
const QOS_TABLES: u32 = 4;

/// What a node is sent, in order: the names tables, its paths, then (with
/// a ServiceID) its table at that ServiceID, asked of the master first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Push(AttributeId),
    FetchQos,
    PushQos,
}

const STEPS: [Step; 5] = [
    Step::Push(AttributeId::NODE_RECORD),
    Step::Push(AttributeId::SERVICE_RECORD),
    Step::Push(AttributeId::PATH_RECORD),
    Step::FetchQos,
    Step::PushQos,
];

/// The steps without a ServiceID.
const DEFAULT_STEPS: usize = 3;

/// How long a node's table at the ServiceID may take to start arriving
/// before it is asked again (the master may have dropped the request).
const FETCH_TIMEOUT: Duration = Duration::from_secs(4);

/// One step under way for a node.
enum Transfer {
    /// A Set going to the node.
    Push(Sender),
    /// The node's table at the ServiceID coming from the master, and when
    /// it was asked.
    Fetch(Receiver, Instant),
}

impl Transfer {
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Push(s) => s.poll_timeout(),
            Self::Fetch(r, asked) => match r.has_started() {
                true => r.poll_timeout(),
                false => Some(*asked + FETCH_TIMEOUT),
            },
        }
    }
}

/// The distributor at `lid`.
pub(crate) struct Distributor {
    pub(crate) lid: u16,
    master: u16,
    hosts: u16,
    /// The names tables are yet to be asked of the master.
    names_unasked: bool,
    window: usize,
    /// Nodes still to fill, in order.
    todo: VecDeque<u16>,
    /// Transfers under way, by node: which of [`STEPS`], and the transfer.
    sending: BTreeMap<u16, (usize, Transfer)>,
    /// The ServiceID whose tables it sends, if any.
    service_id: Option<u64>,
    /// Each node's table at the ServiceID, from the master, until pushed.
    fetched: BTreeMap<u16, Vec<PathRecord>>,
    /// MADs to send that are not a transfer's: GetTables to the master,
    /// ACKs of its answers.
    outbox: Vec<(Address, Bytes)>,
    /// Transfers tried again.
    pub(crate) retries: u64,
}

impl Distributor {
    pub(crate) fn new(
        lid: u16,
        master: u16,
        hosts: u16,
        window: usize,
        service_id: Option<u64>,
    ) -> Self {
        Self {
            lid,
            master,
            hosts,
            names_unasked: true,
            window: window.max(1),
            todo: (1..=hosts).collect(),
            sending: BTreeMap::new(),
            service_id,
            fetched: BTreeMap::new(),
            outbox: Vec::new(),
            retries: 0,
        }
    }

    /// How many of [`STEPS`] a node goes through.
    fn steps(&self) -> usize {
        match self.service_id {
            Some(_) => STEPS.len(),
            None => DEFAULT_STEPS,
        }
    }

    /// Starts transfers up to the window; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let due: Vec<u16> = self
            .sending
            .iter()
            .filter(|(_, (_, t))| t.poll_timeout().is_some_and(|t| t <= now))
            .map(|(n, _)| *n)
            .collect();
        for node in due {
            match self.sending.get_mut(&node) {
                Some((_, Transfer::Push(s))) => s.handle_timeout(now),
                Some((step, Transfer::Fetch(r, _))) if r.has_started() => {
                    r.handle_timeout(now);
                    acks(r, Address::gsi(self.master, 0), &mut self.outbox);
                    if matches!(r.state(), TransferState::Aborted { .. }) {
                        let step = *step;
                        self.retries += 1;
                        self.start(node, step, now);
                    }
                }
                // Not a segment of it yet: asked again.
                Some((step, Transfer::Fetch(..))) => {
                    let step = *step;
                    self.retries += 1;
                    self.start(node, step, now);
                }
                None => {}
            }
        }
        while self.sending.len() < self.window {
            let Some(node) = self.todo.pop_front() else {
                break;
            };
            if !self.start(node, 0, now) {
                break;
            }
        }
        let mut out = self.ask_names();
        out.extend(self.flush(now));
        out
    }

    /// Starts `STEPS[step]` for `node`; false if it cannot be.
    fn start(&mut self, node: u16, step: usize, now: Instant) -> bool {
        let transfer = match STEPS[step] {
            Step::FetchQos => {
                self.outbox.push(self.qos_table_request(node, step));
                Transfer::Fetch(Receiver::new(RmppConfig::default(), now), now)
            }
            _ => match self.sender(node, step, now) {
                Some(s) => Transfer::Push(s),
                None => return false,
            },
        };
        self.sending.insert(node, (step, transfer));
        true
    }

    /// The GetTable of `node`'s paths at the ServiceID, on the default
    /// partition.
    fn qos_table_request(&self, node: u16, step: usize) -> (Address, Bytes) {
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, tid(node, step), AttributeId::PATH_RECORD);
        let h = b.header_mut();
        h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        h.sa.set_component_mask(pr::SGID | pr::PKEY | pr::SERVICE_ID);
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(gid(node));
        t.set_pkey(0xFFFF);
        t.set_service_id(self.service_id.unwrap_or(0));
        let mut mad = BytesMut::from(b.into_bytes().as_ref());
        mad.truncate(SaMadHeader::LEN);
        mad.extend_from_slice(t.as_bytes());
        (Address::gsi(self.master, 0), mad.freeze())
    }

    /// The two names tables, asked of the master once (their answers are
    /// not needed: the model's are empty).
    fn ask_names(&mut self) -> Vec<(Address, Bytes)> {
        if !std::mem::take(&mut self.names_unasked) {
            return Vec::new();
        }
        let master = Address::gsi(self.master, 0);
        [AttributeId::NODE_RECORD, AttributeId::SERVICE_RECORD]
            .into_iter()
            .map(|attribute| {
                let b = SaMadBuilder::request(Method::GET_TABLE, 1, attribute);
                (master, b.into_bytes())
            })
            .collect()
    }

    /// Whether every node has everything.
    pub(crate) fn is_done(&self) -> bool {
        self.todo.is_empty() && self.sending.is_empty()
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        self.sending
            .values()
            .filter_map(|(_, t)| t.poll_timeout())
            .min()
    }

    /// A MAD from node `from`: an ACK of its transfer, or its answer.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Vec<(Address, Bytes)> {
        if from.lid == self.master {
            self.master_answered(now, from, mad);
        } else {
            self.node_answered(now, from.lid, mad);
        }
        let mut out = self.flush(now);
        out.extend(self.poll(now));
        out
    }

    /// A node's MAD: an ACK of the transfer to it, or its answer.
    fn node_answered(&mut self, now: Instant, node: u16, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else {
            return;
        };
        let h = m.header();
        let control = h.rmpp.is_active()
            && matches!(
                h.rmpp.rmpp_type(),
                RmppType::ACK | RmppType::STOP | RmppType::ABORT
            );
        if control {
            if let Some((_, Transfer::Push(s))) = self.sending.get_mut(&node) {
                s.handle_control(now, mad);
            }
        } else if h.mad.method().is_response()
            && let Some((step, Transfer::Push(_))) = self.sending.get(&node)
        {
            let next = step + 1;
            self.sending.remove(&node);
            if h.mad.status() != MadStatus::OK {
                self.retries += 1;
                self.todo.push_back(node);
            } else if next < self.steps() {
                self.start(node, next, now);
            }
        }
    }

    /// The master's MAD: a segment of a node's table at the ServiceID (the
    /// names tables' answers are not needed).
    fn master_answered(&mut self, now: Instant, from: Address, mad: &[u8]) {
        let Ok((h, _)) = SaMadHeader::parse(mad) else {
            return;
        };
        let tid = h.mad.transaction_id();
        let node = (tid >> 3) as u16;
        let Some((step, Transfer::Fetch(r, _))) = self.sending.get_mut(&node) else {
            return;
        };
        if tid != self::tid(node, *step) || h.mad.attribute_id() != AttributeId::PATH_RECORD {
            return;
        }
        let step = *step;
        let message = if h.rmpp.is_active() {
            r.handle_segment(now, mad);
            acks(r, from.reply(), &mut self.outbox);
            if matches!(r.state(), TransferState::Aborted { .. }) {
                self.retries += 1;
                self.start(node, step, now);
                return;
            }
            match r.take_message() {
                Some(m) => m,
                None => return,
            }
        } else {
            Bytes::copy_from_slice(mad)
        };
        let records = match SaMadHeader::parse(&message) {
            Ok((h, body)) if h.mad.status() == MadStatus::OK => body
                .chunks_exact(PathRecord::LEN)
                .filter_map(|r| PathRecord::read_from_bytes(r).ok())
                .filter(|r| r.slid() != 0)
                .collect(),
            _ => Vec::new(),
        };
        self.fetched.insert(node, records);
        self.sending.remove(&node);
        self.start(node, step + 1, now);
    }

    /// The transfer of `STEPS[step]` to `node`.
    fn sender(&mut self, node: u16, step: usize, now: Instant) -> Option<Sender> {
        let attribute = match STEPS[step] {
            Step::Push(attribute) => attribute,
            Step::PushQos | Step::FetchQos => AttributeId::PATH_RECORD,
        };
        let mut b = SaMadBuilder::request(Method::SET, tid(node, step), attribute);
        let h = b.header_mut();
        h.sa.set_sm_key(SM_KEY);
        let data = match attribute {
            _ if STEPS[step] == Step::PushQos => {
                h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
                h.sa.set_component_mask(pr::PKEY | pr::SERVICE_ID);
                h.mad.set_attribute_modifier(QOS_TABLES);
                let mut key = PathRecord::new_zeroed();
                key.set_pkey(0xFFFF);
                key.set_service_id(self.service_id.unwrap_or(0));
                let table = self.fetched.remove(&node).unwrap_or_default();
                let mut data = BytesMut::with_capacity((table.len() + 1) * PathRecord::LEN);
                data.extend_from_slice(key.as_bytes());
                for r in &table {
                    data.extend_from_slice(r.as_bytes());
                }
                data.freeze()
            }
            AttributeId::NODE_RECORD => {
                h.sa.set_attribute_offset(NodeRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(NAMES_TABLE);
                Bytes::from(vec![0; NodeRecord::STRIDE])
            }
            AttributeId::SERVICE_RECORD => {
                h.sa.set_attribute_offset(ServiceRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(NAMES_TABLE);
                Bytes::from(vec![0; ServiceRecord::STRIDE])
            }
            _ => {
                h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(REPLACE_SOURCES);
                let mut data = BytesMut::with_capacity(usize::from(self.hosts) * PathRecord::LEN);
                for d in 1..=self.hosts {
                    data.extend_from_slice(path(node, d).as_bytes());
                }
                data.freeze()
            }
        };
        let header: SaMadHeader = *h;
        Sender::new(header, data, RmppConfig::default(), now).ok()
    }

    /// Segments due from every transfer; aborted ones go back on the list.
    fn flush(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let mut out = std::mem::take(&mut self.outbox);
        let mut aborted = Vec::new();
        for (&node, (_, t)) in &mut self.sending {
            let Transfer::Push(s) = t else { continue };
            while let Some(seg) = s.poll_transmit(now) {
                out.push((Address::gsi(node, 0), Bytes::copy_from_slice(&seg)));
            }
            if matches!(s.state(), TransferState::Aborted { .. }) {
                aborted.push(node);
            }
        }
        for node in aborted {
            self.sending.remove(&node);
            self.retries += 1;
            self.todo.push_back(node);
        }
        out
    }
}

/// Queues the ACKs `r` has for the master at `to`.
fn acks(r: &mut Receiver, to: Address, out: &mut Vec<(Address, Bytes)>) {
    while let Some(ack) = r.poll_transmit() {
        out.push((to, Bytes::copy_from_slice(&ack)));
    }
}

/// The TransactionID of `STEPS[step]` for `node`.
fn tid(node: u16, step: usize) -> u64 {
    u64::from(node) << 3 | step as u64
}
