//! What the watch tells: a line (or, with --json, an object) per event —
//! what it read, what changed, what it checked, which nodes received
//! what — and counters for all of it, in Prometheus' text format for
//! `--metrics-file`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::computed::{Served, Untrusted};
use crate::fill::outcome::Pushed;

/// One event: a change the watch looked into.
#[derive(Debug, Default)]
pub struct EventReport {
    /// Its number, from 1.
    pub number: u64,
    /// What woke the watch.
    pub cause: String,
    /// What reading the description cost the master, every read of the
    /// event together, and how many reads.
    pub read: Served,
    /// Reads of the description.
    pub reads: u32,
    /// Whether the description, or OpenSM's files, differed from the
    /// last ones (or the master's answers from the nodes' tables).
    pub description_changed: bool,
    /// What changed in OpenSM's files, a line each.
    pub config_changes: Vec<String>,
    /// Ports now running local-sa that were not kept before, and kept
    /// nodes gone from the fabric.
    pub new_nodes: usize,
    /// Kept nodes gone from the fabric.
    pub gone_nodes: usize,
    /// Nodes whose tables changed (or whose holding was not known).
    pub changed_nodes: usize,
    /// Pairs checked against the master, those that differed, and the
    /// PathRecords the master gave for the check.
    pub checked: usize,
    /// Pairs that differed at the last check.
    pub differed: usize,
    /// PathRecords the master gave for the checks.
    pub check_records: u64,
    /// Why the pushed tables came from the master, if they did.
    pub fallback: Option<Untrusted>,
    /// What the nodes took.
    pub pushed: Pushed,
    /// Each node that took changes: LID, records stored, records removed.
    pub nodes: Vec<(u16, u64, u64)>,
    /// What failed, a line each.
    pub failures: Vec<String>,
    /// How long the event took.
    pub took: Duration,
}

impl EventReport {
    /// The event in a line, and a line per node that took changes (at
    /// most 8) and per failure.
    pub fn text(&self) -> String {
        let mut out = format!(
            "event {} ({}): read {} description records in {} queries ({} read{})",
            self.number,
            self.cause,
            self.read.records,
            self.read.queries,
            self.reads,
            if self.reads == 1 { "" } else { "s" }
        );
        for c in &self.config_changes {
            let _ = write!(out, "; OpenSM's configuration: {c}");
        }
        if !self.description_changed {
            out.push_str("; nothing changed");
            if self.checked > 0 {
                let _ = write!(
                    out,
                    " (checked {} pairs against the master: {} differ)",
                    self.checked, self.differed
                );
            }
        } else {
            let _ = write!(
                out,
                "; {} nodes' tables changed ({} new nodes, {} gone)",
                self.changed_nodes, self.new_nodes, self.gone_nodes
            );
            if self.checked > 0 {
                let _ = write!(
                    out,
                    "; checked {} changed pairs against the master: {} differ",
                    self.checked, self.differed
                );
            }
            if let Some(why) = &self.fallback {
                let _ = write!(out, "; tables from the master ({why})");
            }
            let p = &self.pushed;
            let _ = write!(
                out,
                "; pushed to {} nodes: {} PathRecords set, {} deleted, in {} transfers; {} failed",
                p.nodes, p.stored, p.deleted, p.transfers, p.failed
            );
        }
        let _ = writeln!(out, "; {:.3} s", self.took.as_secs_f64());
        const SHOWN: usize = 8;
        for (lid, stored, deleted) in self.nodes.iter().take(SHOWN) {
            let _ = writeln!(out, "  LID {lid}: {stored} set, {deleted} deleted");
        }
        if self.nodes.len() > SHOWN {
            let _ = writeln!(out, "  ... and {} more nodes", self.nodes.len() - SHOWN);
        }
        for f in &self.failures {
            let _ = writeln!(out, "  failed: {f}");
        }
        out
    }

    /// The event as one JSON object, of JSON schema version `schema`.
    pub fn json(&self, schema: u32) -> String {
        let p = &self.pushed;
        json!({
            "schema": schema,
            "event": self.number,
            "cause": self.cause,
            "seconds": self.took.as_secs_f64(),
            "read": {"queries": self.read.queries, "records": self.read.records, "bytes": self.read.bytes, "reads": self.reads},
            "changed": self.description_changed,
            "opensm_config_changes": self.config_changes,
            "new_nodes": self.new_nodes,
            "gone_nodes": self.gone_nodes,
            "changed_nodes": self.changed_nodes,
            "check": {"pairs": self.checked, "differ": self.differed, "master_path_records": self.check_records},
            "from_master": self.fallback.as_ref().map(ToString::to_string),
            "pushed": {"nodes": p.nodes, "failed": p.failed, "stored": p.stored, "deleted": p.deleted,
                       "transfers": p.transfers, "master_path_records": p.master_path_records},
            "nodes": self.nodes.iter().map(|(lid, stored, deleted)| json!({
                "lid": lid, "stored": stored, "deleted": deleted
            })).collect::<Vec<_>>(),
            "failures": self.failures,
        })
        .to_string()
    }
}

/// Declares the watch's counters with their kinds and meanings, so that
/// the metrics file and the code say the same.
macro_rules! watch_counters {
    ( $( $(#[doc = $doc:literal])+ $name:ident : $kind:literal, )* ) => {
        /// The watch's counters since it started, and its gauges.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct WatchCounters {
            $( $(#[doc = $doc])+ pub $name: u64, )*
        }

        impl WatchCounters {
            /// Every counter in Prometheus' text format, after the role
            /// the watch has now.
            pub fn prometheus(&self, role: WatchRole) -> String {
                let mut out = role.prometheus();
                $(
                    // Prometheus' convention: a counter's name ends in _total.
                    let suffix = if $kind == "counter" { "_total" } else { "" };
                    let name = concat!("lsaquery_watch_", stringify!($name));
                    let help = concat!($($doc),+).split_whitespace().collect::<Vec<_>>().join(" ");
                    let _ = writeln!(out, "# HELP {name}{suffix} {help}");
                    let _ = writeln!(out, "# TYPE {name}{suffix} {}", $kind);
                    let _ = writeln!(out, "{name}{suffix} {}", self.$name);
                )*
                out
            }
        }
    };
}

watch_counters! {
    /// Events looked into (notices settled, intervals, nodes back).
    events: "counter",
    /// Events whose description had not changed.
    quiet_events: "counter",
    /// Notices heard (traps 64, 65, 128).
    notices: "counter",
    /// Polls of the master SM's activity (its SMInfoRecord's ActCount).
    activity_polls: "counter",
    /// Heavy sweeps those polls saw that no notice had announced: each
    /// looked into as a notice.
    sweeps_seen: "counter",
    /// Description records the master served for the watch's re-reads.
    description_records: "counter",
    /// Queries those re-reads took.
    description_queries: "counter",
    /// Changed pairs checked against the master.
    check_pairs: "counter",
    /// Checked pairs whose computed records differed from the master's.
    check_differences: "counter",
    /// PathRecords the master gave for the checks.
    check_path_records: "counter",
    /// PathRecords the master gave for tables the engine could not prove.
    master_path_records: "counter",
    /// Node pushes whose tables came from the master.
    fallback_nodes: "counter",
    /// Node pushes (a node that took changes at an event).
    nodes_pushed: "counter",
    /// PathRecords the nodes stored.
    records_stored: "counter",
    /// PathRecords the nodes removed.
    records_deleted: "counter",
    /// Loads and deletes sent.
    transfers: "counter",
    /// Node pushes that failed.
    push_failures: "counter",
    /// Lease renewals the nodes took.
    renewals: "counter",
    /// Lease renewals no answer came to.
    renewals_unanswered: "counter",
    /// Lease renewals refused (a local-sa that takes no lease).
    renewals_refused: "counter",
    /// Lease renewals refused because another distributor holds the
    /// node's lease: this watch was fenced off and stood by.
    renewals_fenced: "counter",
    /// Nodes kept now.
    nodes: "gauge",
    /// Nodes whose tables are not known now (their next push is whole).
    nodes_unknown: "gauge",
    /// How long the last event took, in milliseconds.
    last_event_ms: "gauge",
}

impl WatchCounters {
    /// Counts `event`.
    pub fn count(&mut self, event: &EventReport) {
        self.events += 1;
        self.quiet_events += u64::from(!event.description_changed);
        self.description_records += event.read.records;
        self.description_queries += event.read.queries;
        self.check_pairs += event.checked as u64;
        self.check_differences += event.differed as u64;
        self.check_path_records += event.check_records;
        let p = &event.pushed;
        self.master_path_records += p.master_path_records;
        if event.fallback.is_some() {
            self.fallback_nodes += p.nodes as u64;
        }
        self.nodes_pushed += p.nodes as u64;
        self.records_stored += p.stored;
        self.records_deleted += p.deleted;
        self.transfers += p.transfers;
        self.push_failures += p.failed as u64;
        self.last_event_ms = event.took.as_millis() as u64;
    }

    /// Writes the role and the counters to `path`, whole (beside, then
    /// renamed).
    pub fn write(&self, role: WatchRole, path: &Path) -> Result<(), NotWritten> {
        let partial = path.with_extension("partial");
        std::fs::write(&partial, self.prometheus(role))
            .and_then(|()| std::fs::rename(&partial, path))
            .map_err(|error| NotWritten {
                path: path.to_owned(),
                error,
            })
    }
}

/// The metrics file could not be written.
#[derive(Debug)]
pub struct NotWritten {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why.
    pub error: std::io::Error,
}

impl std::fmt::Display for NotWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for NotWritten {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What a watch is now, among the watches of the same nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchRole {
    /// It fills and keeps the nodes.
    Active,
    /// Another watch is active; this one takes over if the nodes find
    /// that one silent.
    Standby,
    /// Another watch took over while this one was frozen or cut off; it
    /// stands by, and is said fenced until it is active again.
    Fenced,
}

impl WatchRole {
    /// Every role, in the order the metrics list them.
    pub const ALL: [Self; 3] = [Self::Active, Self::Standby, Self::Fenced];

    /// Its name, as the metrics and `--json` say it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Standby => "standby",
            Self::Fenced => "fenced",
        }
    }

    /// `lsaquery_watch_role{role="..."}`: 1 for this role, 0 for the
    /// others, so that an alert can sum the active watches of a fabric.
    fn prometheus(self) -> String {
        let mut out = String::from(
            "# HELP lsaquery_watch_role What this watch is now: 1 for its role, 0 for the others \
             (active: it fills and keeps the nodes; standby: another watch is active; fenced: another \
             took over while this one was frozen or cut off, and this one stands by).\n\
             # TYPE lsaquery_watch_role gauge\n",
        );
        for role in Self::ALL {
            let _ = writeln!(
                out,
                "lsaquery_watch_role{{role=\"{}\"}} {}",
                role.name(),
                u8::from(role == self)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_told_in_a_line_and_counted() {
        let event = EventReport {
            number: 2,
            cause: "trap 128 from LID 7".into(),
            read: Served {
                queries: 10,
                records: 120,
                bytes: 9_000,
            },
            reads: 1,
            description_changed: true,
            changed_nodes: 3,
            checked: 5,
            pushed: Pushed {
                nodes: 3,
                stored: 12,
                deleted: 1,
                transfers: 4,
                ..Pushed::default()
            },
            nodes: vec![(5, 10, 1), (9, 2, 0)],
            took: Duration::from_millis(250),
            ..EventReport::default()
        };
        assert_eq!(
            event.text(),
            "event 2 (trap 128 from LID 7): read 120 description records in 10 queries (1 read); \
             3 nodes' tables changed (0 new nodes, 0 gone); checked 5 changed pairs against the master: \
             0 differ; pushed to 3 nodes: 12 PathRecords set, 1 deleted, in 4 transfers; 0 failed; 0.250 s\n\
             \x20 LID 5: 10 set, 1 deleted\n\
             \x20 LID 9: 2 set, 0 deleted\n"
        );
        let v: serde_json::Value = serde_json::from_str(&event.json(1)).unwrap();
        assert_eq!(v["pushed"]["stored"], 12);
        assert_eq!(v["nodes"][0]["lid"], 5);
        assert_eq!(v["from_master"], serde_json::Value::Null);
        let mut c = WatchCounters::default();
        c.count(&event);
        c.count(&EventReport::default());
        let text = c.prometheus(WatchRole::Fenced);
        assert!(text.contains(
            "lsaquery_watch_role{role=\"active\"} 0\n\
             lsaquery_watch_role{role=\"standby\"} 0\n\
             lsaquery_watch_role{role=\"fenced\"} 1\n"
        ));
        assert!(text.contains(
            "# TYPE lsaquery_watch_events_total counter\nlsaquery_watch_events_total 2\n"
        ));
        assert!(text.contains("lsaquery_watch_quiet_events_total 1\n"));
        assert!(text.contains("lsaquery_watch_records_stored_total 12\n"));
        assert!(text.contains("# TYPE lsaquery_watch_nodes gauge\n"));
    }
}
