//! What each node holds as far as the watch knows, and so what it must be
//! sent when the fabric's tables are computed again: nothing if its
//! tables' digest did not change, the differences if it holds the
//! current computed tables, its tables whole otherwise.

use std::collections::{BTreeMap, BTreeSet};

use mad_codec::Gid;

use crate::fill::ports::FabricPort;

/// What one node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// The tables computed from the current fabric, of this digest.
    Computed(u64),
    /// The master's tables, given when the computed ones (of this digest)
    /// were not proved: a change sends it its tables whole again.
    FromMaster(u64),
    /// Not known: never filled, a push failed, or it went silent.
    Unknown,
}

impl Holding {
    fn digest(self) -> Option<u64> {
        match self {
            Self::Computed(d) | Self::FromMaster(d) => Some(d),
            Self::Unknown => None,
        }
    }
}

/// The nodes an event pushes to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Each node to push to, with its LID.
    pub push: Vec<(Gid, u16)>,
    /// Those among them that hold the current computed tables: they get
    /// only the differences.
    pub delta: BTreeSet<Gid>,
}

impl Plan {
    /// The ports to push to.
    pub fn ports(&self) -> Vec<FabricPort> {
        self.push
            .iter()
            .map(|(gid, lid)| FabricPort {
                lid: *lid,
                gid: *gid,
            })
            .collect()
    }
}

/// Every local-sa node the watch keeps, and what it holds.
#[derive(Debug, Default)]
pub struct Holdings {
    nodes: BTreeMap<Gid, (u16, Holding)>,
}

impl Holdings {
    /// A node to keep from now on, holding `holding`.
    pub fn insert(&mut self, gid: Gid, lid: u16, holding: Holding) {
        self.nodes.insert(gid, (lid, holding));
    }

    /// Forgets the nodes `present` says are gone from the fabric; returns
    /// how many.
    pub fn retain_present(&mut self, present: impl Fn(&Gid) -> bool) -> usize {
        let before = self.nodes.len();
        self.nodes.retain(|g, _| present(g));
        before - self.nodes.len()
    }

    /// Whether the watch keeps the node at `gid`.
    pub fn contains(&self, gid: &Gid) -> bool {
        self.nodes.contains_key(gid)
    }

    /// Every node, with its LID.
    pub fn nodes(&self) -> impl Iterator<Item = (Gid, u16)> + '_ {
        self.nodes.iter().map(|(g, (lid, _))| (*g, *lid))
    }

    /// How many nodes are kept.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is kept.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Nodes whose holding is not known.
    pub fn unknown(&self) -> usize {
        self.nodes
            .values()
            .filter(|(_, h)| *h == Holding::Unknown)
            .count()
    }

    /// What to push, given each node's tables' digest now: every node
    /// whose digest changed or whose holding is unknown; the differences
    /// only to those holding the current computed tables. A node without
    /// a digest (not in the fabric now) is left alone.
    pub fn plan(&self, digests: &BTreeMap<Gid, u64>) -> Plan {
        let mut plan = Plan::default();
        for (gid, (lid, holding)) in &self.nodes {
            let Some(now) = digests.get(gid) else {
                continue;
            };
            if holding.digest() == Some(*now) {
                continue;
            }
            plan.push.push((*gid, *lid));
            if matches!(holding, Holding::Computed(_)) {
                plan.delta.insert(*gid);
            }
        }
        plan
    }

    /// Every node in the fabric now (a digest in `digests`), its tables
    /// whole: what it holds may be wrong whatever its digest (the master
    /// changed its mind in a way the engine does not follow, or tables it
    /// gave may have changed with its sweep).
    pub fn plan_whole(&self, digests: &BTreeMap<Gid, u64>) -> Plan {
        Plan {
            push: (self.nodes.iter())
                .filter(|(gid, _)| digests.contains_key(gid))
                .map(|(gid, (lid, _))| (*gid, *lid))
                .collect(),
            delta: BTreeSet::new(),
        }
    }

    /// How each pushed node ended (`ends`: its GID and whether it took
    /// everything): those that did hold the tables of `digests`, computed
    /// (`computed`) or the master's; the others are not known.
    pub fn pushed(
        &mut self,
        ends: impl IntoIterator<Item = (Gid, bool)>,
        digests: &BTreeMap<Gid, u64>,
        computed: bool,
    ) {
        for (gid, done) in ends {
            let Some((_, holding)) = self.nodes.get_mut(&gid) else {
                continue;
            };
            *holding = match (done, digests.get(&gid)) {
                (true, Some(d)) if computed => Holding::Computed(*d),
                (true, Some(d)) => Holding::FromMaster(*d),
                _ => Holding::Unknown,
            };
        }
    }

    /// The node at `gid` did not answer: what it holds is not known (it
    /// may have restarted, or missed a push), and it gets its tables whole
    /// once it answers again.
    pub fn unreached(&mut self, gid: &Gid) {
        if let Some((_, h)) = self.nodes.get_mut(gid) {
            *h = Holding::Unknown;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(n: u64) -> Gid {
        Gid::new(Gid::DEFAULT_PREFIX, n)
    }

    fn three() -> Holdings {
        let mut h = Holdings::default();
        h.insert(gid(1), 1, Holding::Computed(10));
        h.insert(gid(2), 2, Holding::FromMaster(20));
        h.insert(gid(3), 3, Holding::Unknown);
        h
    }

    #[test]
    fn only_changed_and_unknown_nodes_are_pushed_and_only_computed_ones_get_deltas() {
        let h = three();
        let same: BTreeMap<Gid, u64> = [(gid(1), 10), (gid(2), 20), (gid(3), 30)].into();
        let plan = h.plan(&same);
        assert_eq!(plan.push, [(gid(3), 3)], "only the unknown one");
        assert!(plan.delta.is_empty());
        let changed: BTreeMap<Gid, u64> = [(gid(1), 11), (gid(2), 21), (gid(3), 30)].into();
        let plan = h.plan(&changed);
        assert_eq!(plan.push, [(gid(1), 1), (gid(2), 2), (gid(3), 3)]);
        assert_eq!(plan.delta, BTreeSet::from([gid(1)]));
    }

    #[test]
    fn a_node_that_took_its_tables_holds_them_and_one_that_failed_is_not_known() {
        let mut h = three();
        let digests: BTreeMap<Gid, u64> = [(gid(1), 11), (gid(2), 21), (gid(3), 31)].into();
        h.pushed(
            [(gid(1), true), (gid(2), false), (gid(3), true)],
            &digests,
            true,
        );
        assert_eq!(h.plan(&digests).push, [(gid(2), 2)]);
        assert_eq!(h.unknown(), 1);
        h.pushed([(gid(2), true)], &digests, false);
        assert!(h.plan(&digests).push.is_empty());
        let moved: BTreeMap<Gid, u64> = [(gid(1), 11), (gid(2), 22), (gid(3), 31)].into();
        let plan = h.plan(&moved);
        assert_eq!(plan.push, [(gid(2), 2)]);
        assert!(plan.delta.is_empty(), "the master's tables go whole");
    }

    #[test]
    fn a_silent_node_gets_its_tables_whole_and_a_gone_one_nothing() {
        let mut h = three();
        let digests: BTreeMap<Gid, u64> = [(gid(1), 10), (gid(2), 20)].into();
        h.unreached(&gid(1));
        let plan = h.plan(&digests);
        assert_eq!(plan.push, [(gid(1), 1)], "node 3 is not in the fabric now");
        assert!(plan.delta.is_empty());
        assert_eq!(h.retain_present(|g| *g != gid(3)), 1);
        assert_eq!(h.len(), 2);
        assert!(!h.contains(&gid(3)));
    }
}
