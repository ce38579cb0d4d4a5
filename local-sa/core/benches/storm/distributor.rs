//! A model distributor next to the master: it asks the master once for
//! the names tables (the channel adapters' NodeRecords and the local-sa
//! directory), and pushes each of its nodes the names tables
//! (NAMES_TABLE) and then its own paths (REPLACE_SOURCES), each a Set
//! with the SM_Key over RMPP, `window` nodes at a time, the next node as
//! soon as one has all of them. A transfer that aborts or is refused is
//! tried again, from the node's first, after the others. Where its
//! nodes' paths come from is its [`Source`]:
//!
//! * a dump (computing them costs the master SA nothing here);
//! * the master: a GetTable of each node's paths (SGID) over RMPP before
//!   the node's push, `lsaquery --distribute` without `--compute`;
//! * computed (`lsaquery --distribute --compute`): first the fabric's
//!   description from the master (a GetTable of each record type, whose
//!   size the model master charges for the model's fabric; its NodeRecords
//!   stand for the names table of adapters), one Get for the partition's
//!   SL and [`SAMPLE`] Gets of pairs spread over the nodes checked
//!   against the master, `MASTER_WINDOW` at a time; then the pushes,
//!   as from a dump. Computing the tables is not on the fill's critical
//!   path (the engine computes some 25 M paths a second a core, the port
//!   sends some 750 k records a second), so it takes no virtual time.
//!
//! With several distributors each takes a share of the nodes (`shard`
//! of `shards`, by LID) and reads what it needs from the master itself.
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

/// Where a distributor's nodes' paths come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Dump,
    Master,
    Computed,
}

/// Pairs a computing distributor checks against the master
/// (`--check-sample`'s default).
pub(crate) const SAMPLE: u16 = 1000;

/// Queries a computing distributor keeps at the master at once
/// (`--master-window`'s default).
const MASTER_WINDOW: usize = 16;

/// TransactionIDs of the description's and the sample's queries (a node's
/// are its LID times 8 and a step).
const DESCRIPTION_TID: u64 = 1 << 40;

/// What a node is sent, in order: the names tables, its paths (from the
/// master first, if that is where they come from), then (with a
/// ServiceID) its table at that ServiceID, asked of the master first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Push(AttributeId),
    /// Its table from the master: by SGID (`false`), or at the ServiceID.
    Fetch {
        qos: bool,
    },
    PushQos,
}

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
    source: Source,
    /// What each node goes through, in order.
    steps: Vec<Step>,
    /// The names tables (computed: the description and the sample) are
    /// yet to be asked of the master.
    names_unasked: bool,
    /// Computed: the description's and the sample's queries still to ask,
    /// and those asked without an answer yet.
    checks: VecDeque<Bytes>,
    checks_out: usize,
    window: usize,
    /// Nodes still to fill, in order.
    todo: VecDeque<u16>,
    /// Transfers under way, by node: which step, and the transfer.
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
    /// The lease its path loads give (a watch follows the fill).
    lease: Option<u16>,
}

impl Distributor {
    /// A distributor of the nodes of share `shard` (0-based) of `shards`.
    pub(crate) fn new(
        lid: u16,
        master: u16,
        hosts: u16,
        window: usize,
        service_id: Option<u64>,
        source: Source,
        (shard, shards): (u16, u16),
    ) -> Self {
        let mut steps = vec![
            Step::Push(AttributeId::NODE_RECORD),
            Step::Push(AttributeId::SERVICE_RECORD),
        ];
        if source == Source::Master {
            steps.push(Step::Fetch { qos: false });
        }
        steps.push(Step::Push(AttributeId::PATH_RECORD));
        if service_id.is_some() {
            steps.extend([Step::Fetch { qos: true }, Step::PushQos]);
        }
        Self {
            lid,
            master,
            hosts,
            source,
            steps,
            names_unasked: true,
            checks: VecDeque::new(),
            checks_out: 0,
            window: window.max(1),
            todo: (1..=hosts).filter(|n| n % shards.max(1) == shard).collect(),
            sending: BTreeMap::new(),
            service_id,
            fetched: BTreeMap::new(),
            outbox: Vec::new(),
            retries: 0,
            lease: None,
        }
    }

    /// Its path loads give the nodes a lease of `seconds` (a watch
    /// follows the fill).
    pub(crate) fn with_lease(mut self, seconds: Option<u16>) -> Self {
        self.lease = seconds;
        self
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
        let mut out = self.ask_names();
        out.extend(self.ask_checks());
        // A computing distributor pushes nothing before its check is over.
        let checked = self.checks.is_empty() && self.checks_out == 0;
        while checked && self.sending.len() < self.window {
            let Some(node) = self.todo.pop_front() else {
                break;
            };
            if !self.start(node, 0, now) {
                break;
            }
        }
        out.extend(self.flush(now));
        out
    }

    /// The description's and the sample's queries, [`MASTER_WINDOW`] at
    /// the master at once.
    fn ask_checks(&mut self) -> Vec<(Address, Bytes)> {
        let mut out = Vec::new();
        while self.checks_out < MASTER_WINDOW {
            let Some(q) = self.checks.pop_front() else {
                break;
            };
            self.checks_out += 1;
            out.push((Address::gsi(self.master, 0), q));
        }
        out
    }

    /// What a computing distributor asks the master before its pushes:
    /// every record type of the description, one path for the
    /// partition's SL, and the sample's pairs (spread over the nodes).
    fn description_and_sample(&self) -> VecDeque<Bytes> {
        let mut q = VecDeque::new();
        let mut tid = DESCRIPTION_TID;
        for attribute in [
            AttributeId::NODE_RECORD,
            AttributeId::PORT_INFO_RECORD,
            AttributeId::LINK_RECORD,
            AttributeId::LINEAR_FORWARDING_TABLE_RECORD,
            AttributeId::PKEY_TABLE_RECORD,
            AttributeId::GUID_INFO_RECORD,
        ] {
            tid += 1;
            q.push_back(SaMadBuilder::request(Method::GET_TABLE, tid, attribute).into_bytes());
        }
        let pairs = (SAMPLE + 1).min(self.hosts.saturating_mul(self.hosts.min(SAMPLE)));
        for i in 0..pairs {
            tid += 1;
            let (s, d) = (
                i % self.hosts + 1,
                (i * 7 + i / self.hosts) % self.hosts + 1,
            );
            let mut t = PathRecord::new_zeroed();
            t.set_sgid(gid(s));
            t.set_dgid(gid(d));
            let mut b =
                SaMadBuilder::request(Method::GET, tid, AttributeId::PATH_RECORD).record(&t);
            b.header_mut().sa.set_component_mask(pr::SGID | pr::DGID);
            q.push_back(b.into_bytes());
        }
        q
    }

    /// Starts `self.steps[step]` for `node`; false if it cannot be.
    fn start(&mut self, node: u16, step: usize, now: Instant) -> bool {
        let transfer = match self.steps[step] {
            Step::Fetch { qos } => {
                self.outbox.push(self.table_request(node, step, qos));
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

    /// The GetTable of `node`'s paths: its table (SGID), or (`qos`) at
    /// the ServiceID, on the default partition.
    fn table_request(&self, node: u16, step: usize, qos: bool) -> (Address, Bytes) {
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, tid(node, step), AttributeId::PATH_RECORD);
        let h = b.header_mut();
        h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(gid(node));
        if qos {
            h.sa.set_component_mask(pr::SGID | pr::PKEY | pr::SERVICE_ID);
            t.set_pkey(0xFFFF);
            t.set_service_id(self.service_id.unwrap_or(0));
        } else {
            h.sa.set_component_mask(pr::SGID);
        }
        let mut mad = BytesMut::from(b.into_bytes().as_ref());
        mad.truncate(SaMadHeader::LEN);
        mad.extend_from_slice(t.as_bytes());
        (Address::gsi(self.master, 0), mad.freeze())
    }

    /// The two names tables, asked of the master once (their answers are
    /// not needed: the model's are empty); computed, the directory's only
    /// (the description's NodeRecords hold the adapters'), and the
    /// description and sample queued.
    fn ask_names(&mut self) -> Vec<(Address, Bytes)> {
        if !std::mem::take(&mut self.names_unasked) {
            return Vec::new();
        }
        let master = Address::gsi(self.master, 0);
        let mut adapters = NodeRecord::new_zeroed();
        adapters.set_node_type(mad_codec::codes::NodeType::CA);
        let mut b =
            SaMadBuilder::request(Method::GET_TABLE, 1, AttributeId::NODE_RECORD).record(&adapters);
        b.header_mut()
            .sa
            .set_component_mask(mad_codec::attr::node_record::mask::NODE_TYPE);
        let nodes = b.into_bytes();
        let directory =
            SaMadBuilder::request(Method::GET_TABLE, 1, AttributeId::SERVICE_RECORD).into_bytes();
        if self.source == Source::Computed {
            self.checks = self.description_and_sample();
            return vec![(master, directory)];
        }
        vec![(master, nodes), (master, directory)]
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
            } else if next < self.steps.len() {
                self.start(node, next, now);
            }
        }
    }

    /// The master's MAD: a segment of a node's table, or the answer to
    /// one of the description's or the sample's queries (the names
    /// tables' answers are not needed).
    fn master_answered(&mut self, now: Instant, from: Address, mad: &[u8]) {
        let Ok((h, _)) = SaMadHeader::parse(mad) else {
            return;
        };
        let tid = h.mad.transaction_id();
        if tid > DESCRIPTION_TID {
            // The model's description comes in one MAD (its records
            // charged, not built): counted as answered.
            self.checks_out = self.checks_out.saturating_sub(1);
            return;
        }
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
        // A node's table is pushed as from a dump (the same records); its
        // table at the ServiceID is kept for its push.
        if self.steps[step] == (Step::Fetch { qos: true }) {
            let records = match SaMadHeader::parse(&message) {
                Ok((h, body)) if h.mad.status() == MadStatus::OK => body
                    .chunks_exact(PathRecord::LEN)
                    .filter_map(|r| PathRecord::read_from_bytes(r).ok())
                    .filter(|r| r.slid() != 0)
                    .collect(),
                _ => Vec::new(),
            };
            self.fetched.insert(node, records);
        }
        self.sending.remove(&node);
        self.start(node, step + 1, now);
    }

    /// The transfer of `self.steps[step]` to `node`.
    fn sender(&mut self, node: u16, step: usize, now: Instant) -> Option<Sender> {
        let attribute = match self.steps[step] {
            Step::Push(attribute) => attribute,
            Step::PushQos | Step::Fetch { .. } => AttributeId::PATH_RECORD,
        };
        let mut b = SaMadBuilder::request(Method::SET, tid(node, step), attribute);
        let h = b.header_mut();
        h.sa.set_sm_key(SM_KEY);
        let data = match attribute {
            _ if self.steps[step] == Step::PushQos => {
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
                h.mad.set_attribute_modifier(match self.lease {
                    Some(seconds) => {
                        local_sa_core::load_flags::with_lease(REPLACE_SOURCES, seconds)
                    }
                    None => REPLACE_SOURCES,
                });
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
        let pushes = (self.sending.iter_mut()).filter_map(|(&node, (_, t))| match t {
            Transfer::Push(s) => Some((node, s)),
            _ => None,
        });
        for node in transmit_pushes(pushes, now, &mut out) {
            self.sending.remove(&node);
            self.retries += 1;
            self.todo.push_back(node);
        }
        out
    }
}

/// Queues the segments due from each node's push; the nodes whose push
/// was aborted.
pub(crate) fn transmit_pushes<'a>(
    pushes: impl Iterator<Item = (u16, &'a mut Sender)>,
    now: Instant,
    out: &mut Vec<(Address, Bytes)>,
) -> Vec<u16> {
    let mut aborted = Vec::new();
    for (node, s) in pushes {
        while let Some(seg) = s.poll_transmit(now) {
            out.push((Address::gsi(node, 0), Bytes::copy_from_slice(&seg)));
        }
        if matches!(s.state(), TransferState::Aborted { .. }) {
            aborted.push(node);
        }
    }
    aborted
}

/// Queues the ACKs `r` has for the master at `to`.
fn acks(r: &mut Receiver, to: Address, out: &mut Vec<(Address, Bytes)>) {
    while let Some(ack) = r.poll_transmit() {
        out.push((to, Bytes::copy_from_slice(&ack)));
    }
}

/// The TransactionID of step `step` for `node`.
fn tid(node: u16, step: usize) -> u64 {
    u64::from(node) << 3 | step as u64
}
