//! The config file's documentation: the commented sample
//! (`dist/local-sa.toml`, installed as /etc/local-sa/local-sa.toml) and
//! the settings of local-sa.toml(5), written from the options' own help
//! and defaults so that they cannot fall behind them: a test compares the
//! committed sample with [`render`].

use std::fmt::Write as _;

use clap::{ArgAction, Command};

use super::config_file::settable;
use super::effective::toml_value;

/// An example value for each setting that has no default, as TOML.
const EXAMPLES: [(&str, &str); 17] = [
    ("ca", "\"mlx5_0\""),
    ("port", "1"),
    ("sm-key", "\"0x0000000000000001\""),
    ("sm-key-file", "\"/etc/local-sa/sm_key\""),
    ("stats-file", "\"/run/local-sa/mlx5_0-1.counters\""),
    ("api-socket", "\"/run/local-sa/mlx5_0-1.sock\""),
    ("api-group", "0"),
    (
        "acm-socket",
        "[\"/run/ibacm-unix.sock\", \"/run/ibacm.sock\"]",
    ),
    ("acm-hosts", "\"/etc/rdma/ibacm_hosts.data\""),
    ("acm-addr", "\"/etc/rdma/ibacm_addr.cfg\""),
    ("acm-options", "\"/etc/rdma/ibacm_opts.cfg\""),
    ("host-name", "\"node001\""),
    ("address", "[\"192.0.2.10\"]"),
    ("sm-unit", "[\"opensm.service\"]"),
    ("netlink-timeout", "4500"),
    ("log-level", "\"info\""),
    ("metrics", "\"127.0.0.1:9464\""),
];

/// Width the help text is wrapped to.
const WIDTH: usize = 76;

/// What the file's documentation says about one setting.
pub(crate) struct SettingDoc {
    /// Its key.
    pub(crate) key: String,
    /// Its help, in paragraphs.
    pub(crate) help: Vec<String>,
    /// Its default as TOML, if it has one.
    pub(crate) default: Option<String>,
    /// An example value (the default, where there is one), as TOML.
    pub(crate) example: String,
}

/// What the sample and local-sa.toml(5) say of the file as a whole.
pub(crate) const ABOUT: &str = "\
TOML. Each key is a long option of `local-sa --help` and takes the same \
values: an integer or a string (hexadecimal and octal values as strings, \
\"0x1234\"), a list for options that may be repeated. An option on the \
command line replaces the file's. Check a file with `local-sa \
--check-config`; SIGHUP reads it again (see SIGNALS in local-sa(8)).";

/// Every setting of the file, in `--help` order.
pub(crate) fn settings(command: &Command) -> Vec<SettingDoc> {
    let mut docs = Vec::new();
    for arg in command.get_arguments() {
        let Some(key) = arg.get_long().filter(|l| settable(l)) else {
            continue;
        };
        let help = arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        // clap drops a one-paragraph help's full stop.
        let help = if help.ends_with(['.', ':', ')']) || help.is_empty() {
            help
        } else {
            format!("{help}.")
        };
        let help = help
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| toml_value(&v.to_string_lossy()))
            .collect();
        let default = match defaults.as_slice() {
            [] => None,
            [one] if !matches!(arg.get_action(), ArgAction::Append) => Some(one.clone()),
            many => Some(format!("[{}]", many.join(", "))),
        };
        let example = default.clone().unwrap_or_else(|| {
            EXAMPLES
                .iter()
                .find(|(k, _)| *k == key)
                .map_or_else(String::new, |(_, v)| (*v).to_owned())
        });
        docs.push(SettingDoc {
            key: key.to_owned(),
            help,
            default,
            example,
        });
    }
    docs
}

/// The sample config file for `command`'s options: each setting's help as
/// comments, then the setting, commented out, at its default (or, without
/// one, an example).
pub(crate) fn render(command: &Command) -> String {
    let mut out = String::from(
        "# local-sa's settings: /etc/local-sa/local-sa.toml, or local-sa --config FILE.\n#\n",
    );
    let about: Vec<&str> = ABOUT.split_whitespace().collect();
    for line in wrap(&about, WIDTH) {
        let _ = writeln!(out, "# {line}");
    }
    out.push_str(
        "#\n# Every setting below is commented out at its default (or an example,\n\
         # where there is none): uncomment and change what you need.\n",
    );
    for doc in settings(command) {
        out.push('\n');
        for paragraph in &doc.help {
            for line in wrap(&paragraph.split_whitespace().collect::<Vec<_>>(), WIDTH) {
                let _ = writeln!(out, "# {line}");
            }
        }
        let _ = writeln!(out, "#{} = {}", doc.key, doc.example);
    }
    out
}

/// `words` as lines of at most `width` characters (a longer word alone).
fn wrap(words: &[&str], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in words {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::path::Path;

    use clap::CommandFactory as _;

    use super::*;
    use crate::options::Options;

    /// The committed sample.
    const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/local-sa.toml");

    /// `LOCAL_SA_BLESS=1 cargo test -p local-sa sample` writes the file
    /// after the options change.
    #[test]
    fn the_committed_sample_is_the_options_own() {
        let rendered = render(&Options::command());
        if std::env::var_os("LOCAL_SA_BLESS").is_some() {
            std::fs::write(SAMPLE, &rendered).unwrap();
        }
        let committed = std::fs::read_to_string(SAMPLE).unwrap_or_default();
        assert!(
            committed == rendered,
            "{SAMPLE} is behind the options: run LOCAL_SA_BLESS=1 cargo test -p local-sa sample"
        );
    }

    #[test]
    fn every_setting_has_a_value_and_the_sample_parses_as_it_is_and_uncommented() {
        let rendered = render(&Options::command());
        assert!(
            !rendered
                .lines()
                .any(|l| l.starts_with('#') && l.ends_with(" = ")),
            "a setting without a default needs an example in EXAMPLES:\n{rendered}"
        );
        let load = |text: &str| {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(text.as_bytes()).unwrap();
            Options::load(["local-sa", "-c", f.path().to_str().unwrap()]).map_err(|e| e.to_string())
        };
        let as_shipped = load(&rendered).unwrap();
        let defaults = Options::load(["local-sa", "-c", "none"]).unwrap();
        assert_eq!(
            format!(
                "{:?}",
                Options {
                    config: None,
                    ..as_shipped
                }
            ),
            format!(
                "{:?}",
                Options {
                    config: None,
                    ..defaults.clone()
                }
            )
        );
        // Every line uncommented but the key, its file and ibacm's options
        // (files which would be read) is a good setting, and a default
        // stays the default.
        let uncommented: String = rendered
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .filter(|l| l.contains(" = ") && !l.starts_with(' ') && !l.starts_with("sm-key"))
            .filter(|l| !l.starts_with("acm-options"))
            .map(|l| format!("{l}\n"))
            .collect();
        let o = load(&uncommented).unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
        assert_eq!(
            (o.refresh_interval, o.api_mode, o.port, o.acm_sockets.len()),
            (defaults.refresh_interval, defaults.api_mode, Some(1), 2)
        );
        assert!(Path::new(SAMPLE).exists());
    }

    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let words = ["a", "bb", "ccc", "dddd", "eeeeeeeeee"];
        assert_eq!(wrap(&words, 6), ["a bb", "ccc", "dddd", "eeeeeeeeee"]);
        assert!(wrap(&[], 6).is_empty());
    }
}
