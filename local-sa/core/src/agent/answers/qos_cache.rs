//! Port pairs' paths as the master gives them for the fields its QoS policy
//! matches on, or for another partition, or with no such field while the
//! port's tables are in doubt of the master's last sweep ([`PairKey`]): asked once, kept
//! until something that could change them happens (the owner clears the
//! whole cache then, as it does the forwarded answers), bounded in entries
//! and bytes with the least recently used going first.
//!
//! Asking goes through [`QosCache::wait`]: the first asker of a key sends
//! the master one GetTable ([`PairKey::query`]); the others wait for it.
//! Once a few of one source's pairs at a key were asked so, the next miss
//! asks that source's whole table at the key ([`SourceKey::query`], see
//! `qos_tables`), and every pair of it is kept when it comes.

use std::cell::Cell;
use std::collections::HashMap;

use mad_codec::PathRecord;
use mad_codec::records::SaRecord;

use crate::agent::answers::forward::MAX_WAITERS;
use crate::agent::answers::qos_tables::{Miss, SourceTables, TableAsker};
use crate::agent::counterparts::Asker;
use crate::agent::master::waiters::{Join, Waiters};
use crate::config::QosCacheLimits;
use crate::path_query::{PairKey, SourceKey};
use crate::request::PathQuery;
use crate::store::FastMap;

/// Bytes an entry costs beside its records: the key, the list, the
/// recency stamp and the hash table's slot.
const ENTRY_OVERHEAD: usize =
    size_of::<PairKey>() + size_of::<Vec<PathRecord>>() + size_of::<u64>() + 1;

#[derive(Debug)]
struct CachedPair {
    records: Vec<PathRecord>,
    /// When it was last used, on the cache's own clock.
    used: Cell<u64>,
    /// A distributor's (a QoS-table load), not the master's own answer
    /// to this port: what the port's table check draws from.
    loaded: bool,
}

/// Where a cached pair's records came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The master's answer to this port.
    Master,
    /// A distributor's load.
    Loaded,
}

impl CachedPair {
    fn bytes(&self) -> usize {
        ENTRY_OVERHEAD + self.records.len() * PathRecord::LEN
    }
}

/// The cache and who waits for it to be filled.
#[derive(Debug)]
pub(crate) struct QosCache {
    entries: FastMap<PairKey, CachedPair>,
    bytes: usize,
    clock: Cell<u64>,
    limits: QosCacheLimits,
    /// Entries dropped to make room, since start.
    evicted: u64,
    waiting: Waiters<PairKey, (Asker, PathQuery), u64>,
    /// Moves with every [`QosCache::clear`].
    generation: u64,
    /// Which sources' whole tables are asked, or worth asking.
    tables: SourceTables,
}

/// A source's table split into its destinations' records (each what the
/// pair's own query gets).
pub(in crate::agent) fn by_destination(
    records: impl IntoIterator<Item = PathRecord>,
) -> HashMap<u64, Vec<PathRecord>> {
    let mut by_dst: HashMap<u64, Vec<PathRecord>> = HashMap::new();
    for r in records {
        by_dst.entry(r.dgid().guid()).or_default().push(r);
    }
    by_dst
}

/// What a miss needs sent to the master.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::agent) enum Fetch {
    /// One pair's records.
    Pair(PairKey),
    /// A source's whole table at a key.
    Table(SourceKey),
    /// Nothing: what it needs is asked already.
    Nothing,
}

/// What became of a miss's asker.
#[derive(Debug)]
pub(in crate::agent) enum Waited {
    /// It waits, for what is to be sent (or was asked already).
    For(Fetch),
    /// Too many wait already: the asker, not kept.
    Full(Asker),
}

impl QosCache {
    pub(crate) fn new(limits: QosCacheLimits) -> Self {
        Self {
            entries: FastMap::default(),
            bytes: 0,
            clock: Cell::new(0),
            limits,
            evicted: 0,
            waiting: Waiters::new(MAX_WAITERS),
            generation: 0,
            tables: SourceTables::default(),
        }
    }

    /// The pair's records, if held; marks them used.
    pub(crate) fn get(&self, key: &PairKey) -> Option<&[PathRecord]> {
        let e = self.entries.get(key)?;
        let t = self.clock.get() + 1;
        self.clock.set(t);
        e.used.set(t);
        Some(&e.records)
    }

    /// Keeps the master's records for `key`, making room by dropping the
    /// least recently used eighth when full. A set larger than the whole
    /// byte limit (or any set, with no room at all) is not kept: returns
    /// whether it was.
    pub(crate) fn insert(&mut self, key: PairKey, records: Vec<PathRecord>, from: Origin) -> bool {
        self.remove(&key);
        let t = self.clock.get() + 1;
        self.clock.set(t);
        let entry = CachedPair {
            records,
            used: Cell::new(t),
            loaded: from == Origin::Loaded,
        };
        let size = entry.bytes();
        if size > self.limits.bytes || self.limits.entries == 0 {
            return false;
        }
        while self.entries.len() >= self.limits.entries || self.bytes + size > self.limits.bytes {
            self.evict_oldest();
        }
        self.bytes += size;
        self.entries.insert(key, entry);
        true
    }

    fn remove(&mut self, key: &PairKey) {
        if let Some(old) = self.entries.remove(key) {
            self.bytes -= old.bytes();
        }
    }

    /// Drops the least recently used eighth of the entries (at least one):
    /// a full cache then takes the next eighth's inserts without another
    /// pass over it.
    fn evict_oldest(&mut self) {
        let n = (self.entries.len() / 8).max(1);
        let mut stamps: Vec<u64> = self.entries.values().map(|e| e.used.get()).collect();
        let (_, &mut cut, _) = stamps.select_nth_unstable(n - 1);
        self.evicted += self.drop_where(|_, e| e.used.get() <= cut) as u64;
    }

    /// Drops the entries `gone` picks, with their bytes; returns how many.
    fn drop_where(&mut self, gone: impl Fn(&PairKey, &CachedPair) -> bool) -> usize {
        let (before, mut freed) = (self.entries.len(), 0);
        self.entries.retain(|k, e| {
            let drop = gone(k, e);
            if drop {
                freed += e.bytes();
            }
            !drop
        });
        self.bytes -= freed;
        before - self.entries.len()
    }

    /// Forgets every entry: something that could change them happened.
    /// Pairs asked before it are still given to their askers when they
    /// come, but not kept ([`QosCache::release`]).
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.generation += 1;
        self.tables.reset();
    }

    /// Forgets the entries with `guid` at either end: the port went out
    /// of service or came back. Pairs asked before it are not kept.
    pub(crate) fn forget_port(&mut self, guid: u64) {
        self.drop_where(|k, _| k.src == guid || k.dst == guid);
        self.generation += 1;
        self.tables.reset();
    }

    /// The master's tables reach this port cut (a transport without
    /// RMPP): pairs are asked alone from now on.
    pub(crate) fn tables_come_cut(&mut self) {
        self.tables.come_cut();
    }

    /// Keeps a source's table, split [`by_destination`], one entry per
    /// destination; returns how many records were kept (entries later
    /// evicted by the table's own inserts count as kept, and evicted).
    pub(in crate::agent) fn insert_table(
        &mut self,
        key: &SourceKey,
        by_dst: HashMap<u64, Vec<PathRecord>>,
        from: Origin,
    ) -> usize {
        let mut kept = 0;
        for (dst, records) in by_dst {
            let n = records.len();
            if self.insert(key.pair(dst), records, from) {
                kept += n;
            }
        }
        kept
    }

    /// `k` of the pairs a distributor loaded, spread over them (in a
    /// fixed order, starting at `offset`): what a table check asks the
    /// master again.
    pub(crate) fn loaded_sample(&self, k: usize, offset: usize) -> Vec<PairKey> {
        let mut loaded: Vec<PairKey> = self
            .entries
            .iter()
            .filter(|(_, e)| e.loaded)
            .map(|(key, _)| *key)
            .collect();
        loaded.sort_unstable_by_key(|key| (key.src, key.dst, key.qos.sort_key()));
        let (len, k) = (loaded.len(), k.min(loaded.len()));
        (0..k)
            .map(|i| loaded[(offset + i * len / k.max(1)) % len])
            .collect()
    }

    /// Whether the distributor's records for `key`, if still held, are
    /// those of the master's `answer` (`cut`: only its first records came).
    pub(crate) fn loaded_agree(&self, key: &PairKey, answer: &[PathRecord], cut: bool) -> bool {
        match self.entries.get(key) {
            Some(e) if e.loaded => {
                (cut || e.records.len() == answer.len())
                    && answer.iter().all(|r| e.records.contains(r))
            }
            // Dropped or replaced by the master's own answer since.
            _ => true,
        }
    }

    /// Forgets every pair a distributor loaded.
    pub(crate) fn forget_loaded(&mut self) {
        self.drop_where(|_, e| e.loaded);
        self.generation += 1;
        self.tables.reset();
    }

    /// Queues `asker` for `key`'s records: with the pair or its source's
    /// table already asked, or with what must be asked now.
    pub(in crate::agent) fn wait(
        &mut self,
        key: PairKey,
        asker: Asker,
        query: PathQuery,
    ) -> Waited {
        self.miss(key, Some((asker, query)))
    }

    /// Marks `key` as asked with nobody waiting: what must be sent.
    pub(in crate::agent) fn prefetch(&mut self, key: PairKey) -> Fetch {
        match self.miss(key, None) {
            Waited::For(fetch) => fetch,
            Waited::Full(_) => Fetch::Nothing,
        }
    }

    fn miss(&mut self, key: PairKey, asker: Option<(Asker, PathQuery)>) -> Waited {
        if self.waiting.is_open(&key) {
            let generation = self.generation;
            return match asker.map(|a| self.waiting.join(key, a, || generation)) {
                Some(Join::Full((asker, _))) => Waited::Full(asker),
                _ => Waited::For(Fetch::Nothing),
            };
        }
        let source = key.source();
        let pair_asker = match self.tables.miss(source, key.dst, asker, self.generation) {
            Miss::Table => return Waited::For(Fetch::Table(source)),
            Miss::Joined => return Waited::For(Fetch::Nothing),
            Miss::Full(asker) => return Waited::Full(asker),
            Miss::Pair(asker) => asker,
        };
        let generation = self.generation;
        self.waiting.open(key, generation);
        if let Some(asker) = pair_asker {
            self.waiting.join(key, asker, || generation);
        }
        Waited::For(Fetch::Pair(key))
    }

    /// Everyone who waited for `key`'s table, and whether the answer may
    /// be kept (nothing cleared the cache since it was asked); `again`
    /// when it got no answer and may be asked again.
    pub(in crate::agent) fn release_table(
        &mut self,
        key: &SourceKey,
        again: bool,
    ) -> (Vec<TableAsker>, bool) {
        match self.tables.release(key, again) {
            Some((generation, askers)) => (askers, generation == self.generation),
            None => (Vec::new(), false),
        }
    }

    /// Everyone who waited for `key`, and whether the answer may be kept
    /// (nothing cleared the cache since it was asked).
    pub(in crate::agent) fn release(&mut self, key: &PairKey) -> (Vec<(Asker, PathQuery)>, bool) {
        match self.waiting.release(key) {
            Some((generation, askers)) => (askers, generation == self.generation),
            None => (Vec::new(), false),
        }
    }

    /// Drops the waiters `gone` picks (their connection closed).
    pub(in crate::agent) fn forget_where(&mut self, gone: impl Fn(&Asker) -> bool) {
        self.waiting.forget_where(|(w, _)| gone(w));
        self.tables.forget_where(gone);
    }

    /// Entries held now.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries dropped to make room since start.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Keys being asked now.
    pub(crate) fn asking(&self) -> usize {
        self.waiting.len() + self.tables.asking()
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;

    use super::*;
    use crate::agent::answers::qos_tables::{MAX_TABLES_PER_CLEAR, PAIRS_BEFORE_TABLE};
    use crate::path_query::QosKey;

    fn key(dst: u64) -> PairKey {
        PairKey {
            src: 1,
            dst,
            qos: QosKey {
                service_id: Some(0x1060000),
                ..QosKey::default()
            },
        }
    }

    fn records(n: usize) -> Vec<PathRecord> {
        vec![PathRecord::new_zeroed(); n]
    }

    #[test]
    fn the_least_recently_used_go_first_and_bytes_are_bounded() {
        let mut c = QosCache::new(QosCacheLimits {
            entries: 16,
            bytes: 1 << 20,
        });
        for d in 0..16 {
            c.insert(key(d), records(1), Origin::Master);
        }
        // 0 and 1 used lately: they survive the next insert's eviction.
        assert!(c.get(&key(0)).is_some() && c.get(&key(1)).is_some());
        c.insert(key(100), records(1), Origin::Master);
        assert!(c.len() <= 16);
        assert_eq!(c.evicted(), 2, "an eighth of 16");
        assert!(c.get(&key(0)).is_some() && c.get(&key(1)).is_some());
        assert!(c.get(&key(2)).is_none() && c.get(&key(3)).is_none());
        assert!(c.get(&key(100)).is_some());
        assert_eq!(c.bytes(), c.len() * (ENTRY_OVERHEAD + PathRecord::LEN));

        // A byte limit of three one-record entries holds three.
        let per = ENTRY_OVERHEAD + PathRecord::LEN;
        let mut c = QosCache::new(QosCacheLimits {
            entries: 100,
            bytes: 3 * per,
        });
        for d in 0..10 {
            c.insert(key(d), records(1), Origin::Master);
            assert!(c.bytes() <= 3 * per);
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(&key(9)).is_some());
        // Larger than the whole limit: not kept, nothing else lost.
        c.insert(key(50), records(8), Origin::Master);
        assert!(c.get(&key(50)).is_none());
        assert_eq!(c.len(), 3);
        // Replacing an entry does not count it twice.
        c.insert(key(9), records(1), Origin::Master);
        assert_eq!(c.bytes(), 3 * per);
        c.forget_port(9);
        assert_eq!((c.len(), c.bytes()), (2, 2 * per));
        c.clear();
        assert_eq!((c.len(), c.bytes()), (0, 0));
    }

    #[test]
    fn a_pair_asked_before_a_clear_is_not_kept() {
        let mut c = QosCache::new(QosCacheLimits::default());
        assert_eq!(c.prefetch(key(1)), Fetch::Pair(key(1)));
        assert_eq!(c.prefetch(key(1)), Fetch::Nothing, "asked once");
        assert_eq!(c.prefetch(key(2)), Fetch::Pair(key(2)));
        assert!(c.release(&key(1)).1, "nothing happened meanwhile");
        c.clear();
        assert!(!c.release(&key(2)).1, "the fabric changed meanwhile");
        assert_eq!(c.asking(), 0);
    }

    #[test]
    fn after_a_few_pairs_of_a_source_its_whole_table_is_asked_once() {
        let mut c = QosCache::new(QosCacheLimits::default());
        let source = key(0).source();
        for d in 1..=u64::from(PAIRS_BEFORE_TABLE) {
            assert_eq!(c.prefetch(key(d)), Fetch::Pair(key(d)));
        }
        let n = u64::from(PAIRS_BEFORE_TABLE) + 1;
        assert_eq!(c.prefetch(key(n)), Fetch::Table(source));
        assert_eq!(c.prefetch(key(n + 1)), Fetch::Nothing, "the table is asked");
        let other_key = PairKey {
            qos: QosKey::default(),
            ..key(n)
        };
        assert_eq!(
            c.prefetch(other_key),
            Fetch::Pair(other_key),
            "another key's"
        );

        // The table comes: every destination kept, later misses are pairs.
        assert!(c.release_table(&source, false).1);
        let table = (1..=3).map(|d| {
            let mut r = PathRecord::new_zeroed();
            r.set_dgid(mad_codec::Gid::new(0, 100 + d));
            r
        });
        c.insert_table(&source, by_destination(table), Origin::Master);
        assert_eq!(c.len(), 3);
        assert!(c.get(&key(102)).is_some());
        assert_eq!(c.prefetch(key(200)), Fetch::Pair(key(200)));

        // A clear counts afresh; a table asked before it is not kept.
        c.clear();
        for d in 1..=u64::from(PAIRS_BEFORE_TABLE) {
            assert_eq!(c.prefetch(key(300 + d)), Fetch::Pair(key(300 + d)));
        }
        assert_eq!(c.prefetch(key(400)), Fetch::Table(source));
        c.forget_port(77);
        assert!(
            !c.release_table(&source, true).1,
            "the fabric changed meanwhile"
        );
        assert_eq!(
            c.prefetch(key(401)),
            Fetch::Table(source),
            "a table that got no answer is asked again at the next miss"
        );
    }

    #[test]
    fn a_client_naming_ever_new_keys_gets_a_bounded_number_of_tables() {
        let mut c = QosCache::new(QosCacheLimits::default());
        let mut tables = 0;
        for sid in 0..1000u64 {
            for d in 0..=u64::from(PAIRS_BEFORE_TABLE) {
                let k = PairKey {
                    qos: QosKey {
                        service_id: Some(sid),
                        ..QosKey::default()
                    },
                    ..key(d)
                };
                if let Fetch::Table(_) = c.prefetch(k) {
                    tables += 1;
                }
            }
        }
        assert_eq!(tables, MAX_TABLES_PER_CLEAR);
        c.clear();
        let k = |d| PairKey {
            qos: QosKey {
                service_id: Some(5000),
                ..QosKey::default()
            },
            ..key(d)
        };
        let last = (0..=u64::from(PAIRS_BEFORE_TABLE))
            .map(|d| c.prefetch(k(d)))
            .last();
        assert!(
            matches!(last, Some(Fetch::Table(_))),
            "a clear starts afresh"
        );
    }
}
