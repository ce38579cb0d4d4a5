//! PathRecord Get/GetTable answered from the store the way OpenSM 3.3.23
//! answers them, or a verdict that the store cannot know the answer.
//!
//! OpenSM's rules, which this reproduces:
//!
//! * Upfront: an MTU or Rate whose selector and value bits are both set must
//!   be a valid code (ERR_REQ_INVALID); the two ServiceID bits go together
//!   (ERR_REQ_INSUFFICIENT_COMPONENTS).
//! * Endpoints: SGID (else SLID) names the source port, DGID (else DLID) the
//!   destination; a GID and a LID for one end that name different ports are
//!   ERR_REQ_INVALID. Both ends known: one port pair. Only the source: every
//!   destination port, in OpenSM's port-table order.
//! * Per port pair, the LIDs of the ports' LMC ranges (narrowed by SLID or
//!   DLID) are tried in two phases: equal offsets first (Preference 0), then
//!   the rest source-major (Preference 2). A Get takes one path and stops at
//!   the first pair that has one; a GetTable takes up to NumbPath per pair
//!   when that bit is set.
//! * Each path is OpenSM's unconstrained answer (what the store holds) with
//!   the request's constraints applied: MTU, Rate (by bandwidth) and
//!   PacketLifeTime selectors, the requested SL, the requested P_Key echoed,
//!   RawTraffic zeroing the P_Key, Reversible filtering, and the request's
//!   SGID echoed verbatim.
//! * What OpenSM's unconstrained answer is depends, beside the two ports, on
//!   the fields its QoS policy matches when QoS is on (ServiceID, QoSClass,
//!   P_Key: [`QosKey`]) and on the partition a P_Key names. The store holds
//!   the answers asked without them, and each partition table of the port
//!   ([`Partitions`]) the answers asked with its P_Key: a query naming a
//!   P_Key (and no other such field) from a port whose paths a partition
//!   table holds is answered from that table like any other. Any other
//!   query naming them is [`Outcome::Pair`]: the answer follows from the
//!   port pair's records asked with the same [`QosKey`]
//!   ([`evaluate_pair`]). SL and TClass pick
//!   no QoS level: TClass is not used for unicast paths at all, and a
//!   requested SL equal to the one the master chose is echoed; another SL
//!   only the master can judge (its policy or the partition may forbid it).
//!
//! Whatever the store cannot answer exactly is [`Outcome::Forward`]: the
//! caller asks the master SA.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{ComponentMask, Gid, MadStatus, Method, Mtu, PathRecord, Rate, Selector};

use crate::partitions::{Partitions, PathTable};
use crate::store::{FastSet, PathStore, PortLids};

/// What to do with a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answer with these records (empty for a GetTable is an empty table).
    Records(Vec<PathRecord>),
    /// Answer with this status and no records.
    Status(MadStatus),
    /// The store cannot answer exactly: ask the master SA.
    Forward(ForwardReason),
    /// The answer follows from this port pair's records as the master
    /// gives them for the key's fields ([`evaluate_pair`]).
    Pair(PairKey),
}

/// The fields of a PathRecord query, beside its two ends, on which the
/// master's unconstrained answer depends: those OpenSM's QoS policy matches
/// a level on (when the master applies QoS), and the partition. Each is
/// `None` when the query does not name it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct QosKey {
    /// The P_Key without its membership bit (OpenSM shares, matches and
    /// looks up partitions by the low 15 bits).
    pub pkey: Option<u16>,
    /// The ServiceID.
    pub service_id: Option<u64>,
    /// The QoS class.
    pub qos_class: Option<u16>,
    /// An SL other than the one the master chose for the rest of the
    /// key: whether the master accepts it is its own (policy, partition,
    /// VL15 on the route), so its answer is asked and kept under it.
    pub sl: Option<u8>,
}

impl QosKey {
    /// Its fields as one value to sort keys by.
    pub fn sort_key(&self) -> (Option<u16>, Option<u64>, Option<u16>, Option<u8>) {
        (self.pkey, self.service_id, self.qos_class, self.sl)
    }

    /// The fields of `req` that `mask` names and the master's QoS policy
    /// may match on; none when the master applies no QoS.
    pub fn of(mask: ComponentMask, req: &PathRecord, master_qos: bool) -> Self {
        if !master_qos {
            return Self::default();
        }
        Self {
            pkey: mask.contains(pr::PKEY).then(|| req.pkey() & 0x7FFF),
            service_id: mask.contains(pr::SERVICE_ID).then(|| req.service_id()),
            qos_class: mask.contains(pr::QOS_CLASS).then(|| req.qos_class()),
            sl: None,
        }
    }

    /// The same with the SL `sl`, which the master did not choose.
    fn with_sl(self, sl: u8) -> Self {
        Self {
            sl: Some(sl),
            ..self
        }
    }

    /// Only the partition of `pkey`.
    pub fn partition(pkey: u16) -> Self {
        Self {
            pkey: Some(pkey & 0x7FFF),
            ..Self::default()
        }
    }

    /// True when the query names none of the fields.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Writes the fields into a query's template; returns their mask bits.
    /// A P_Key is asked as a full member's.
    pub fn apply(&self, template: &mut PathRecord) -> ComponentMask {
        let mut mask = ComponentMask::NONE;
        if let Some(pkey) = self.pkey {
            template.set_pkey(pkey | 0x8000);
            mask |= pr::PKEY;
        }
        if let Some(id) = self.service_id {
            template.set_service_id(id);
            mask |= pr::SERVICE_ID;
        }
        if let Some(class) = self.qos_class {
            template.set_qos_class(class);
            mask |= pr::QOS_CLASS;
        }
        if let Some(sl) = self.sl {
            template.set_sl(sl);
            mask |= pr::SL;
        }
        mask
    }
}

/// One port pair's records as the master gives them for a [`QosKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PairKey {
    /// The source port's GUID.
    pub src: u64,
    /// The destination port's GUID.
    pub dst: u64,
    /// The fields they are asked with.
    pub qos: QosKey,
}

impl PairKey {
    /// The GetTable that asks the master for the pair's records: both
    /// GIDs, the key's fields, nothing else (every LID pair of the two
    /// ports' LMC ranges, unconstrained).
    pub fn query(&self, subnet_prefix: u64) -> (ComponentMask, PathRecord) {
        let (mask, mut t) = self.source().query(subnet_prefix);
        t.set_dgid(Gid::new(subnet_prefix, self.dst));
        (mask | pr::DGID, t)
    }

    /// The table this pair is one destination of.
    pub fn source(&self) -> SourceKey {
        SourceKey {
            src: self.src,
            qos: self.qos,
        }
    }
}

/// Every destination's records from one port as the master gives them for
/// a [`QosKey`]: what OpenSM answers a GetTable naming the source and the
/// key's fields with, each destination's records the same as its
/// [`PairKey::query`] would get (both go through the same per-pair
/// computation, `pr_rcv_get_port_pair_paths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceKey {
    /// The source port's GUID.
    pub src: u64,
    /// The fields they are asked with.
    pub qos: QosKey,
}

impl SourceKey {
    /// The GetTable that asks the master for the table: the source GID
    /// and the key's fields.
    pub fn query(&self, subnet_prefix: u64) -> (ComponentMask, PathRecord) {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(Gid::new(subnet_prefix, self.src));
        let mask = pr::SGID | self.qos.apply(&mut t);
        (mask, t)
    }

    /// The pair of this table's source and `dst`.
    pub fn pair(&self, dst: u64) -> PairKey {
        PairKey {
            src: self.src,
            dst,
            qos: self.qos,
        }
    }
}

/// Why a query goes to the master SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardReason {
    /// The destination is a multicast group.
    Multicast,
    /// An end names a port the store has no record of.
    UnknownEndpoint,
    /// The store does not hold the source's paths completely.
    IncompleteSource,
    /// No source given: every source port would be needed.
    NoSource,
    /// The master applies QoS policy, and the query names a field it may
    /// match on, or an SL other than the one the master chose, for every
    /// destination at once.
    MasterQos,
    /// A P_Key other than the paths' own (partition membership is known
    /// only to the master).
    OtherPartition,
    /// A rate selector on a path whose held rate OpenSM may have lowered
    /// when it answered (see [`rate_may_be_lowered`]): it compares the
    /// selector with the rate before lowering, which only it knows.
    LoweredRate,
    /// The tables may not show a change the master made since they were
    /// fetched (its sweep after a link change, before the refresh that
    /// follows it): only the master knows the answer.
    TablesInDoubt,
}

impl std::fmt::Display for ForwardReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Multicast => "multicast destination",
            Self::UnknownEndpoint => "unknown end",
            Self::IncompleteSource => "source's paths not all held",
            Self::NoSource => "no source given",
            Self::MasterQos => "the master applies QoS",
            Self::OtherPartition => "another partition",
            Self::LoweredRate => "a rate selector on a rate the master may have lowered",
            Self::TablesInDoubt => "the tables may not show the master's last sweep",
        })
    }
}

/// What the store knows beyond its records.
#[derive(Debug, Clone, Copy)]
pub struct Knowledge<'a> {
    /// The records.
    pub store: &'a PathStore,
    /// The subnet prefix (GIDs with another non-link-local prefix are
    /// unknown here).
    pub subnet_prefix: u64,
    /// Ports (by GUID) whose every path the store holds.
    pub complete_sources: &'a FastSet<u64>,
    /// The master SA applies QoS policy (its ClassPortInfo says so).
    pub master_qos: bool,
    /// The port's partition tables.
    pub partitions: &'a Partitions,
    /// The tables may not show a change the master made since they were
    /// fetched: what they would answer for a port pair is
    /// [`Outcome::Pair`] (the pair's records asked of the master), and
    /// for many destinations [`Outcome::Forward`].
    pub in_doubt: bool,
}

impl<'a> Knowledge<'a> {
    /// The partition table that answers a query naming `mask`'s P_Key in
    /// `req`, if one is kept (none for raw traffic).
    fn partition(&self, mask: ComponentMask, req: &PathRecord) -> Option<&'a PathTable> {
        if !mask.contains(pr::PKEY) || raw_traffic(mask, req) {
            return None;
        }
        self.partitions.table(req.pkey())
    }
}

/// Where the ports a query names are looked up: the store, then the
/// partition table the query names (a port may share only that one with
/// this one).
#[derive(Clone, Copy)]
struct Ports<'a> {
    store: &'a PathStore,
    partition: Option<&'a PathStore>,
}

impl Ports<'_> {
    fn port(&self, guid: u64) -> Option<PortLids> {
        self.store
            .port(guid)
            .or_else(|| self.partition.and_then(|p| p.port(guid)))
    }

    fn port_at(&self, lid: u16) -> Option<(u64, PortLids)> {
        self.store
            .port_at(lid)
            .or_else(|| self.partition.and_then(|p| p.port_at(lid)))
    }
}

/// OpenSM walks its port table in the order of GUIDs in network byte order
/// compared as host (x86, little-endian) integers.
pub fn port_table_order(guid: u64) -> u64 {
    guid.swap_bytes()
}

/// Evaluates a PathRecord `method` query with component mask `mask` and
/// template `req`.
pub fn evaluate(
    k: &Knowledge<'_>,
    method: Method,
    mask: ComponentMask,
    req: &PathRecord,
) -> Outcome {
    if let Some(status) = upfront_checks(mask, req) {
        return Outcome::Status(status);
    }
    if mask.contains(pr::DGID) && req.dgid().is_multicast() {
        return Outcome::Forward(ForwardReason::Multicast);
    }
    let partition = k.partition(mask, req);
    let ports = Ports {
        store: k.store,
        partition: partition.map(|t| &t.store),
    };
    let src = match resolve_end(k, &ports, mask, pr::SGID, req.sgid(), pr::SLID, req.slid()) {
        Ok(e) => e,
        Err(o) => return o,
    };
    let dst = match resolve_end(k, &ports, mask, pr::DGID, req.dgid(), pr::DLID, req.dlid()) {
        Ok(e) => e,
        Err(o) => return o,
    };
    let Some((src_guid, src_lids)) = src else {
        return Outcome::Forward(ForwardReason::NoSource);
    };
    let qos = QosKey::of(mask, req, k.master_qos);
    let pair = |dst: u64, qos| {
        Outcome::Pair(PairKey {
            src: src_guid,
            dst,
            qos,
        })
    };
    // A partition's table holds the master's answers for its P_Key, the
    // QoS level that P_Key matches included; a ServiceID or QoS class may
    // match another level.
    let table = partition
        .filter(|t| t.is_complete(src_guid) && qos.service_id.is_none() && qos.qos_class.is_none());
    let (store, complete) = match table {
        Some(t) => (&t.store, true),
        None if !qos.is_empty() => {
            return match dst {
                Some((dst_guid, _)) if !raw_traffic(mask, req) => pair(dst_guid, qos),
                _ => Outcome::Forward(ForwardReason::MasterQos),
            };
        }
        None => (k.store, k.complete_sources.contains(&src_guid)),
    };
    if k.in_doubt {
        return match dst {
            Some((dst_guid, _)) if !raw_traffic(mask, req) => pair(dst_guid, qos),
            _ => Outcome::Forward(ForwardReason::TablesInDoubt),
        };
    }
    let q = Query {
        paths: Paths::Store(store),
        master_qos: k.master_qos,
        method,
        mask,
        req,
    };
    let mut out = Vec::new();
    match dst {
        Some((dst_guid, dst_lids)) => match q.port_pair(src_lids, dst_lids, &mut out) {
            Ok(0) if !complete => return Outcome::Forward(ForwardReason::IncompleteSource),
            Ok(_) => {}
            Err(ForwardReason::OtherPartition) => {
                return pair(dst_guid, QosKey::partition(req.pkey()));
            }
            Err(ForwardReason::MasterQos) => return pair(dst_guid, qos.with_sl(req.sl())),
            Err(reason) => return Outcome::Forward(reason),
        },
        None => {
            if !complete {
                return Outcome::Forward(ForwardReason::IncompleteSource);
            }
            for (_, dst_lids) in destinations(store, src_lids) {
                match q.port_pair(src_lids, dst_lids, &mut out) {
                    Ok(n) if n > 0 && method == Method::GET => break,
                    Ok(_) => {}
                    Err(reason) => return Outcome::Forward(reason),
                }
            }
        }
    }
    finish(method, out)
}

/// Evaluates a query that came out as [`Outcome::Pair`] with `key`, from
/// `records`: the master's answer to [`PairKey::query`]. [`Outcome::Pair`]
/// again only with the key narrowed to an SL the master did not choose.
pub fn evaluate_pair(
    k: &Knowledge<'_>,
    records: &[PathRecord],
    key: &PairKey,
    method: Method,
    mask: ComponentMask,
    req: &PathRecord,
) -> Outcome {
    let ports = Ports {
        store: k.store,
        partition: k.partition(mask, req).map(|t| &t.store),
    };
    let (Some(src), Some(dst)) = (ports.port(key.src), ports.port(key.dst)) else {
        return Outcome::Forward(ForwardReason::UnknownEndpoint);
    };
    let q = Query {
        paths: Paths::Pair(records),
        master_qos: k.master_qos,
        method,
        mask,
        req,
    };
    let mut out = Vec::new();
    match q.port_pair(src, dst, &mut out) {
        Ok(_) => finish(method, out),
        Err(ForwardReason::MasterQos) if key.qos.sl.is_none() => Outcome::Pair(PairKey {
            qos: key.qos.with_sl(req.sl()),
            ..*key
        }),
        Err(reason) => Outcome::Forward(reason),
    }
}

/// The query asks for raw traffic: it takes any key the ports share, not
/// the one named, and its paths carry P_Key 0.
fn raw_traffic(mask: ComponentMask, req: &PathRecord) -> bool {
    mask.contains(pr::RAW_TRAFFIC) && req.raw_traffic()
}

/// A Get has exactly one record; a GetTable any number.
fn finish(method: Method, out: Vec<PathRecord>) -> Outcome {
    if method == Method::GET {
        match out.len() {
            0 => return Outcome::Status(MadStatus::ERR_NO_RECORDS),
            1 => {}
            _ => return Outcome::Status(MadStatus::ERR_TOO_MANY_RECORDS),
        }
    }
    Outcome::Records(out)
}

/// OpenSM's checks before it looks at endpoints.
fn upfront_checks(mask: ComponentMask, req: &PathRecord) -> Option<MadStatus> {
    if mask.contains(pr::MTU_SELECTOR | pr::MTU) && !req.mtu().is_valid() {
        return Some(MadStatus::ERR_REQ_INVALID);
    }
    if mask.contains(pr::RATE_SELECTOR | pr::RATE) && !req.rate().is_valid() {
        return Some(MadStatus::ERR_REQ_INVALID);
    }
    let sid = mask & pr::SERVICE_ID;
    if sid != ComponentMask::NONE && sid != pr::SERVICE_ID {
        return Some(MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS);
    }
    None
}

/// One end of the path: the port its GID or LID names, if given.
type End = Option<(u64, PortLids)>;

fn resolve_end(
    k: &Knowledge<'_>,
    ports: &Ports<'_>,
    mask: ComponentMask,
    gid_bit: ComponentMask,
    gid: Gid,
    lid_bit: ComponentMask,
    lid: u16,
) -> Result<End, Outcome> {
    let by_gid = if mask.contains(gid_bit) {
        if !gid.is_link_local() && gid.prefix() != k.subnet_prefix {
            // Another subnet: OpenSM would look for a router.
            return Err(Outcome::Forward(ForwardReason::UnknownEndpoint));
        }
        match ports.port(gid.guid()) {
            Some(p) => Some((gid.guid(), p)),
            None => return Err(Outcome::Forward(ForwardReason::UnknownEndpoint)),
        }
    } else {
        None
    };
    let by_lid = if mask.contains(lid_bit) {
        match ports.port_at(lid) {
            Some(p) => Some(p),
            None => return Err(Outcome::Forward(ForwardReason::UnknownEndpoint)),
        }
    } else {
        None
    };
    match (by_gid, by_lid) {
        (Some(g), Some(l)) if g.0 != l.0 => Err(Outcome::Status(MadStatus::ERR_REQ_INVALID)),
        (Some(g), _) => Ok(Some(g)),
        (None, l) => Ok(l),
    }
}

/// The destination ports the store has paths to from any LID of the
/// source, in OpenSM's port-table order.
fn destinations(store: &PathStore, src: PortLids) -> Vec<(u64, PortLids)> {
    let mut ports: Vec<(u64, PortLids)> = lids(src)
        .flat_map(|slid| store.from_lid(slid))
        .filter_map(|r| store.port(r.dgid().guid()).map(|p| (r.dgid().guid(), p)))
        .collect();
    ports.sort_by_key(|(guid, _)| port_table_order(*guid));
    ports.dedup_by_key(|(guid, _)| *guid);
    ports
}

fn lids(p: PortLids) -> impl Iterator<Item = u16> {
    p.lid..=p.lid.saturating_add(p.span)
}

/// Preference of paths with equal LID offsets at both ends (OpenSM's
/// "redundant in both directions").
const PREFERRED: u8 = 0;
/// Preference of the other LID combinations.
const NOT_REDUNDANT: u8 = 2;

/// Where a query's unconstrained paths come from.
#[derive(Clone, Copy)]
enum Paths<'a> {
    /// The store: the answers asked without QoS fields.
    Store(&'a PathStore),
    /// One port pair's records for a [`QosKey`].
    Pair(&'a [PathRecord]),
}

impl<'a> Paths<'a> {
    fn get(self, slid: u16, dlid: u16) -> Option<&'a PathRecord> {
        match self {
            Self::Store(store) => store.get(slid, dlid),
            Self::Pair(records) => records
                .iter()
                .find(|r| r.slid() == slid && r.dlid() == dlid),
        }
    }
}

struct Query<'a> {
    paths: Paths<'a>,
    /// The master applies QoS policy: an SL it did not choose is its to
    /// judge.
    master_qos: bool,
    method: Method,
    mask: ComponentMask,
    req: &'a PathRecord,
}

impl Query<'_> {
    /// Appends the paths of one port pair; returns how many.
    fn port_pair(
        &self,
        src: PortLids,
        dst: PortLids,
        out: &mut Vec<PathRecord>,
    ) -> Result<usize, ForwardReason> {
        let narrow = |bit, lid: u16, range: PortLids| {
            if self.mask.contains(bit) {
                (lid, lid)
            } else {
                (range.lid, range.lid.saturating_add(range.span))
            }
        };
        let (s_min, s_max) = narrow(pr::SLID, self.req.slid(), src);
        let (d_min, d_max) = narrow(pr::DLID, self.req.dlid(), dst);
        let limit = if self.method == Method::GET {
            1
        } else if self.mask.contains(pr::NUMB_PATH) {
            usize::from(self.req.numb_path())
        } else {
            usize::MAX
        };
        let mut found = 0;
        // Phase 1: equal offsets, both ends advancing together.
        let (mut s, mut d) = (s_min, d_min);
        while found < limit {
            found += self.try_pair(s, d, PREFERRED, out)?;
            if s >= s_max || d >= d_max {
                break;
            }
            s += 1;
            d += 1;
        }
        // Phase 2: the other combinations, source-major.
        'outer: for (so, s) in (s_min..=s_max).enumerate() {
            for (dof, d) in (d_min..=d_max).enumerate() {
                if found >= limit {
                    break 'outer;
                }
                if so != dof {
                    found += self.try_pair(s, d, NOT_REDUNDANT, out)?;
                }
            }
        }
        Ok(found)
    }

    /// Appends the path of one LID pair if the store has it and it meets the
    /// request, with the Preference of the phase that tried it; returns 1 if
    /// it did.
    fn try_pair(
        &self,
        slid: u16,
        dlid: u16,
        preference: u8,
        out: &mut Vec<PathRecord>,
    ) -> Result<usize, ForwardReason> {
        let Some(base) = self.paths.get(slid, dlid) else {
            return Ok(0);
        };
        match derive(base, self.mask, self.req, self.master_qos)? {
            Some(mut r) => {
                r.set_preference(preference);
                out.push(r);
                Ok(1)
            }
            None => Ok(0),
        }
    }
}

/// The answer OpenSM gives for `req` on the path it answered `base` for
/// without constraints: `None` if the path does not qualify.
fn derive(
    base: &PathRecord,
    mask: ComponentMask,
    req: &PathRecord,
    master_qos: bool,
) -> Result<Option<PathRecord>, ForwardReason> {
    let mut r = *base;
    let both = |sel, val| mask.contains(sel) && mask.contains(val);
    if both(pr::MTU_SELECTOR, pr::MTU) {
        match select_numeric(r.mtu().0, req.mtu_selector(), req.mtu().0, 1) {
            Some(v) => r.set_mtu(Mtu(v)),
            None => return Ok(None),
        }
    }
    if both(pr::RATE_SELECTOR, pr::RATE) {
        if req.rate_selector() != Selector::Best && rate_may_be_lowered(r.rate()) {
            return Err(ForwardReason::LoweredRate);
        }
        match select_rate(r.rate(), req.rate_selector(), req.rate()) {
            // A rate other than the held one ("less than"), that OpenSM
            // may lower for this path's ends.
            Some(v) if v != r.rate() && is_lowered_at_answer(v) => {
                return Err(ForwardReason::LoweredRate);
            }
            Some(v) => r.set_rate(v),
            None => return Ok(None),
        }
    }
    if both(pr::PACKET_LIFE_TIME_SELECTOR, pr::PACKET_LIFE_TIME) {
        match select_numeric(
            r.packet_life(),
            req.packet_life_selector(),
            req.packet_life(),
            1,
        ) {
            Some(v) => r.set_packet_life(v),
            None => return Ok(None),
        }
    }
    if raw_traffic(mask, req) {
        r.set_pkey(0);
    } else if mask.contains(pr::PKEY) {
        // Both ends share the requested key if it is the path's own key,
        // full or limited; any other key is a partition question.
        if req.pkey() & 0x7FFF != base.pkey() & 0x7FFF {
            return Err(ForwardReason::OtherPartition);
        }
        r.set_pkey(req.pkey());
    }
    if mask.contains(pr::SL) {
        // Under QoS policy an SL other than the level's is refused, and
        // one the policy leaves open must still avoid VL15 on the route:
        // only the master knows which.
        if master_qos && req.sl() != base.sl() {
            return Err(ForwardReason::MasterQos);
        }
        r.set_sl(req.sl());
    }
    if mask.contains(pr::REVERSIBLE) && req.reversible() && !base.reversible() {
        return Ok(None);
    }
    if mask.contains(pr::SGID) {
        r.set_sgid(req.sgid());
    }
    Ok(Some(r))
}

/// MTU and PacketLifeTime selectors: `>` qualifies larger paths, `<`
/// lowers the path to just under the request, `=` lowers it to the request.
fn select_numeric(path: u8, selector: Selector, wanted: u8, min: u8) -> Option<u8> {
    match selector {
        Selector::GreaterThan => (path > wanted).then_some(path),
        Selector::LessThan if path >= wanted => (wanted > min).then(|| wanted - 1),
        Selector::LessThan => Some(path),
        Selector::Exactly => (path >= wanted).then_some(wanted),
        Selector::Best => Some(path),
    }
}

/// Whether a held `rate` may be one OpenSM lowered as it answered: the
/// 2x/HDR fixups (`ib_path_rate_2x_hdr_fixups`: 28 Gb/s to 25 or 20, 50 to
/// 40, 400 and 600 to 300, for an end without 2x or HDR) and
/// `use_original_extended_sa_rates_only` give 20, 25, 40 and 300 Gb/s.
/// OpenSM applies a rate selector to the rate before lowering, so for
/// such a path only the master knows its answer.
pub fn rate_may_be_lowered(rate: Rate) -> bool {
    matches!(rate.0, 6 | 7 | 15 | 18)
}

/// Whether OpenSM may lower `rate` when it answers with it (a rate only
/// 2x links or HDR give: 28, 50, 400 and 600 Gb/s).
fn is_lowered_at_answer(rate: Rate) -> bool {
    (19..=22).contains(&rate.0)
}

/// Rate selectors as OpenSM applies them, in its order of rates
/// (`ordered_rates`, which ranks the 64b/66b rates by their 8b/10b
/// equivalents: 100 Gb/s above 120): `>` qualifies faster paths, `<`
/// lowers the path to the rate just under the request
/// (`ib_path_rate_get_prev`), `=` must match exactly.
fn select_rate(path: Rate, selector: Selector, wanted: Rate) -> Option<Rate> {
    use crate::path_engine::rate::{code, rank};
    let (p, w) = (rank(path.0), rank(wanted.0));
    match selector {
        Selector::GreaterThan => (p > w).then_some(path),
        Selector::LessThan if p >= w => match code(w.saturating_sub(1)) {
            0 => None,
            lower => Some(Rate(lower)),
        },
        Selector::LessThan => Some(path),
        Selector::Exactly => (path == wanted).then_some(path),
        Selector::Best => Some(path),
    }
}

#[cfg(test)]
mod tests;
