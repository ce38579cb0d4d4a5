//! ibacm's options file (`/etc/rdma/ibacm_opts.cfg`, or `--acm-options
//! FILE`), read so that a node moving from ibacm to local-sa keeps what it
//! configured: each option that has a meaning here becomes local-sa's own
//! option, below the config file and the command line (either of which
//! replaces it); every other option is named once in the log.
//!
//! The file's syntax is ibacm's (`acm_set_options`): `option value` per
//! line, `#` at the start of a line for a comment, option names in any
//! case, anything after the value ignored.

use std::path::PathBuf;

/// Where ibacm keeps its options.
pub(crate) const DEFAULT_PATH: &str = "/etc/rdma/ibacm_opts.cfg";

/// Where ibacm's hosts file is when `addr_data_file` does not say.
const DEFAULT_HOSTS: &str = "/etc/rdma/ibacm_hosts.data";

/// One of local-sa's options, set from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Translated {
    /// local-sa's long option.
    pub(crate) long: &'static str,
    /// Its value, if it takes one.
    pub(crate) value: Option<String>,
    /// The ibacm option it came from.
    pub(crate) from: String,
}

impl Translated {
    /// The command-line arguments it stands for.
    pub(crate) fn args(&self) -> Vec<String> {
        let mut args = vec![format!("--{}", self.long)];
        args.extend(self.value.clone());
        args
    }
}

/// What the file says, for local-sa.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AcmOptions {
    /// The options that map, in the file's order.
    pub(crate) translated: Vec<Translated>,
    /// ibacm options local-sa has no use for, each with why.
    pub(crate) unused: Vec<(String, &'static str)>,
    /// Lines with a value that makes no sense, each with why (logged; the
    /// line changes nothing).
    pub(crate) refused: Vec<String>,
}

/// Why an option does nothing here.
fn unused_because(option: &str) -> &'static str {
    match option {
        "route_preload" | "route_data_file" => {
            "local-sa fetches all of the port's paths from the master at start, as OpenSM computes them"
        }
        "log_file" => "local-sa logs to standard error, or to the journal under systemd",
        "lock_file" => "local-sa locks each port in its --run-dir",
        "support_ips_in_addr_cfg" => "local-sa always takes IP addresses in the address file",
        "provider" | "provider_lib_path" | "route_prot" | "addr_prot" | "loopback_prot" => {
            "local-sa resolves through the master SA and its cache, not through ibacm's providers"
        }
        "addr_timeout" | "route_timeout" => {
            "local-sa's cache follows the master (refreshes, traps 64/65) instead of expiring"
        }
        _ => "not an ibacm setting local-sa has",
    }
}

/// Reads the file's `text`.
pub(crate) fn translate(text: &str) -> AcmOptions {
    let mut out = AcmOptions::default();
    let mut addr_preload: Option<(usize, bool)> = None;
    let mut addr_data_file: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(option), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let option = option.to_ascii_lowercase();
        let mut set = |long: &'static str, value: Option<String>| {
            out.translated.push(Translated {
                long,
                value,
                from: option.clone(),
            });
        };
        let number = |v: &str| v.parse::<u64>().ok();
        let mut refuse = |why: String| out.refused.push(format!("line {}: {why}", i + 1));
        match option.as_str() {
            "server_mode" => match value.to_ascii_lowercase().as_str() {
                m @ ("unix" | "loop" | "open") => set("acm-server-mode", Some(m.to_owned())),
                other => refuse(format!(
                    "server_mode {other:?} is none of unix, loop, open (ibacm would take it as unix)"
                )),
            },
            "server_port" => match number(value).filter(|p| (1..=65535).contains(p)) {
                Some(p) => set("acm-server-port", Some(p.to_string())),
                None => refuse(format!("server_port {value:?} is not a TCP port")),
            },
            "acme_plus_kernel_only" => {
                let yes = value.eq_ignore_ascii_case("yes")
                    || value.eq_ignore_ascii_case("true")
                    || number(value).is_some_and(|n| n != 0);
                set(
                    "acm-kernel-only",
                    Some(if yes { "yes" } else { "no" }.into()),
                );
            }
            "timeout" => match number(value).filter(|&t| t > 0) {
                Some(t) => set("upstream-timeout", Some(t.to_string())),
                None => refuse(format!("timeout {value:?} is not a number of milliseconds")),
            },
            "retries" => match number(value) {
                Some(r) => set("upstream-retries", Some(r.to_string())),
                None => refuse(format!("retries {value:?} is not a number")),
            },
            "log_level" => match number(value) {
                // 0 (errors and configuration) is local-sa's default.
                Some(0) => {}
                Some(1) => set("log-level", Some("debug".into())),
                Some(_) => set("log-level", Some("trace".into())),
                None => refuse(format!("log_level {value:?} is not a number")),
            },
            "addr_preload" => match value.to_ascii_lowercase().as_str() {
                "acm_hosts" => addr_preload = Some((i, true)),
                "none" => addr_preload = Some((i, false)),
                other => refuse(format!(
                    "addr_preload {other:?} is neither none nor acm_hosts"
                )),
            },
            "addr_data_file" => addr_data_file = Some(value.to_owned()),
            _ => out.unused.push((option.clone(), unused_because(&option))),
        }
    }
    if let Some((_, true)) = addr_preload {
        out.translated.push(Translated {
            long: "acm-hosts",
            value: Some(addr_data_file.unwrap_or_else(|| DEFAULT_HOSTS.to_owned())),
            from: "addr_preload acm_hosts".into(),
        });
    }
    out
}

/// The options file to read: `given` (`none`: none), else ibacm's if it
/// exists.
pub(crate) fn path(given: Option<&PathBuf>) -> Option<PathBuf> {
    match given {
        Some(p) if p.as_os_str() == "none" => None,
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(DEFAULT_PATH)).filter(|p| p.exists()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(o: &AcmOptions) -> Vec<Vec<String>> {
        o.translated.iter().map(Translated::args).collect()
    }

    #[test]
    fn what_maps_becomes_local_sas_options() {
        let o = translate(
            "# ib_acme -O\n\
             log_file /var/log/ibacm.log\n\
             log_level 1\n\
             Server_Mode loop\n\
             server_port 7000\n\
             acme_plus_kernel_only yes\n\
             timeout 2000\n\
             retries 2\n\
             addr_preload acm_hosts\n\
             addr_data_file /etc/rdma/hosts.data\n\
             route_preload full_opensm_v1\n\
             provider acmp\n",
        );
        assert_eq!(
            longs(&o),
            [
                vec!["--log-level", "debug"],
                vec!["--acm-server-mode", "loop"],
                vec!["--acm-server-port", "7000"],
                vec!["--acm-kernel-only", "yes"],
                vec!["--upstream-timeout", "2000"],
                vec!["--upstream-retries", "2"],
                vec!["--acm-hosts", "/etc/rdma/hosts.data"],
            ]
        );
        let unused: Vec<&str> = o.unused.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(unused, ["log_file", "route_preload", "provider"]);
        assert!(o.refused.is_empty());
    }

    #[test]
    fn local_sas_own_settings_win_over_ibacms() {
        use std::io::Write as _;
        let write = |text: &str| {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(text.as_bytes()).unwrap();
            f
        };
        let ibacm =
            write("server_mode loop\nserver_port 7000\ntimeout 2500\nretries 1\nlock_file /x\n");
        let config = write("upstream-retries = 5\n");
        let ibacm_path = ibacm.path().to_str().unwrap().to_owned();
        let args = |extra: &[&str]| -> Vec<String> {
            let mut a: Vec<String> = vec![
                "local-sa".into(),
                "--acm-options".into(),
                ibacm_path.clone(),
            ];
            a.extend(extra.iter().map(|s| (*s).to_owned()));
            a
        };
        let o = super::super::Options::load(args(&[
            "--config",
            config.path().to_str().unwrap(),
            "--acm-server-port",
            "7001",
        ]))
        .unwrap();
        // ibacm's where nothing else says; the config file's and the
        // command line's where they do.
        assert_eq!(o.acm_server_mode, "loop");
        assert_eq!(o.upstream_timeout, 2500);
        assert_eq!(o.upstream_retries, 5);
        assert_eq!(o.acm_server_port, 7001);
        let (_, read) = o.acm_options_read.unwrap();
        assert_eq!(read.unused[0].0, "lock_file");
        // --check-config says where each came from.
        let text =
            super::super::effective::effective_settings(args(&["--config", "none"])).unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with("upstream-timeout = 2500")
                    && l.ends_with("# ibacm options file")),
            "{text}"
        );
        // A named file that cannot be read stops the start.
        assert!(
            super::super::Options::load(["local-sa", "--acm-options", "/nonexistent/x"]).is_err()
        );
    }

    #[test]
    fn the_hosts_file_is_read_only_with_addr_preload_acm_hosts() {
        assert!(translate("addr_data_file /x\n").translated.is_empty());
        assert!(translate("addr_preload none\n").translated.is_empty());
        assert_eq!(
            longs(&translate("addr_preload acm_hosts\n")),
            [vec!["--acm-hosts", DEFAULT_HOSTS]]
        );
    }

    #[test]
    fn nonsense_is_refused_by_line_and_changes_nothing() {
        let o = translate("server_mode sideways\nserver_port 99999\ntimeout soon\nlog_level 0\n");
        assert!(o.translated.is_empty(), "{o:?}");
        assert_eq!(o.refused.len(), 3);
        assert!(
            o.refused[0].starts_with("line 1: server_mode \"sideways\""),
            "{o:?}"
        );
        assert!(o.refused[1].contains("not a TCP port"));
        // A line without a value, or a comment, is skipped like ibacm.
        assert_eq!(translate("timeout\n#timeout 5\n"), AcmOptions::default());
    }
}
