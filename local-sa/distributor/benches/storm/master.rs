//! The model master SA: PathRecords of a fabric of `hosts` ports at LIDs
//! 1..=hosts (the benchmarks' fixture records: 100 Gb/s, MTU 4096,
//! reversible), computed when asked (nothing stored per pair), served one
//! request at a time at a fixed cost, with a bounded queue.
//!
//! Cost model (stated in BENCHMARKS.md): a request costs
//! `1 / queries_per_second` plus `records / records_per_second` for the
//! records its answer carries. A request that finds its queue full is
//! dropped (its sender times out and retries, as against a real SA), and
//! so is a Get that arrives while the last Get taken from the queue had
//! waited longer than `fifo_timeout` (OpenSM's `max_msg_fifo_timeout`
//! rule, 10 s by default: osm_sa_mad_ctrl.c drops such a request on
//! arrival). What is queued is served, however long it waited: OpenSM
//! does not look again, so an answer its asker gave up on is work lost.
//! As in OpenSM (its "subnadmin_set" dispatcher), Sets and Deletes have a
//! queue and a server of their own, without the queue-time rule.
//!
//! With a [`QosRule`] the master applies QoS as OpenSM with a policy file
//! does: its ClassPortInfo says so, and a PathRecord query naming a
//! ServiceID in the rule's range gets the rule's SL.
//!
//! Anything but PathRecords is answered with an empty OK answer
//! (ClassPortInfo zeroed but for the QoS bit, the request's record echoed
//! for Sets); a GetTable of NodeRecords (of the adapters) or
//! ServiceRecords (the naming layer's directory loads) costs one record
//! per host, as the real tables would, and a GetTable of every record of
//! a type of the fabric's description (NodeRecords, PortInfoRecords,
//! LinkRecords, LFTRecords, P_KeyTableRecords, GUIDInfoRecords: what
//! `lsaquery --compute` reads) what the model's fabric has of them
//! ([`description_records`]). The registrations a core makes load the
//! queues like any request.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::rmpp::{RmppConfig, Sender, TransferState, single_segment};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfo, Gid, MadStatus, Method, PathRecord, SaMad, SaMadHeader, SaRecord,
    SmInfoRecord,
};

use local_sa_core::Address;

pub(crate) use crate::fixture::gid;
use crate::fixture::record as path;

/// The host at `gid`, if it is one of the model's.
fn lid_of(gid: Gid, hosts: u16) -> Option<u16> {
    let lid = (gid.guid() & 0xFFFF) as u16;
    (gid == self::gid(lid) && (1..=hosts).contains(&lid)).then_some(lid)
}

/// A QoS policy of one match rule: ServiceIDs `first..=last` (rdma_cm's
/// port space, say) on SL `sl`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QosRule {
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) sl: u8,
}

/// The master's rates and queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MasterModel {
    /// Requests per second it serves, each answering one record.
    pub(crate) queries_per_second: f64,
    /// Records per second it adds to a table answer.
    pub(crate) records_per_second: f64,
    /// Requests waiting in each queue at most; more are dropped.
    pub(crate) queue: usize,
    /// Requests arriving while the last one served had waited longer are
    /// dropped (OpenSM: `max_msg_fifo_timeout`).
    pub(crate) fifo_timeout: Duration,
    /// Its QoS policy, if it applies QoS.
    pub(crate) qos: Option<QosRule>,
}

/// The switches of the model's fabric: a three-level fat tree of
/// radix-64 switches with full bisection (N/32 leaves, as many in the
/// middle, N/64 at the top), which the records of a fabric's description
/// are counted from.
pub(crate) fn switches(hosts: u16) -> u64 {
    let n = u64::from(hosts);
    2 * n.div_ceil(32) + n.div_ceil(64)
}

/// How many records, and of how many bytes each, a GetTable of every
/// record of `attribute` answers on the model's fabric of `hosts` hosts
/// (what `lsaquery --compute` reads: the fabric's description); `None`
/// for the other attributes.
pub(crate) fn description_records(attribute: AttributeId, hosts: u16) -> Option<(u64, u64)> {
    let (n, s) = (u64::from(hosts), switches(hosts));
    Some(match attribute {
        AttributeId::NODE_RECORD => (n + s, 112),
        // Every adapter port; every switch's 64 ports and its port 0.
        AttributeId::PORT_INFO_RECORD => (n + 65 * s, 72),
        // The hosts' links and twice as many between switches, each seen
        // from both ends.
        AttributeId::LINK_RECORD => (2 * 3 * n, 8),
        // Every switch's blocks of 64 LIDs.
        AttributeId::LINEAR_FORWARDING_TABLE_RECORD => (s * (n + s + 1).div_ceil(64), 72),
        AttributeId::PKEY_TABLE_RECORD => (n + s, 72),
        // No alias GUIDs assigned.
        AttributeId::GUID_INFO_RECORD => (0, 72),
        _ => return None,
    })
}

/// What the master saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct MasterLoad {
    /// PathRecord requests served.
    pub(crate) path_queries: u64,
    /// Of those, GetTables for a whole port's paths (bulk loads).
    pub(crate) tables: u64,
    /// Other requests served (registrations, ClassPortInfo, names).
    pub(crate) other_queries: u64,
    /// Records its answers carried, and their bytes.
    pub(crate) records: u64,
    /// Of those, PathRecords.
    pub(crate) path_records: u64,
    pub(crate) bytes: u64,
    /// Its time spent serving requests (the model's cost of each).
    pub(crate) busy: Duration,
    /// Requests dropped at a full queue or by the queue-time rule.
    pub(crate) dropped: u64,
    /// Requests served in each second of the run.
    pub(crate) per_second: Vec<u64>,
}

impl MasterLoad {
    /// Requests served in the busiest second.
    pub(crate) fn busiest_second(&self) -> u64 {
        self.per_second.iter().copied().max().unwrap_or(0)
    }
}

/// One of the master's request queues and its server.
#[derive(Default)]
struct Dispatcher {
    /// Requests waiting: since when, who asked, what.
    queue: VecDeque<(Instant, Address, Bytes)>,
    /// How long the last request taken from the queue had waited.
    last_wait: Duration,
    /// When the request in service is done, if one is.
    busy_until: Option<Instant>,
}

/// An RMPP transfer: the asker's LID and QP, the TransactionID.
type TransferKey = (u16, u32, u64);

/// The model master at `lid`.
pub(crate) struct Master {
    pub(crate) lid: u16,
    hosts: u16,
    model: MasterModel,
    start: Instant,
    /// Gets and GetTables.
    gets: Dispatcher,
    /// Sets and Deletes.
    sets: Dispatcher,
    /// Table answers being sent with RMPP, by asker and TransactionID,
    /// with where their segments go (ordered, so that the master's
    /// part of a run repeats exactly).
    senders: BTreeMap<TransferKey, (Sender, Address)>,
    /// Pairs whose route a reroute moved: their records have another rate.
    rerouted: std::collections::HashSet<(u16, u16)>,
    /// The SMPs of the heavy sweeps so far (the light ones are counted
    /// from the time).
    heavy_smps: u32,
    pub(crate) load: MasterLoad,
}

/// The master SM's light sweeps: one every this (OpenSM's default).
const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// The SMPs of the heavy sweep after a link went down, on the model's
/// fabric: every port's PortInfo, and every switch's forwarding table
/// blocks written again.
pub(crate) fn heavy_sweep_smps(hosts: u16) -> u32 {
    let (n, s) = (u64::from(hosts), switches(hosts));
    let ports = n + 65 * s;
    let blocks = s * (n + s + 1).div_ceil(64);
    u32::try_from(ports + blocks).unwrap_or(u32::MAX)
}

/// The record of a pair whose route a reroute moved: the fixture's,
/// at another rate.
pub(crate) fn rerouted_record(s: u16, d: u16) -> PathRecord {
    let mut r = path(s, d);
    r.set_rate(mad_codec::Rate::GBPS_40);
    r
}

impl Master {
    pub(crate) fn new(lid: u16, hosts: u16, model: MasterModel, start: Instant) -> Self {
        Self {
            lid,
            hosts,
            model,
            start,
            gets: Dispatcher::default(),
            sets: Dispatcher::default(),
            senders: BTreeMap::new(),
            rerouted: std::collections::HashSet::new(),
            heavy_smps: 0,
            load: MasterLoad::default(),
        }
    }

    /// A reroute: the records of `pairs` change from now on, after a
    /// heavy sweep.
    pub(crate) fn reroute(&mut self, pairs: impl IntoIterator<Item = (u16, u16)>) {
        self.rerouted.extend(pairs);
        self.heavy_smps = self.heavy_smps.wrapping_add(heavy_sweep_smps(self.hosts));
    }

    /// Its ActCount at `now`: an SMP a switch each light sweep, and the
    /// heavy sweeps'.
    fn act_count(&self, now: Instant) -> u32 {
        let sweeps = now.saturating_duration_since(self.start).as_secs() / SWEEP_INTERVAL.as_secs();
        let light = sweeps.saturating_mul(switches(self.hosts));
        (light as u32).wrapping_add(self.heavy_smps)
    }

    /// The record it answers for `s` to `d`.
    fn record(&self, s: u16, d: u16) -> PathRecord {
        if self.rerouted.contains(&(s, d)) {
            rerouted_record(s, d)
        } else {
            path(s, d)
        }
    }

    /// A MAD arrived: RMPP ACKs go to their transfer at once; requests
    /// wait their turn. Returns MADs to send now.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: Bytes,
    ) -> Vec<(Address, Bytes)> {
        let Ok(m) = SaMad::parse(&mad) else {
            return Vec::new();
        };
        let h = *m.header();
        if h.rmpp.is_active() && !h.mad.method().is_response() {
            let key = (from.lid, from.qpn, h.mad.transaction_id());
            if let Some((s, _)) = self.senders.get_mut(&key) {
                s.handle_control(now, &mad);
            }
            return self.flush(now, key);
        }
        if h.mad.method().is_response() {
            // Answers to the master's own requests (Report responses): none
            // in this model.
            return Vec::new();
        }
        let is_set = matches!(h.mad.method(), Method::SET | Method::DELETE);
        let d = if is_set {
            &mut self.sets
        } else {
            &mut self.gets
        };
        let overloaded = !is_set && d.queue.len() > 1 && d.last_wait > self.model.fifo_timeout;
        if d.queue.len() >= self.model.queue || overloaded {
            self.load.dropped += 1;
            return Vec::new();
        }
        d.queue.push_back((now, from, mad));
        Vec::new()
    }

    /// When [`Self::poll`] has work: the request in service ends, or an
    /// RMPP transfer's ACK is overdue. (Call [`Self::poll`] after
    /// [`Self::receive`]: an idle master starts a request at once.)
    pub(crate) fn next_event(&self) -> Option<Instant> {
        let rmpp = self.senders.values().filter_map(|(s, _)| s.poll_timeout());
        [self.gets.busy_until, self.sets.busy_until]
            .into_iter()
            .flatten()
            .chain(rmpp)
            .min()
    }

    /// Serves what is due at `now`: finishes the request in service,
    /// starts the next, resends overdue RMPP windows.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let mut out = Vec::new();
        let keys: Vec<_> = self
            .senders
            .iter()
            .filter(|(_, (s, _))| s.poll_timeout().is_some_and(|t| t <= now))
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            if let Some((s, _)) = self.senders.get_mut(&key) {
                s.handle_timeout(now);
            }
            out.extend(self.flush(now, key));
        }
        for sets in [false, true] {
            out.extend(self.serve(now, sets));
        }
        out
    }

    /// Starts the next request of one dispatcher if it is idle.
    fn serve(&mut self, now: Instant, sets: bool) -> Vec<(Address, Bytes)> {
        let d = if sets { &mut self.sets } else { &mut self.gets };
        if d.busy_until.is_some_and(|t| t > now) {
            return Vec::new();
        }
        d.busy_until = None;
        let mut out = Vec::new();
        if let Some((queued, from, mad)) = d.queue.pop_front() {
            d.last_wait = now - queued;
            let (answer, records) = self.answer(now, from, &mad);
            let cost = 1.0 / self.model.queries_per_second
                + records as f64 / self.model.records_per_second;
            let d = if sets { &mut self.sets } else { &mut self.gets };
            d.busy_until = Some(now + Duration::from_secs_f64(cost));
            self.load.busy += Duration::from_secs_f64(cost);
            let second = now.saturating_duration_since(self.start).as_secs() as usize;
            if self.load.per_second.len() <= second {
                self.load.per_second.resize(second + 1, 0);
            }
            self.load.per_second[second] += 1;
            out.extend(answer);
        }
        out
    }

    fn flush(&mut self, now: Instant, key: TransferKey) -> Vec<(Address, Bytes)> {
        let mut out = Vec::new();
        if let Some((s, to)) = self.senders.get_mut(&key) {
            while let Some(seg) = s.poll_transmit(now) {
                out.push((*to, Bytes::copy_from_slice(&seg)));
            }
            if s.state() != TransferState::Active {
                self.senders.remove(&key);
            }
        }
        out
    }

    /// The answer to one request, and how many records it carries.
    fn answer(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> (Vec<(Address, Bytes)>, usize) {
        let Ok(m) = SaMad::parse(mad) else {
            return (Vec::new(), 0);
        };
        let h = *m.header();
        let reply_to = from.reply();
        if h.mad.attribute_id() != AttributeId::PATH_RECORD {
            self.load.other_queries += 1;
            let attribute = h.mad.attribute_id();
            let table = h.mad.method() == Method::GET_TABLE;
            let description = description_records(attribute, self.hosts)
                .filter(|_| table && h.sa.component_mask() == mad_codec::ComponentMask::NONE);
            // A names table (the adapters' NodeRecords, the directory's
            // ServiceRecords): a record per host; a whole description
            // table: the fabric's.
            let (cost, stride) = match (description, attribute) {
                (Some((records, stride)), _) => (records as usize, stride),
                (None, AttributeId::NODE_RECORD) if table => (usize::from(self.hosts), 112),
                (None, AttributeId::SERVICE_RECORD) if table => (usize::from(self.hosts), 176),
                _ => (0, 0),
            };
            self.load.records += cost as u64;
            self.load.bytes += cost as u64 * stride;
            let data: Bytes = if attribute == AttributeId::SM_INFO_RECORD {
                let mut r = SmInfoRecord::new_zeroed();
                r.set_lid(self.lid);
                r.set_act_count(self.act_count(now));
                Bytes::copy_from_slice(r.as_bytes())
            } else if h.mad.attribute_id() == AttributeId::CLASS_PORT_INFO {
                let mut cpi = ClassPortInfo::new_zeroed();
                if self.model.qos.is_some() {
                    cpi.set_capability_mask2(cap2::QOS_SUPPORTED);
                }
                Bytes::copy_from_slice(cpi.as_bytes())
            } else if h.mad.method() == Method::SET {
                Bytes::copy_from_slice(m.data())
            } else {
                Bytes::new()
            };
            return (vec![(reply_to, single(&h, MadStatus::OK, &data))], cost);
        }
        self.load.path_queries += 1;
        let mut t = PathRecord::new_zeroed();
        let n = m.data().len().min(PathRecord::LEN);
        t.as_mut_bytes()[..n].copy_from_slice(&m.data()[..n]);
        let mask = h.sa.component_mask();
        let hosts = self.hosts;
        let end = |lid_bit, gid_bit, lid: u16, gid: Gid| -> Option<Option<u16>> {
            if mask.intersects(lid_bit) {
                Some((1..=hosts).contains(&lid).then_some(lid))
            } else if mask.intersects(gid_bit) {
                Some(lid_of(gid, hosts))
            } else {
                None
            }
        };
        let source = end(pr::SLID, pr::SGID, t.slid(), t.sgid());
        let dest = end(pr::DLID, pr::DGID, t.dlid(), t.dgid());
        let mut records: Vec<PathRecord> = match (source, dest) {
            (Some(None), _) | (_, Some(None)) => Vec::new(),
            (Some(Some(s)), Some(Some(d))) => vec![self.record(s, d)],
            (Some(Some(s)), None) => (1..=hosts).map(|d| self.record(s, d)).collect(),
            (None, Some(Some(d))) => (1..=hosts).map(|s| self.record(s, d)).collect(),
            (None, None) => Vec::new(),
        };
        if let Some(rule) = self.model.qos
            && mask.contains(pr::SERVICE_ID)
            && (rule.first..=rule.last).contains(&t.service_id())
        {
            for r in &mut records {
                r.set_sl(rule.sl);
            }
        }
        self.load.records += records.len() as u64;
        self.load.path_records += records.len() as u64;
        self.load.bytes += records.len() as u64 * PathRecord::LEN as u64;
        if h.mad.method() == Method::GET {
            return match records.first() {
                Some(r) => (vec![(reply_to, single(&h, MadStatus::OK, r.as_bytes()))], 1),
                None => (
                    vec![(reply_to, single(&h, MadStatus::ERR_NO_RECORDS, &[]))],
                    0,
                ),
            };
        }
        if source.is_some() && dest.is_none() {
            self.load.tables += 1;
        }
        let count = records.len();
        let mut data = BytesMut::with_capacity(count * PathRecord::LEN);
        for r in &records {
            data.extend_from_slice(r.as_bytes());
        }
        let mut header = response(&h, MadStatus::OK);
        header.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        if let Some(one) = single_segment(&header, &data) {
            return (vec![(reply_to, one)], count);
        }
        let Ok(sender) = Sender::new(header, data.freeze(), RmppConfig::default(), now) else {
            return (Vec::new(), count);
        };
        let key = (from.lid, from.qpn, h.mad.transaction_id());
        self.senders.insert(key, (sender, reply_to));
        (self.flush(now, key), count)
    }
}

fn response(request: &SaMadHeader, status: MadStatus) -> SaMadHeader {
    let mut h = *request;
    h.mad.set_method(request.mad.method().response());
    h.mad.set_status(status);
    h.rmpp = mad_codec::RmppHeader::new_zeroed();
    h.sa.set_sm_key(0);
    h
}

/// A one-MAD answer carrying `data`.
fn single(request: &SaMadHeader, status: MadStatus, data: &[u8]) -> Bytes {
    let mut mad = BytesMut::from(response(request, status).as_bytes());
    mad.extend_from_slice(data);
    mad.freeze()
}
