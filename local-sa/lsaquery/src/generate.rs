//! `lsaquery --generate WHAT`: the manual page and the shell completions,
//! written from the option definitions (for packaging).

use clap::CommandFactory as _;
use local_sa_cli::{Shell, completions, manual_page};

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

    #[test]
    fn completions_know_the_options() {
        for shell in ["bash", "zsh", "fish"] {
            assert!(generate(shell).unwrap().contains("sgid-to-dgid"), "{shell}");
        }
    }
}
