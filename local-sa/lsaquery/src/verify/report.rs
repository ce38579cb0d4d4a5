//! What `--verify` found, part by part: a verdict, a one-line reason, the
//! next command to run, and the details (each difference with both
//! sides); printed for a person or as one JSON object.

use std::fmt::Write as _;

use serde::Serialize;

use crate::json::{self, JSON_SCHEMA};

/// Differences listed in the text per part (all of them go in the JSON).
const SHOWN_DETAILS: usize = 20;

/// How one part came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Everything checked was equal (or, for health, as it should be).
    Ok,
    /// Something differs: the details say what.
    Different,
    /// The part could not be checked: the reason says why.
    NotChecked,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Different => "DIFFERENT",
            Self::NotChecked => "NOT CHECKED",
        }
    }
}

/// One part of the check.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(crate) name: &'static str,
    pub(crate) verdict: Verdict,
    /// One line: what was compared and how it came out.
    pub(crate) reason: String,
    /// The command to run next, when there is one worth running.
    pub(crate) next: Option<String>,
    /// One line per difference or remark.
    pub(crate) details: Vec<String>,
}

impl Part {
    pub(crate) fn new(name: &'static str, verdict: Verdict, reason: impl Into<String>) -> Self {
        Self {
            name,
            verdict,
            reason: reason.into(),
            next: None,
            details: Vec::new(),
        }
    }

    pub(crate) fn not_checked(name: &'static str, reason: impl Into<String>) -> Self {
        Self::new(name, Verdict::NotChecked, reason)
    }

    pub(crate) fn next(mut self, command: impl Into<String>) -> Self {
        self.next = Some(command.into());
        self
    }
}

/// Every part, in the order they were checked.
#[derive(Debug, Default)]
pub(crate) struct VerifyReport {
    pub(crate) parts: Vec<Part>,
}

impl VerifyReport {
    /// 0 when every part checked is equal and the paths were checked; 1
    /// when something differs; 5 when nothing differs but the paths could
    /// not be checked (nothing to vouch for).
    pub(crate) fn exit_code(&self) -> u8 {
        if self.parts.iter().any(|p| p.verdict == Verdict::Different) {
            1
        } else if self
            .parts
            .iter()
            .any(|p| p.name == "paths" && p.verdict == Verdict::Ok)
        {
            0
        } else {
            5
        }
    }

    /// The summary a person reads: one line per part, its details
    /// indented under it, the next command last.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            let _ = writeln!(
                out,
                "{:<14} {:<12} {}",
                p.name,
                p.verdict.as_str(),
                p.reason
            );
            for d in p.details.iter().take(SHOWN_DETAILS) {
                let _ = writeln!(out, "{:<14} {:<12} {d}", "", "");
            }
            if p.details.len() > SHOWN_DETAILS {
                let _ = writeln!(
                    out,
                    "{:<14} {:<12} ... and {} more (--json lists every one)",
                    "",
                    "",
                    p.details.len() - SHOWN_DETAILS
                );
            }
            if let Some(next) = &p.next {
                let _ = writeln!(out, "{:<14} {:<12} next: {next}", "", "");
            }
        }
        let verdict = match self.exit_code() {
            0 => "local-sa answers as the master does, for everything checked",
            1 => "local-sa differs from the master: see DIFFERENT above",
            _ => "nothing was found to differ, but the paths could not be checked",
        };
        let _ = writeln!(out, "{verdict}");
        out
    }

    /// One JSON object (docs/json.md): the parts with every detail.
    pub(crate) fn json(&self) -> String {
        json::line(&ReportJson {
            schema: JSON_SCHEMA,
            exit_status: self.exit_code(),
            parts: self
                .parts
                .iter()
                .map(|p| PartJson {
                    part: p.name,
                    verdict: p.verdict.as_str(),
                    reason: &p.reason,
                    next: p.next.as_deref(),
                    details: &p.details,
                })
                .collect(),
        })
    }
}

/// `--verify --json`.
#[derive(Serialize)]
struct ReportJson<'a> {
    schema: u32,
    exit_status: u8,
    parts: Vec<PartJson<'a>>,
}

/// One part of `--verify --json`.
#[derive(Serialize)]
struct PartJson<'a> {
    part: &'static str,
    verdict: &'static str,
    reason: &'a str,
    next: Option<&'a str>,
    details: &'a [String],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(verdicts: &[(&'static str, Verdict)]) -> VerifyReport {
        VerifyReport {
            parts: verdicts
                .iter()
                .map(|(n, v)| Part::new(n, *v, "why"))
                .collect(),
        }
    }

    #[test]
    fn exit_status_is_zero_only_when_the_paths_were_checked_and_nothing_differs() {
        use Verdict::*;
        assert_eq!(
            report(&[("paths", Ok), ("doors", NotChecked)]).exit_code(),
            0
        );
        assert_eq!(
            report(&[("paths", Ok), ("health", Different)]).exit_code(),
            1
        );
        assert_eq!(report(&[("paths", Different)]).exit_code(), 1);
        assert_eq!(
            report(&[("paths", NotChecked), ("doors", Ok)]).exit_code(),
            5
        );
    }

    #[test]
    fn text_shows_at_most_twenty_details_and_says_how_many_more() {
        let mut part = Part::new("paths", Verdict::Different, "3 of 30 differ").next("lsaquery -p");
        part.details = (0..25).map(|i| format!("difference {i}")).collect();
        let text = VerifyReport { parts: vec![part] }.text();
        assert!(text.starts_with("paths          DIFFERENT    3 of 30 differ\n"));
        assert!(text.contains("difference 19\n"));
        assert!(!text.contains("difference 20\n"));
        assert!(text.contains("... and 5 more"));
        assert!(text.contains("next: lsaquery -p\n"));
        assert!(text.ends_with("local-sa differs from the master: see DIFFERENT above\n"));
    }

    #[test]
    fn json_carries_every_detail_and_the_exit_status() {
        let mut part = Part::not_checked("doors", "no \"socket\"");
        part.details = vec!["a".into(), "b".into()];
        let json = VerifyReport { parts: vec![part] }.json();
        assert_eq!(
            json,
            format!(
                "{{\"schema\":{JSON_SCHEMA},\"exit_status\":5,\"parts\":[{{\"part\":\"doors\",\"verdict\":\"NOT CHECKED\",\
                 \"reason\":\"no \\\"socket\\\"\",\"next\":null,\"details\":[\"a\",\"b\"]}}]}}"
            )
        );
    }
}
