//! `local-sa --check-config`: the settings in effect, written as a config
//! file (which reads back to the same settings), each with where it came
//! from.

use std::ffi::OsString;
use std::fmt::Write as _;

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory as _};

use super::config_file::settable;
use super::{Options, OptionsError};

/// The column the `# source` notes start at.
const NOTE_COLUMN: usize = 40;

/// The settings `args` (a command line) give, the config file's included,
/// as config-file text.
pub(crate) fn effective_settings<I, T>(args: I) -> Result<String, OptionsError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let sources = Options::sources(args)?;
    let command = Options::command();
    let matches = command
        .clone()
        .try_get_matches_from(&sources.merged)
        .map_err(OptionsError::Clap)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# local-sa: the settings in effect, from {}, the command line and the defaults",
        sources.file.as_ref().map_or_else(
            || "no config file".to_owned(),
            |p| format!("config file {}", p.display())
        )
    );
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long().filter(|l| settable(l)) else {
            continue;
        };
        let id = arg.get_id().as_str();
        let raw: Vec<String> = matches
            .get_raw(id)
            .into_iter()
            .flatten()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if raw.is_empty() {
            let _ = writeln!(out, "# {long}: not set");
            continue;
        }
        if long == "sm-key" {
            // A secret: neither printed nor left for a shell history.
            let _ = writeln!(out, "# {long}: set (not shown)");
            continue;
        }
        let source = match matches.value_source(id) {
            Some(ValueSource::DefaultValue) => "default",
            _ => sources.origin(long),
        };
        let value = if matches!(arg.get_action(), ArgAction::Append) {
            let items: Vec<String> = raw.iter().map(|v| toml_value(v)).collect();
            format!("[{}]", items.join(", "))
        } else {
            toml_value(&raw[0])
        };
        let line = format!("{long} = {value}");
        let _ = writeln!(out, "{line:<NOTE_COLUMN$} # {source}");
    }
    Ok(out)
}

/// An option's value as TOML: a decimal number bare (TOML's integers
/// have no leading zeros: 0660 stays a string), anything else a quoted
/// string, which the config file reads the same way.
pub(super) fn toml_value(raw: &str) -> String {
    let decimal = raw.bytes().all(|b| b.is_ascii_digit()) && !raw.starts_with('0');
    if (decimal && raw.parse::<i64>().is_ok()) || raw == "0" {
        raw.to_owned()
    } else {
        toml::Value::String(raw.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn the_settings_in_effect_read_back_to_the_same_settings() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(
            b"refresh-interval = 300\nca = \"mlx5_0\"\nsm-key = \"0xbeef\"\n\
              acm-socket = [\"/run/a.sock\", \"/run/b \\\"quoted\\\".sock\"]\n",
        )
        .unwrap();
        let path = f.path().to_str().unwrap();
        let text = effective_settings(["local-sa", "-c", path, "--port", "2"]).unwrap();
        assert!(
            text.contains(&format!("from config file {path},")),
            "{text}"
        );
        let line = |key: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key}:"))
                })
                .unwrap_or_else(|| panic!("no {key} in\n{text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            line("refresh-interval"),
            "refresh-interval = 300 # config file"
        );
        assert_eq!(line("port"), "port = 2 # command line");
        assert_eq!(
            line("upstream-timeout"),
            "upstream-timeout = 1000 # default"
        );
        assert_eq!(line("api-mode"), "api-mode = 666 # default");
        assert_eq!(line("sm-key"), "# sm-key: set (not shown)");
        assert_eq!(line("host-name"), "# host-name: not set");
        assert!(!text.contains("beef"), "the SM_Key is not shown");

        // Written back as a file, the same settings (but the hidden key).
        let mut again = tempfile::NamedTempFile::new().unwrap();
        again.write_all(text.as_bytes()).unwrap();
        let reread = Options::load(["local-sa", "-c", again.path().to_str().unwrap()]).unwrap();
        let first = Options::load(["local-sa", "-c", path, "--port", "2"]).unwrap();
        let comparable = |o: Options| Options {
            config: None,
            sm_key: None,
            ..o
        };
        assert_eq!(
            format!("{:?}", comparable(reread)),
            format!("{:?}", comparable(first))
        );
    }

    #[test]
    fn values_are_written_as_toml() {
        assert_eq!(toml_value("300"), "300");
        assert_eq!(toml_value("0x10"), "\"0x10\"");
        assert_eq!(toml_value("666"), "666");
        assert_eq!(toml_value("0660"), "\"0660\"");
        assert_eq!(toml_value("0"), "0");
        assert_eq!(toml_value("/run/a b.sock"), "\"/run/a b.sock\"");
        assert_eq!(toml_value(""), "\"\"");
        assert_eq!(
            toml_value("99999999999999999999"),
            "\"99999999999999999999\""
        );
    }
}
