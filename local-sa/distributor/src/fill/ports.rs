//! The ports a distribution fills, the probe that says which of them run
//! local-sa, and the query each node makes for a table of its own.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use local_sa_core::path_query::QosKey;
use local_sa_core::requester::{Answer, Attempts, Failure};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder};

/// A port of the fabric: its GID and lowest LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricPort {
    /// Its lowest LID.
    pub lid: u16,
    /// Its GID.
    pub gid: Gid,
}

/// What is known of the fabric before distributing.
pub struct Endpoints {
    /// Every port, by GID, at its lowest LID.
    pub endpoints: Vec<FabricPort>,
    /// Every destination LID (all of each port's LIDs, under an LMC):
    /// what a per-destination fetch asks for.
    pub dlids: Vec<u16>,
}

impl Endpoints {
    /// The ports that are sources of `records`, by their lowest SLID.
    pub fn from_sources(records: &[PathRecord]) -> Self {
        Self::from_pairs(records.iter().map(|r| (r.slid(), r.sgid())))
    }

    /// The endports of a fabric's description, each at every LID of its
    /// range.
    pub fn from_endports(endports: &[local_sa_core::path_engine::Endport]) -> Self {
        Self::from_pairs(endports.iter().flat_map(|e| {
            let gid = Gid::new(e.prefix, e.guid);
            e.lids().map(move |lid| (lid, gid))
        }))
    }

    /// The ports that are destinations of `records`.
    pub fn from_destinations(records: &[PathRecord]) -> Self {
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
pub fn table_request(sgid: Gid, dlid: Option<u16>, key: Option<QosKey>) -> Bytes {
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

/// The probe of a port for an SA agent (local-sa, or another SA): an SA
/// ClassPortInfo Get. A port without one answers at once on most
/// transports (an unsupported-class answer, or an undelivered send).
pub fn sa_probe() -> Bytes {
    SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes()
}

/// A probe's attempts: two, each of `timeout` (`--probe-timeout`).
pub fn sa_probe_attempts(timeout: Duration) -> Attempts {
    Attempts {
        timeout,
        retries: 1,
    }
}

/// Of `probed`, each with its probe's end in `ends` (in order), the ports
/// that run an SA — those that answered, with success — by LID.
pub fn those_running_an_sa(
    probed: impl IntoIterator<Item = FabricPort>,
    ends: impl IntoIterator<Item = Result<Answer, Failure>>,
) -> Vec<FabricPort> {
    let mut found: Vec<FabricPort> = (probed.into_iter().zip(ends))
        .filter(|(_, end)| end.as_ref().is_ok_and(|a| a.status() == MadStatus::OK))
        .map(|(p, _)| p)
        .collect();
    found.sort_by_key(|p| p.lid);
    found
}
