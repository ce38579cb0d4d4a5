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
    /// Adds what another check of the same fabric found.
    pub fn add(&mut self, found: Self) {
        self.pairs += found.pairs;
        self.records += found.records;
        self.mismatches.extend(found.mismatches);
        self.uncomputable.extend(found.uncomputable);
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
