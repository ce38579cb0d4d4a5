//! Child processes in their own process groups, stopped by group on drop.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use std::{io, thread};

/// A child running in a process group of its own. Dropping it stops the
/// whole group: SIGTERM, then SIGKILL if it lingers.
#[derive(Debug)]
pub(crate) struct Group {
    child: Child,
    label: String,
    exited: Option<ExitStatus>,
}

impl Group {
    /// Starts `cmd` as the leader of a new process group.
    pub(crate) fn spawn(mut cmd: Command, label: impl Into<String>) -> io::Result<Self> {
        cmd.process_group(0);
        let child = cmd.spawn()?;
        Ok(Self {
            child,
            label: label.into(),
            exited: None,
        })
    }

    /// The leader's PID (also the group ID).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What this process is, for messages.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The write end of the child's stdin pipe, if it was piped.
    pub(crate) fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// The exit status if the process has ended.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait()?;
        }
        Ok(self.exited)
    }

    /// Waits for the process to end on its own, up to `timeout`.
    pub(crate) fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the group: SIGTERM, up to `grace` to exit, then SIGKILL.
    pub(crate) fn stop(&mut self, grace: Duration) {
        if matches!(self.try_wait(), Ok(Some(_))) {
            // The leader is gone; its group may still hold children.
            signal_group(self.pid(), "KILL");
            return;
        }
        signal_group(self.pid(), "TERM");
        if !matches!(self.wait_timeout(grace), Ok(Some(_))) {
            signal_group(self.pid(), "KILL");
            let _ = self.child.wait();
        }
        // Anything the leader left behind in its group goes too.
        signal_group(self.pid(), "KILL");
    }
}

impl Group {
    /// Sends `signal` (a name kill(1) knows: HUP, USR1, ...) to the group.
    pub(crate) fn signal(&self, signal: &str) {
        signal_group(self.pid(), signal);
    }

    /// Kills the group at once (SIGKILL): nothing in it gets to clean up.
    pub(crate) fn kill(&mut self) {
        signal_group(self.pid(), "KILL");
        let _ = self.child.wait();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// Sends `signal` to process group `pgid` through kill(1); a group that no
/// longer exists is not an error.
fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status();
}

/// A command for `program` that dies with the thread that spawns it, when
/// util-linux's setpriv is available: if a test run is killed outright, its
/// simulator processes do not outlive it.
pub(crate) fn command_dying_with_parent(program: impl AsRef<std::ffi::OsStr>) -> Command {
    static SETPRIV: OnceLock<bool> = OnceLock::new();
    let has_setpriv = *SETPRIV.get_or_init(|| crate::tools::which("setpriv").is_some());
    let program = crate::tools::resolve(program.as_ref());
    if has_setpriv {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// A command for `program` run as user and group `uid` with no other
/// groups (util-linux's setpriv, which the simulator's tests need anyway),
/// dying with the thread that spawns it: an unprivileged local user, for
/// tests of what such a user can make the daemon do.
pub fn command_as_user(uid: u32, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".into(),
        "--pdeathsig".into(),
        "KILL".into(),
        "--".into(),
    ])
    .arg(program);
    cmd
}

/// The last `lines` lines of a log file (empty if it cannot be read).
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
