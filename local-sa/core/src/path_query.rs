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
//!
//! Whatever the store cannot answer exactly is [`Outcome::Forward`]: the
//! caller asks the master SA.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{ComponentMask, Gid, MadStatus, Method, Mtu, PathRecord, Rate, Selector};

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
    /// The master applies QoS policy, so SL, ServiceID, QoSClass, P_Key
    /// and TClass can change the answer.
    MasterQos,
    /// A P_Key other than the paths' own (partition membership is known
    /// only to the master).
    OtherPartition,
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
    let qos_sensitive = pr::SERVICE_ID | pr::QOS_CLASS | pr::SL | pr::PKEY | pr::TCLASS;
    if k.master_qos && mask.intersects(qos_sensitive) {
        return Outcome::Forward(ForwardReason::MasterQos);
    }
    let src = match resolve_end(k, mask, pr::SGID, req.sgid(), pr::SLID, req.slid()) {
        Ok(e) => e,
        Err(o) => return o,
    };
    let dst = match resolve_end(k, mask, pr::DGID, req.dgid(), pr::DLID, req.dlid()) {
        Ok(e) => e,
        Err(o) => return o,
    };
    let Some((src_guid, src_lids)) = src else {
        return Outcome::Forward(ForwardReason::NoSource);
    };
    let complete = k.complete_sources.contains(&src_guid);
    let q = Query {
        k,
        method,
        mask,
        req,
    };
    let mut out = Vec::new();
    match dst {
        Some((_, dst_lids)) => match q.port_pair(src_lids, dst_lids, &mut out) {
            Ok(0) if !complete => return Outcome::Forward(ForwardReason::IncompleteSource),
            Ok(_) => {}
            Err(reason) => return Outcome::Forward(reason),
        },
        None => {
            if !complete {
                return Outcome::Forward(ForwardReason::IncompleteSource);
            }
            for (_, dst_lids) in destinations(k.store, src_lids) {
                match q.port_pair(src_lids, dst_lids, &mut out) {
                    Ok(n) if n > 0 && method == Method::GET => break,
                    Ok(_) => {}
                    Err(reason) => return Outcome::Forward(reason),
                }
            }
        }
    }
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
        match k.store.port(gid.guid()) {
            Some(p) => Some((gid.guid(), p)),
            None => return Err(Outcome::Forward(ForwardReason::UnknownEndpoint)),
        }
    } else {
        None
    };
    let by_lid = if mask.contains(lid_bit) {
        match k.store.port_at(lid) {
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

struct Query<'a> {
    k: &'a Knowledge<'a>,
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
        let Some(base) = self.k.store.get(slid, dlid) else {
            return Ok(0);
        };
        match derive(base, self.mask, self.req)? {
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
        match select_rate(r.rate(), req.rate_selector(), req.rate()) {
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
    if mask.contains(pr::RAW_TRAFFIC) && req.raw_traffic() {
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

/// Rate selectors, by bandwidth: `<` gives the next lower bandwidth than
/// the request; `=` must match exactly.
fn select_rate(path: Rate, selector: Selector, wanted: Rate) -> Option<Rate> {
    use core::cmp::Ordering::*;
    match selector {
        Selector::GreaterThan => (path.cmp_bandwidth(wanted) == Greater).then_some(path),
        Selector::LessThan if path.cmp_bandwidth(wanted) != Less => wanted.next_lower(),
        Selector::LessThan => Some(path),
        Selector::Exactly => (path == wanted).then_some(path),
        Selector::Best => Some(path),
    }
}

#[cfg(test)]
mod tests;
