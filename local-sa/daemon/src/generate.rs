//! `local-sa --generate WHAT`: the manual pages, the sample config file,
//! the metrics' catalogue and the shell completions, written from the
//! option definitions and the code (for packaging and docs/metrics.md).

use std::fmt::Write as _;

use clap::{Command, CommandFactory as _};
use local_sa_cli::{Shell, completions, man_section, manual_page, metrics_catalogue, roff_line};

use crate::options::{GENERATE, Options, sample};

/// The text `--generate what` writes.
pub(crate) fn generate(what: &str) -> Result<String, String> {
    let command = Options::command();
    match what {
        "man" => Ok(man_page(command)),
        "config-man" => Ok(config_man_page(&command)),
        "config" => Ok(sample::render(&command)),
        "metrics" => Ok(metrics_catalogue(&crate::metrics::example())),
        shell => {
            let shell: Shell = shell
                .parse()
                .map_err(|_| format!("cannot generate {what:?}; one of {}", GENERATE.join(", ")))?;
            Ok(completions(shell, command, "local-sa"))
        }
    }
}

/// local-sa(8).
fn man_page(command: Command) -> String {
    manual_page(
        command,
        "8",
        "lsaquery(8), local-sa.toml(5), opensm(8), saquery(8), ibacm(8),\n\
         ib_acme(1), rdma_cm(7), systemd.socket(5)",
    )
}

/// local-sa.toml(5): the file, and every setting with its help and
/// default.
fn config_man_page(command: &Command) -> String {
    let version = command.get_version().unwrap_or_default();
    let mut out = format!(
        ".TH LOCAL\\-SA.TOML 5 \"\" \"local\\-sa {version}\" \"local\\-sa\"\n\
         .SH NAME\nlocal\\-sa.toml \\- local\\-sa's configuration file\n\
         .SH SYNOPSIS\n/etc/local\\-sa/local\\-sa.toml\n\
         .SH DESCRIPTION\n{}\n.SH SETTINGS\n",
        roff_line(
            &sample::ABOUT
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        )
    );
    for doc in sample::settings(command) {
        let _ = writeln!(
            out,
            ".TP\n\\fB{}\\fR = \\fI{}\\fR",
            roff_line(&doc.key),
            roff_line(&doc.example)
        );
        for (i, paragraph) in doc.help.iter().enumerate() {
            if i > 0 {
                out.push_str(".IP\n");
            }
            let _ = writeln!(out, "{}", roff_line(paragraph));
        }
        let default = match &doc.default {
            Some(d) => format!("Default: {d}."),
            None => "Not set by default.".to_owned(),
        };
        let _ = writeln!(out, ".IP\n{}", roff_line(&default));
    }
    out.push_str(&man_section(
        "EXAMPLE",
        "# /etc/local-sa/local-sa.toml\n\
         sm-key-file = \"/etc/opensm/opensm.conf\"\n\
         refresh-interval = 300\n\
         acm-socket = [\"/run/ibacm-unix.sock\", \"/run/ibacm.sock\"]\n\
         log-level = \"local_sa=debug,info\"",
    ));
    out.push_str(&man_section(
        "FILES",
        "/etc/local-sa/local-sa.toml   read at start and on SIGHUP",
    ));
    out.push_str(&man_section("SEE ALSO", "local-sa(8), lsaquery(8)"));
    out
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
            "DESCRIPTION",
            "OPTIONS",
            "\"CONFIG FILE\"",
            "SIGNALS",
            "\"EXIT STATUS\"",
            "FILES",
            "EXAMPLES",
            "\"SEE ALSO\"",
        ] {
            assert!(
                page.contains(&format!(".SH {section}\n")),
                "no {section}:\n{page}"
            );
        }
        for arg in Options::command().get_arguments() {
            if let Some(long) = arg.get_long() {
                let roff = long.replace('-', "\\-");
                assert!(page.contains(&format!("\\-\\-{roff}")), "no --{long}");
            }
        }
    }

    #[test]
    fn the_config_manual_has_every_setting_with_its_default() {
        let page = generate("config-man").unwrap();
        assert!(
            page.contains("\\fBrefresh\\-interval\\fR = \\fI600\\fR\n"),
            "{page}"
        );
        assert!(page.contains("Default: 600."), "{page}");
        assert!(page.contains("\\fBsm\\-key\\-file\\fR = "), "{page}");
        assert!(!page.contains("check\\-config\\fR"), "not a setting");
    }

    #[test]
    fn every_option_is_under_a_heading_and_dash_h_is_one_screen() {
        let problems = local_sa_cli::help_problems(&Options::command());
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// `LOCAL_SA_BLESS=1 cargo test -p local-sa docs_metrics_md` writes
    /// docs/metrics.md's part after the metrics change.
    #[test]
    fn docs_metrics_md_lists_every_metric_local_sa_serves() {
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
        let catalogue = generate("metrics").unwrap();
        local_sa_cli::generated_part_is_current(&page, "local-sa --generate metrics", &catalogue)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn completions_know_the_options() {
        for shell in ["bash", "zsh", "fish"] {
            let script = generate(shell).unwrap();
            assert!(script.contains("refresh-interval"), "{shell}");
        }
        assert!(generate("tcsh").unwrap_err().contains("man, config-man"));
    }
}
