//! A simulated InfiniBand fabric: ibsim, OpenSM as master SM/SA, and any
//! other process attached to a named node through the umad2sim preload.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use std::{fmt, thread};

use crate::process::{Group, command_dying_with_parent, tail};
use crate::tools::{PACKAGES, preload_library, which};
use crate::topology::Topology;

/// What ibsim prints once it accepts clients.
const IBSIM_READY: &str = "Network simulator ready.";

/// Lines of a log quoted in errors.
const TAIL_LINES: usize = 25;

/// glibc settings under which `malloc` hands out zeroed memory (freed
/// memory is filled with 0xff, allocations with its complement; the
/// thread cache, which skips both, is off).
///
/// umad2sim queues each MAD it receives in a `malloc`ed buffer and never
/// writes the user_mad header's `pkey_index`, so OpenSM reads heap garbage
/// there. OpenSM keeps the whole source address, P_Key index included, with
/// an InformInfo subscription and finds the subscription again for an
/// unsubscribe only if the address is byte-equal: with garbage that differs
/// between the two MADs, the unsubscribe fails (ERR 4307) and the
/// subscription stays. A kernel fills the field in; with zeroed buffers the
/// simulator does what a kernel does here.
const OPENSM_ZEROED_MALLOC: &str = "glibc.malloc.perturb=255:glibc.malloc.tcache_count=0";

/// Why a fabric could not be started or used.
#[derive(Debug)]
#[non_exhaustive]
pub enum FabricError {
    /// A program or library of the simulated fabric is missing.
    NotInstalled {
        /// What is missing.
        what: String,
    },
    /// A file or process operation failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: io::Error,
    },
    /// The node is not a channel adapter of this fabric.
    UnknownNode {
        /// The name asked for.
        node: String,
        /// Some of the names that exist.
        known: String,
    },
    /// A component did not become ready in time.
    NotReady {
        /// The component.
        what: String,
        /// How long we waited.
        waited: Duration,
        /// Its log.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// A component exited while it should be running.
    Exited {
        /// The component.
        what: String,
        /// How it exited.
        status: ExitStatus,
        /// Its log.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// A program of this workspace could not be found or built (see
    /// [`crate::program`]).
    Program {
        /// Which.
        name: String,
        /// Why.
        why: String,
    },
    /// A command on a node did not finish in time.
    Timeout {
        /// The command.
        what: String,
        /// The time limit.
        after: Duration,
        /// The end of its standard error.
        stderr: String,
    },
}

impl fmt::Display for FabricError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInstalled { what } => write!(
                f,
                "{what} not found: the simulated fabric needs `apt-get install -y {PACKAGES}`"
            ),
            Self::Program { name, why } => write!(f, "{name}: {why}"),
            Self::Io { context, source } => write!(f, "{context}: {source}"),
            Self::UnknownNode { node, known } => {
                write!(
                    f,
                    "no channel adapter named {node:?} in this fabric (it has {known})"
                )
            }
            Self::NotReady {
                what,
                waited,
                log,
                tail,
            } => write!(
                f,
                "{what} not ready after {waited:?}; last lines of {}:\n{tail}",
                log.display()
            ),
            Self::Exited {
                what,
                status,
                log,
                tail,
            } => write!(
                f,
                "{what} exited ({status}); last lines of {}:\n{tail}",
                log.display()
            ),
            Self::Timeout {
                what,
                after,
                stderr,
            } => {
                write!(
                    f,
                    "{what} did not finish within {after:?}; its stderr ends:\n{stderr}"
                )
            }
        }
    }
}

impl std::error::Error for FabricError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> FabricError {
    let context = context.into();
    move |source| FabricError::Io { context, source }
}

/// Configures and starts a [`SimulatedFabric`].
#[derive(Debug, Clone)]
pub struct FabricBuilder {
    topology: Topology,
    opensm_node: Option<String>,
    ready_timeout: Duration,
    opensm_config: Vec<String>,
    opensm_files: Vec<(String, String)>,
    opensm_args: Vec<String>,
}

impl FabricBuilder {
    /// Runs OpenSM on `node` (default: the first channel adapter).
    pub fn opensm_on(mut self, node: impl Into<String>) -> Self {
        self.opensm_node = Some(node.into());
        self
    }

    /// Lines for an OpenSM configuration file (`name value`, as in
    /// opensm.conf) passed with `-F`; OpenSM's defaults stand for the rest.
    pub fn opensm_config<I, S>(mut self, lines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.opensm_config.extend(lines.into_iter().map(Into::into));
        self
    }

    /// A file written into OpenSM's working directory before it starts,
    /// for the configuration to name (`partition_config_file
    /// partitions.conf`, `qos_policy_file qos-policy.conf`).
    pub fn opensm_file(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.opensm_files.push((name.into(), text.into()));
        self
    }

    /// More of OpenSM's command-line options (`-Q`, `-Y FILE`, `-P
    /// FILE`: what OpenSM takes over its configuration file), after `-F`;
    /// a relative file name is OpenSM's working directory's.
    pub fn opensm_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.opensm_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// How long to wait for ibsim and for OpenSM's SA to answer (default
    /// 90 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts ibsim and OpenSM and waits until the SA answers a query.
    pub fn start(self) -> Result<SimulatedFabric, FabricError> {
        let preload = check_installed()?;
        let opensm_node =
            match self.opensm_node {
                Some(n) => n,
                None => self.topology.hcas().first().cloned().ok_or_else(|| {
                    FabricError::UnknownNode {
                        node: "(any)".into(),
                        known: "no channel adapters".into(),
                    }
                })?,
            };
        if !self.topology.has_hca(&opensm_node) {
            return Err(unknown_node(&self.topology, &opensm_node));
        }
        let n = FABRICS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("local-sa-fabric-{pid}-{n}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
        fs::write(dir.join("topo.net"), self.topology.text())
            .map_err(io_err("writing the topology"))?;

        let sockname = format!("lsa{pid}x{n}");
        let (ibsim, console) = start_ibsim(&dir, &sockname, &self.topology)?;
        let fabric = SimulatedFabric {
            topology: self.topology,
            dir,
            sockname,
            preload,
            ibsim: Mutex::new(ibsim),
            console: Mutex::new(console),
            opensm: Mutex::new(None),
            opensm_node,
            opensm_config: self.opensm_config,
            opensm_files: self.opensm_files,
            opensm_args: self.opensm_args,
            ready_timeout: self.ready_timeout,
            commands: AtomicUsize::new(0),
        };
        wait_for_log(
            &fabric.dir.join("ibsim.log"),
            IBSIM_READY,
            fabric.ready_timeout,
            || fabric.ibsim.lock().map_or(Ok(None), |mut g| g.try_wait()),
        )
        .map_err(|e| e.named("ibsim"))?;
        fabric.start_opensm()?;
        Ok(fabric)
    }
}

static FABRICS: AtomicUsize = AtomicUsize::new(0);

/// Checks that ibsim, OpenSM and saquery are installed; returns the
/// preload library.
pub fn check_installed() -> Result<PathBuf, FabricError> {
    for program in ["ibsim", "opensm", "saquery"] {
        if which(program).is_none() {
            return Err(FabricError::NotInstalled {
                what: format!("`{program}`"),
            });
        }
    }
    preload_library().ok_or_else(|| FabricError::NotInstalled {
        what: "the umad2sim preload library (libumad2sim.so, package libumad2sim0)".into(),
    })
}

fn unknown_node(topology: &Topology, node: &str) -> FabricError {
    let hcas = topology.hcas();
    let mut known = hcas.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
    if hcas.len() > 6 {
        known.push_str(&format!(", ... ({} in all)", hcas.len()));
    }
    FabricError::UnknownNode {
        node: node.into(),
        known,
    }
}

fn start_ibsim(
    dir: &Path,
    sockname: &str,
    topology: &Topology,
) -> Result<(Group, ChildStdin), FabricError> {
    let log = File::create(dir.join("ibsim.log")).map_err(io_err("creating ibsim.log"))?;
    let log2 = log.try_clone().map_err(io_err("creating ibsim.log"))?;
    let mut cmd = command_dying_with_parent("ibsim");
    // Without -n ibsim reads console commands from stdin; we keep the pipe
    // open for the fabric's lifetime (at EOF ibsim would spin).
    cmd.arg("-s");
    let nodes = topology.hcas().len() + topology.switches().len();
    if nodes > 2048 {
        cmd.args(["-N", &nodes.to_string()]);
    }
    if topology.switches().len() > 256 {
        cmd.args(["-S", &topology.switches().len().to_string()]);
    }
    cmd.arg("topo.net")
        .current_dir(dir)
        .env("IBSIM_SOCKNAME", sockname)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log2);
    let mut group = Group::spawn(cmd, "ibsim").map_err(io_err("starting ibsim"))?;
    let stdin = group_stdin(&mut group)?;
    Ok((group, stdin))
}

fn group_stdin(group: &mut Group) -> Result<ChildStdin, FabricError> {
    group.take_stdin().ok_or_else(|| FabricError::Io {
        context: "ibsim console".into(),
        source: io::Error::other("no stdin pipe"),
    })
}

/// An error from [`wait_for_log`], named by the caller.
struct WaitError(FabricError);

impl WaitError {
    fn named(self, what: &str) -> FabricError {
        match self.0 {
            FabricError::NotReady {
                waited, log, tail, ..
            } => FabricError::NotReady {
                what: what.into(),
                waited,
                log,
                tail,
            },
            FabricError::Exited {
                status, log, tail, ..
            } => FabricError::Exited {
                what: what.into(),
                status,
                log,
                tail,
            },
            other => other,
        }
    }
}

/// Waits until `log` contains `marker`, failing early if `exited` reports
/// that the writer ended.
fn wait_for_log(
    log: &Path,
    marker: &str,
    timeout: Duration,
    mut exited: impl FnMut() -> io::Result<Option<ExitStatus>>,
) -> Result<(), WaitError> {
    let start = Instant::now();
    loop {
        if fs::read_to_string(log).is_ok_and(|t| t.contains(marker)) {
            return Ok(());
        }
        if let Ok(Some(status)) = exited() {
            return Err(WaitError(FabricError::Exited {
                what: String::new(),
                status,
                log: log.to_owned(),
                tail: tail(log, TAIL_LINES),
            }));
        }
        if start.elapsed() > timeout {
            return Err(WaitError(FabricError::NotReady {
                what: String::new(),
                waited: timeout,
                log: log.to_owned(),
                tail: tail(log, TAIL_LINES),
            }));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A running simulated fabric. Everything it started is stopped, by
/// process group, when it is dropped, also while a test panics; its
/// directory (topology, logs) is then removed unless the test panicked or
/// `LOCAL_SA_KEEP_FABRIC` is set.
///
/// Processes started on nodes die with the thread that started them, so a
/// test run that is killed outright leaves nothing behind either.
#[derive(Debug)]
pub struct SimulatedFabric {
    topology: Topology,
    dir: PathBuf,
    sockname: String,
    preload: PathBuf,
    ibsim: Mutex<Group>,
    console: Mutex<ChildStdin>,
    opensm: Mutex<Option<Group>>,
    opensm_node: String,
    opensm_config: Vec<String>,
    opensm_files: Vec<(String, String)>,
    opensm_args: Vec<String>,
    ready_timeout: Duration,
    commands: AtomicUsize,
}

impl SimulatedFabric {
    /// Starts configuring a fabric on `topology`.
    pub fn builder(topology: Topology) -> FabricBuilder {
        FabricBuilder {
            topology,
            opensm_node: None,
            opensm_config: Vec::new(),
            opensm_files: Vec::new(),
            opensm_args: Vec::new(),
            ready_timeout: Duration::from_secs(90),
        }
    }

    /// The fabric's topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The fabric's directory: topology, logs, one directory per command.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes ibsim let go of `node`'s clients that died without a word
    /// (SIGKILL): it forgets a client only when a write to it fails, and
    /// until then refuses another SM-marked client on the node ("SM
    /// already exists"). A request from the master's node to `node`'s LID
    /// is such a write.
    pub fn forget_dead_clients(&self, node: &str) -> Result<(), FabricError> {
        let lid = self.node(node)?.port()?.lid;
        self.node(&self.opensm_node)?
            .lsaquery()
            .args([
                "--sa-lid",
                &lid.to_string(),
                "--timeout",
                "300",
                "--retries",
                "0",
                "-c",
            ])
            .timeout(Duration::from_secs(20))
            .output()?;
        Ok(())
    }

    /// The `IBSIM_SOCKNAME` of this fabric.
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// The umad2sim library every node's program preloads.
    pub fn preload(&self) -> &Path {
        &self.preload
    }

    /// The node OpenSM runs on.
    pub fn opensm_node(&self) -> &str {
        &self.opensm_node
    }

    /// OpenSM's working directory (its dump files land here).
    pub fn opensm_dir(&self) -> PathBuf {
        self.dir.join("opensm")
    }

    /// OpenSM's log file.
    pub fn opensm_log(&self) -> PathBuf {
        self.dir.join("opensm").join("opensm.log")
    }

    /// A channel adapter of the fabric, to run commands on.
    pub fn node(&self, name: &str) -> Result<Node<'_>, FabricError> {
        if !self.topology.has_hca(name) {
            return Err(unknown_node(&self.topology, name));
        }
        Ok(Node {
            fabric: self,
            name: name.to_owned(),
        })
    }

    /// Starts OpenSM (if it is not running) and waits until its SA answers.
    pub fn start_opensm(&self) -> Result<(), FabricError> {
        let mut slot = self.opensm.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = slot.as_mut()
            && matches!(g.try_wait(), Ok(None))
        {
            return Ok(());
        }
        let osm_dir = self.dir.join("opensm");
        fs::create_dir_all(&osm_dir).map_err(io_err("creating the OpenSM directory"))?;
        let out = File::create(osm_dir.join("stdout.log"))
            .map_err(io_err("creating OpenSM's stdout log"))?;
        for (name, text) in &self.opensm_files {
            fs::write(osm_dir.join(name), text)
                .map_err(io_err(format!("writing OpenSM's {name}")))?;
        }
        let mut cmd = command_dying_with_parent("opensm");
        if !self.opensm_config.is_empty() {
            let conf = osm_dir.join("opensm.conf");
            fs::write(&conf, self.opensm_config.join("\n") + "\n")
                .map_err(io_err("writing the OpenSM configuration"))?;
            cmd.arg("-F").arg(conf);
        }
        cmd.args(&self.opensm_args);
        cmd.args(["-d0", "-d2", "-f"])
            .arg(self.opensm_log())
            .current_dir(&osm_dir)
            .env("LD_PRELOAD", &self.preload)
            .env("SIM_HOST", &self.opensm_node)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env("OSM_TMP_DIR", &osm_dir)
            .env("OSM_CACHE_DIR", &osm_dir)
            .env("GLIBC_TUNABLES", OPENSM_ZEROED_MALLOC)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null());
        *slot = Some(Group::spawn(cmd, "opensm").map_err(io_err("starting opensm"))?);
        drop(slot);
        self.wait_sa_ready()
    }

    /// Stops OpenSM (the fabric keeps its configuration; the SA is gone).
    pub fn stop_opensm(&self) {
        let group = self.opensm.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(group);
    }

    /// Stops OpenSM and starts it again, waiting until its SA answers.
    pub fn restart_opensm(&self) -> Result<(), FabricError> {
        self.stop_opensm();
        self.start_opensm()
    }

    /// PID of ibsim.
    pub fn ibsim_pid(&self) -> u32 {
        self.ibsim.lock().map_or(0, |g| g.pid())
    }

    /// PID of the running OpenSM, if any.
    pub fn opensm_pid(&self) -> Option<u32> {
        self.opensm.lock().ok()?.as_ref().map(Group::pid)
    }

    /// Runs `f` with OpenSM stopped (SIGSTOP: it neither answers nor
    /// goes away, as a master that hangs), then lets it go on.
    pub fn with_opensm_frozen<T>(&self, f: impl FnOnce() -> T) -> T {
        self.signal_opensm("-STOP");
        let out = f();
        self.signal_opensm("-CONT");
        out
    }

    /// Tells OpenSM to read its configuration again (SIGHUP: it rescans
    /// its options and sweeps heavily, reading its QoS policy and
    /// partitions again), as an administrator who edited them does.
    pub fn hang_up_opensm(&self) {
        self.signal_opensm("-HUP");
    }

    /// Sends OpenSM the signal `name` (`-STOP`, `-HUP`, ...).
    fn signal_opensm(&self, name: &str) {
        let opensm = self.opensm_pid().expect("OpenSM runs").to_string();
        let status = std::process::Command::new("kill")
            .args([name, &opensm])
            .status()
            .unwrap();
        assert!(status.success(), "kill {name} {opensm}");
    }

    /// Polls `saquery -c` on OpenSM's node until it succeeds.
    fn wait_sa_ready(&self) -> Result<(), FabricError> {
        let start = Instant::now();
        let node = self.node(&self.opensm_node)?;
        loop {
            if let Some(status) = self.opensm_exit_status() {
                return Err(FabricError::Exited {
                    what: "opensm".into(),
                    status,
                    log: self.opensm_log(),
                    tail: tail(&self.opensm_log(), TAIL_LINES),
                });
            }
            let probe = node
                .command("saquery")
                .arg("-c")
                .timeout(Duration::from_secs(5))
                .output();
            if probe.is_ok_and(|o| o.status.success()) {
                return Ok(());
            }
            if start.elapsed() > self.ready_timeout {
                return Err(FabricError::NotReady {
                    what: "OpenSM's SA".into(),
                    waited: self.ready_timeout,
                    log: self.opensm_log(),
                    tail: tail(&self.opensm_log(), TAIL_LINES),
                });
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    fn opensm_exit_status(&self) -> Option<ExitStatus> {
        let mut slot = self.opensm.lock().ok()?;
        slot.as_mut()?.try_wait().ok().flatten()
    }

    /// Sends one line to ibsim's console (for example `Unlink "h3"[1]`).
    pub fn console(&self, line: &str) -> Result<(), FabricError> {
        let mut stdin = self.console.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(io_err(format!("sending {line:?} to the ibsim console")))
    }

    /// Takes a node's port off the fabric, as if its cable were pulled.
    pub fn unlink(&self, node: &str, port: u8) -> Result<(), FabricError> {
        self.console(&format!("Unlink \"{node}\"[{port}]"))
    }

    /// Puts a port back that [`SimulatedFabric::unlink`] took off.
    pub fn relink(&self, node: &str, port: u8) -> Result<(), FabricError> {
        self.console(&format!("ReLink \"{node}\"[{port}]"))
    }

    /// Makes a port drop `percent` % of the packets through it.
    pub fn set_drop_rate(&self, node: &str, port: u8, percent: u8) -> Result<(), FabricError> {
        self.console(&format!("Error \"{node}\"[{port}] {percent}"))
    }

    fn next_command_dir(&self, node: &str, program: &OsStr) -> Result<PathBuf, FabricError> {
        let n = self.commands.fetch_add(1, Ordering::Relaxed);
        let program = Path::new(program)
            .file_name()
            .unwrap_or(program)
            .to_string_lossy();
        let dir = self
            .dir
            .join("run")
            .join(format!("{n:04}-{node}-{program}"));
        fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
        Ok(dir)
    }
}

impl Drop for SimulatedFabric {
    fn drop(&mut self) {
        self.stop_opensm();
        if let Ok(ibsim) = self.ibsim.get_mut() {
            ibsim.stop(Duration::from_secs(3));
        }
        if thread::panicking() || std::env::var_os("LOCAL_SA_KEEP_FABRIC").is_some() {
            eprintln!("fabric logs kept in {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// A channel adapter of a [`SimulatedFabric`].
#[derive(Debug, Clone)]
pub struct Node<'f> {
    fabric: &'f SimulatedFabric,
    name: String,
}

impl<'f> Node<'f> {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command to run on this node: attached to the fabric through the
    /// preload, in a fresh working directory (umad2sim writes the node's
    /// sysfs there).
    pub fn command(&self, program: impl AsRef<OsStr>) -> NodeCommand<'f> {
        NodeCommand {
            fabric: self.fabric,
            node: self.name.clone(),
            program: crate::tools::resolve(program.as_ref()),
            unavailable: None,
            args: Vec::new(),
            envs: Vec::new(),
            timeout: Duration::from_secs(60),
            sockets: Vec::new(),
            closed_stdout: false,
            mount_setup: None,
        }
    }

    /// A command running this workspace's program `name` (`local-sa` or
    /// `lsaquery`, see [`crate::program`]) on this node; if it cannot be
    /// built, running the command says why.
    pub fn workspace_program(&self, name: &str) -> NodeCommand<'f> {
        let mut cmd = self.command(name);
        match crate::tools::program(name) {
            Ok(path) => cmd.program = path.into_os_string(),
            Err(why) => cmd.unavailable = Some(why),
        }
        cmd
    }

    /// lsaquery on this node: `workspace_program("lsaquery")`.
    pub fn lsaquery(&self) -> NodeCommand<'f> {
        self.workspace_program("lsaquery")
    }

    /// The node's port as `ibstat` reports it (LID, SM LID, port GUID).
    pub fn port(&self) -> Result<NodePort, FabricError> {
        let out = self
            .command("ibstat")
            .timeout(Duration::from_secs(20))
            .output()?;
        let field = |name: &str| {
            out.stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .and_then(crate::saquery::parse_number)
                .ok_or_else(|| FabricError::Io {
                    context: format!("ibstat on {}", self.name),
                    source: io::Error::other(format!(
                        "no {name:?} in:\n{}{}",
                        out.stdout, out.stderr
                    )),
                })
        };
        Ok(NodePort {
            lid: field("Base lid:")? as u16,
            sm_lid: field("SM lid:")? as u16,
            guid: field("Port GUID:")?,
        })
    }

    /// Runs `saquery` with `args` on this node.
    pub fn saquery<I, S>(&self, args: I) -> Result<RunOutput, FabricError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command("saquery")
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
    }
}

/// A node's port facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePort {
    /// Base LID.
    pub lid: u16,
    /// The SM's LID.
    pub sm_lid: u16,
    /// Port GUID (the default-prefix GID's interface ID).
    pub guid: u64,
}

/// A command about to run on a node. See [`Node::command`].
#[derive(Debug)]
pub struct NodeCommand<'f> {
    fabric: &'f SimulatedFabric,
    node: String,
    program: OsString,
    /// Why `program` cannot run (it could not be built).
    unavailable: Option<String>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    timeout: Duration,
    /// Sockets the program inherits as systemd passes them, with names.
    sockets: Vec<(String, std::os::fd::OwnedFd)>,
    /// Standard output a pipe nobody reads ([`NodeCommand::closed_stdout`]).
    closed_stdout: bool,
    /// Shell commands run first in a private mount namespace
    /// ([`NodeCommand::in_private_mounts`]).
    mount_setup: Option<String>,
}

impl<'f> NodeCommand<'f> {
    /// Passes `socket` to the program as systemd's socket activation
    /// (or its descriptor store) does: descriptors 3, 4, … in the order
    /// passed, `LISTEN_FDS`, `LISTEN_FDNAMES` (`name`s joined with `:`)
    /// and `LISTEN_PID` (set by a shell that then becomes the program).
    pub fn pass_socket(mut self, name: &str, socket: std::os::fd::OwnedFd) -> Self {
        self.sockets.push((name.to_owned(), socket));
        self
    }

    /// Runs the program in a private mount namespace (`unshare --mount`,
    /// root) after the shell commands `setup` (mounts that only it sees:
    /// a fake sysfs directory, say). The program keeps the shell's PID.
    pub fn in_private_mounts(mut self, setup: &str) -> Self {
        self.mount_setup = Some(setup.to_owned());
        self
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Marks the process as an SM port so that ibsim delivers unsolicited
    /// requests (SA queries, Reports) to it: what any server needs.
    pub fn serve_requests(self) -> Self {
        self.env("SIM_SET_ISSM", "1")
    }

    /// Standard output is a pipe whose reader has already gone (`| head`
    /// at its worst): every write to it fails with EPIPE. Nothing of it
    /// is captured.
    pub fn closed_stdout(mut self) -> Self {
        self.closed_stdout = true;
        self
    }

    /// Time limit for [`NodeCommand::output`] (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn prepare(&mut self) -> Result<(std::process::Command, PathBuf), FabricError> {
        if let Some(why) = &self.unavailable {
            return Err(FabricError::Program {
                name: self.program.to_string_lossy().into_owned(),
                why: why.clone(),
            });
        }
        let dir = self.fabric.next_command_dir(&self.node, &self.program)?;
        let stdout = File::create(dir.join("stdout")).map_err(io_err("creating stdout file"))?;
        let stderr = File::create(dir.join("stderr")).map_err(io_err("creating stderr file"))?;
        let sockets = std::mem::take(&mut self.sockets);
        let mut cmd = if sockets.is_empty() && self.mount_setup.is_none() {
            command_dying_with_parent(&self.program)
        } else {
            // The shell's PID is the program's after `exec` (unshare
            // without --fork execs in place too).
            let listen = if sockets.is_empty() {
                ""
            } else {
                "LISTEN_PID=$$ "
            };
            let script = format!(
                "set -e\n{}\n{listen}exec \"$0\" \"$@\"",
                self.mount_setup.as_deref().unwrap_or("")
            );
            let mut cmd = match &self.mount_setup {
                Some(_) => {
                    let mut cmd = command_dying_with_parent("unshare");
                    cmd.args(["--mount", "--propagation", "private", "sh"]);
                    cmd
                }
                None => command_dying_with_parent("sh"),
            };
            cmd.arg("-c").arg(script).arg(&self.program);
            if !sockets.is_empty() {
                let names: Vec<&str> = sockets.iter().map(|(n, _)| n.as_str()).collect();
                cmd.env("LISTEN_FDS", sockets.len().to_string())
                    .env("LISTEN_FDNAMES", names.join(":"));
                umad::process::pass_as_inherited(
                    &mut cmd,
                    sockets.into_iter().map(|(_, fd)| fd).collect(),
                );
            }
            cmd
        };
        cmd.args(&self.args)
            .current_dir(&dir)
            .env("LD_PRELOAD", &self.fabric.preload)
            .env("SIM_HOST", &self.node)
            .env("IBSIM_SOCKNAME", &self.fabric.sockname)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        if self.closed_stdout {
            let (reader, writer) = io::pipe().map_err(io_err("creating a pipe"))?;
            drop(reader);
            cmd.stdout(writer);
        }
        Ok((cmd, dir))
    }

    fn describe(&self) -> String {
        let args: Vec<_> = self.args.iter().map(|a| a.to_string_lossy()).collect();
        format!(
            "`{} {}` on {}",
            self.program.to_string_lossy(),
            args.join(" "),
            self.node
        )
    }

    /// Runs the command to completion and captures its output. A command
    /// still running at the time limit is stopped and reported as
    /// [`FabricError::Timeout`].
    pub fn output(mut self) -> Result<RunOutput, FabricError> {
        let (cmd, dir) = self.prepare()?;
        let mut group = Group::spawn(cmd, self.describe()).map_err(io_err(self.describe()))?;
        let status = group
            .wait_timeout(self.timeout)
            .map_err(io_err(self.describe()))?;
        let Some(status) = status else {
            group.stop(Duration::from_millis(500));
            return Err(FabricError::Timeout {
                what: self.describe(),
                after: self.timeout,
                stderr: tail(&dir.join("stderr"), TAIL_LINES),
            });
        };
        Ok(RunOutput {
            status,
            stdout: fs::read_to_string(dir.join("stdout")).unwrap_or_default(),
            stderr: fs::read_to_string(dir.join("stderr")).unwrap_or_default(),
        })
    }

    /// Starts the command and returns at once. The process is stopped when
    /// the handle is dropped.
    pub fn spawn(mut self) -> Result<NodeProcess<'f>, FabricError> {
        let (cmd, dir) = self.prepare()?;
        let group = Group::spawn(cmd, self.describe()).map_err(io_err(self.describe()))?;
        Ok(NodeProcess {
            group,
            dir,
            _fabric: PhantomData,
        })
    }
}

/// What a finished command printed.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// A process running on a node, stopped (with its process group) when
/// dropped. It cannot outlive its fabric.
#[derive(Debug)]
pub struct NodeProcess<'f> {
    group: Group,
    dir: PathBuf,
    _fabric: PhantomData<&'f SimulatedFabric>,
}

impl NodeProcess<'_> {
    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// Its working directory, which holds files `stdout` and `stderr`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What it has written to standard error so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// What it has written to standard output so far.
    pub fn stdout(&self) -> String {
        fs::read_to_string(self.dir.join("stdout")).unwrap_or_default()
    }

    /// Its exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.group.try_wait().ok().flatten()
    }

    /// Waits up to `timeout` for it to exit on its own.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.group.wait_timeout(timeout).ok().flatten()
    }

    /// Sends SIGTERM to its group and waits up to `grace` before SIGKILL.
    pub fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        self.group.stop(grace);
        self.group.try_wait().ok().flatten()
    }

    /// Kills it and its group at once (SIGKILL), as a crash would: it gets
    /// no chance to clean up.
    pub fn kill(mut self) {
        self.group.kill();
    }

    /// Sends `signal` (a name kill(1) knows: HUP, USR1, ...) to its group.
    pub fn signal(&self, signal: &str) {
        self.group.signal(signal);
    }

    /// What the process is, for messages.
    pub fn label(&self) -> &str {
        self.group.label()
    }
}
