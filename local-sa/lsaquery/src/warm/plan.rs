//! What `--warm` asks: the hosts read from the command line or a file,
//! the ServiceIDs given (ranges allowed), and the queries they make —
//! every peer × P_Key × ServiceID (and none), as the job's own queries
//! will name them.

use std::ops::RangeInclusive;

use local_sa_core::request::PathQuery;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, Method, PathRecord};

/// Queries one warm-up may make at most: a mistyped range must not turn
/// into hours of queries.
pub(crate) const MAX_QUERIES: u64 = 1_000_000;

/// The hosts of a `--warm` argument: the lines of the file it names (one
/// or more hosts per line, separated by blanks or commas, `#` starting a
/// comment), or else a comma-separated list.
pub(crate) fn hosts(arg: &str) -> Result<Vec<String>, String> {
    let path = std::path::Path::new(arg);
    let text = if path.is_file() {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {arg}: {e}"))?
    } else {
        arg.to_owned()
    };
    let hosts: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return Err(format!("--warm {arg:?} names no host"));
    }
    Ok(hosts)
}

/// The queries of a warm-up from one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The port's GID: every query's source.
    pub(crate) source: Gid,
    /// The peers, each once.
    pub(crate) peers: Vec<Gid>,
    /// The P_Keys asked with.
    pub(crate) pkeys: Vec<u16>,
    /// The ServiceIDs asked with; `None`: without one.
    pub(crate) service_ids: Vec<Option<u64>>,
}

impl Plan {
    /// The plan for `peers` (repeats dropped, order kept), `pkeys` and
    /// the ServiceID ranges given, queries without a ServiceID first.
    /// Refused past [`MAX_QUERIES`].
    pub(crate) fn new(
        source: Gid,
        peers: impl IntoIterator<Item = Gid>,
        pkeys: &[u16],
        ranges: &[RangeInclusive<u64>],
    ) -> Result<Self, String> {
        let mut seen = std::collections::HashSet::new();
        let peers: Vec<Gid> = peers.into_iter().filter(|g| seen.insert(*g)).collect();
        let mut pkeys = pkeys.to_vec();
        pkeys.dedup();
        let ids: u64 = ranges
            .iter()
            .map(|r| r.end() - r.start() + 1)
            .fold(1, u64::saturating_add);
        let total = ids
            .saturating_mul(peers.len() as u64)
            .saturating_mul(pkeys.len() as u64);
        if total > MAX_QUERIES {
            return Err(format!(
                "{} peers × {} P_Keys × {ids} ServiceIDs (none included) is {total} queries, \
                 more than the {MAX_QUERIES} one warm-up makes; give fewer hosts or narrower \
                 --service-id ranges",
                peers.len(),
                pkeys.len()
            ));
        }
        // Each once, however the ranges overlap.
        let ids: std::collections::BTreeSet<u64> = ranges.iter().flat_map(|r| r.clone()).collect();
        let service_ids = std::iter::once(None)
            .chain(ids.into_iter().map(Some))
            .collect();
        Ok(Self {
            source,
            peers,
            pkeys,
            service_ids,
        })
    }

    /// How many queries it makes.
    pub(crate) fn len(&self) -> u64 {
        (self.peers.len() * self.pkeys.len() * self.service_ids.len()) as u64
    }

    /// Its queries, peer by peer: a Get of SGID, DGID, P_Key and the
    /// ServiceID if any — what rdma_cm and the kernel name — each the key
    /// of one entry of local-sa's caches.
    pub(crate) fn queries(&self) -> impl Iterator<Item = PathQuery> + '_ {
        self.peers.iter().flat_map(move |peer| {
            self.pkeys.iter().flat_map(move |pkey| {
                self.service_ids.iter().map(move |sid| {
                    let mut t = PathRecord::new_zeroed();
                    t.set_sgid(self.source);
                    t.set_dgid(*peer);
                    t.set_pkey(*pkey);
                    let mut mask = pr::SGID | pr::DGID | pr::PKEY;
                    if let Some(id) = sid {
                        t.set_service_id(*id);
                        mask |= pr::SERVICE_ID;
                    }
                    PathQuery {
                        method: Method::GET,
                        mask,
                        template: t,
                    }
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(n: u64) -> Gid {
        Gid::new(0xfe80_0000_0000_0000, n)
    }

    #[test]
    fn hosts_come_from_a_list_or_a_file() {
        assert_eq!(
            hosts("node1,10.0.0.2,,fe80::2:c903:0:1,7").unwrap(),
            ["node1", "10.0.0.2", "fe80::2:c903:0:1", "7"]
        );
        let dir = std::env::temp_dir().join(format!("lsaquery-warm-{}", std::process::id()));
        std::fs::write(
            &dir,
            "# the job's hosts\nnode1 node2\nnode3, node4 # rack 2\n\n",
        )
        .unwrap();
        let read = hosts(dir.to_str().unwrap());
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(read.unwrap(), ["node1", "node2", "node3", "node4"]);
        assert!(hosts(" , ").is_err());
    }

    #[test]
    fn every_peer_is_asked_on_every_pkey_with_and_without_each_service_id() {
        let plan = Plan::new(
            gid(1),
            [gid(2), gid(3), gid(2)],
            &[0xFFFF, 0x8001],
            &[0x0106_0001..=0x0106_0001, 0x0106_0000..=0x0106_0001],
        )
        .unwrap();
        assert_eq!(
            plan.service_ids,
            [None, Some(0x0106_0000), Some(0x0106_0001)],
            "each ServiceID once, in order"
        );
        assert_eq!(plan.peers, [gid(2), gid(3)], "each peer once");
        assert_eq!(plan.len(), 2 * 2 * 3);
        let queries: Vec<PathQuery> = plan.queries().collect();
        assert_eq!(queries.len() as u64, plan.len());
        let first = queries[0];
        assert_eq!(first.mask, pr::SGID | pr::DGID | pr::PKEY);
        assert_eq!(
            (
                first.template.sgid(),
                first.template.dgid(),
                first.template.pkey()
            ),
            (gid(1), gid(2), 0xFFFF)
        );
        let with_id = queries[1];
        assert_eq!(
            with_id.mask,
            pr::SGID | pr::DGID | pr::PKEY | pr::SERVICE_ID
        );
        assert_eq!(with_id.template.service_id(), 0x0106_0000);
        assert_eq!(queries[3].template.pkey(), 0x8001);
        assert!(queries.iter().all(|q| q.method == Method::GET));
    }

    #[test]
    fn a_plan_past_the_bound_is_refused() {
        let peers = (2..1_002).map(gid);
        let e = Plan::new(gid(1), peers, &[0xFFFF], &[0..=0xFFFF]).unwrap_err();
        assert!(e.contains("65537000 queries"), "{e}");
    }
}
