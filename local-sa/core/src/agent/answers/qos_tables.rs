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

use crate::agent::counterparts::Asker;
use crate::agent::master::waiters::{Join, Waiters};
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

/// One asker of a table: the destination it asked, who, and its query.
pub(in crate::agent) type TableAsker = (u64, Asker, PathQuery);

/// One source key's state since the cache was last cleared.
#[derive(Debug)]
enum Source {
    /// This many of its pairs were asked on their own.
    Missed(u8),
    /// Its table is asked (who waits for it: [`SourceTables::waiting`]).
    Asked,
    /// Its table came (or could not be used): further misses are pairs.
    Done,
}

/// What a miss comes to, for one source key.
#[derive(Debug)]
pub(in crate::agent) enum Miss {
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
#[derive(Debug)]
pub(in crate::agent) struct SourceTables {
    states: HashMap<SourceKey, Source>,
    /// Who waits for each table asked (each a pair's asker, with its
    /// destination), and the cache's generation when it was asked.
    waiting: Waiters<SourceKey, TableAsker, u64>,
    /// The master's tables reach this port cut (a transport without
    /// RMPP): only pairs are asked.
    cut: bool,
    /// Tables asked since the last clear.
    asked: u32,
}

impl Default for SourceTables {
    fn default() -> Self {
        Self {
            states: HashMap::new(),
            waiting: Waiters::new(MAX_TABLE_WAITERS),
            cut: false,
            asked: 0,
        }
    }
}

impl SourceTables {
    /// A miss of `key`'s pair to `dst`, by `asker` (none for a prefetch),
    /// in the cache's `generation`.
    pub(in crate::agent) fn miss(
        &mut self,
        key: SourceKey,
        dst: u64,
        asker: Option<(Asker, PathQuery)>,
        generation: u64,
    ) -> Miss {
        let counted = self.states.len() < MAX_COUNTED;
        let state = match self.states.entry(key) {
            Entry::Occupied(o) if self.cut && !matches!(o.get(), Source::Asked) => {
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
                *state = Source::Asked;
                self.waiting.open(key, generation);
                if let Some((asker, query)) = asker {
                    self.waiting.join(key, (dst, asker, query), || generation);
                }
                Miss::Table
            }
            Source::Asked => {
                let Some((asker, query)) = asker else {
                    return Miss::Joined;
                };
                match self.waiting.join(key, (dst, asker, query), || generation) {
                    Join::Full((_, asker, _)) => Miss::Full(asker),
                    Join::First | Join::Joined => Miss::Joined,
                }
            }
        }
    }

    /// Everyone who waited for `key`'s table. When it came (or could not
    /// be used), further misses of it are asked as pairs until the next
    /// clear; when it got no answer (`again`), the next miss asks it
    /// again, so that one master too busy for a moment does not turn a
    /// job's start into a pair query for every peer.
    pub(in crate::agent) fn release(
        &mut self,
        key: &SourceKey,
        again: bool,
    ) -> Option<(u64, Vec<TableAsker>)> {
        let next = if again {
            Source::Missed(PAIRS_BEFORE_TABLE)
        } else {
            Source::Done
        };
        match self.states.insert(*key, next) {
            Some(Source::Asked) => self.waiting.release(key),
            _ => None,
        }
    }

    /// The master's tables reach this port cut: from now on only pairs
    /// are asked (tables asked already end as they come).
    pub(in crate::agent) fn come_cut(&mut self) {
        self.cut = true;
    }

    /// Starts counting again: the cache was cleared (or lost a port), so
    /// a table may be worth asking again. Tables asked stay asked.
    pub(in crate::agent) fn reset(&mut self) {
        self.asked = 0;
        self.states.retain(|_, s| matches!(s, Source::Asked));
    }

    /// Drops the waiters `gone` picks (their connection closed).
    pub(in crate::agent) fn forget_where(&mut self, gone: impl Fn(&Asker) -> bool) {
        self.waiting.forget_where(|(_, w, _)| gone(w));
    }

    /// Tables asked and not yet answered.
    pub(in crate::agent) fn asking(&self) -> usize {
        self.waiting.len()
    }
}
