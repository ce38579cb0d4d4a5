//! A master SA small enough to reason about: it knows a fixed set of
//! PathRecords, answers PathRecord Get/GetTable by SGID/DGID/SLID/DLID,
//! ClassPortInfo and InformInfo Set, and sends table answers either through
//! RMPP (as over a real port) or cut to one 256-byte MAD (as the simulator
//! delivers OpenSM's multi-MAD answers). It can also stop answering.
//!
//! It does not re-implement OpenSM's selection rules: the query engine's
//! own tests and the conformance tests against OpenSM cover those. What it
//! records (every request, every subscription) is what the agent tests
//! assert on.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::attr::node_record::mask as nr;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::attr::service_record::mask as sr;
use mad_codec::codes::NodeType;
use mad_codec::codes::{NoticeType, ProducerType};
use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};
use mad_codec::records::{SaRecord, put_record};
use mad_codec::rmpp::{self, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfoRepr, ComponentMask, Gid, InformInfo, InformInfoRepr, JoinState,
    MAD_LEN, MadStatus, McMemberRecord, Method, Mtu, PathRecord, PathRecordRepr, Rate, SaMad,
    SaMadBuilder, Selector, TrapDetails,
};
use mad_codec::{NodeRecord, ServiceRecord, SmInfoRecord};

/// How table answers travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Through RMPP, segment by segment, with ACKs.
    Rmpp,
    /// Cut to the first 256 bytes, RMPP Active with type 0: what the
    /// simulator hands over of OpenSM's multi-MAD answers.
    Cut,
}

/// A request the master received, decoded enough to assert on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) attribute: AttributeId,
    pub(crate) mask: ComponentMask,
    pub(crate) template: PathRecord,
}

/// The fake master SA.
#[derive(Debug)]
pub(crate) struct FakeMaster {
    pub(crate) lid: u16,
    pub(crate) paths: Vec<PathRecord>,
    pub(crate) delivery: Delivery,
    /// When false, requests vanish.
    pub(crate) answering: bool,
    /// Error answers framed as RMPP Active with type 0, as OpenSM's come
    /// through the simulator, and marked cut by the transport.
    pub(crate) rmpp_errors: bool,
    pub(crate) qos: bool,
    /// With `qos`: the SL of ServiceIDs in each range (OpenSM's
    /// `qos-ulps`), applied when a query names its ServiceID.
    pub(crate) qos_policy: Vec<(std::ops::RangeInclusive<u64>, u8)>,
    /// Partitions besides the default one, by 15-bit key: their SL. Every
    /// host is a member of each but those in `outside`.
    pub(crate) partitions: BTreeMap<u16, u8>,
    /// The hosts (by LID) not in each partition.
    pub(crate) outside: BTreeMap<u16, BTreeSet<u16>>,
    /// Partitions whose tables (a GetTable naming the P_Key and no
    /// destination) it refuses with ERR_REQ_INVALID.
    pub(crate) refused_tables: BTreeSet<u16>,
    /// Every request received, in order (RMPP ACKs excluded).
    pub(crate) requests: Vec<Seen>,
    /// (trap, QPN) of each subscription held.
    pub(crate) subscriptions: BTreeSet<(u16, u32)>,
    /// TransactionIDs of ReportResps received.
    pub(crate) report_resps: Vec<u64>,
    /// ServiceRecords held, by (ServiceID, ServiceGID).
    pub(crate) services: BTreeMap<(u64, Gid), ServiceRecord>,
    /// NodeDescription of the host at each LID (channel adapters).
    pub(crate) descriptions: BTreeMap<u16, String>,
    /// Multicast groups: the record and each member port's JoinState.
    pub(crate) groups: BTreeMap<Gid, (McMemberRecord, BTreeMap<Gid, JoinState>)>,
    next_mgid: u64,
    pub(crate) next_mlid: u16,
    /// Its SMInfo's ActCount: the SMPs its SM sent (a test moves it as
    /// sweeps would).
    pub(crate) act_count: u32,
    senders: HashMap<u32, Sender>,
    /// MADs to send, with what the transport will say of their integrity
    /// (see [`crate::address::Received::cut`]).
    out: VecDeque<(Bytes, Option<usize>)>,
    next_report_tid: u64,
}

/// The subnet prefix every fake port uses.
pub(crate) const PREFIX: u64 = Gid::DEFAULT_PREFIX;

/// The GUID of the fake host at `lid`.
pub(crate) fn guid(lid: u16) -> u64 {
    0x0002_c903_0000_0000 | u64::from(lid)
}

/// The GID of the fake host at `lid`.
pub(crate) fn gid(lid: u16) -> Gid {
    Gid::new(PREFIX, guid(lid))
}

/// The record the master holds for one LID pair (LMC 0).
pub(crate) fn path(slid: u16, dlid: u16) -> PathRecord {
    PathRecordRepr {
        sgid: gid(slid),
        dgid: gid(dlid),
        slid,
        dlid,
        reversible: true,
        pkey: 0xFFFF,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::MTU_2048,
        rate_selector: Selector::Exactly,
        rate: Rate::GBPS_10,
        packet_life_selector: Selector::Exactly,
        packet_life: if slid == dlid { 0 } else { 18 },
        ..PathRecordRepr::default()
    }
    .to_wire()
}

impl FakeMaster {
    /// A master at `lid` for hosts at LIDs `1..=hosts`: every pair's path.
    pub(crate) fn new(lid: u16, hosts: u16) -> Self {
        let paths = (1..=hosts)
            .flat_map(|s| (1..=hosts).map(move |d| path(s, d)))
            .collect();
        Self {
            lid,
            paths,
            delivery: Delivery::Rmpp,
            answering: true,
            rmpp_errors: false,
            qos: false,
            qos_policy: Vec::new(),
            partitions: BTreeMap::new(),
            outside: BTreeMap::new(),
            refused_tables: BTreeSet::new(),
            requests: Vec::new(),
            subscriptions: BTreeSet::new(),
            report_resps: Vec::new(),
            services: BTreeMap::new(),
            descriptions: BTreeMap::new(),
            groups: BTreeMap::new(),
            next_mgid: 1,
            next_mlid: 0xC001,
            act_count: 1000,
            senders: HashMap::new(),
            out: VecDeque::new(),
            next_report_tid: 0x02DA_B000,
        }
    }

    /// Requests of `attribute` received so far.
    pub(crate) fn count(&self, attribute: AttributeId) -> usize {
        self.requests
            .iter()
            .filter(|s| s.attribute == attribute)
            .count()
    }

    /// PathRecord GetTables received: whole tables, or one destination's
    /// paths (a walk, a check of a kept or loaded table).
    pub(crate) fn path_tables(&self) -> usize {
        self.requests
            .iter()
            .filter(|s| s.attribute == AttributeId::PATH_RECORD && s.method == Method::GET_TABLE)
            .count()
    }

    /// The next MAD the master sends, and how much of it arrives real.
    pub(crate) fn poll_transmit(&mut self) -> Option<(Bytes, Option<usize>)> {
        self.out.pop_front()
    }

    /// When the master's RMPP senders next need [`FakeMaster::handle_timeout`].
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.senders.values().filter_map(Sender::poll_timeout).min()
    }

    /// Resends unacknowledged segments.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for s in self.senders.values_mut() {
            s.handle_timeout(now);
        }
        self.flush_senders(now);
    }

    /// Sends the agent a Report of `details`.
    pub(crate) fn report(&mut self, details: TrapDetails) {
        let notice = mad_codec::NoticeRepr::generic(
            NoticeType::SUBNET_MANAGEMENT,
            ProducerType::CLASS_MANAGER,
            details,
            self.lid,
            gid(self.lid),
        )
        .to_wire();
        self.next_report_tid += 1;
        let b = SaMadBuilder::request(Method::REPORT, self.next_report_tid, AttributeId::NOTICE)
            .record(&notice);
        self.out.push_back((b.into_bytes(), None));
    }

    /// A MAD from the agent.
    pub(crate) fn handle(&mut self, now: Instant, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let h = *m.header();
        if h.rmpp.is_active() && h.rmpp.rmpp_type() != RmppType::DATA {
            if let Some(s) = self.senders.get_mut(&h.mad.transaction_id_low()) {
                s.handle_control(now, mad);
            }
            self.flush_senders(now);
            return;
        }
        if h.mad.method() == Method::REPORT_RESP {
            self.report_resps.push(h.mad.transaction_id());
            return;
        }
        let mut template = PathRecord::new_zeroed();
        let n = m.data().len().min(PathRecord::LEN);
        template.as_mut_bytes()[..n].copy_from_slice(&m.data()[..n]);
        self.requests.push(Seen {
            method: h.mad.method(),
            attribute: h.mad.attribute_id(),
            mask: h.sa.component_mask(),
            template,
        });
        if !self.answering {
            return;
        }
        match (h.mad.attribute_id(), h.mad.method()) {
            (AttributeId::PATH_RECORD, Method::GET | Method::GET_TABLE) => {
                self.path_query(now, &h, &template);
            }
            (AttributeId::CLASS_PORT_INFO, Method::GET) => {
                let cpi = ClassPortInfoRepr {
                    base_version: 1,
                    class_version: 2,
                    capability_mask2: if self.qos { cap2::QOS_SUPPORTED } else { 0 },
                    ..ClassPortInfoRepr::default()
                }
                .to_wire();
                self.answer(&h, MadStatus::OK, cpi.as_bytes());
            }
            (AttributeId::SM_INFO_RECORD, Method::GET) => {
                let mut r = SmInfoRecord::new_zeroed();
                r.set_lid(self.lid);
                r.set_act_count(self.act_count);
                self.answer(&h, MadStatus::OK, r.as_bytes());
            }
            (AttributeId::INFORM_INFO, Method::SET) => {
                let Ok(wire) = m.record::<InformInfo>() else {
                    return;
                };
                let info = InformInfoRepr::parse(wire);
                let key = (info.trap_number, info.qpn);
                if info.subscribe == 1 {
                    self.subscriptions.insert(key);
                } else {
                    self.subscriptions.remove(&key);
                }
                self.answer(&h, MadStatus::OK, wire.as_bytes());
            }
            (AttributeId::SERVICE_RECORD, Method::GET_TABLE) => {
                let Ok(t) = m.record::<ServiceRecord>() else {
                    return;
                };
                let mask = h.sa.component_mask();
                let found: Vec<ServiceRecord> = self
                    .services
                    .values()
                    .filter(|r| {
                        (!mask.intersects(sr::SERVICE_ID) || r.service_id() == t.service_id())
                            && (!mask.intersects(sr::SERVICE_GID)
                                || r.service_gid() == t.service_gid())
                    })
                    .copied()
                    .collect();
                self.table(now, &h, &found);
            }
            (AttributeId::NODE_RECORD, Method::GET_TABLE) => {
                let Ok(t) = m.record::<NodeRecord>() else {
                    return;
                };
                let mask = h.sa.component_mask();
                let found: Vec<NodeRecord> = self
                    .descriptions
                    .iter()
                    .filter(|(lid, _)| !mask.intersects(nr::LID) || **lid == t.lid())
                    .map(|(lid, text)| {
                        let mut r = NodeRecord::new_zeroed();
                        r.set_lid(*lid);
                        r.set_node_type(NodeType::CA);
                        r.set_port_guid(guid(*lid));
                        r.set_description(text);
                        r
                    })
                    .collect();
                self.table(now, &h, &found);
            }
            (AttributeId::SERVICE_RECORD, Method::SET | Method::GET | Method::DELETE) => {
                let Ok(r) = m.record::<ServiceRecord>() else {
                    return;
                };
                let key = (r.service_id(), r.service_gid());
                let (status, record) = match h.mad.method() {
                    Method::SET => {
                        self.services.insert(key, *r);
                        (MadStatus::OK, *r)
                    }
                    Method::DELETE if self.services.remove(&key).is_some() => (MadStatus::OK, *r),
                    Method::GET => match self.services.get(&key) {
                        Some(held) => (MadStatus::OK, *held),
                        None => (MadStatus::ERR_NO_RECORDS, *r),
                    },
                    _ => (MadStatus::ERR_NO_RECORDS, *r),
                };
                self.answer(&h, status, record.as_bytes());
            }
            (AttributeId::MC_MEMBER_RECORD, Method::SET | Method::DELETE) => {
                let Ok(r) = m.record::<McMemberRecord>() else {
                    return;
                };
                let (status, answer) = if h.mad.method() == Method::SET {
                    self.join(h.sa.component_mask(), *r)
                } else {
                    self.leave(h.sa.component_mask(), *r)
                };
                self.answer(&h, status, answer.as_bytes());
            }
            (AttributeId::MC_MEMBER_RECORD, Method::GET) => {
                let Ok(t) = m.record::<McMemberRecord>() else {
                    return;
                };
                // Whether a port is in a group (or, without PortGID in
                // the mask, whether the group exists), as OpenSM answers
                // an untrusted asker: no PortGID, no JoinState.
                let port = h.sa.component_mask().contains(mc::PORT_GID);
                match self.groups.get(&t.mgid()) {
                    Some((g, members)) if !port || members.contains_key(&t.port_gid()) => {
                        let g = *g;
                        self.answer(&h, MadStatus::OK, g.as_bytes());
                    }
                    _ => self.answer(&h, MadStatus::ERR_NO_RECORDS, t.as_bytes()),
                }
            }
            _ => self.answer(&h, MadStatus::METHOD_ATTR_UNSUPPORTED, &[]),
        }
    }

    /// OpenSM's join rules, the ones the agent tests exercise.
    fn join(&mut self, mask: ComponentMask, mut r: McMemberRecord) -> (MadStatus, McMemberRecord) {
        if !mask.contains(mc::JOIN) {
            return (MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS, r);
        }
        let bits = r.join_state();
        if bits.is_empty() {
            return (MadStatus::ERR_REQ_INVALID, r);
        }
        if r.mgid() == Gid::ZERO {
            r.set_mgid(Gid::new(0xff12_a01b_fe80_0000, self.next_mgid));
            self.next_mgid += 1;
        }
        if !self.groups.contains_key(&r.mgid()) {
            if !mask.contains(mc::CREATE) {
                return (MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS, r);
            }
            if !bits.contains(JoinState::FULL_MEMBER)
                && !bits.contains(JoinState::SEND_ONLY_FULL_MEMBER)
            {
                return (MadStatus::ERR_REQ_INVALID, r);
            }
            let mut g = r;
            if !(mask.contains(mc::MLID) && r.mlid() != 0) {
                g.set_mlid(self.next_mlid);
                self.next_mlid += 1;
            }
            self.groups.insert(r.mgid(), (g, BTreeMap::new()));
        }
        let Some((g, members)) = self.groups.get_mut(&r.mgid()) else {
            unreachable!()
        };
        if mask.contains(mc::QKEY) && r.qkey() != g.qkey() {
            return (MadStatus::ERR_REQ_INVALID, r);
        }
        let state = members.entry(r.port_gid()).or_insert(JoinState::NONE);
        *state |= bits;
        let mut answer = *g;
        answer.set_port_gid(r.port_gid());
        answer.set_join_state(*state);
        (MadStatus::OK, answer)
    }

    /// OpenSM's leave rules.
    fn leave(&mut self, mask: ComponentMask, mut r: McMemberRecord) -> (MadStatus, McMemberRecord) {
        if !mask.contains(mc::JOIN) {
            return (MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS, r);
        }
        let Some((_, members)) = self.groups.get_mut(&r.mgid()) else {
            return (MadStatus::ERR_REQ_INVALID, r);
        };
        let bits = r.join_state();
        let Some(state) = members.get_mut(&r.port_gid()) else {
            return (MadStatus::ERR_REQ_INVALID, r);
        };
        if bits.is_empty() || !state.contains(bits) {
            return (MadStatus::ERR_REQ_INVALID, r);
        }
        *state = state.minus(bits);
        let left = *state;
        if left.is_empty() {
            members.remove(&r.port_gid());
        }
        let full = |s: &JoinState| {
            s.contains(JoinState::FULL_MEMBER) || s.contains(JoinState::SEND_ONLY_FULL_MEMBER)
        };
        if !members.values().any(full) {
            self.groups.remove(&r.mgid());
        }
        r.set_join_state(left);
        (MadStatus::OK, r)
    }

    /// What the master holds for `port` in `mgid`.
    pub(crate) fn member_state(&self, mgid: Gid, port: Gid) -> JoinState {
        self.groups
            .get(&mgid)
            .and_then(|(_, m)| m.get(&port).copied())
            .unwrap_or(JoinState::NONE)
    }

    fn path_query(&mut self, now: Instant, h: &SaMadHeader, t: &PathRecord) {
        let mask = h.sa.component_mask();
        if mask.contains(pr::PKEY)
            && !mask.intersects(pr::DGID | pr::DLID)
            && self.refused_tables.contains(&(t.pkey() & 0x7FFF))
        {
            return self.answer(h, MadStatus::ERR_REQ_INVALID, &[]);
        }
        let matches = |r: &&PathRecord| {
            (!mask.intersects(pr::SGID) || r.sgid() == t.sgid())
                && (!mask.intersects(pr::DGID) || r.dgid() == t.dgid())
                && (!mask.intersects(pr::SLID) || r.slid() == t.slid())
                && (!mask.intersects(pr::DLID) || r.dlid() == t.dlid())
        };
        let found: Vec<PathRecord> = self
            .paths
            .iter()
            .filter(matches)
            .filter_map(|r| self.with_policy(*r, mask, t))
            .collect();
        if h.mad.method() == Method::GET {
            match found.first() {
                Some(r) => self.answer(h, MadStatus::OK, r.as_bytes()),
                None => self.answer(h, MadStatus::ERR_NO_RECORDS, &[]),
            }
            return;
        }
        self.table(now, h, &found);
    }

    /// A stored path as asked with `t`'s P_Key, ServiceID and SL: the
    /// partition's SL (no record for a partition it does not know), the
    /// QoS policy's SL for a ServiceID in one of its ranges (no record
    /// for another SL asked), else the SL asked.
    fn with_policy(
        &self,
        mut r: PathRecord,
        mask: ComponentMask,
        t: &PathRecord,
    ) -> Option<PathRecord> {
        if mask.contains(pr::PKEY) && t.pkey() & 0x7FFF != 0x7FFF {
            let partition = t.pkey() & 0x7FFF;
            r.set_sl(*self.partitions.get(&partition)?);
            r.set_pkey(t.pkey());
            let outside = self.outside.get(&partition);
            if outside.is_some_and(|o| o.contains(&r.slid()) || o.contains(&r.dlid())) {
                return None;
            }
        }
        if self.qos
            && mask.contains(pr::SERVICE_ID)
            && let Some((_, sl)) = self
                .qos_policy
                .iter()
                .find(|(ids, _)| ids.contains(&t.service_id()))
        {
            if mask.contains(pr::SL) && t.sl() != *sl {
                return None;
            }
            r.set_sl(*sl);
        } else if mask.contains(pr::SL) {
            r.set_sl(t.sl());
        }
        Some(r)
    }

    /// Sends `records` as a GetTable answer: in one MAD if they fit, else
    /// as [`Self::delivery`] says.
    fn table<R: SaRecord>(&mut self, now: Instant, h: &SaMadHeader, records: &[R]) {
        let mut data = BytesMut::new();
        for r in records {
            put_record(&mut data, r);
        }
        let mut header = response_header(h, MadStatus::OK);
        header.sa.set_attribute_offset(R::ATTRIBUTE_OFFSET);
        if let Some(one) = rmpp::single_segment(&header, &data) {
            self.out.push_back((one, None));
            return;
        }
        match self.delivery {
            Delivery::Rmpp => {
                let sender = Sender::new(header, data.freeze(), RmppConfig::default(), now)
                    .expect("the fake master's tables fit RMPP");
                self.senders.insert(h.mad.transaction_id_low(), sender);
                self.flush_senders(now);
            }
            Delivery::Cut => {
                header.rmpp =
                    RmppHeader::new(RmppType::NONE, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
                let mut mad = BytesMut::from(header.as_bytes());
                mad.extend_from_slice(&data[..MAD_LEN - SaMadHeader::LEN]);
                // Past the first 168 data bytes the simulator hands over
                // bytes that are not records, and says so.
                for b in &mut mad[SaMadHeader::LEN + 168..] {
                    *b = 0xA5;
                }
                self.out
                    .push_back((mad.freeze(), Some(SaMadHeader::LEN + 168)));
            }
        }
    }

    fn answer(&mut self, request: &SaMadHeader, status: MadStatus, data: &[u8]) {
        let mut header = response_header(request, status);
        let framed = self.rmpp_errors && status != MadStatus::OK;
        if framed {
            header.rmpp =
                RmppHeader::new(RmppType::NONE, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
        }
        let mut mad = BytesMut::from(header.as_bytes());
        mad.extend_from_slice(data);
        if framed {
            mad.resize(MAD_LEN, 0xA5);
            self.out
                .push_back((mad.freeze(), Some(SaMadHeader::LEN + 168)));
        } else {
            self.out.push_back((mad.freeze(), None));
        }
    }

    fn flush_senders(&mut self, now: Instant) {
        for s in self.senders.values_mut() {
            while let Some(m) = s.poll_transmit(now) {
                self.out.push_back((Bytes::copy_from_slice(&m), None));
            }
        }
        self.senders
            .retain(|_, s| s.state() == TransferState::Active);
    }
}

fn response_header(request: &SaMadHeader, status: MadStatus) -> SaMadHeader {
    let mut h = *request;
    h.mad.set_method(request.mad.method().response());
    h.mad.set_status(status);
    h.rmpp = RmppHeader::new_zeroed();
    h.sa.set_sm_key(0);
    h
}
