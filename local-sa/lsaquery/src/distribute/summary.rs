//! What a distribution did: counts, failures, the snapshot it leaves for
//! the next `--delta`, and its exit status.

use std::fmt::Write as _;
use std::time::Duration;

use mad_codec::Gid;
use serde::Serialize;

use local_sa_distributor::fill::outcome::{NodeOutcome, NodeReport};
use local_sa_distributor::fill::tally::{Computed, QosOutcome, Tally};
use local_sa_distributor::sent_tables::SentTables;

use crate::json::{self, Fixed, JSON_SCHEMA};
use crate::stop::Stop;

pub(super) struct FillSummary {
    nodes: Vec<NodeReport>,
    tally: Tally,
    probed: usize,
    elapsed: Duration,
    master_lid: u16,
    /// Every record the nodes hold, for `--snapshot`.
    pub(super) snapshot: SentTables,
}

impl FillSummary {
    pub(super) fn new(
        (mut nodes, tally): (Vec<NodeReport>, Tally),
        probed: usize,
        elapsed: Duration,
        master_lid: u16,
    ) -> Self {
        let mut snapshot = SentTables::default();
        for n in &mut nodes {
            let held = std::mem::take(&mut n.holds);
            snapshot.default.extend(held.default);
            snapshot.partitions.extend(held.partitions);
        }
        Self {
            nodes,
            tally,
            probed,
            elapsed,
            master_lid,
            snapshot,
        }
    }

    /// Each node's GID and whether it got everything it needed (or
    /// needed nothing).
    pub(super) fn ends(&self) -> impl Iterator<Item = (Gid, bool)> + '_ {
        self.nodes.iter().map(|n| (n.gid, n.outcome.done))
    }

    fn count(&self, which: impl Fn(&NodeReport) -> bool) -> usize {
        self.nodes.iter().filter(|n| which(n)).count()
    }

    fn sum(&self, field: impl Fn(&NodeOutcome) -> u64) -> u64 {
        self.nodes.iter().map(|n| field(&n.outcome)).sum()
    }

    pub(super) fn print(&self, json: bool) -> Result<(), Stop> {
        if json {
            outln!("{}", self.json())
        } else {
            out!("{}", self.text())
        }
    }

    fn text(&self) -> String {
        let filled = self.count(NodeReport::took_changes);
        let unchanged = self.count(|n| n.outcome.unchanged && n.outcome.done);
        let failed = self.count(|n| n.failure.is_some());
        let t = &self.tally;
        let mut out = format!(
            "{}{} local-sa nodes among {} ports probed: {filled} filled, {unchanged} unchanged, {failed} failed, in {:.3} s\n",
            t.shard.map_or_else(String::new, |s| format!("shard {s}: ")),
            self.nodes.len(),
            self.probed,
            self.elapsed.as_secs_f64(),
        );
        let _ = writeln!(
            out,
            "PathRecords: {} stored, {} deleted, in {} RMPP transfers ({} retries)",
            self.sum(|o| o.stored),
            self.sum(|o| o.deleted),
            t.transfers,
            t.retried
        );
        if t.partitions_known {
            let _ = writeln!(
                out,
                "partition tables: {} taken whole; {} PathRecords stored, {} deleted",
                self.sum(|o| o.partition_tables),
                self.sum(|o| o.partition_stored),
                self.sum(|o| o.partition_deleted)
            );
        } else {
            out.push_str("partition tables: not distributed\n");
        }
        match &t.qos {
            QosOutcome::NotAsked => {}
            QosOutcome::Sent(keys) => {
                let _ = writeln!(
                    out,
                    "QoS tables ({keys} ServiceIDs and QoS classes on each P_Key): {} taken, {} PathRecords stored{}",
                    self.sum(|o| o.qos_tables),
                    self.sum(|o| o.qos_stored),
                    match self.count(|n| n.outcome.qos_refused) {
                        0 => String::new(),
                        k => format!(" ({k} nodes do not take them and ask their own)"),
                    }
                );
            }
            QosOutcome::NotSent(why) => {
                let _ = writeln!(out, "QoS tables: not distributed ({why})");
            }
        }
        if let Some(c) = &t.computed {
            c.text(&mut out, t);
        }
        match t.names {
            Some((adapters, entries)) => {
                let _ = writeln!(
                    out,
                    "names: {adapters} adapters' NodeRecords and {entries} directory entries, {} tables taken{}",
                    t.names_pushed,
                    match self.count(|n| n.outcome.names_refused) {
                        0 => String::new(),
                        k => format!(" ({k} nodes do not take names loads and fetch their own)"),
                    }
                );
            }
            None => out.push_str("names: not distributed\n"),
        }
        let _ = write!(
            out,
            "master SA at LID {}: {} whole tables, {} per-destination queries, {} PathRecords ({} bytes)",
            self.master_lid,
            t.tables,
            t.per_destination,
            t.path_records,
            t.path_records * 64
        );
        out.push_str(if t.cut {
            " (its multi-MAD answers arrive cut: no RMPP on this transport)\n"
        } else {
            "\n"
        });
        for n in &self.nodes {
            if let Some(line) = n.failure_line() {
                let _ = writeln!(out, "failed: {line}");
            }
        }
        out
    }

    fn json(&self) -> String {
        let t = &self.tally;
        json::line(&DistributionJson {
            schema: JSON_SCHEMA,
            master_lid: self.master_lid,
            seconds: Fixed(self.elapsed.as_secs_f64()),
            probed: self.probed,
            nodes: self.nodes.len(),
            filled: self.count(NodeReport::took_changes),
            unchanged: self.count(|n| n.outcome.done && n.outcome.unchanged),
            failed: self.count(|n| n.failure.is_some()),
            stored: self.sum(|o| o.stored),
            deleted: self.sum(|o| o.deleted),
            partition_tables: self.sum(|o| o.partition_tables),
            partition_stored: self.sum(|o| o.partition_stored),
            partition_deleted: self.sum(|o| o.partition_deleted),
            qos_tables: self.sum(|o| o.qos_tables),
            qos_stored: self.sum(|o| o.qos_stored),
            qos_refused: self.count(|n| n.outcome.qos_refused),
            transfers: t.transfers,
            retries: t.retried,
            master_tables: t.tables,
            master_per_destination: t.per_destination,
            master_path_records: t.path_records,
            cut: t.cut,
            names_tables_taken: t.names_pushed,
            names_refused: self.count(|n| n.outcome.names_refused),
            compute: t.computed.as_ref().map(Computed::json),
            shard: t.shard.map(|s| s.to_string()),
            failures: self
                .nodes
                .iter()
                .filter_map(|n| {
                    n.failure.as_deref().map(|error| NodeFailureJson {
                        lid: n.lid,
                        gid: n.gid.to_string(),
                        error,
                    })
                })
                .collect(),
        })
    }

    /// Exit status: 0 when every node got what it needed; 1 when some did
    /// not; 4 when no port runs local-sa.
    pub(super) fn exit(&self) -> Result<(), Stop> {
        if self.nodes.is_empty() {
            return Err(Stop::new(
                4,
                format!(
                    "none of the {} ports probed answered as an SA (is local-sa running on them?)",
                    self.probed
                ),
            ));
        }
        let failed = self.count(|n| n.failure.is_some());
        if failed > 0 {
            return Err(Stop::new(
                1,
                format!(
                    "{failed} of {} local-sa nodes were not filled",
                    self.nodes.len()
                ),
            ));
        }
        Ok(())
    }
}

/// `--distribute --json`.
#[derive(Serialize)]
struct DistributionJson<'a> {
    schema: u32,
    master_lid: u16,
    seconds: Fixed<6>,
    probed: usize,
    nodes: usize,
    filled: usize,
    unchanged: usize,
    failed: usize,
    stored: u64,
    deleted: u64,
    partition_tables: u64,
    partition_stored: u64,
    partition_deleted: u64,
    qos_tables: u64,
    qos_stored: u64,
    qos_refused: usize,
    transfers: u64,
    retries: u64,
    master_tables: u64,
    master_per_destination: u64,
    master_path_records: u64,
    cut: bool,
    names_tables_taken: u64,
    names_refused: usize,
    compute: Option<serde_json::Value>,
    shard: Option<String>,
    failures: Vec<NodeFailureJson<'a>>,
}

/// A node `--distribute` could not fill.
#[derive(Serialize)]
struct NodeFailureJson<'a> {
    lid: u16,
    gid: String,
    error: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(lid: u16, outcome: NodeOutcome) -> NodeReport {
        NodeReport {
            lid,
            gid: Gid::new(Gid::DEFAULT_PREFIX, u64::from(lid)),
            outcome,
            failure: None,
            holds: SentTables::default(),
        }
    }

    #[test]
    fn the_qos_tables_taken_refused_or_not_sent_are_told() {
        let took = NodeOutcome {
            done: true,
            qos_tables: 4,
            qos_stored: 100,
            ..NodeOutcome::default()
        };
        let refused = NodeOutcome {
            done: true,
            qos_refused: true,
            ..NodeOutcome::default()
        };
        let tally = Tally {
            qos: QosOutcome::Sent(2),
            ..Tally::default()
        };
        let s = FillSummary::new(
            (vec![node(3, took), node(4, refused)], tally),
            2,
            Duration::from_secs(1),
            1,
        );
        assert!(
            s.text().contains(
                "QoS tables (2 ServiceIDs and QoS classes on each P_Key): 4 taken, 100 PathRecords stored \
                 (1 nodes do not take them and ask their own)\n"
            ),
            "{}",
            s.text()
        );
        assert!(
            s.json()
                .contains("\"qos_tables\":4,\"qos_stored\":100,\"qos_refused\":1,")
        );
        assert!(
            s.exit().is_ok(),
            "a node that asks its own QoS entries is filled"
        );

        let tally = Tally {
            qos: QosOutcome::NotSent("the master applies no QoS"),
            ..Tally::default()
        };
        let s = FillSummary::new((vec![node(3, took)], tally), 1, Duration::ZERO, 1);
        assert!(
            s.text()
                .contains("QoS tables: not distributed (the master applies no QoS)\n")
        );
        let s = FillSummary::new(
            (vec![node(3, took)], Tally::default()),
            1,
            Duration::ZERO,
            1,
        );
        assert!(!s.text().contains("QoS tables"), "not asked, not told");
    }
}
