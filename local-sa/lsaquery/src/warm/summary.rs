//! What `--warm` prints when it is done: how many queries, how they were
//! answered, and where local-sa found the answers (its counters before
//! and after), as text or one JSON object.

use std::fmt::Write as _;
use std::time::Duration;

use local_sa_core::request::StatusReport;

use serde::Serialize;

use crate::json::{self, Fixed, JSON_SCHEMA};

/// A host that could not be warmed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unresolved {
    pub(crate) host: String,
    pub(crate) why: String,
}

/// How the queries were answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Answers {
    /// With a path.
    pub(crate) answered: u64,
    /// With none (the pair shares no partition, or no route).
    pub(crate) no_path: u64,
    /// Refused or left unanswered, by the status's name.
    pub(crate) failed: std::collections::BTreeMap<String, u64>,
}

/// Where local-sa found its answers: the differences of its counters
/// over the warm-up (the port's, so queries of other clients meanwhile
/// count too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sources {
    /// From its tables (the default table and the partition tables).
    pub(crate) tables: u64,
    /// From its QoS cache.
    pub(crate) qos_cache: u64,
    /// That went to the master.
    pub(crate) master: u64,
    /// Port pairs the QoS cache asked the master for.
    pub(crate) pairs_asked: u64,
    /// Whole tables at a key (every destination of this port) the QoS
    /// cache asked the master for.
    pub(crate) tables_asked: u64,
}

impl Sources {
    /// The difference between two STATUS reports.
    pub(crate) fn between(before: &StatusReport, after: &StatusReport) -> Self {
        let delta = |name: &str| {
            let n = |r: &StatusReport| r.get(name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            n(after).saturating_sub(n(before))
        };
        // A QoS cache hit counts as a hit too.
        let qos_cache = delta("qos_cache_hits");
        Self {
            tables: delta("hits").saturating_sub(qos_cache),
            qos_cache,
            master: delta("misses"),
            pairs_asked: delta("qos_cache_fetches"),
            tables_asked: delta("qos_cache_tables"),
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WarmSummary {
    pub(crate) hosts: usize,
    pub(crate) peers: usize,
    pub(crate) pkeys: Vec<u16>,
    /// ServiceIDs asked with, none included.
    pub(crate) service_ids: usize,
    pub(crate) queries: u64,
    pub(crate) answers: Answers,
    pub(crate) sources: Sources,
    pub(crate) unresolved: Vec<Unresolved>,
    pub(crate) took: Duration,
}

impl WarmSummary {
    /// Whether everything asked for was warmed.
    pub(crate) fn complete(&self) -> bool {
        self.unresolved.is_empty() && self.answers.failed.is_empty()
    }

    /// A few lines a person reads.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let pkeys: Vec<String> = self.pkeys.iter().map(|p| format!("{p:#06x}")).collect();
        let _ = writeln!(
            out,
            "warmed {} of {} hosts: {} peers × {} P_Keys ({}) × {} ServiceIDs (none included) = {} queries in {:.1} s",
            self.hosts - self.unresolved.len(),
            self.hosts,
            self.peers,
            self.pkeys.len(),
            pkeys.join(", "),
            self.service_ids,
            self.queries,
            self.took.as_secs_f64()
        );
        let a = &self.answers;
        let _ = writeln!(
            out,
            "  answered     {} with a path, {} with none (no shared partition or route)",
            a.answered, a.no_path
        );
        if !a.failed.is_empty() {
            let failed: Vec<String> = a.failed.iter().map(|(s, n)| format!("{n} {s}")).collect();
            let _ = writeln!(out, "  failed       {}", failed.join(", "));
        }
        let s = &self.sources;
        let _ = writeln!(
            out,
            "  from         {} local-sa's tables, {} its QoS cache, {} the master ({} port pairs and {} whole \
             tables asked); the port's counters, other clients' queries included",
            s.tables, s.qos_cache, s.master, s.pairs_asked, s.tables_asked
        );
        for u in &self.unresolved {
            let _ = writeln!(out, "  not warmed   {}: {}", u.host, u.why);
        }
        out
    }

    /// One JSON object (docs/json.md).
    pub(crate) fn json(&self) -> String {
        let (a, s) = (&self.answers, &self.sources);
        json::line(&WarmJson {
            schema: JSON_SCHEMA,
            hosts: self.hosts,
            peers: self.peers,
            pkeys: self.pkeys.iter().map(|p| format!("{p:#06x}")).collect(),
            service_ids: self.service_ids,
            queries: self.queries,
            answered: a.answered,
            no_path: a.no_path,
            failed: &a.failed,
            from_tables: s.tables,
            from_qos_cache: s.qos_cache,
            from_master: s.master,
            pairs_asked: s.pairs_asked,
            tables_asked: s.tables_asked,
            unresolved: self
                .unresolved
                .iter()
                .map(|u| UnresolvedJson {
                    host: &u.host,
                    reason: &u.why,
                })
                .collect(),
            seconds: Fixed(self.took.as_secs_f64()),
        })
    }
}

/// `--warm --json`.
#[derive(Serialize)]
struct WarmJson<'a> {
    schema: u32,
    hosts: usize,
    peers: usize,
    pkeys: Vec<String>,
    service_ids: usize,
    queries: u64,
    answered: u64,
    no_path: u64,
    failed: &'a std::collections::BTreeMap<String, u64>,
    from_tables: u64,
    from_qos_cache: u64,
    from_master: u64,
    pairs_asked: u64,
    tables_asked: u64,
    unresolved: Vec<UnresolvedJson<'a>>,
    seconds: Fixed<3>,
}

/// A host `--warm` could not warm.
#[derive(Serialize)]
struct UnresolvedJson<'a> {
    host: &'a str,
    reason: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(pairs: &[(&str, &str)]) -> StatusReport {
        let text: String = pairs.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        StatusReport::from_text(&text)
    }

    fn summary() -> WarmSummary {
        WarmSummary {
            hosts: 3,
            peers: 2,
            pkeys: vec![0xFFFF, 0x8001],
            service_ids: 2,
            queries: 8,
            answers: Answers {
                answered: 6,
                no_path: 1,
                failed: [("BUSY".to_owned(), 1)].into(),
            },
            sources: Sources {
                tables: 4,
                qos_cache: 1,
                master: 3,
                pairs_asked: 2,
                tables_asked: 1,
            },
            unresolved: vec![Unresolved {
                host: "node9".into(),
                why: "EDESTADDR (the destination is not known)".into(),
            }],
            took: Duration::from_millis(1500),
        }
    }

    #[test]
    fn sources_are_the_counters_moved_with_qos_hits_apart() {
        let before = report(&[("hits", "10"), ("misses", "4"), ("qos_cache_hits", "2")]);
        let after = report(&[
            ("hits", "17"),
            ("misses", "6"),
            ("qos_cache_hits", "5"),
            ("qos_cache_fetches", "2"),
            ("qos_cache_tables", "1"),
        ]);
        assert_eq!(
            Sources::between(&before, &after),
            Sources {
                tables: 4,
                qos_cache: 3,
                master: 2,
                pairs_asked: 2,
                tables_asked: 1
            }
        );
    }

    #[test]
    fn the_text_says_what_was_warmed_from_where_and_what_was_not() {
        let s = summary();
        assert!(!s.complete());
        let text = s.text();
        assert!(
            text.starts_with(
                "warmed 2 of 3 hosts: 2 peers × 2 P_Keys (0xffff, 0x8001) × 2 ServiceIDs (none included) = 8 queries in 1.5 s\n"
            ),
            "{text}"
        );
        assert!(text.contains("  failed       1 BUSY\n"), "{text}");
        assert!(
            text.contains(
                "4 local-sa's tables, 1 its QoS cache, 3 the master (2 port pairs and 1 whole tables asked)"
            ),
            "{text}"
        );
        assert!(text.contains("  not warmed   node9: EDESTADDR"), "{text}");
    }

    #[test]
    fn the_json_has_every_count() {
        let json = summary().json();
        for part in [
            "\"pkeys\":[\"0xffff\",\"0x8001\"]",
            "\"failed\":{\"BUSY\":1}",
            "\"from_master\":3",
            "\"tables_asked\":1",
            "\"unresolved\":[{\"host\":\"node9\"",
            "\"seconds\":1.500}",
        ] {
            assert!(json.contains(part), "{part} in {json}");
        }
    }
}
