//! local-sa running on a node of a [`SimulatedFabric`]: started with its counters
//! file in the fabric's directory, ready once it has fetched its port's
//! paths from the master, and its counters readable while it runs.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::thread;
use std::time::{Duration, Instant};

use crate::fabric::{FabricError, NodeProcess, SimulatedFabric};

/// A local-sa process on a node.
#[derive(Debug)]
pub struct LocalSa<'f> {
    process: NodeProcess<'f>,
    node: String,
    counters: PathBuf,
    acm_socket: PathBuf,
    api_socket: PathBuf,
}

impl<'f> LocalSa<'f> {
    /// Starts local-sa (this workspace's, see [`crate::program`]) on
    /// `node` with `args` and waits until it has its port's paths (its
    /// `refreshes` counter is at least 1). Unless `args` say otherwise,
    /// it serves ibacm's protocol and its local API on sockets in the
    /// fabric's directory ([`Self::acm_socket`], `<node>.api.sock`) and
    /// keeps its port lock in `<node>.run/` there ([`Self::run_dir`]),
    /// never on the system's: fabrics of tests running side by side have
    /// nodes of the same adapter name.
    pub fn start(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
    ) -> Result<Self, FabricError> {
        Self::start_with(fabric, node, args, Vec::new(), &[], None)?.until_fetched()
    }

    /// [`LocalSa::start`] without waiting for its paths: for a local-sa
    /// told to wait for a load (`--load-wait`). Returns once it writes its
    /// counters.
    pub fn start_unfilled(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
    ) -> Result<Self, FabricError> {
        let mut sa = Self::start_with(fabric, node, args, Vec::new(), &[], None)?;
        sa.wait_until("running", Duration::from_secs(60), |c| !c.is_empty())?;
        Ok(sa)
    }

    /// Starts local-sa as [`LocalSa::start`] does, with `env` added to its
    /// environment (`NOTIFY_SOCKET`, as systemd sets it), and returns at
    /// once.
    pub fn spawn_with_env(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Self, FabricError> {
        Self::start_with(fabric, node, args, Vec::new(), env, None)
    }

    /// [`LocalSa::start`], passing `socket` as systemd passes a socket
    /// named `name` (`LISTEN_FDNAMES`).
    pub fn start_passing(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
        name: &str,
        socket: std::os::fd::OwnedFd,
    ) -> Result<Self, FabricError> {
        Self::start_passing_with_env(fabric, node, args, vec![(name, socket)], &[])
    }

    /// [`LocalSa::start`] with `env` and `sockets` passed as systemd
    /// passes sockets and the descriptors its store kept (named by
    /// `LISTEN_FDNAMES`, in order).
    pub fn start_passing_with_env(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
        sockets: Vec<(&str, std::os::fd::OwnedFd)>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Self, FabricError> {
        Self::start_with(fabric, node, args, sockets, env, None)?.until_fetched()
    }

    /// [`LocalSa::start`] in a private mount namespace prepared by the
    /// shell commands `setup` ([`crate::NodeCommand::in_private_mounts`]).
    pub fn start_in_private_mounts(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
        setup: &str,
    ) -> Result<Self, FabricError> {
        Self::start_with(fabric, node, args, Vec::new(), &[], Some(setup))?.until_fetched()
    }

    fn until_fetched(mut self) -> Result<Self, FabricError> {
        // Fetched, or kept by a predecessor on the same node.
        self.wait_until("its port's paths fetched", Duration::from_secs(60), |c| {
            c.get("refreshes").is_some_and(|r| *r >= 1)
                || c.get("refreshes_kept").is_some_and(|r| *r >= 1)
        })?;
        Ok(self)
    }

    fn start_with(
        fabric: &'f SimulatedFabric,
        node: &str,
        args: &[&str],
        sockets: Vec<(&str, std::os::fd::OwnedFd)>,
        env: &[(&str, &std::ffi::OsStr)],
        mount_setup: Option<&str>,
    ) -> Result<Self, FabricError> {
        let counters = fabric.dir().join(format!("{node}.counters"));
        let acm_socket = fabric.dir().join(format!("{node}.acm.sock"));
        let api_socket = fabric.dir().join(format!("{node}.api.sock"));
        let mut socket_args: Vec<&std::ffi::OsStr> = Vec::new();
        if !args.contains(&"--acm-socket") {
            socket_args.extend(["--acm-socket".as_ref(), acm_socket.as_os_str()]);
        }
        if !args.contains(&"--api-socket") {
            socket_args.extend(["--api-socket".as_ref(), api_socket.as_os_str()]);
        }
        // The machine's ibacm options (if ibacm is configured here) are
        // not the test's.
        if !args.contains(&"--acm-options") {
            socket_args.extend([
                std::ffi::OsStr::new("--acm-options"),
                std::ffi::OsStr::new("none"),
            ]);
        }
        // Nor are this machine's service units (an OpenSM enabled here)
        // the simulated node's.
        if !args.contains(&"--sm-unit") {
            socket_args.extend([
                std::ffi::OsStr::new("--sm-unit"),
                std::ffi::OsStr::new("none"),
            ]);
        }
        let run_dir = fabric.dir().join(format!("{node}.run"));
        if !args.contains(&"--run-dir") {
            socket_args.extend(["--run-dir".as_ref(), run_dir.as_os_str()]);
        }
        // A previous local-sa's counters (one killed on this node) must
        // not pass for this one's.
        let _ = fs::remove_file(&counters);
        let mut command = fabric.node(node)?.workspace_program("local-sa");
        for (name, socket) in sockets {
            command = command.pass_socket(name, socket);
        }
        if let Some(setup) = mount_setup {
            command = command.in_private_mounts(setup);
        }
        for (key, value) in env {
            command = command.env(key, value);
        }
        let process = command
            .serve_requests()
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .arg("--stats-file")
            .arg(&counters)
            .args(socket_args)
            .args(args)
            .spawn()?;
        Ok(Self {
            process,
            node: node.to_owned(),
            counters,
            acm_socket,
            api_socket,
        })
    }

    /// The directory of its port lock (unless started with another
    /// `--run-dir`).
    pub fn run_dir(&self) -> PathBuf {
        self.acm_socket.with_file_name(format!("{}.run", self.node))
    }

    /// The socket it serves ibacm's protocol on (unless started with
    /// another `--acm-socket`).
    pub fn acm_socket(&self) -> &std::path::Path {
        &self.acm_socket
    }

    /// The socket it serves its local API on (unless started with another
    /// `--api-socket`).
    pub fn api_socket(&self) -> &std::path::Path {
        &self.api_socket
    }

    /// The node it runs on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Its counters as last written (empty before the first write).
    pub fn counters(&self) -> HashMap<String, u64> {
        let text = fs::read_to_string(&self.counters).unwrap_or_default();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.split_once(' ')?;
                Some((name.to_owned(), value.trim().parse().ok()?))
            })
            .collect()
    }

    /// One counter (0 if absent).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters().get(name).copied().unwrap_or(0)
    }

    /// Polls the counters until `done` holds, the process exits, or
    /// `timeout` passes.
    pub fn wait_until(
        &mut self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&HashMap<String, u64>) -> bool,
    ) -> Result<(), FabricError> {
        let start = Instant::now();
        loop {
            if done(&self.counters()) {
                return Ok(());
            }
            if let Some(status) = self.process.try_wait() {
                return Err(FabricError::Exited {
                    what: format!("local-sa on {}", self.node),
                    status,
                    log: self.process.dir().join("stderr"),
                    tail: self.stderr(),
                });
            }
            if start.elapsed() > timeout {
                return Err(FabricError::NotReady {
                    what: format!("local-sa on {} ({what})", self.node),
                    waited: timeout,
                    log: self.process.dir().join("stderr"),
                    tail: self.stderr(),
                });
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (up to 30 s) until a load of this port's own paths has
    /// stood for its refresh, and checks that the master was not asked
    /// for the table: what a distributor's load does to a node started
    /// with `--load-wait`.
    pub fn filled_by_a_load(&mut self) -> Result<(), FabricError> {
        self.wait_until(
            "a load taken as its refresh",
            Duration::from_secs(30),
            |c| c.get("refreshes_loaded").is_some_and(|n| *n >= 1),
        )?;
        match self.counter("refreshes") {
            0 => Ok(()),
            n => Err(FabricError::NotReady {
                what: format!(
                    "local-sa on {} filled by a load only (it refreshed from the master {n} times)",
                    self.node
                ),
                waited: Duration::ZERO,
                log: self.process.dir().join("stderr"),
                tail: self.stderr(),
            }),
        }
    }

    /// What it has logged so far.
    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    /// Its PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Kills it at once (SIGKILL), as a crash would: it withdraws nothing.
    pub fn kill(self) {
        self.process.kill();
    }

    /// Sends it SIGHUP (reload its configuration).
    pub fn hang_up(&self) {
        self.process.signal("HUP");
    }

    /// Its exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.process.try_wait()
    }

    /// Sends SIGTERM and waits for it to exit; returns the exit status and
    /// its log.
    pub fn stop(self) -> (Option<ExitStatus>, String) {
        let log_path = self.process.dir().join("stderr");
        let status = self.process.stop(Duration::from_secs(5));
        (status, fs::read_to_string(log_path).unwrap_or_default())
    }
}
