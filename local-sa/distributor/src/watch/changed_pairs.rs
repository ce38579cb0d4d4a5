//! The pairs a watch event checks against the master before it pushes:
//! pairs whose records changed, spread over the nodes whose tables
//! changed, each node's tables computed from the fabric before and after
//! and compared destination by destination.

use std::collections::BTreeMap;

use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::{Fabric, PairCheck, Table};
use mad_codec::PathRecord;

/// Nodes whose tables are compared to find changed pairs, at most.
const NODES_COMPARED: usize = 16;

/// Up to `limit` pairs whose records differ between `old` and `new`,
/// taken in turn from up to 16 of `nodes` (port GUIDs, spread over the
/// list), in every table they are sent (those at `at_keys` on each
/// partition too); only pairs both ends of which are in `new`.
pub fn changed_pairs(
    old: &Fabric,
    new: &Fabric,
    nodes: &[u64],
    at_keys: &[QueryKeys],
    limit: usize,
) -> Vec<PairCheck> {
    if limit == 0 || nodes.is_empty() {
        return Vec::new();
    }
    let step = nodes.len().div_ceil(NODES_COMPARED).max(1);
    let per_node: Vec<Vec<PairCheck>> = nodes
        .iter()
        .step_by(step)
        .map(|source| changed_from(old, new, *source, at_keys))
        .collect();
    // In turn from each node, so that the sample spans them.
    let mut out = Vec::new();
    let longest = per_node.iter().map(Vec::len).max().unwrap_or(0);
    'rounds: for i in 0..longest {
        for pairs in &per_node {
            if let Some(p) = pairs.get(i) {
                out.push(*p);
                if out.len() == limit {
                    break 'rounds;
                }
            }
        }
    }
    out
}

/// The pairs from `source` whose records differ between `old` and
/// `new`: in its default table, and in each partition table it keeps in
/// `new` (and at each of `at_keys`).
fn changed_from(old: &Fabric, new: &Fabric, source: u64, at_keys: &[QueryKeys]) -> Vec<PairCheck> {
    let Some(endport) = new.endport(source) else {
        return Vec::new();
    };
    let mut pkeys: Vec<u16> = new
        .pkey_table(endport)
        .entries()
        .iter()
        .map(|p| p & 0x7FFF)
        .collect();
    pkeys.sort_unstable();
    pkeys.dedup();
    let keys = std::iter::once(QueryKeys::default()).chain(at_keys.iter().copied());
    let tables = std::iter::once(Table::Default).chain(
        keys.flat_map(|k| pkeys.iter().map(move |p| Table::at(*p, k)))
            .collect::<Vec<_>>(),
    );
    let mut changed = Vec::new();
    for table in tables {
        let by_dest = |f: &Fabric| {
            let mut records = Vec::new();
            // A table the engine cannot compute compares as empty: its
            // pairs are then all "changed", and the check says why.
            let _ = f.table(source, table, &mut records);
            let mut by: BTreeMap<u64, Vec<PathRecord>> = BTreeMap::new();
            for r in records {
                by.entry(r.dgid().guid()).or_default().push(r);
            }
            by
        };
        let (before, after) = (by_dest(old), by_dest(new));
        for (dest, records) in &after {
            if before.get(dest) != Some(records) {
                changed.push(PairCheck {
                    source,
                    dest: *dest,
                    table,
                });
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use local_sa_core::path_engine::synthetic::FatTree;

    use super::*;

    /// A fat tree's fabric whose links to the first spine are 1x, with
    /// the first leaf's link to it unplugged if `unplugged`.
    fn tree(unplugged: bool) -> Fabric {
        let spec = FatTree {
            leaves: 4,
            spines: 2,
            hosts_per_leaf: 3,
            lmc: 0,
        };
        let f = spec.slow_first_spine(unplugged);
        let mut fabric = Fabric::build(&f.records(), false).expect("built");
        fabric.set_partition_sl(0x7FFF, 0);
        fabric
    }

    #[test]
    fn a_reroute_gives_pairs_that_changed_and_an_unchanged_fabric_none() {
        let before = tree(false);
        let nodes: Vec<u64> = before
            .endports()
            .iter()
            .filter(|e| !e.is_switch)
            .map(|e| e.guid)
            .collect();
        assert!(changed_pairs(&before, &tree(false), &nodes, &[], 100).is_empty());
        let after = tree(true);
        let pairs = changed_pairs(&before, &after, &nodes, &[], 100);
        assert!(!pairs.is_empty(), "routes through the unplugged link moved");
        let (mut now, mut earlier) = (Vec::new(), Vec::new());
        for p in &pairs {
            now.clear();
            earlier.clear();
            after.pair(p.source, p.dest, p.table, &mut now).unwrap();
            before
                .pair(p.source, p.dest, p.table, &mut earlier)
                .unwrap();
            assert_ne!(now, earlier, "each pair named did change");
        }
        assert_eq!(changed_pairs(&before, &after, &nodes, &[], 3).len(), 3);
    }
}
