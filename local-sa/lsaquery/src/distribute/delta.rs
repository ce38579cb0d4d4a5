//! What a node must be sent: its whole table, or only what changed since
//! the snapshot of the last distribution.

use std::collections::BTreeMap;

use mad_codec::zerocopy::IntoBytes;
use mad_codec::{ComponentMask, PathRecord};

/// One load or delete for a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Push {
    /// Set with REPLACE_SOURCES: the node's whole table.
    Whole(Vec<PathRecord>),
    /// Set: records new or changed since the snapshot.
    Changed(Vec<PathRecord>),
    /// Delete with KNOWN_ABSENT: pairs the master no longer has.
    Vanished(Vec<PathRecord>),
    /// Set with REPLACE_SOURCES and PARTITION_TABLES: the node's whole
    /// table of one partition.
    Partition(Vec<PathRecord>),
    /// Set with QOS_TABLES: the node's table at one QoS key, whose
    /// fields `mask` names, the key record first.
    AtKey {
        mask: ComponentMask,
        records: Vec<PathRecord>,
    },
}

impl Push {
    pub(super) fn records(&self) -> &[PathRecord] {
        match self {
            Self::Whole(r) | Self::Changed(r) | Self::Vanished(r) | Self::Partition(r) => r,
            Self::AtKey { records, .. } => records,
        }
    }

    /// True for a push of a table beside the default one (sent whole
    /// every time, so not a change a delta found).
    pub(super) fn is_beside_the_default(&self) -> bool {
        matches!(self, Self::Partition(_) | Self::AtKey { .. })
    }
}

/// The pushes that take a node from `old` (its records in the snapshot,
/// `None` without a delta) to `new` (the master's records now). A node
/// the snapshot does not know gets its whole table; one whose table did
/// not change gets nothing.
pub(super) fn pushes(old: Option<&[PathRecord]>, new: Vec<PathRecord>) -> Vec<Push> {
    let Some(old) = old.filter(|o| !o.is_empty()) else {
        return vec![Push::Whole(new)];
    };
    let key = |r: &PathRecord| (r.slid(), r.dlid());
    let before: BTreeMap<_, _> = old.iter().map(|r| (key(r), r)).collect();
    let after: BTreeMap<_, _> = new.iter().map(|r| (key(r), r)).collect();
    let changed: Vec<PathRecord> = new
        .iter()
        .filter(|r| {
            before
                .get(&key(r))
                .is_none_or(|o| o.as_bytes() != r.as_bytes())
        })
        .copied()
        .collect();
    let vanished: Vec<PathRecord> = old
        .iter()
        .filter(|r| !after.contains_key(&key(r)))
        .copied()
        .collect();
    let mut out = Vec::new();
    if !changed.is_empty() {
        out.push(Push::Changed(changed));
    }
    if !vanished.is_empty() {
        out.push(Push::Vanished(vanished));
    }
    out
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
        r
    }

    #[test]
    fn without_a_snapshot_the_whole_table_goes() {
        let new = vec![path(1, 2, 0), path(1, 3, 0)];
        assert_eq!(pushes(None, new.clone()), [Push::Whole(new.clone())]);
        assert_eq!(pushes(Some(&[]), new.clone()), [Push::Whole(new)]);
    }

    #[test]
    fn a_reroute_sends_what_changed_and_deletes_what_vanished() {
        let old = [path(1, 2, 0), path(1, 3, 0), path(1, 4, 0)];
        // (1,3) moved to SL 1, (1,4) is gone, (1,5) is new.
        let new = vec![path(1, 2, 0), path(1, 3, 1), path(1, 5, 0)];
        assert_eq!(
            pushes(Some(&old), new),
            [
                Push::Changed(vec![path(1, 3, 1), path(1, 5, 0)]),
                Push::Vanished(vec![path(1, 4, 0)]),
            ]
        );
    }

    #[test]
    fn an_unchanged_table_sends_nothing() {
        let old = [path(1, 2, 0), path(1, 3, 0)];
        assert_eq!(pushes(Some(&old), old.to_vec()), []);
    }
}
