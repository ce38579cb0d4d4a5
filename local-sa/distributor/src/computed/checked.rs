//! What a check of the computed tables against the master found.

use local_sa_core::path_engine::{Difference, PairCheck, Table};
use serde_json::json;

/// A pair whose computed records differ from the master's.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// The pair and its kind of table.
    pub pair: PairCheck,
    /// The LIDs of the records compared.
    pub lids: (u16, u16),
    /// The first field that differs.
    pub difference: Difference,
    /// The master answered the pair otherwise when asked again: its
    /// answers vary from ask to ask (a routing engine that draws a path's
    /// SL at random, as DFSSSP does), so no computed record can equal
    /// them — said as such, not as a difference of the engine's.
    pub varies: bool,
}

/// Differences (and pairs not computed) a fabric's check keeps, beyond
/// the first of each kind of table.
pub const KEPT_DIFFERENCES: usize = 1024;

/// What a check found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Pairs compared.
    pub pairs: usize,
    /// Records of the master's compared.
    pub records: usize,
    /// Pairs whose computed records differ from the master's.
    pub mismatches: Vec<Mismatch>,
    /// Pairs whose records the engine could not compute, and why.
    pub uncomputable: Vec<(PairCheck, String)>,
    /// Pairs drawn from each kind of table, in the order of the sample.
    pub drawn: Vec<(Table, usize)>,
}

/// What the check drew from one kind of table, and found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// The kind of table.
    pub table: Table,
    /// Pairs drawn from it.
    pub pairs: usize,
    /// Pairs whose computed records differ from the master's.
    pub differ: usize,
}

impl Coverage {
    /// The table's name as the summaries write it.
    pub fn name(&self) -> String {
        self.table.to_string()
    }
}

impl Checked {
    /// Adds what another check of the same fabric found. Past
    /// [`KEPT_DIFFERENCES`] kept, a difference is kept only if it is the
    /// first of its kind of table (what decides which tables come from
    /// the master): a watch that checks after every sweep a master whose
    /// answers always differ holds no more for it.
    pub fn add(&mut self, found: Self) {
        self.pairs += found.pairs;
        self.records += found.records;
        for m in found.mismatches {
            let new_kind = !self.mismatches.iter().any(|k| k.pair.table == m.pair.table);
            if self.mismatches.len() < KEPT_DIFFERENCES || new_kind {
                self.mismatches.push(m);
            }
        }
        for u in found.uncomputable {
            if self.uncomputable.len() < KEPT_DIFFERENCES {
                self.uncomputable.push(u);
            }
        }
        for (table, pairs) in found.drawn {
            self.count_drawn(table, pairs);
        }
    }

    /// Counts `pairs` more drawn from `table`.
    pub fn count_drawn(&mut self, table: Table, pairs: usize) {
        match self.drawn.iter_mut().find(|(t, _)| *t == table) {
            Some((_, n)) => *n += pairs,
            None => self.drawn.push((table, pairs)),
        }
    }

    /// How many of the pairs that differ the master answered otherwise
    /// each time it was asked.
    pub fn varying(&self) -> usize {
        self.mismatches.iter().filter(|m| m.varies).count()
    }

    /// What the check drew from each kind of table and found there.
    pub fn coverage(&self) -> Vec<Coverage> {
        self.drawn
            .iter()
            .map(|(table, pairs)| Coverage {
                table: *table,
                pairs: *pairs,
                differ: self
                    .mismatches
                    .iter()
                    .filter(|m| m.pair.table == *table)
                    .count(),
            })
            .collect()
    }
}

/// What the check drew from each kind of table, in a line: `default 1000
/// pairs, 0x7fff 250 pairs (12 differ)`.
pub fn coverage_text(coverage: &[Coverage]) -> String {
    coverage
        .iter()
        .map(|c| match c.differ {
            0 => format!("{} {} pairs", c.name(), c.pairs),
            d => format!("{} {} pairs ({d} differ)", c.name(), c.pairs),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The same, as JSON: `[{"table":"default","pairs":N,"differ":N},...]`.
pub fn coverage_json(coverage: &[Coverage]) -> serde_json::Value {
    coverage
        .iter()
        .map(|c| json!({"table": c.name(), "pairs": c.pairs, "differ": c.differ}))
        .collect()
}

#[cfg(test)]
mod tests {
    use local_sa_core::path_engine::{Difference, PairCheck, Table};

    use super::*;

    fn differing(n: usize, table: Table) -> Checked {
        let m = |i: usize| Mismatch {
            pair: PairCheck {
                source: i as u64,
                dest: 1,
                table,
            },
            lids: (1, 2),
            difference: Difference {
                field: "sl",
                ours: "0".into(),
                theirs: "1".into(),
            },
            varies: true,
        };
        Checked {
            pairs: n,
            mismatches: (0..n).map(m).collect(),
            ..Checked::default()
        }
    }

    #[test]
    fn checks_added_again_and_again_keep_a_bounded_number_of_differences_and_every_kind() {
        let mut c = Checked::default();
        for _ in 0..10 {
            c.add(differing(1000, Table::Default));
        }
        c.add(differing(3, Table::Partition(0x8001)));
        assert_eq!(c.pairs, 10_003, "every pair counted");
        assert_eq!(c.mismatches.len(), KEPT_DIFFERENCES + 1);
        assert!(
            (c.mismatches.iter()).any(|m| m.pair.table == Table::Partition(0x8001)),
            "the partition's kind kept"
        );
    }
}
