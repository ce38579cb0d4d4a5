//! The real librdmacm, run against local-sa's ibacm socket.
//!
//! librdmacm refuses to resolve anything without an RDMA device, and it
//! always talks to ibacm at `/run/ibacm.sock`. A [`Librdmacm`] runs the
//! probe program (`rdmacm/getaddrinfo_probe.c`, compiled with the
//! system's C compiler against the installed librdmacm) in a private
//! mount namespace (`unshare -m`, which needs root) where:
//!
//! * libibverbs sees one fake device through `SYSFS_PATH` (SIMULATOR.md:
//!   `class/infiniband_verbs/...`, `class/infiniband/<dev>/node_type`);
//! * `/dev/infiniband` is a fresh tmpfs holding an empty `uverbs0`, which
//!   is all librdmacm checks of the device node (on a machine without one,
//!   in an overlay of `/dev` that only the namespace sees);
//! * `/run` is a fresh tmpfs holding what ibacm's clients look for —
//!   local-sa's socket bind-mounted as `ibacm.sock` and `ibacm-unix.sock`,
//!   or its TCP port files as `ibacm.port` and `ibacm-tcp.port` ([`Reach`])
//!   —, or nothing when they do not exist (local-sa stopped);
//! * `/etc/hosts` is the caller's file, when given, for resolves by name.
//!
//! [`Librdmacm::entering`] runs it inside another process's mount
//! namespace instead (a systemd's: [`crate::systemd`]), where
//! [`Reach::Present`] leaves that namespace's `/run` as it is.
//!
//! Nothing outside the namespace changes: several test programs may run
//! probes at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The probe's source, in this crate.
const SOURCE: &str = "rdmacm/getaddrinfo_probe.c";

/// What the namespace's shell does before it runs the program: `$1` the
/// fake sysfs, `$2` a hosts file or empty, `$3` "fresh" for a fresh
/// `/run` (else it stays), `$4` an empty directory for the overlay of
/// `/dev` (a tmpfs of the namespace's own is mounted on it), then
/// `SOURCE=TARGET` files to bind-mount (under the fresh `/run`) up to
/// `--`; the program and its arguments follow.
const SETUP: &str = r#"set -e
sysfs=$1 hosts=$2 run=$3 dev=$4
shift 4
if [ "$run" = fresh ]; then mount -t tmpfs local-sa-test /run; fi
while [ "$1" != "--" ]; do
  source=${1%%=*} target=${1#*=}
  : > "$target"
  mount --bind "$source" "$target"
  shift
done
shift
if [ ! -d /dev/infiniband ]; then
  mount -t tmpfs local-sa-test "$dev"
  mkdir "$dev/upper" "$dev/work"
  mount -t overlay local-sa-test -o "lowerdir=/dev,upperdir=$dev/upper,workdir=$dev/work" /dev
  mkdir /dev/infiniband
fi
mount -t tmpfs local-sa-test /dev/infiniband
: > /dev/infiniband/uverbs0
if [ -n "$hosts" ]; then mount --bind "$hosts" /etc/hosts; fi
SYSFS_PATH=$sysfs exec "$@"
"#;

/// How the clients in the namespace reach local-sa, where ibacm's clients
/// look for ibacm.
#[derive(Debug, Clone, Copy)]
pub enum Reach<'a> {
    /// Its Unix socket, at `/run/ibacm.sock` (librdmacm) and
    /// `/run/ibacm-unix.sock` (ib_acme); nothing there if it does not
    /// exist (local-sa stopped).
    Socket(&'a Path),
    /// Its TCP port files (`--acm-port-dir`), at `/run/ibacm.port`
    /// (librdmacm) and `/run/ibacm-tcp.port` (ib_acme), those that exist.
    PortDir(&'a Path),
    /// Whatever the mount namespace it runs in has at those places (a
    /// systemd's, with its socket units: [`Librdmacm::entering`]).
    Present,
}

impl Reach<'_> {
    /// The `SOURCE=TARGET` bindings.
    fn bindings(self) -> Vec<String> {
        let pairs: Vec<(PathBuf, &str)> = match self {
            Reach::Socket(s) => vec![
                (s.to_owned(), "/run/ibacm.sock"),
                (s.to_owned(), "/run/ibacm-unix.sock"),
            ],
            Reach::PortDir(d) => vec![
                (d.join("ibacm.port"), "/run/ibacm.port"),
                (d.join("ibacm-tcp.port"), "/run/ibacm-tcp.port"),
            ],
            Reach::Present => Vec::new(),
        };
        pairs
            .into_iter()
            .filter(|(source, _)| source.exists())
            .map(|(source, target)| format!("{}={target}", source.display()))
            .collect()
    }
}

/// The real librdmacm, ready to be asked through the probe.
#[derive(Debug)]
pub struct Librdmacm {
    probe: PathBuf,
    sysfs: PathBuf,
    /// Where each namespace mounts the layers of its overlay of `/dev`.
    dev: PathBuf,
    /// The process whose mount and PID namespaces it runs in, if not the
    /// caller's.
    enter: Option<u32>,
}

/// One path record librdmacm returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePath {
    /// The `ibv_path_data` flags.
    pub flags: u32,
    /// The 64-byte path record, as on the wire.
    pub record: Vec<u8>,
}

/// What the probe printed: the paths (none: "no route"), or its error.
pub type Routes = Result<Vec<RoutePath>, String>;

impl Librdmacm {
    /// Compiles the probe into `dir` and writes the fake sysfs there.
    pub fn prepare(dir: &Path) -> Result<Self, String> {
        if !crate::tools::which("unshare").is_some_and(|_| is_root()) {
            return Err(
                "running librdmacm needs unshare(1) and root (a private mount namespace)".into(),
            );
        }
        let probe = dir.join("rdma_getaddrinfo_probe");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
        let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let out = Command::new(&cc)
            .args(["-O2", "-Wall", "-o"])
            .arg(&probe)
            .arg(&source)
            .arg("-lrdmacm")
            .output()
            .map_err(|e| format!("{}: {e}", cc.to_string_lossy()))?;
        if !out.status.success() {
            return Err(format!(
                "compiling {} failed (is librdmacm-dev installed?): {}",
                source.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let sysfs = dir.join("fake-sysfs");
        let write = |rel: &str, text: &str| -> Result<(), String> {
            let path = sysfs.join(rel);
            std::fs::create_dir_all(path.parent().unwrap_or(&sysfs))
                .and_then(|()| std::fs::write(&path, text))
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        write("class/infiniband_verbs/abi_version", "6\n")?;
        write("class/infiniband_verbs/uverbs0/ibdev", "rxe0\n")?;
        write("class/infiniband_verbs/uverbs0/dev", "231:192\n")?;
        write("class/infiniband_verbs/uverbs0/abi_version", "1\n")?;
        write("class/infiniband/rxe0/node_type", "1: CA\n")?;
        let dev = dir.join("dev-overlay");
        std::fs::create_dir_all(&dev).map_err(|e| format!("{}: {e}", dev.display()))?;
        Ok(Self {
            probe,
            sysfs,
            dev,
            enter: None,
        })
    }

    /// Runs it in the mount and PID namespaces of process `pid` (by
    /// `nsenter`), where the caller's files stay visible.
    #[must_use]
    pub fn entering(mut self, pid: u32) -> Self {
        self.enter = Some(pid);
        self
    }

    /// Runs the probe with `args` (see the probe's usage), reaching
    /// local-sa by `reach`, with `hosts` as `/etc/hosts` if given.
    pub fn ask(&self, reach: Reach<'_>, hosts: Option<&Path>, args: &[&str]) -> Routes {
        parse(&self.probe(reach, hosts, args)?)
    }

    /// Asks `calls` times with `args` in one process (librdmacm connects
    /// to the ibacm service at the first call and keeps the connection)
    /// and returns how long the calls took.
    pub fn time_calls(
        &self,
        reach: Reach<'_>,
        args: &[&str],
        calls: u64,
    ) -> Result<std::time::Duration, String> {
        let calls = calls.to_string();
        let mut repeated = vec!["--repeat", calls.as_str()];
        repeated.extend_from_slice(args);
        let stdout = self.probe(reach, None, &repeated)?;
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("repeated "))
            .and_then(|rest| rest.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| format!("no timing in the probe's output: {stdout}"))
    }

    /// Runs the probe with `args`: its standard output, or what it said
    /// when it failed.
    fn probe(
        &self,
        reach: Reach<'_>,
        hosts: Option<&Path>,
        args: &[&str],
    ) -> Result<String, String> {
        let mut command = vec![self.probe.as_os_str()];
        command.extend(args.iter().map(std::ffi::OsStr::new));
        let out = self.run(reach, hosts, &command)?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(stdout)
    }

    /// Runs `command` (a program and its arguments) in the namespace,
    /// reaching local-sa by `reach`: `ib_acme` finds it where it finds
    /// ibacm.
    pub fn run<S: AsRef<std::ffi::OsStr>>(
        &self,
        reach: Reach<'_>,
        hosts: Option<&Path>,
        command: &[S],
    ) -> Result<Output, String> {
        let hosts = hosts.map(Path::as_os_str).unwrap_or_default();
        let mut unshare = match self.enter {
            Some(pid) => {
                let mut c = crate::systemd::entering(pid);
                c.args(["--", "unshare"]);
                c
            }
            None => Command::new("unshare"),
        };
        let run = match reach {
            Reach::Present => "keep",
            Reach::Socket(_) | Reach::PortDir(_) => "fresh",
        };
        unshare
            .args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                SETUP,
                "setup",
            ])
            .arg(&self.sysfs)
            .arg(hosts)
            .arg(run)
            .arg(&self.dev)
            .args(reach.bindings())
            .arg("--")
            .args(command)
            .output()
            .map_err(|e| format!("unshare: {e}"))
    }
}

/// The probe's output as paths.
fn parse(stdout: &str) -> Routes {
    let mut paths = Vec::new();
    for line in stdout.lines() {
        if line == "no route" {
            return Ok(Vec::new());
        }
        if line.starts_with("repeated ") {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some("path"), Some(flags), Some(hex), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(format!("unexpected probe output: {line:?}"));
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16)
            .map_err(|_| format!("unexpected flags: {line:?}"))?;
        let record = mad_codec::hex::parse(hex).map_err(|e| e.to_string())?;
        paths.push(RoutePath { flags, record });
    }
    Ok(paths)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_lines_become_paths() {
        let line = format!("path 0x3 {}\n", "ab".repeat(64));
        assert_eq!(
            parse(&line),
            Ok(vec![RoutePath {
                flags: 3,
                record: vec![0xAB; 64]
            }])
        );
        assert_eq!(parse("no route\n"), Ok(vec![]));
        assert!(parse("garbage\n").is_err());
    }
}
