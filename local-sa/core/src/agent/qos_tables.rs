//! When the QoS cache asks the master for a source's whole table at a key
//! rather than one pair: after [`PAIRS_BEFORE_TABLE`] of its pairs missed.
//!
//! A client that talks to a few peers at a ServiceID (a storage target, a
//! handful of servers) costs the master one pair's computation each; a job
//! that talks to many (an all-to-all start, `lsaquery --warm`) gets every
//! destination in one GetTable after its first few pairs, so the master
//! computes each source's paths at that key once instead of once per pair
//! asked separately.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::parties::Asker;
use crate::path_query::SourceKey;
use crate::request::PathQuery;

/// Pairs of one source and key asked on their own before its whole table
/// is asked instead.
pub(crate) const PAIRS_BEFORE_TABLE: u8 = 4;

/// Source keys whose misses are counted at once: a peer naming ever new
/// ServiceIDs makes the cache ask pairs, not hold ever more counts.
const MAX_COUNTED: usize = 4096;

/// Queries waiting for one table, at most: each is a pair's asker.
pub(crate) const MAX_TABLE_WAITERS: usize = 4096;

/// Tables asked between two clears of the cache (a completed refresh
/// clears it), at most: a table costs the master every destination's
/// paths, so a client naming ever new ServiceIDs, five pairs each, must
/// not make it compute a table for every five queries. A job names a
/// few keys; beyond this, pairs are asked alone.
pub(crate) const MAX_TABLES_PER_CLEAR: u32 = 64;

/// One source key's state since the cache was last cleared.
#[derive(Debug)]
enum Source {
    /// This many of its pairs were asked on their own.
    Missed(u8),
    /// Its table is asked; these wait for it.
    Asked(Asked),
    /// Its table came (or could not be used): further misses are pairs.
    Done,
}

/// A table asked of the master, and who waits for it.
#[derive(Debug)]
pub(super) struct Asked {
    /// The cache's generation when it was asked.
    pub(super) generation: u64,
    /// Each waiter with its destination.
    pub(super) askers: Vec<(u64, Asker, PathQuery)>,
}

/// What a miss comes to, for one source key.
#[derive(Debug)]
pub(super) enum Miss {
    /// Ask the pair on its own: the asker given back.
    Pair(Option<(Asker, PathQuery)>),
    /// Ask the whole table now: the asker waits for it.
    Table,
    /// The table is asked already: the asker waits for it.
    Joined,
    /// Too many wait for the table already: the asker, not kept.
    Full(Asker),
}

/// The source keys' states.
#[derive(Debug, Default)]
pub(super) struct SourceTables {
    states: HashMap<SourceKey, Source>,
    /// The master's tables reach this port cut (a transport without
    /// RMPP): only pairs are asked.
    cut: bool,
    /// Tables asked since the last clear.
    asked: u32,
}

impl SourceTables {
    /// A miss of `key`'s pair to `dst`, by `asker` (none for a prefetch),
    /// in the cache's `generation`.
    pub(super) fn miss(
        &mut self,
        key: SourceKey,
        dst: u64,
        asker: Option<(Asker, PathQuery)>,
        generation: u64,
    ) -> Miss {
        let counted = self.states.len() < MAX_COUNTED;
        let state = match self.states.entry(key) {
            Entry::Occupied(o) if self.cut && !matches!(o.get(), Source::Asked(_)) => {
                return Miss::Pair(asker);
            }
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(_) if !counted || self.cut => return Miss::Pair(asker),
            Entry::Vacant(v) => v.insert(Source::Missed(0)),
        };
        match state {
            Source::Done => Miss::Pair(asker),
            Source::Missed(n) if *n < PAIRS_BEFORE_TABLE => {
                *n += 1;
                Miss::Pair(asker)
            }
            Source::Missed(_) if self.asked >= MAX_TABLES_PER_CLEAR => Miss::Pair(asker),
            Source::Missed(_) => {
                self.asked += 1;
                *state = Source::Asked(Asked {
                    generation,
                    askers: asker.map(|(a, q)| (dst, a, q)).into_iter().collect(),
                });
                Miss::Table
            }
            Source::Asked(asked) => {
                let Some((asker, query)) = asker else {
                    return Miss::Joined;
                };
                if asked.askers.iter().any(|(_, w, _)| w.same_request(&asker)) {
                    return Miss::Joined;
                }
                if asked.askers.len() >= MAX_TABLE_WAITERS {
                    return Miss::Full(asker);
                }
                asked.askers.push((dst, asker, query));
                Miss::Joined
            }
        }
    }

    /// Everyone who waited for `key`'s table. When it came (or could not
    /// be used), further misses of it are asked as pairs until the next
    /// clear; when it got no answer (`again`), the next miss asks it
    /// again, so that one master too busy for a moment does not turn a
    /// job's start into a pair query for every peer.
    pub(super) fn release(&mut self, key: &SourceKey, again: bool) -> Option<Asked> {
        let next = if again {
            Source::Missed(PAIRS_BEFORE_TABLE)
        } else {
            Source::Done
        };
        match self.states.insert(*key, next) {
            Some(Source::Asked(asked)) => Some(asked),
            _ => None,
        }
    }

    /// The master's tables reach this port cut: from now on only pairs
    /// are asked (tables asked already end as they come).
    pub(super) fn come_cut(&mut self) {
        self.cut = true;
    }

    /// Starts counting again: the cache was cleared (or lost a port), so
    /// a table may be worth asking again. Tables asked stay asked.
    pub(super) fn reset(&mut self) {
        self.asked = 0;
        self.states.retain(|_, s| matches!(s, Source::Asked(_)));
    }

    /// Drops the waiters `gone` picks (their connection closed).
    pub(super) fn forget_where(&mut self, gone: impl Fn(&Asker) -> bool) {
        for s in self.states.values_mut() {
            if let Source::Asked(asked) = s {
                asked.askers.retain(|(_, w, _)| !gone(w));
            }
        }
    }

    /// Tables asked and not yet answered.
    pub(super) fn asking(&self) -> usize {
        self.states
            .values()
            .filter(|s| matches!(s, Source::Asked(_)))
            .count()
    }
}
