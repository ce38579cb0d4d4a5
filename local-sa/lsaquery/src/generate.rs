//! `lsaquery --generate WHAT`: the manual page and the shell completions,
//! written from the option definitions (for packaging).

use clap::CommandFactory as _;
use clap_complete::Shell;
use local_sa_cli::{man_section, man_sections};

use crate::cli::Cli;
use crate::stop::Stop;

/// Writes what `--generate what` asks for to standard output.
pub(crate) fn run(what: &str) -> Result<(), Stop> {
    let text = generate(what)?;
    crate::stdout::write(&text)
}

/// The text `--generate what` writes.
fn generate(what: &str) -> Result<String, Stop> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    if what == "man" {
        let after_help = command
            .get_after_help()
            .map(ToString::to_string)
            .unwrap_or_default();
        let version = command.get_version().unwrap_or_default().to_owned();
        let man = clap_mangen::Man::new(command)
            .section("8")
            .source(format!("local-sa {version}"))
            .manual("local-sa");
        // Writing to a Vec cannot fail.
        let _ = man.render_title(&mut out);
        let _ = man.render_name_section(&mut out);
        let _ = man.render_synopsis_section(&mut out);
        let _ = man.render_description_section(&mut out);
        let _ = man.render_options_section(&mut out);
        let mut page = String::from_utf8_lossy(&out).into_owned();
        page.push_str(&man_sections(&after_help));
        page.push_str(&man_section(
            "SEE ALSO",
            "local-sa(8), saquery(8), ib_acme(1), opensm(8)",
        ));
        return Ok(page);
    }
    let shell: Shell = what
        .parse()
        .map_err(|_| Stop::new(2, format!("cannot generate {what:?}")))?;
    clap_complete::generate(shell, &mut command, "lsaquery", &mut out);
    Ok(String::from_utf8_lossy(&out).into_owned())
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
    fn completions_know_the_options() {
        for shell in ["bash", "zsh", "fish"] {
            assert!(generate(shell).unwrap().contains("sgid-to-dgid"), "{shell}");
        }
    }
}
