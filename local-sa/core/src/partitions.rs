//! A port's paths per partition.
//!
//! OpenSM answers a PathRecord query that names a P_Key for that
//! partition: only ports that share it, with the partition's SL and,
//! under QoS, the level the P_Key matches. So the answers asked with a
//! P_Key are not the default table's (asked without one), and each P_Key
//! of the port's P_Key table gets a [`PathTable`] of its own, filled by a
//! GetTable naming it. Keys are the P_Keys' low 15 bits: OpenSM shares,
//! matches and looks up partitions by them, whatever the membership bit.

use std::collections::BTreeMap;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{ComponentMask, Gid, PathRecord};

use crate::store::{FastSet, PathStore};

/// The low 15 bits of a P_Key: its partition.
pub fn partition_of(pkey: u16) -> u16 {
    pkey & 0x7FFF
}

/// Which table of a port's paths: the default one, or a partition's.
/// Ordered as a refresh fetches them: the default first, then the
/// partitions by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableKey {
    /// The answers asked without a P_Key.
    Default,
    /// The answers asked with this partition's P_Key (low 15 bits).
    Partition(u16),
}

impl TableKey {
    /// The query of this table of the port at `gid`: its paths, asked
    /// with the partition's P_Key as a full member's.
    pub fn query(self, gid: Gid) -> (ComponentMask, PathRecord) {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(gid);
        match self {
            Self::Default => (pr::SGID, t),
            Self::Partition(p) => {
                t.set_pkey(p | 0x8000);
                (pr::SGID | pr::PKEY, t)
            }
        }
    }
}

impl std::fmt::Display for TableKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Partition(p) => write!(f, "{:#06x}", p | 0x8000),
        }
    }
}

/// Records and the source ports whose every path among them is held.
#[derive(Debug, Default)]
pub struct PathTable {
    /// The records.
    pub store: PathStore,
    /// Ports (by GUID) whose every path the store holds.
    complete: FastSet<u64>,
    /// Fetches of the paths to a port that came into service, out at the
    /// master: until they are in, paths to it may be missing, so no
    /// source counts as complete.
    awaiting: u32,
}

impl PathTable {
    /// Whether every path from the port `guid` is held.
    pub fn is_complete(&self, guid: u64) -> bool {
        self.awaiting == 0 && self.complete.contains(&guid)
    }

    /// Every path from the port `guid` is held from now.
    pub fn mark_complete(&mut self, guid: u64) {
        self.complete.insert(guid);
    }

    /// Some path from the port `guid` may be missing from now.
    pub fn mark_incomplete(&mut self, guid: u64) {
        self.complete.remove(&guid);
    }

    /// The ports whose every path is held (whatever is awaited).
    pub fn complete_sources(&self) -> &FastSet<u64> {
        &self.complete
    }

    /// A fetch of the paths to a port that came into service is out: no
    /// source counts as complete until it is in.
    pub fn await_fetch(&mut self) {
        self.awaiting += 1;
    }

    /// One such fetch came back (or failed).
    pub fn fetch_ended(&mut self) {
        self.awaiting = self.awaiting.saturating_sub(1);
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// The partition tables of one port, for the P_Keys its table holds.
#[derive(Debug, Default)]
pub struct Partitions {
    /// The port's partitions (P_Keys' low 15 bits), sorted, once each.
    held: Vec<u16>,
    tables: BTreeMap<u16, PathTable>,
}

impl Partitions {
    /// Takes the port's P_Key table (as the port lists it, membership
    /// bits and all; 0 entries are empty slots). Tables of partitions no
    /// longer held go. Returns whether the set of partitions changed.
    pub fn set_held(&mut self, pkeys: &[u16]) -> bool {
        let mut held: Vec<u16> = pkeys
            .iter()
            .map(|p| partition_of(*p))
            .filter(|p| *p != 0)
            .collect();
        held.sort_unstable();
        held.dedup();
        if held == self.held {
            return false;
        }
        self.tables.retain(|p, _| held.binary_search(p).is_ok());
        self.held = held;
        true
    }

    /// The port's partitions, low 15 bits, in order.
    pub fn held(&self) -> &[u16] {
        &self.held
    }

    /// Whether the port holds the partition of `pkey`.
    pub fn holds(&self, pkey: u16) -> bool {
        self.held.binary_search(&partition_of(pkey)).is_ok()
    }

    /// The table of the partition of `pkey`, if one is kept.
    pub fn table(&self, pkey: u16) -> Option<&PathTable> {
        self.tables.get(&partition_of(pkey))
    }

    /// The table of the partition of `pkey`, made if the port holds the
    /// partition; `None` if it does not.
    pub fn table_mut(&mut self, pkey: u16) -> Option<&mut PathTable> {
        let p = partition_of(pkey);
        if !self.holds(p) {
            return None;
        }
        Some(self.tables.entry(p).or_default())
    }

    /// Every table kept, by partition.
    pub fn tables(&self) -> impl Iterator<Item = (u16, &PathTable)> {
        self.tables.iter().map(|(p, t)| (*p, t))
    }

    /// Every table kept, to change.
    pub fn tables_mut(&mut self) -> impl Iterator<Item = &mut PathTable> {
        self.tables.values_mut()
    }

    /// Keeps only the tables of the partitions `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(u16) -> bool) {
        self.tables.retain(|p, _| keep(*p));
    }

    /// Removes every record to or from the port `guid` in every table;
    /// it is no longer complete anywhere. Returns how many records went.
    pub fn remove_port(&mut self, guid: u64) -> usize {
        self.tables_mut()
            .map(|t| {
                t.mark_incomplete(guid);
                t.store.remove_port(guid)
            })
            .sum()
    }

    /// Empties every table (the partitions held stay known).
    pub fn clear(&mut self) {
        self.tables.clear();
    }

    /// Records in all tables.
    pub fn records(&self) -> usize {
        self.tables.values().map(|t| t.store.len()).sum()
    }

    /// Heap bytes of all tables' stores (as [`PathStore::heap_bytes`]).
    pub fn heap_bytes(&self) -> usize {
        self.tables.values().map(|t| t.store.heap_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::{Gid, PathRecordRepr};

    use super::*;

    fn path(slid: u16, dlid: u16, pkey: u16) -> PathRecord {
        PathRecordRepr {
            sgid: Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(slid)),
            dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(dlid)),
            slid,
            dlid,
            pkey,
            ..PathRecordRepr::default()
        }
        .to_wire()
    }

    #[test]
    fn partitions_follow_the_port_table_by_their_low_bits() {
        let mut p = Partitions::default();
        assert!(p.set_held(&[0xFFFF, 0x8001, 0x0001, 0, 0x0002]));
        assert_eq!(p.held(), [0x0001, 0x0002, 0x7FFF]);
        assert!(
            !p.set_held(&[0x0002, 0x8001, 0x7FFF]),
            "the same partitions"
        );
        assert!(p.holds(0x8002) && p.holds(0x7FFF) && !p.holds(0x8003));
        assert!(p.table_mut(0x8003).is_none(), "not held: no table");
        p.table_mut(0x8001)
            .unwrap()
            .store
            .insert(path(1, 2, 0x8001), 1);
        p.table_mut(0x0002)
            .unwrap()
            .store
            .insert(path(1, 3, 0x0002), 1);
        assert_eq!(p.table(0x0001).unwrap().store.len(), 1, "any membership");
        assert_eq!(p.records(), 2);
        assert!(p.set_held(&[0xFFFF, 0x8002]));
        assert!(
            p.table(0x8001).is_none(),
            "a partition gone takes its table"
        );
        assert_eq!(p.records(), 1);
    }

    #[test]
    fn a_port_out_of_service_leaves_every_table() {
        let mut p = Partitions::default();
        p.set_held(&[0x8001, 0x8002]);
        for pkey in [0x8001, 0x8002] {
            let t = p.table_mut(pkey).unwrap();
            t.store.insert(path(1, 2, pkey), 1);
            t.store.insert(path(1, 3, pkey), 1);
            t.complete.insert(0x1002);
        }
        assert_eq!(p.remove_port(0x1002), 2);
        assert_eq!(p.records(), 2, "the paths to LID 3 stay");
        assert!(p.tables().all(|(_, t)| !t.is_complete(0x1002)));
    }

    #[test]
    fn tables_are_ordered_default_first() {
        let mut keys = vec![
            TableKey::Partition(2),
            TableKey::Default,
            TableKey::Partition(1),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                TableKey::Default,
                TableKey::Partition(1),
                TableKey::Partition(2)
            ]
        );
        assert_eq!(TableKey::Partition(1).to_string(), "0x8001");
    }
}
