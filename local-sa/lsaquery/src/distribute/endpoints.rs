//! Which ports there are and which of them run local-sa: the sources of a
//! dump, or the destinations of this port's paths at the master; then an
//! SA ClassPortInfo probe to each.

use std::collections::BTreeMap;

use bytes::Bytes;
use local_sa_core::lid_walk::{DEFAULT_WALK_GAP, LidWalk};
use local_sa_core::path_query::QosKey;
use local_sa_core::requester::Attempts;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder};
use umad::Address;

use super::tally::Tally;
use crate::compute::ask::each_to_with;
use crate::session::Session;
use crate::stop::Stop;

/// A port of the fabric: its GID and lowest LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FabricPort {
    pub(super) lid: u16,
    pub(super) gid: Gid,
}

/// What is known of the fabric before distributing.
pub(super) struct Endpoints {
    /// Every port, by GID, at its lowest LID.
    pub(super) endpoints: Vec<FabricPort>,
    /// Every destination LID (all of each port's LIDs, under an LMC):
    /// what a per-destination fetch asks for.
    pub(super) dlids: Vec<u16>,
}

impl Endpoints {
    /// The ports that are sources of `records`, by their lowest SLID.
    pub(super) fn from_sources(records: &[PathRecord]) -> Self {
        Self::from_pairs(records.iter().map(|r| (r.slid(), r.sgid())))
    }

    /// The endports of a fabric's description, each at every LID of its
    /// range.
    pub(super) fn from_endports(endports: &[local_sa_core::path_engine::Endport]) -> Self {
        Self::from_pairs(endports.iter().flat_map(|e| {
            let gid = Gid::new(e.prefix, e.guid);
            e.lids().map(move |lid| (lid, gid))
        }))
    }

    /// The ports that are destinations of `records`.
    pub(super) fn from_destinations(records: &[PathRecord]) -> Self {
        Self::from_pairs(records.iter().map(|r| (r.dlid(), r.dgid())))
    }

    fn from_pairs(pairs: impl Iterator<Item = (u16, Gid)>) -> Self {
        let mut lowest: BTreeMap<Gid, u16> = BTreeMap::new();
        let mut dlids = Vec::new();
        for (lid, gid) in pairs {
            dlids.push(lid);
            let l = lowest.entry(gid).or_insert(lid);
            *l = (*l).min(lid);
        }
        dlids.sort_unstable();
        dlids.dedup();
        let mut endpoints: Vec<FabricPort> = lowest
            .into_iter()
            .map(|(gid, lid)| FabricPort { lid, gid })
            .collect();
        endpoints.sort_by_key(|e| e.lid);
        Self { endpoints, dlids }
    }
}

/// A PathRecord GetTable from `sgid`, to `dlid` if given, with `key`'s
/// fields if given (a partition's P_Key asked as a full member's, a
/// ServiceID or QoS class): the query the node itself makes for that
/// table.
pub(super) fn table_request(sgid: Gid, dlid: Option<u16>, key: Option<QosKey>) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_sgid(sgid);
    let mut mask = pr::SGID;
    if let Some(d) = dlid {
        t.set_dlid(d);
        mask |= pr::DLID;
    }
    if let Some(k) = key {
        mask |= k.apply(&mut t);
    }
    let mut b = SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}

/// This port's paths at the master: one GetTable, or, when its answer
/// comes back cut (a transport without RMPP, such as ibsim), one per
/// destination LID, walking upward as local-sa's own refresh does
/// ([`LidWalk`]).
pub(super) async fn own_paths(
    session: &mut Session,
    master: Address,
    window: usize,
    tally: &mut Tally,
) -> Result<Vec<PathRecord>, Stop> {
    let gid = session.port.gid;
    tally.tables += 1;
    let answer = session.exchange(&table_request(gid, None, None)).await?;
    session.ok(&answer)?;
    if !answer.is_cut() {
        return Ok(answer.records::<PathRecord>().copied().collect());
    }
    tally.cut = true;
    let mut walk = LidWalk::new(session.port.lid.max(master.lid), DEFAULT_WALK_GAP);
    let mut records = Vec::new();
    loop {
        while let Some(lid) = walk.next_lid(window) {
            session
                .client
                .start(master, &table_request(gid, Some(lid), None));
            tally.per_destination += 1;
        }
        if walk.is_done() {
            return Ok(records);
        }
        let c = session.client.next_completion().await?;
        let answer = session.answer(c)?;
        let mut highest = None;
        if answer.status() == MadStatus::OK {
            for r in answer.records::<PathRecord>() {
                highest = highest.max(Some(r.dlid()));
                records.push(*r);
            }
        }
        // The answer's own DLID says which LID it was about.
        walk.answered(highest.unwrap_or(0), highest.is_some());
    }
}

/// The endpoints among `candidates` that answer an SA ClassPortInfo Get:
/// those running local-sa (or another SA). Each probe gets two attempts of
/// `timeout`; a port without an SA agent answers at once on most
/// transports (an unsupported-class answer, or an undelivered send).
pub(super) async fn running_an_sa(
    session: &mut Session,
    candidates: &[FabricPort],
    window: usize,
    timeout: std::time::Duration,
) -> Result<Vec<FabricPort>, Stop> {
    let request = SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
    let attempts = Attempts {
        timeout,
        retries: 1,
    };
    let requests: Vec<(Address, Bytes)> = candidates
        .iter()
        .map(|e| (Address::gsi(e.lid, session.port.sm_sl), request.clone()))
        .collect();
    let ends = each_to_with(session, window, &requests, attempts).await?;
    let mut found: Vec<FabricPort> = candidates
        .iter()
        .zip(ends)
        .filter(|(_, end)| end.as_ref().is_ok_and(|a| a.status() == MadStatus::OK))
        .map(|(e, _)| *e)
        .collect();
    found.sort_by_key(|e| e.lid);
    Ok(found)
}
