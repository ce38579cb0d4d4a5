//! What a node must be sent: each of its tables whole, or only what
//! changed since the snapshot of the last distribution.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Bytes, BytesMut};
use local_sa_core::load_flags::{KNOWN_ABSENT, PARTITION_TABLES, QOS_TABLES, REPLACE_SOURCES};
use local_sa_core::partitions::partition_of;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, ComponentMask, Method, PathRecord, SaMadBuilder};

/// Which of a node's tables a push is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeTable {
    /// A default table.
    Default,
    /// Its partition tables (each record its P_Key's: PARTITION_TABLES).
    Partitions,
}

/// One load or delete for a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Push {
    /// Set with REPLACE_SOURCES: the node's whole table (for partitions,
    /// of one partition).
    Whole(NodeTable, Vec<PathRecord>),
    /// Set: records new or changed since the snapshot.
    Changed(NodeTable, Vec<PathRecord>),
    /// Delete with KNOWN_ABSENT: pairs the master no longer has.
    Vanished(NodeTable, Vec<PathRecord>),
    /// Set with QOS_TABLES: the node's table at one QoS key, whose
    /// fields `mask` names, the key record first. Sent whole every time:
    /// the node's QoS cache is emptied by each of its refreshes and by
    /// every path load, so no snapshot can say what it still holds.
    AtKey {
        /// The key's fields in the component mask.
        mask: ComponentMask,
        /// The key record, then the table's.
        records: Vec<PathRecord>,
    },
}

impl Push {
    /// The records it carries.
    pub fn records(&self) -> &[PathRecord] {
        match self {
            Self::Whole(_, r) | Self::Changed(_, r) | Self::Vanished(_, r) => r,
            Self::AtKey { records, .. } => records,
        }
    }

    /// The request that carries it: method, ComponentMask and
    /// AttributeModifier (docs/wire-contract.md).
    pub fn request(&self) -> (Method, ComponentMask, u32) {
        let table = |t: &NodeTable| match t {
            NodeTable::Default => 0,
            NodeTable::Partitions => PARTITION_TABLES,
        };
        match self {
            Self::Whole(t, _) => (Method::SET, ComponentMask::NONE, REPLACE_SOURCES | table(t)),
            Self::Changed(t, _) => (Method::SET, ComponentMask::NONE, table(t)),
            Self::Vanished(t, _) => (Method::DELETE, ComponentMask::NONE, KNOWN_ABSENT | table(t)),
            Self::AtKey { mask, .. } => (Method::SET, *mask, QOS_TABLES),
        }
    }

    /// True for a push that changes a path table (not only the QoS
    /// cache, which is filled whole every time).
    pub fn changes_a_table(&self) -> bool {
        !matches!(self, Self::AtKey { .. })
    }
}

/// The pushes that take a node's default table from `old` (its records
/// in the snapshot, `None` without a delta) to `new` (the master's
/// records now). A node the snapshot does not know gets its whole table;
/// one whose table did not change gets nothing.
pub fn pushes(old: Option<&[PathRecord]>, new: Vec<PathRecord>) -> Vec<Push> {
    let Some(old) = old.filter(|o| !o.is_empty()) else {
        return vec![Push::Whole(NodeTable::Default, new)];
    };
    let (changed, vanished) = differences(old, &new);
    changes(NodeTable::Default, changed, vanished)
}

/// The pushes that take a node's partition tables from `old` (their
/// records in the snapshot, `None` without a delta) to `new` (each
/// partition fetched this run and the master's records in it, empty
/// when it has none from the node). A partition the snapshot holds
/// nothing of goes whole, one load each; the changes of the others go
/// together, one Set and one Delete (each record names its partition);
/// one the master no longer has paths in loses the snapshot's records;
/// a partition not fetched this run is left alone.
pub fn partition_pushes(old: Option<&[PathRecord]>, new: &[(u16, Vec<PathRecord>)]) -> Vec<Push> {
    let before = by_partition(old.unwrap_or_default());
    let (mut wholes, mut changed, mut vanished) = (Vec::new(), Vec::new(), Vec::new());
    for (partition, records) in new {
        match before.get(&partition_of(*partition)) {
            Some(old) => {
                let (c, v) = differences(old, records);
                changed.extend(c);
                vanished.extend(v);
            }
            None if records.is_empty() => {}
            None => wholes.push(Push::Whole(NodeTable::Partitions, records.clone())),
        }
    }
    wholes.extend(changes(NodeTable::Partitions, changed, vanished));
    wholes
}

/// The records of `records` each partition (low 15 bits) holds.
pub fn by_partition(records: &[PathRecord]) -> BTreeMap<u16, Vec<PathRecord>> {
    let mut by: BTreeMap<u16, Vec<PathRecord>> = BTreeMap::new();
    for r in records {
        by.entry(partition_of(r.pkey())).or_default().push(*r);
    }
    by
}

/// The records of the partitions `fetched` (low 15 bits) are left out
/// of `old`: what a node holds of its other partitions, which this run
/// did not touch.
pub fn untouched_partitions(old: &[PathRecord], fetched: &BTreeSet<u16>) -> Vec<PathRecord> {
    old.iter()
        .filter(|r| !fetched.contains(&partition_of(r.pkey())))
        .copied()
        .collect()
}

/// The records of `new` not in `old` byte for byte, and the records of
/// `old` whose (SLID, DLID) pair `new` lacks.
fn differences(old: &[PathRecord], new: &[PathRecord]) -> (Vec<PathRecord>, Vec<PathRecord>) {
    let key = |r: &PathRecord| (r.slid(), r.dlid());
    let before: BTreeMap<_, _> = old.iter().map(|r| (key(r), r)).collect();
    let after: BTreeMap<_, _> = new.iter().map(|r| (key(r), r)).collect();
    let changed = new
        .iter()
        .filter(|r| {
            before
                .get(&key(r))
                .is_none_or(|o| o.as_bytes() != r.as_bytes())
        })
        .copied()
        .collect();
    let vanished = old
        .iter()
        .filter(|r| !after.contains_key(&key(r)))
        .copied()
        .collect();
    (changed, vanished)
}

/// A Set of `changed` and a Delete of `vanished` for `table`, each only
/// if it has records.
fn changes(table: NodeTable, changed: Vec<PathRecord>, vanished: Vec<PathRecord>) -> Vec<Push> {
    let mut out = Vec::new();
    if !changed.is_empty() {
        out.push(Push::Changed(table, changed));
    }
    if !vanished.is_empty() {
        out.push(Push::Vanished(table, vanished));
    }
    out
}

/// The headers and data of a Set or Delete of `records` carrying
/// `sm_key`, for an RMPP transfer.
pub fn load_request(
    sm_key: u64,
    method: Method,
    mask: ComponentMask,
    modifier: u32,
    records: &[PathRecord],
) -> (SaMadHeader, Bytes) {
    let mut b = SaMadBuilder::request(method, 0, AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(sm_key);
    h.sa.set_component_mask(mask);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(modifier);
    let header = *h;
    let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
    for r in records {
        data.extend_from_slice(r.as_bytes());
    }
    (header, data.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_codec::zerocopy::FromZeros;

    fn path(slid: u16, dlid: u16, sl: u8) -> PathRecord {
        let mut r = PathRecord::new_zeroed();
        r.set_slid(slid);
        r.set_dlid(dlid);
        r.set_sl(sl);
        r.set_pkey(0xFFFF);
        r
    }

    fn in_partition(pkey: u16, mut r: PathRecord) -> PathRecord {
        r.set_pkey(pkey);
        r
    }

    #[test]
    fn without_a_snapshot_the_whole_table_goes() {
        let new = vec![path(1, 2, 0), path(1, 3, 0)];
        assert_eq!(
            pushes(None, new.clone()),
            [Push::Whole(NodeTable::Default, new.clone())]
        );
        assert_eq!(
            pushes(Some(&[]), new.clone()),
            [Push::Whole(NodeTable::Default, new)]
        );
    }

    #[test]
    fn a_reroute_sends_what_changed_and_deletes_what_vanished() {
        let old = [path(1, 2, 0), path(1, 3, 0), path(1, 4, 0)];
        // (1,3) moved to SL 1, (1,4) is gone, (1,5) is new.
        let new = vec![path(1, 2, 0), path(1, 3, 1), path(1, 5, 0)];
        assert_eq!(
            pushes(Some(&old), new),
            [
                Push::Changed(NodeTable::Default, vec![path(1, 3, 1), path(1, 5, 0)]),
                Push::Vanished(NodeTable::Default, vec![path(1, 4, 0)]),
            ]
        );
    }

    #[test]
    fn an_unchanged_table_sends_nothing() {
        let old = [path(1, 2, 0), path(1, 3, 0)];
        assert_eq!(pushes(Some(&old), old.to_vec()), []);
    }

    #[test]
    fn each_partition_is_compared_with_its_own_records_in_the_snapshot() {
        let p1 = |r| in_partition(0x8001, r);
        let p2 = |r| in_partition(0x0002, r);
        // The same pair in two partitions: one changes, one does not.
        let old = [p1(path(1, 2, 0)), p1(path(1, 3, 0)), p2(path(1, 2, 4))];
        let new = [
            (0x8001, vec![p1(path(1, 2, 1))]),
            (0x8002, vec![p2(path(1, 2, 4)), p2(path(1, 5, 0))]),
            // Not in the snapshot: whole.
            (0x8003, vec![in_partition(0x8003, path(1, 2, 0))]),
        ];
        assert_eq!(
            partition_pushes(Some(&old), &new),
            [
                Push::Whole(
                    NodeTable::Partitions,
                    vec![in_partition(0x8003, path(1, 2, 0))]
                ),
                Push::Changed(
                    NodeTable::Partitions,
                    vec![p1(path(1, 2, 1)), p2(path(1, 5, 0))]
                ),
                Push::Vanished(NodeTable::Partitions, vec![p1(path(1, 3, 0))]),
            ]
        );
        // Without a snapshot every partition goes whole, but for one
        // without paths from the node.
        let none = partition_pushes(None, &[(0x8001, vec![p1(path(1, 2, 0))]), (0x8002, vec![])]);
        assert_eq!(
            none,
            [Push::Whole(NodeTable::Partitions, vec![p1(path(1, 2, 0))])]
        );
    }

    #[test]
    fn a_partition_whose_paths_are_gone_loses_them_and_one_not_fetched_is_left_alone() {
        let old = [
            in_partition(0x8001, path(1, 2, 0)),
            in_partition(0x8002, path(1, 2, 0)),
        ];
        assert_eq!(
            partition_pushes(Some(&old), &[(0x8001, vec![])]),
            [Push::Vanished(
                NodeTable::Partitions,
                vec![in_partition(0x8001, path(1, 2, 0))]
            )]
        );
        let fetched = BTreeSet::from([0x0001]);
        assert_eq!(
            untouched_partitions(&old, &fetched),
            [in_partition(0x8002, path(1, 2, 0))]
        );
    }

    #[test]
    fn each_push_names_its_table_in_the_modifier() {
        let r = vec![path(1, 2, 0)];
        let p = |push: Push| push.request();
        assert_eq!(
            p(Push::Whole(NodeTable::Partitions, r.clone())),
            (
                Method::SET,
                ComponentMask::NONE,
                REPLACE_SOURCES | PARTITION_TABLES
            )
        );
        assert_eq!(
            p(Push::Changed(NodeTable::Default, r.clone())),
            (Method::SET, ComponentMask::NONE, 0)
        );
        assert_eq!(
            p(Push::Vanished(NodeTable::Partitions, r)),
            (
                Method::DELETE,
                ComponentMask::NONE,
                KNOWN_ABSENT | PARTITION_TABLES
            )
        );
    }
}
