//! The config file: TOML whose keys are the long options' names
//! (`refresh-interval = 300`, `sm-key-file = "/etc/local-sa/sm_key"`,
//! `acm-socket = ["/run/a.sock", "/run/b.sock"]`).
//!
//! Each setting becomes the command-line arguments it stands for, so that
//! clap's value parsers check the file's values exactly as they check the
//! command line's: one definition of every setting, its help, its default
//! and its checks. What this module adds is where a mistake is: every
//! error names the file, the line and column, and the key.

use std::ffi::OsString;
use std::ops::Range;
use std::path::{Path, PathBuf};

use clap::{ArgAction, Command};
use toml::{Spanned, Value};

use super::suggest;

/// Where the daemon looks for its config file when `--config` is not
/// given (a missing file there is no error: every setting has a default).
pub(crate) const DEFAULT_PATH: &str = "/etc/local-sa/local-sa.toml";

/// A line and column of a file, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    /// The line.
    pub(crate) line: usize,
    /// The column, in characters.
    pub(crate) column: usize,
}

impl Position {
    /// The position of byte `offset` of `text`.
    fn of(text: &str, offset: usize) -> Self {
        // The parser's spans fall on character boundaries.
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Self {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// A mistake in a config file.
#[derive(Debug)]
pub(crate) struct FileError {
    /// The file.
    pub(crate) path: PathBuf,
    /// Where in it.
    pub(crate) at: Position,
    /// The key it concerns, if any.
    pub(crate) key: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Position { line, column } = self.at;
        write!(f, "{}:{line}:{column}: ", self.path.display())?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// One setting of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileSetting {
    /// The long option it sets.
    pub(crate) name: String,
    /// Its values (several for a repeatable option given a list).
    pub(crate) values: Vec<String>,
    /// Where its value is.
    pub(crate) at: Position,
}

impl FileSetting {
    /// The command-line arguments it stands for.
    pub(crate) fn args(&self) -> impl Iterator<Item = OsString> + '_ {
        self.values
            .iter()
            .flat_map(|v| [format!("--{}", self.name).into(), v.into()])
    }
}

/// The long options a config file may set: all but these.
pub(crate) fn settable(name: &str) -> bool {
    !matches!(
        name,
        "config" | "check-config" | "generate" | "help" | "version"
    )
}

/// Reads the settings of config file `path` (with contents `text`), for
/// `command`'s options; in the file's order.
pub(crate) fn parse(
    path: &Path,
    text: &str,
    command: &Command,
) -> Result<Vec<FileSetting>, FileError> {
    let error = |span: Range<usize>, key: Option<&str>, message: String| FileError {
        path: path.to_owned(),
        at: Position::of(text, span.start),
        key: key.map(str::to_owned),
        message,
    };
    let table: std::collections::BTreeMap<Spanned<String>, Spanned<Value>> = toml::from_str(text)
        .map_err(|e| {
        error(
            e.span().unwrap_or(0..0),
            None,
            e.message().trim_end().to_owned(),
        )
    })?;
    let mut entries: Vec<_> = table.into_iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    let known: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|n| settable(n))
        .collect();
    let mut settings = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let name = key.get_ref().as_str();
        if value.get_ref().is_table() {
            return Err(error(
                key.span(),
                Some(name),
                "settings are top-level `key = value` lines; local-sa's file has no tables".into(),
            ));
        }
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(name) && settable(name))
        else {
            let hint = match suggest::closest(name, known.iter().copied()) {
                Some(k) => format!("did you mean `{k}`?"),
                None => "`local-sa --help` lists them (a key is an option's long name)".into(),
            };
            return Err(error(
                key.span(),
                Some(name),
                format!("unknown setting; {hint}"),
            ));
        };
        let repeatable = matches!(arg.get_action(), ArgAction::Append);
        let values = values(value.get_ref(), repeatable)
            .map_err(|message| error(value.span(), Some(name), message))?;
        settings.push(FileSetting {
            name: name.to_owned(),
            values,
            at: Position::of(text, value.span().start),
        });
    }
    Ok(settings)
}

/// A TOML value as option values: a string or an integer, or (for a
/// repeatable option) a list of them.
fn values(value: &Value, repeatable: bool) -> Result<Vec<String>, String> {
    match value {
        Value::Array(items) if repeatable => items.iter().map(scalar).collect(),
        Value::Array(_) => Err("takes one value, not a list".into()),
        other => Ok(vec![scalar(other)?]),
    }
}

/// A string or an integer as an option value.
fn scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        other => Err(format!(
            "expected a string or an integer, found a {}",
            other.type_str()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    use crate::options::Options;

    fn parse_text(text: &str) -> Result<Vec<FileSetting>, String> {
        parse(
            Path::new("/etc/local-sa/local-sa.toml"),
            text,
            &Options::command(),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn settings_become_arguments_in_the_file_order() {
        let settings = parse_text(
            "# site\nrefresh-interval = 300 # five minutes\nca = \"mlx5_0\"\n\
             acm-socket = [\"/run/a.sock\", \"/run/b # not a comment.sock\"]\n",
        )
        .unwrap();
        let args: Vec<OsString> = settings.iter().flat_map(FileSetting::args).collect();
        assert_eq!(
            args,
            [
                "--refresh-interval",
                "300",
                "--ca",
                "mlx5_0",
                "--acm-socket",
                "/run/a.sock",
                "--acm-socket",
                "/run/b # not a comment.sock",
            ]
        );
        assert_eq!(settings[1].at, Position { line: 3, column: 6 });
    }

    #[test]
    fn mistakes_name_the_line_column_and_key() {
        assert_eq!(
            parse_text("port = 1\nsm_key = 2\n").unwrap_err(),
            "/etc/local-sa/local-sa.toml:2:1: sm_key: unknown setting; did you mean `sm-key`?"
        );
        assert_eq!(
            parse_text("colour = \"blue\"\n").unwrap_err(),
            "/etc/local-sa/local-sa.toml:1:1: colour: unknown setting; \
             `local-sa --help` lists them (a key is an option's long name)"
        );
        assert_eq!(
            parse_text("port = [1, 2]\n").unwrap_err(),
            "/etc/local-sa/local-sa.toml:1:8: port: takes one value, not a list"
        );
        assert_eq!(
            parse_text("\n  port = true\n").unwrap_err(),
            "/etc/local-sa/local-sa.toml:2:10: port: expected a string or an integer, found a boolean"
        );
        assert!(parse_text("[daemon]\nport = 1\n").unwrap_err().ends_with(
            "daemon: settings are top-level `key = value` lines; local-sa's file has no tables"
        ));
        assert!(parse_text("config = \"/etc/other.toml\"\n").is_err());
        let syntax = parse_text("port = 1\nca = mlx5_0\n").unwrap_err();
        assert!(
            syntax.starts_with("/etc/local-sa/local-sa.toml:2:6: "),
            "{syntax}"
        );
        let twice = parse_text("port = 1\nport = 2\n").unwrap_err();
        assert!(
            twice.starts_with("/etc/local-sa/local-sa.toml:2:1: "),
            "{twice}"
        );
    }

    #[test]
    fn positions_count_characters() {
        assert_eq!(
            Position::of("ab\ncdé f", 8),
            Position { line: 2, column: 5 }
        );
        assert_eq!(Position::of("", 0), Position { line: 1, column: 1 });
    }
}
