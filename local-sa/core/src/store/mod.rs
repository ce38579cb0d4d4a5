//! The PathRecord store: records as the master SA (or a load) gave them, in
//! a slab, with the indexes PathRecord queries need.
//!
//! * `by_pair` finds the record of one (SLID, DLID) pair: what every query
//!   naming both ends, by LID or by GID, comes down to.
//! * `by_source` and `by_dest` list the records from or to one LID, for
//!   queries that name one end only. LIDs are 16-bit, so these are dense
//!   tables of 8 bytes per LID (`lid_lists`), not per-record maps.
//! * `ports` resolves a port GUID (the interface ID of a GID) to the base
//!   LID and LMC the records carry for it; `lid_owner`, dense by LID, gives
//!   the GUID back.
//!
//! Every record carries the epoch of the refresh that last confirmed it;
//! a full refresh stamps what it sees with a new epoch and then sweeps the
//! rest ([`PathStore::sweep`]).

use std::ops::RangeInclusive;

use std::num::NonZeroU64;

use mad_codec::{Gid, PathRecord};
use slab::Slab;

mod lid_lists;

/// A map for the store's integer keys (LID pairs, GUIDs): rustc's FxHash.
/// The keys come from the master SA and from loads that carry the SM_Key,
/// not from arbitrary peers, so collision flooding is not a concern; the
/// default SipHash cost a third of the time of a cached answer. Maps keyed
/// by what any peer sends (forwarded query templates) keep SipHash.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// A set of the store's integer keys; see [`FastMap`].
pub type FastSet<K> = rustc_hash::FxHashSet<K>;
use self::lid_lists::LidLists;

/// A refresh generation.
pub type Epoch = u32;

/// What the store keeps per record.
#[derive(Debug, Clone, Copy)]
struct StoredPath {
    record: PathRecord,
    epoch: Epoch,
}

/// A port the store has seen as an end of some record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortLids {
    /// Base LID.
    pub lid: u16,
    /// Highest LID offset seen (an upper bound of 2^LMC - 1).
    pub span: u16,
}

/// Records, indexes, and the current epoch.
#[derive(Debug, Default)]
pub struct PathStore {
    records: Slab<StoredPath>,
    by_pair: FastMap<u32, u32>,
    by_source: LidLists,
    by_dest: LidLists,
    ports: FastMap<u64, PortLids>,
    /// The GUID last seen at each LID. A GUID of 0 is not a port's (IBA
    /// 4.1.1: EUI-64, never zero), so it is not recorded.
    lid_owner: Vec<Option<NonZeroU64>>,
}

/// The key of the pair (SLID, DLID): SLID << 16 | DLID, the order of
/// [`PathStore::page`].
pub fn pair_key(slid: u16, dlid: u16) -> u32 {
    u32::from(slid) << 16 | u32::from(dlid)
}

impl PathStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when the store holds nothing.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Heap bytes the store holds, from its tables' capacities (a slab
    /// entry counted as the record, its epoch and the slab's tag; a hash
    /// table slot as its key, value and control byte), without the
    /// allocator's own overhead.
    pub fn heap_bytes(&self) -> usize {
        fn slots<K, V>(map: &FastMap<K, V>) -> usize {
            map.capacity() * (size_of::<(K, V)>() + 1)
        }
        self.records.capacity() * (size_of::<StoredPath>() + size_of::<usize>())
            + slots(&self.by_pair)
            + slots(&self.ports)
            + self.by_source.heap_bytes()
            + self.by_dest.heap_bytes()
            + self.lid_owner.capacity() * size_of::<Option<NonZeroU64>>()
    }

    /// Makes room for a table of `records` records about to be
    /// inserted into an empty store (a first fill or a refresh after a
    /// clear): exactly that room, where growing by doubling would hold up
    /// to twice what the table needs. A store that holds records already
    /// mostly gets replacements and is left as it is.
    pub fn expect_table(&mut self, records: usize) {
        if !self.is_empty() {
            return;
        }
        self.records.reserve_exact(records);
        self.by_pair.reserve(records);
    }

    /// Inserts or replaces the record for its (SLID, DLID) pair, stamped
    /// with `epoch`. Returns true if it replaced one.
    pub fn insert(&mut self, record: PathRecord, epoch: Epoch) -> bool {
        let (slid, dlid) = (record.slid(), record.dlid());
        let key = pair_key(slid, dlid);
        self.note_port(record.sgid(), slid);
        self.note_port(record.dgid(), dlid);
        if let Some(&id) = self.by_pair.get(&key)
            && let Some(stored) = self.records.get_mut(id as usize)
        {
            *stored = StoredPath { record, epoch };
            return true;
        }
        let slot = self.records.insert(StoredPath { record, epoch });
        let Ok(id) = u32::try_from(slot) else {
            // More than 4 billion records: refuse rather than corrupt.
            self.records.remove(slot);
            return false;
        };
        self.by_pair.insert(key, id);
        self.by_source.push(slid, id);
        self.by_dest.push(dlid, id);
        false
    }

    fn note_port(&mut self, gid: Gid, lid: u16) {
        let i = usize::from(lid);
        if self.lid_owner.len() <= i {
            self.lid_owner.resize(i + 1, None);
        }
        self.lid_owner[i] = NonZeroU64::new(gid.guid());
        let entry = self
            .ports
            .entry(gid.guid())
            .or_insert(PortLids { lid, span: 0 });
        if lid < entry.lid {
            entry.span += entry.lid - lid;
            entry.lid = lid;
        } else {
            entry.span = entry.span.max(lid - entry.lid);
        }
    }

    /// The record of the pair (SLID, DLID).
    pub fn get(&self, slid: u16, dlid: u16) -> Option<&PathRecord> {
        let id = *self.by_pair.get(&pair_key(slid, dlid))?;
        self.records.get(id as usize).map(|s| &s.record)
    }

    /// Removes the record of the pair (SLID, DLID).
    pub fn remove(&mut self, slid: u16, dlid: u16) -> Option<PathRecord> {
        let id = self.by_pair.remove(&pair_key(slid, dlid))?;
        let stored = self.records.try_remove(id as usize)?;
        self.by_source.remove(slid, id);
        self.by_dest.remove(dlid, id);
        Some(stored.record)
    }

    /// Records whose SLID is `slid`.
    pub fn from_lid(&self, slid: u16) -> impl Iterator<Item = &PathRecord> {
        self.list(self.by_source.get(slid))
    }

    /// Records whose DLID is `dlid`.
    pub fn to_lid(&self, dlid: u16) -> impl Iterator<Item = &PathRecord> {
        self.list(self.by_dest.get(dlid))
    }

    fn list<'a>(&'a self, ids: &'a [u32]) -> impl Iterator<Item = &'a PathRecord> {
        ids.iter()
            .filter_map(|id| self.records.get(*id as usize).map(|s| &s.record))
    }

    /// Every record.
    pub fn iter(&self) -> impl Iterator<Item = &PathRecord> {
        self.records.iter().map(|(_, s)| &s.record)
    }

    /// Up to `max` records in (SLID, DLID) order, from the pair
    /// `from` (SLID << 16 | DLID) on: a page of a dump. A record held from
    /// the first page to the last is in exactly one, whatever else changes
    /// meanwhile.
    pub fn page(&self, from: u32, max: usize) -> Vec<PathRecord> {
        let mut page = Vec::with_capacity(max.min(self.len()));
        let first = (from >> 16) as u16;
        for (slid, ids) in self.by_source.from(first) {
            if page.len() >= max {
                break;
            }
            let mut records: Vec<&PathRecord> = ids
                .iter()
                .filter_map(|id| self.records.get(*id as usize))
                .map(|s| &s.record)
                .filter(|r| slid > first || u32::from(r.dlid()) >= from & 0xFFFF)
                .collect();
            records.sort_unstable_by_key(|r| r.dlid());
            let room = max - page.len();
            page.extend(records.into_iter().take(room).copied());
        }
        page
    }

    /// Every port the records show, by GUID.
    pub fn ports(&self) -> impl Iterator<Item = (u64, PortLids)> + '_ {
        self.ports.iter().map(|(guid, lids)| (*guid, *lids))
    }

    /// How many ports the records show.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The LIDs of the port with this GUID, as the records show them.
    pub fn port(&self, guid: u64) -> Option<PortLids> {
        self.ports.get(&guid).copied()
    }

    /// The GUID of the port that answers to `lid`, as the records show it.
    pub fn port_at(&self, lid: u16) -> Option<(u64, PortLids)> {
        let guid = self
            .lid_owner
            .get(usize::from(lid))
            .copied()
            .flatten()?
            .get();
        self.port(guid).map(|p| (guid, p))
    }

    /// Removes every record to or from the port with this GUID (its GID went
    /// out of service). Returns how many went.
    pub fn remove_port(&mut self, guid: u64) -> usize {
        let Some(port) = self.ports.remove(&guid) else {
            return 0;
        };
        let mut removed = 0;
        for lid in port.lid..=port.lid.saturating_add(port.span) {
            if let Some(owner) = self.lid_owner.get_mut(usize::from(lid))
                && owner.map(NonZeroU64::get) == Some(guid)
            {
                *owner = None;
            }
            let ids: Vec<u32> = self
                .by_dest
                .get(lid)
                .iter()
                .chain(self.by_source.get(lid))
                .copied()
                .collect();
            for id in ids {
                if let Some((s, d)) = self
                    .records
                    .get(id as usize)
                    .map(|p| (p.record.slid(), p.record.dlid()))
                {
                    removed += usize::from(self.remove(s, d).is_some());
                }
            }
        }
        removed
    }

    /// Removes every record not stamped with `current` (a finished full
    /// refresh did not see it). Returns how many went.
    pub fn sweep(&mut self, current: Epoch) -> usize {
        self.remove_where(|_, epoch| epoch != current)
    }

    /// Removes the records from the source LIDs `slids` not stamped with
    /// `current`: a refresh of one source's paths sweeps only those.
    pub fn sweep_from(&mut self, slids: RangeInclusive<u16>, current: Epoch) -> usize {
        let mut stale = Vec::new();
        for slid in slids {
            let ids = self.by_source.get(slid).iter();
            stale.extend(
                ids.filter_map(|id| self.records.get(*id as usize))
                    .filter(|s| s.epoch != current)
                    .map(|s| s.record.dlid())
                    .map(|d| (slid, d)),
            );
        }
        for (s, d) in &stale {
            self.remove(*s, *d);
        }
        stale.len()
    }

    /// Removes every record for which `doomed` (given the record and its
    /// epoch) is true. Returns how many went.
    pub fn remove_where(&mut self, mut doomed: impl FnMut(&PathRecord, Epoch) -> bool) -> usize {
        let pairs: Vec<(u16, u16)> = self
            .records
            .iter()
            .filter(|(_, s)| doomed(&s.record, s.epoch))
            .map(|(_, s)| (s.record.slid(), s.record.dlid()))
            .collect();
        for (s, d) in &pairs {
            self.remove(*s, *d);
        }
        pairs.len()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::PathRecordRepr;

    use super::*;

    fn path(slid: u16, dlid: u16) -> PathRecord {
        PathRecordRepr {
            sgid: Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(slid)),
            dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(dlid)),
            slid,
            dlid,
            pkey: 0xFFFF,
            ..PathRecordRepr::default()
        }
        .to_wire()
    }

    #[test]
    fn insert_replace_get_remove() {
        let mut s = PathStore::new();
        assert!(!s.insert(path(1, 2), 1));
        assert!(!s.insert(path(1, 3), 1));
        assert!(!s.insert(path(4, 2), 1));
        assert_eq!(s.len(), 3);
        let mut replacement = path(1, 2);
        replacement.set_sl(5);
        assert!(s.insert(replacement, 2), "same pair replaces");
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(1, 2).unwrap().sl(), 5);
        assert_eq!(s.from_lid(1).count(), 2);
        assert_eq!(s.to_lid(2).count(), 2);
        assert_eq!(s.remove(1, 2).unwrap().sl(), 5);
        assert!(s.get(1, 2).is_none());
        assert_eq!(s.from_lid(1).map(|r| r.dlid()).collect::<Vec<_>>(), [3]);
        assert_eq!(s.to_lid(2).map(|r| r.slid()).collect::<Vec<_>>(), [4]);
        assert!(s.remove(1, 2).is_none());
    }

    #[test]
    fn pages_cover_every_record_once_in_order() {
        let mut s = PathStore::new();
        for slid in [9u16, 1, 4] {
            for dlid in [7u16, 2, 5] {
                s.insert(path(slid, dlid), 0);
            }
        }
        let mut seen = Vec::new();
        let mut from = 0u32;
        loop {
            let page = s.page(from, 4);
            seen.extend(page.iter().map(|r| (r.slid(), r.dlid())));
            let Some(last) = page.last() else { break };
            if page.len() < 4 {
                break;
            }
            from = pair_key(last.slid(), last.dlid()) + 1;
        }
        let mut all: Vec<(u16, u16)> = s.iter().map(|r| (r.slid(), r.dlid())).collect();
        all.sort_unstable();
        assert_eq!(seen, all);
        // A record removed before its page is not in it; one added behind
        // the cursor is not either; the rest are there once.
        let page = s.page(4 << 16 | 3, 100);
        assert_eq!(
            page.iter()
                .map(|r| (r.slid(), r.dlid()))
                .collect::<Vec<_>>(),
            [(4, 5), (4, 7), (9, 2), (9, 5), (9, 7)]
        );
        assert!(s.page(0, 0).is_empty());
        assert!(s.page(u32::MAX, 10).is_empty());
    }

    #[test]
    fn ports_are_learned_from_records() {
        let mut s = PathStore::new();
        s.insert(path(1, 8), 1);
        // LMC 1: the destination answers to 8 and 9 under one GUID.
        let mut lmc = path(1, 9);
        lmc.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, 0x1008));
        s.insert(lmc, 1);
        assert_eq!(s.port(0x1008), Some(PortLids { lid: 8, span: 1 }));
        assert_eq!(s.port(0x1001), Some(PortLids { lid: 1, span: 0 }));
        assert_eq!(s.port(0x9999), None);
        assert_eq!(s.port_at(9), Some((0x1008, PortLids { lid: 8, span: 1 })));
        assert_eq!(s.port_at(7), None);
    }

    #[test]
    fn a_port_out_of_service_takes_its_paths_both_ways() {
        let mut s = PathStore::new();
        for (a, b) in [(1, 2), (1, 3), (2, 1), (3, 1), (2, 3)] {
            s.insert(path(a, b), 1);
        }
        assert_eq!(s.remove_port(0x1002), 3);
        let left: Vec<_> = s.iter().map(|r| (r.slid(), r.dlid())).collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&(1, 3)) && left.contains(&(3, 1)));
        assert_eq!(s.remove_port(0x1002), 0, "already gone");
        assert_eq!(s.port_at(2), None);
    }

    #[test]
    fn sweep_removes_what_a_refresh_did_not_see() {
        let mut s = PathStore::new();
        for d in 2..10 {
            s.insert(path(1, d), 1);
        }
        // Refresh 2 sees only even destinations.
        for d in (2..10).step_by(2) {
            s.insert(path(1, d), 2);
        }
        assert_eq!(s.sweep(2), 4);
        assert_eq!(s.len(), 4);
        assert!(s.from_lid(1).all(|r| r.dlid() % 2 == 0));
        assert_eq!(s.to_lid(3).count(), 0);
    }

    #[test]
    fn a_source_sweep_leaves_other_sources_alone() {
        let mut s = PathStore::new();
        s.insert(path(1, 2), 1);
        s.insert(path(1, 3), 2);
        s.insert(path(5, 2), 1);
        assert_eq!(s.sweep_from(1..=1, 2), 1);
        assert!(s.get(1, 2).is_none());
        assert!(s.get(1, 3).is_some());
        assert!(s.get(5, 2).is_some(), "another source's old record stays");
        assert_eq!(s.remove_where(|r, _| r.dlid() == 2), 1);
        assert_eq!(s.len(), 1);
    }
}
