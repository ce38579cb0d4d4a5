//! `lsaquery --generate WHAT`: the manual page, the watch's metrics'
//! catalogue and the shell completions, written from the option
//! definitions and the code (for packaging and docs/metrics.md).

use clap::CommandFactory as _;
use local_sa_cli::{Shell, completions, manual_page, metrics_catalogue};
use local_sa_distributor::watch::{WatchCounters, WatchRole};

use crate::cli::Cli;
use crate::stop::Stop;

/// Writes what `--generate what` asks for to standard output.
pub(crate) fn run(what: &str) -> Result<(), Stop> {
    let text = generate(what)?;
    crate::stdout::write(&text)
}

/// The text `--generate what` writes.
fn generate(what: &str) -> Result<String, Stop> {
    let command = Cli::command();
    if what == "man" {
        return Ok(manual_page(
            command,
            "8",
            "local-sa(8), saquery(8), ib_acme(1), opensm(8)",
        ));
    }
    if what == "metrics" {
        let exposition = WatchCounters::default().prometheus(WatchRole::Active);
        return Ok(metrics_catalogue(&exposition));
    }
    let shell: Shell = what
        .parse()
        .map_err(|_| Stop::new(2, format!("cannot generate {what:?}")))?;
    Ok(completions(shell, command, "lsaquery"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_has_every_option_and_the_written_sections() {
        let page = generate("man").unwrap();
        for section in [
            "NAME",
            "SYNOPSIS",
            "OPTIONS",
            "\"WHICH SA\"",
            "FILES",
            "\"EXIT STATUS\"",
            "EXAMPLES",
            "\"SEE ALSO\"",
        ] {
            assert!(page.contains(&format!(".SH {section}\n")), "no {section}");
        }
        for long in Cli::command().get_arguments().filter_map(|a| a.get_long()) {
            let roff = long.replace('-', "\\-");
            assert!(page.contains(&format!("\\-\\-{roff}")), "no --{long}");
        }
    }

    #[test]
    fn every_option_is_under_a_heading_and_dash_h_is_one_screen() {
        let problems = local_sa_cli::help_problems(&Cli::command());
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// `LOCAL_SA_BLESS=1 cargo test -p lsaquery docs_metrics_md` writes
    /// docs/metrics.md's part after the metrics change.
    #[test]
    fn docs_metrics_md_lists_every_metric_the_watch_writes() {
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
        let catalogue = generate("metrics").unwrap();
        local_sa_cli::generated_part_is_current(&page, "lsaquery --generate metrics", &catalogue)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn every_metric_the_suggested_alerts_name_is_in_the_catalogue() {
        let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");
        let doc = std::fs::read_to_string(doc_path).unwrap();
        let alerts = doc
            .split("```yaml")
            .nth(1)
            .and_then(|s| s.split("```").next())
            .expect("docs/metrics.md has its alerts as YAML");
        let named: Vec<&str> = alerts
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("local_sa_") || w.starts_with("lsaquery_watch_"))
            .collect();
        assert!(named.len() > 10, "{named:?}");
        for metric in named {
            assert!(doc.contains(&format!("| `{metric}` |")), "{metric}");
        }
    }

    #[test]
    fn completions_know_the_options() {
        for shell in ["bash", "zsh", "fish"] {
            assert!(generate(shell).unwrap().contains("sgid-to-dgid"), "{shell}");
        }
    }
}
