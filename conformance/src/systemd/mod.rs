//! A real systemd (Debian's) as PID 1 of a PID and mount namespace of its
//! own, for tests of the package's units as an operator lives them.
//!
//! Inside, systemd runs chrooted in an overlay of the host's root whose
//! writes land in the test's directory (`dpkg -i` included), but for the
//! directories the test names, which are the host's; the files the test
//! installs ([`Installed`]: the package's tree, an administrator's
//! settings) are at their paths there before it starts; `/run` is a private
//! tmpfs holding the units the test gives (`/run/systemd/system`). Not a
//! read-only bind of the root: systemd leaves what is already read-only
//! as it is, and `ProtectSystem=strict` would then leave `/run` writable
//! for the service, as no host's systemd does. `systemctl`, `ib_acme` and
//! anything else run inside through `nsenter`. The namespace — systemd
//! and every process it started — is killed (SIGKILL to its PID 1, by
//! PID: systemd as PID 1 takes SIGTERM as "re-execute") when the handle
//! is dropped, also when a test fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::fabric::RunOutput;
use crate::process::Group;

mod cgroup;
mod installed;
use cgroup::Cgroup;
pub use installed::{Installed, PackageForm, package};

/// The target systemd boots to: no default dependencies, so that nothing
/// of the host's (journald, udev, tmpfiles) is pulled in.
const TEST_TARGET: &str = "[Unit]\nDescription=local-sa tests\nDefaultDependencies=no\n";

/// How the namespace's shell makes an overlay of the root, writes landing
/// in `$1/upper`, and runs systemd chrooted in it: `$1` the test's
/// directory, `$2` the units to copy, the writable directories after
/// (the host's own: what is written there is seen outside); the
/// namespace's own /proc, the host's /dev and /sys. First it moves into
/// the cgroups `$CGROUPS` names ([`Cgroup`]).
const OVERLAY_ROOT: &str = r#"set -e
dir=$1 units=$2
shift 2
for cg in $CGROUPS; do echo 0 > "$cg/cgroup.procs"; done
root=$dir/root
mkdir -p "$dir/upper" "$dir/overlay-work" "$root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/overlay-work" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
for d in "$dir" "$@"; do mkdir -p "$root$d"; mount --bind "$d" "$root$d"; done
mount -t tmpfs tmpfs "$root/run"
mkdir -p "$root/run/systemd/system"
cp -r "$units"/. "$root/run/systemd/system/"
exec chroot "$root" /lib/systemd/systemd --system --unit=test.target
"#;

/// systemd running as PID 1 of a namespace of its own.
pub struct Systemd {
    /// `unshare`, whose child is the namespace's PID 1.
    unshare: Group,
    pid1: u32,
    dir: PathBuf,
    /// Last: removed once the namespace is gone.
    _cgroup: Cgroup,
}

impl Systemd {
    /// Boots systemd with `units` (a path under `/run/systemd/system`,
    /// such as `local-sa.service` or `local-sa.service.d/sim.conf`, and
    /// its text), working in `dir`, on an overlay of the host's root that
    /// holds the `installed` files: everything written inside lands in
    /// `dir/upper` (`dpkg -i` included) but in `dir` and the `writable`
    /// directories, which are the host's. Waits until it has reached its
    /// target.
    pub fn boot(
        dir: &Path,
        installed: &[Installed],
        units: &[(&str, String)],
        writable: &[&Path],
    ) -> Result<Self, String> {
        installed::install(installed, &dir.join("upper"))?;
        let units_dir = dir.join("units");
        fs::create_dir_all(&units_dir).map_err(|e| e.to_string())?;
        for (name, text) in units
            .iter()
            .chain([&("test.target", TEST_TARGET.to_owned())])
        {
            let path = units_dir.join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            fs::write(&path, text).map_err(|e| e.to_string())?;
        }
        let script = dir.join("inner.sh");
        fs::write(&script, OVERLAY_ROOT).map_err(|e| e.to_string())?;
        // Dropped (removed) on every way out, after the namespace.
        let cgroup = Cgroup::new()?;
        let cgroups: Vec<String> = cgroup.dirs().map(|d| d.display().to_string()).collect();
        let mut cmd = Command::new("unshare");
        cmd.env("CGROUPS", cgroups.join(" "));
        cmd.args([
            "--pid",
            "--fork",
            "--mount",
            "--mount-proc",
            "--propagation",
            "private",
            "sh",
        ])
        .arg(&script)
        .arg(dir)
        .arg(&units_dir)
        .args(writable)
        .stdin(Stdio::null())
        .stdout(fs::File::create(dir.join("console")).map_err(|e| e.to_string())?)
        .stderr(fs::File::create(dir.join("console.err")).map_err(|e| e.to_string())?);
        let unshare = Group::spawn(cmd, "systemd in a namespace").map_err(|e| e.to_string())?;
        let pid1 = child_of(unshare.pid(), Duration::from_secs(10))?;
        let sd = Self {
            unshare,
            pid1,
            dir: dir.to_owned(),
            _cgroup: cgroup,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = sd.systemctl(&["is-system-running"]);
            let state = out.stdout.trim().to_owned();
            if matches!(state.as_str(), "running" | "degraded") {
                return Ok(sd);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "systemd did not come up (state {state:?}): {}",
                    fs::read_to_string(dir.join("console.err")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `program` with `args` inside the namespace.
    pub fn run(&self, program: &str, args: &[&str]) -> RunOutput {
        let out = entering(self.pid1)
            .arg("--")
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("nsenter: {e}"));
        RunOutput {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts `program` with `args` inside the namespace, in `cwd`, with
    /// `env` added, and returns at once (it dies with the namespace). Its
    /// output goes to `cwd`'s files `stdout` and `stderr`.
    pub fn spawn(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        cwd: &Path,
    ) -> std::process::Child {
        let mut cmd = entering(self.pid1);
        cmd.arg(format!("--wd={}", cwd.display()))
            .args(["--", "env"]);
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        let file =
            |name: &str| fs::File::create(cwd.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        cmd.arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .unwrap_or_else(|e| panic!("nsenter: {e}"))
    }

    /// [`Systemd::run`], which must succeed: panics with what it printed
    /// otherwise.
    pub fn run_ok(&self, program: &str, args: &[&str]) -> RunOutput {
        let out = self.run(program, args);
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            out.stdout,
            out.stderr
        );
        out
    }

    /// `systemctl args...` inside.
    pub fn systemctl(&self, args: &[&str]) -> RunOutput {
        self.run("systemctl", args)
    }

    /// `systemctl args...` inside, which must succeed.
    pub fn systemctl_ok(&self, args: &[&str]) -> RunOutput {
        self.run_ok("systemctl", args)
    }

    /// A unit's property, as `systemctl show -P` gives it.
    pub fn property(&self, unit: &str, name: &str) -> String {
        self.systemctl(&["show", "-P", name, unit])
            .stdout
            .trim()
            .to_owned()
    }

    /// Waits until `unit`'s ActiveState is `state`; an error naming what
    /// it was, and the unit's status, after `timeout`.
    pub fn wait_state(&self, unit: &str, state: &str, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.property(unit, "ActiveState");
            if now == state {
                return Ok(());
            }
            if Instant::now() > deadline {
                let status = self.systemctl(&["status", "--no-pager", unit]);
                return Err(format!(
                    "{unit} is {now}, not {state}, after {timeout:?}:\n{}{}",
                    status.stdout, status.stderr
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The directory it works in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `path` (absolute, inside the namespace) as the host
    /// reaches it.
    pub fn inside(&self, path: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root{path}", self.pid1))
    }

    /// Waits until systemd has restarted `unit` `count` times in all, then
    /// until it is active again.
    pub fn wait_restarts(&self, unit: &str, count: u32, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while self.property(unit, "NRestarts") != count.to_string() {
            if Instant::now() > deadline {
                let status = self.systemctl(&["status", "--no-pager", unit]);
                return Err(format!(
                    "{unit} not restarted {count} time(s) after {timeout:?}:\n{}",
                    status.stdout
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.wait_state(
            unit,
            "active",
            deadline.saturating_duration_since(Instant::now()),
        )
    }

    /// The namespace's PID 1, as the host sees it.
    pub fn pid1(&self) -> u32 {
        self.pid1
    }
}

impl Drop for Systemd {
    fn drop(&mut self) {
        // PID 1 of the namespace: every process in it dies with it.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid1.to_string()])
            .status();
        self.unshare.stop(Duration::from_secs(2));
    }
}

/// `nsenter` into the mount and PID namespaces of process `pid`, at its
/// root (a chroot's too); the command to run follows `--`.
pub fn entering(pid: u32) -> Command {
    let mut cmd = Command::new("nsenter");
    cmd.args(["-t", &pid.to_string(), "-m", "-p", "-r"]);
    cmd
}

/// The first child of process `parent`, once it has one.
fn child_of(parent: u32, timeout: Duration) -> Result<u32, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let children = fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        if let Some(pid) = children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
        {
            return Ok(pid);
        }
        if Instant::now() > deadline {
            return Err(format!("process {parent} started no child"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
