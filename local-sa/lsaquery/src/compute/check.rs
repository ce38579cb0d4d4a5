//! Asking the master what the engine cannot see, and checking what it
//! computed against the master's own answers.
//!
//! * Partition SLs: one Get per partition, for a pair that shares it
//!   ([`Fabric::partition_probe`]), whose SL the engine then uses.
//! * The sample: for each pair, the master's records of the pair — one
//!   GetTable naming both GIDs (and the P_Key) where its answers come
//!   whole, compared record for record; or, where they come cut, one Get
//!   per LID pair naming both LIDs too, compared but for Preference (a
//!   query naming both LIDs always gets Preference 0). Whether answers
//!   come whole is learnt from the first pair, whose records may fit one
//!   MAD where later pairs' do not (LMC ranges): a GetTable answer that
//!   comes cut is never compared, its pair is asked again by LID pairs.

use bytes::Bytes;
use local_sa_core::path_engine::{Fabric, PairCheck, compare_pair};
use local_sa_core::requester::{Answer, Failure as RequestFailure};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder, SaRecord as _};
use umad::Address;

use local_sa_distributor::computed::{Checked, Mismatch, Served};

use super::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// The GID of the port a GUID names.
fn gid(fabric: &Fabric, guid: u64) -> Gid {
    Gid::new(fabric.endport(guid).map_or(0, |e| e.prefix), guid)
}

/// A PathRecord query of `method` for `pair`, naming `lids` too if given.
fn query(fabric: &Fabric, method: Method, pair: &PairCheck, lids: Option<(u16, u16)>) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_sgid(gid(fabric, pair.source));
    t.set_dgid(gid(fabric, pair.dest));
    let mut mask = pr::SGID | pr::DGID;
    if let Some((s, d)) = lids {
        t.set_slid(s);
        t.set_dlid(d);
        mask |= pr::SLID | pr::DLID;
    }
    mask |= local_sa_distributor::computed::keys::key_of(pair.table).apply(&mut t);
    let mut b = SaMadBuilder::request(method, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}

/// The records of an answer: none for NO_RECORDS; an error for any other
/// failure.
fn records(
    end: Result<Answer, RequestFailure>,
    pair: &PairCheck,
) -> Result<Vec<PathRecord>, String> {
    let answer = end.map_err(|e| format!("no answer from the master ({e})"))?;
    match answer.status() {
        MadStatus::OK => Ok(answer.records::<PathRecord>().copied().collect()),
        MadStatus::ERR_NO_RECORDS => Ok(Vec::new()),
        s => Err(format!(
            "the master answered {} to {:#018x} -> {:#018x}",
            s.names(),
            pair.source,
            pair.dest
        )),
    }
}

/// Learns the SL of every partition from the master and gives it to
/// `fabric`, and the PacketLifeTime of a path between two ports (OpenSM's
/// `subnet_timeout`, which ports that ignore the SM's PortInfo Set do not
/// show); the partitions whose SL could not be learnt, and why.
pub(crate) async fn learn_partition_sls(
    session: &mut Session,
    master: Address,
    window: usize,
    fabric: &mut Fabric,
    served: &mut Served,
) -> Result<Vec<(u16, String)>, Stop> {
    let mut unknown = Vec::new();
    let mut probes = Vec::new();
    for p in fabric.partitions() {
        match fabric.partition_probe(p) {
            Some(probe) => probes.push((p, probe)),
            None => unknown.push((p, "no two ports share it with a path between them".into())),
        }
    }
    let requests: Vec<Bytes> = probes
        .iter()
        .map(|(_, probe)| query(fabric, Method::GET, probe, None))
        .collect();
    let ends = each(session, master, window, &requests).await?;
    for ((p, probe), end) in probes.iter().zip(ends) {
        match records(end, probe) {
            Ok(r) => {
                served.count(r.len(), PathRecord::STRIDE);
                match r.first() {
                    Some(r) => {
                        fabric.set_partition_sl(*p, r.sl());
                        if probe.source != probe.dest {
                            fabric.set_subnet_timeout(r.packet_life());
                        }
                    }
                    None => unknown.push((*p, "the master has no path in it for the probe".into())),
                }
            }
            Err(why) => unknown.push((*p, why)),
        }
    }
    Ok(unknown)
}

/// Compares the computed records of every pair of `pairs` with the
/// master's.
pub(crate) async fn check(
    session: &mut Session,
    master: Address,
    window: usize,
    fabric: &Fabric,
    pairs: &[PairCheck],
    served: &mut Served,
) -> Result<Checked, Stop> {
    let mut checked = Checked {
        pairs: pairs.len(),
        ..Checked::default()
    };
    for p in pairs {
        checked.count_drawn(p.table, 1);
    }
    let Some(first) = pairs.first() else {
        return Ok(checked);
    };
    // Whether the master's multi-MAD answers come whole: ask one pair.
    let c = session
        .client
        .request(master, &query(fabric, Method::GET_TABLE, first, None))
        .await?;
    let whole = !matches!(&c.outcome, Ok(a) if a.is_cut());
    if let Ok(a) = &c.outcome {
        served.count(a.records::<PathRecord>().count(), PathRecord::STRIDE);
    }
    let each_lid_pair = |i: usize| lid_pairs(fabric, i, &pairs[i]);
    let asks: Vec<Ask> = if whole {
        (0..pairs.len()).map(|i| (i, None)).collect()
    } else {
        (0..pairs.len()).flat_map(each_lid_pair).collect()
    };
    let mut comparing = Comparing {
        fabric,
        pairs,
        checked: &mut checked,
    };
    let cut = comparing
        .ask(session, master, window, &asks, served)
        .await?;
    // A pair whose records did not fit one MAD, on a transport that cuts
    // multi-MAD answers (the first pair's fitted), is asked again LID pair
    // by LID pair: what was cut is not the master's answer.
    let again: Vec<Ask> = cut.into_iter().flat_map(each_lid_pair).collect();
    comparing
        .ask(session, master, window, &again, served)
        .await?;
    Ok(checked)
}

/// A pair to ask about (its index in the pairs checked), and the LID pair
/// to name if any (else the whole port pair, in one GetTable).
type Ask = (usize, Option<(u16, u16)>);

/// The Gets of pair `i`, one per LID pair of its ports.
fn lid_pairs(fabric: &Fabric, i: usize, pair: &PairCheck) -> Vec<Ask> {
    let (Some(s), Some(d)) = (fabric.endport(pair.source), fabric.endport(pair.dest)) else {
        return Vec::new();
    };
    s.lids()
        .flat_map(|slid| d.lids().map(move |dlid| (i, Some((slid, dlid)))))
        .collect()
}

/// The pairs being checked, and what the check found so far.
struct Comparing<'a> {
    fabric: &'a Fabric,
    pairs: &'a [PairCheck],
    checked: &'a mut Checked,
}

impl Comparing<'_> {
    /// Asks the master `asks` and compares each answer with the computed
    /// records; returns the pairs whose whole-table answer came cut, not
    /// compared.
    async fn ask(
        &mut self,
        session: &mut Session,
        master: Address,
        window: usize,
        asks: &[Ask],
        served: &mut Served,
    ) -> Result<Vec<usize>, Stop> {
        let requests: Vec<Bytes> = asks
            .iter()
            .map(|(i, lids)| {
                let method = if lids.is_some() {
                    Method::GET
                } else {
                    Method::GET_TABLE
                };
                query(self.fabric, method, &self.pairs[*i], *lids)
            })
            .collect();
        let ends = each(session, master, window, &requests).await?;
        let mut cut = Vec::new();
        let mut ours = Vec::new();
        for ((i, lids), end) in asks.iter().zip(ends) {
            let pair = self.pairs[*i];
            if let Ok(a) = &end
                && lids.is_none()
                && a.is_cut()
            {
                served.count(a.records::<PathRecord>().count(), PathRecord::STRIDE);
                cut.push(*i);
                continue;
            }
            let theirs = records(end, &pair).map_err(|why| Stop::new(4, why))?;
            served.count(theirs.len(), PathRecord::STRIDE);
            self.checked.records += theirs.len();
            ours.clear();
            if let Err(e) = self
                .fabric
                .pair(pair.source, pair.dest, pair.table, &mut ours)
            {
                self.checked.uncomputable.push((pair, e.to_string()));
                continue;
            }
            if let Some((s, d)) = *lids {
                // A query naming both LIDs: that LID pair's record, with
                // the Preference such a query gets.
                ours.retain(|r| (r.slid(), r.dlid()) == (s, d));
                ours.iter_mut().for_each(|r| r.set_preference(0));
            }
            if let Some(difference) = compare_pair(&ours, &theirs) {
                let lids = lids.unwrap_or_else(|| {
                    let r = theirs.first().or(ours.first());
                    r.map_or((0, 0), |r| (r.slid(), r.dlid()))
                });
                self.checked.mismatches.push(Mismatch {
                    pair,
                    lids,
                    difference,
                });
            }
        }
        Ok(cut)
    }
}
