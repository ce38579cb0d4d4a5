//! A program's whole manual page and its shell completions, written from
//! its clap definition: the options as clap knows them, then the sections
//! `--help` prints after them.

use clap::Command;
use clap_complete::Shell;

use crate::manual::{man_section, man_sections};

/// The manual page of `command`: title, NAME, SYNOPSIS, DESCRIPTION and
/// OPTIONS from clap, the sections of `--help`'s epilogue (the long one:
/// `-h` ends with a pointer to it), and SEE ALSO.
pub fn manual_page(command: Command, section: &str, see_also: &str) -> String {
    let epilogue = command
        .get_after_long_help()
        .or_else(|| command.get_after_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let version = command.get_version().unwrap_or_default().to_owned();
    let man = clap_mangen::Man::new(command)
        .section(section)
        .source(format!("local-sa {version}"))
        .manual("local-sa");
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    let _ = man.render_options_section(&mut out);
    let mut page = String::from_utf8_lossy(&out).into_owned();
    page.push_str(&man_sections(&epilogue));
    page.push_str(&man_section("SEE ALSO", see_also));
    page
}

/// A shell's completion script for `command`, installed as `name`.
pub fn completions(shell: Shell, mut command: Command, name: &str) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Lines `-h` may take: one screen.
pub const SHORT_HELP_LINES: usize = 80;

/// What keeps `command`'s help from teaching: an option under no heading
/// (`--help` groups them by task), or `-h` longer than one screen. Each
/// program's tests ask for none.
pub fn help_problems(command: &Command) -> Vec<String> {
    let mut problems: Vec<String> = command
        .get_arguments()
        .filter(|a| !a.is_positional() && a.get_help_heading().is_none())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .map(|a| format!("--{} is under no heading", a.get_id()))
        .collect();
    let short = command.clone().render_help().to_string();
    let lines = short.lines().count();
    if lines > SHORT_HELP_LINES {
        problems.push(format!(
            "-h takes {lines} lines, more than {SHORT_HELP_LINES}"
        ));
    }
    problems
}
