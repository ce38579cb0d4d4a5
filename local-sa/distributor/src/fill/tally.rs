//! What a distribution counts as it goes: what it asked of the master,
//! what it sent, what became of the tables at QoS keys and of `--compute`.

use std::fmt::Write as _;

use crate::computed::{Coverage, Prepared, Served, Untrusted, coverage_json, coverage_text};

/// What becomes of the tables at QoS keys, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum QosOutcome {
    /// None was asked for.
    #[default]
    NotAsked,
    /// They are sent, for this many keys per P_Key.
    Sent(usize),
    /// They are not sent, for this reason.
    NotSent(&'static str),
}

/// What was asked of the master and sent to the nodes.
#[derive(Debug, Default)]
pub struct Tally {
    /// Whole-table GetTables at the master.
    pub tables: u64,
    /// Per-destination GetTables at the master.
    pub per_destination: u64,
    /// PathRecords the master answered them with (its tables' paths).
    pub path_records: u64,
    /// The master's multi-MAD answers came cut (no RMPP on the transport).
    pub cut: bool,
    /// Loads and deletes sent (RMPP transfers).
    pub transfers: u64,
    /// Node attempts that failed and were tried again.
    pub retried: u64,
    /// The names tables from the master: adapters' NodeRecords and
    /// directory entries (none: not distributed).
    pub names: Option<(usize, usize)>,
    /// Names tables the nodes took.
    pub names_pushed: u64,
    /// The master told which partition tables the nodes keep.
    pub partitions_known: bool,
    /// What becomes of the tables at QoS keys.
    pub qos: QosOutcome,
    /// What `--compute` did, if it was asked.
    pub computed: Option<Computed>,
    /// This distributor's share of the nodes, if it has one.
    pub shard: Option<crate::shard::Shard>,
}

/// What `--compute` did.
#[derive(Debug, Default)]
pub struct Computed {
    /// Why no table was computed, if none was.
    pub not_used: Option<String>,
    /// Why the default tables (and so all) came from the master, if they
    /// did.
    pub refused: Option<Untrusted>,
    /// Reading the description, and the SLs and check, cost the master
    /// this.
    pub description: Served,
    /// The partition SLs and the sample cost the master this.
    pub check: Served,
    /// Pairs checked, and those that differed.
    pub pairs: usize,
    /// Pairs that differed.
    pub differences: usize,
    /// Of them, pairs the master answered otherwise each time it was
    /// asked (its answers vary: no computed table can equal them).
    pub varying: usize,
    /// What the check drew from each kind of table, and found.
    pub coverage: Vec<Coverage>,
    /// OpenSM's configuration the tables were computed with, if given.
    pub opensm: Option<String>,
    /// Ways through the forwarding tables that lead nowhere (their pairs
    /// get no path, as at the master), and the first of them.
    pub ways_nowhere: usize,
    /// The first of them.
    pub first_way_nowhere: Option<String>,
    /// Tables computed and sent, and their records.
    pub tables: u64,
    /// Their records.
    pub records: u64,
    /// Nodes that needed tables from the master beside the computed ones
    /// (at QoS keys, or partitions the check did not prove).
    pub from_master: u64,
    /// Why tables of some kind come from the master, if any do.
    pub from_master_because: Option<String>,
}

impl Computed {
    /// Nothing computed, because of `why`.
    pub fn not_used(why: String) -> Self {
        Self {
            not_used: Some(why),
            ..Self::default()
        }
    }

    /// The description and check of `c`.
    pub fn used(c: &Prepared) -> Self {
        Self {
            refused: c.trusted(local_sa_core::path_engine::Table::Default).err(),
            description: c.description,
            check: c.sample,
            pairs: c.checked.pairs,
            differences: c.checked.mismatches.len(),
            varying: c.checked.varying(),
            coverage: c.checked.coverage(),
            opensm: c.describe_config(),
            ways_nowhere: c.fabric.route_faults().1,
            first_way_nowhere: c.fabric.route_faults().0.first().map(ToString::to_string),
            ..Self::default()
        }
    }

    /// The summary's lines; `tally`'s counts of the master's tables say
    /// what a fallback to them cost.
    pub fn text(&self, out: &mut String, tally: &Tally) {
        let fallback = || {
            format!(
                "the fill fell back to the master's tables: it served {} whole tables and {} per-destination \
                 queries, {} PathRecords ({} bytes), the per-node cost --compute exists to avoid; \
                 --no-fallback refuses this instead",
                tally.tables,
                tally.per_destination,
                tally.path_records,
                tally.path_records * 64
            )
        };
        if let Some(why) = &self.not_used {
            let _ = writeln!(out, "computed: no ({why})\n  {}", fallback());
            return;
        }
        let d = self.description;
        let _ = writeln!(
            out,
            "computed: {} tables ({} PathRecords) from the fabric's description ({} records, {} bytes, in {} queries); \
             check: {} pairs, {} differ",
            self.tables, self.records, d.records, d.bytes, d.queries, self.pairs, self.differences
        );
        if self.varying > 0 {
            let _ = writeln!(
                out,
                "  {} of them the master answers otherwise each time it is asked: its answers vary from \
                 ask to ask (a routing engine that draws a path's SL at random, as DFSSSP does); equality \
                 with the master is not defined there, and those tables come from it",
                self.varying
            );
        }
        if let Some(config) = &self.opensm {
            let _ = writeln!(out, "  with OpenSM's configuration: {config}");
        }
        if !self.coverage.is_empty() {
            let _ = writeln!(out, "  drawn from: {}", coverage_text(&self.coverage));
        }
        if let Some(first) = &self.first_way_nowhere {
            let _ = writeln!(
                out,
                "  {} ways through the forwarding tables lead nowhere: their pairs have no path, as at the master \
                 (first: {first})",
                self.ways_nowhere
            );
        }
        if let Some(why) = &self.refused {
            let _ = writeln!(
                out,
                "  the check found a difference ({why}): every table came from the master\n  {}",
                fallback()
            );
        } else if self.from_master > 0 {
            let why = self
                .from_master_because
                .as_deref()
                .unwrap_or("tables at QoS keys, or of partitions the check did not prove");
            let _ = writeln!(
                out,
                "  {} nodes also got tables from the master: {why}",
                self.from_master
            );
        }
        let _ = writeln!(
            out,
            "  the master served {} records ({} bytes) for the description and the check, where the computed tables \
             would have cost it {} PathRecords ({} bytes)",
            d.records + self.check.records,
            d.bytes + self.check.bytes,
            self.records,
            self.records * 64
        );
    }

    /// The summary's `compute` object.
    pub fn json(&self) -> serde_json::Value {
        let served = |s: Served| serde_json::json!({"queries": s.queries, "records": s.records, "bytes": s.bytes});
        serde_json::json!({
            "used": self.not_used.is_none(),
            "not_used_because": self.not_used,
            "refused_because": self.refused.as_ref().map(ToString::to_string),
            "fell_back_to_master": self.not_used.is_some() || self.refused.is_some(),
            "description": served(self.description),
            "check": served(self.check),
            "pairs": self.pairs,
            "differences": self.differences,
            "varying": self.varying,
            "coverage": coverage_json(&self.coverage),
            "opensm_config": self.opensm,
            "ways_nowhere": self.ways_nowhere,
            "tables": self.tables,
            "records": self.records,
            "nodes_also_from_master": self.from_master,
            "from_master_because": self.from_master_because,
        })
    }
}
