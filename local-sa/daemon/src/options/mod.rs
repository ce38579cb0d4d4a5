//! The daemon's settings: command-line options, preceded by a TOML config
//! file of the same settings (config_file.rs). The command line wins.

pub(crate) mod acm_options;
mod config_file;
pub(crate) mod effective;
pub(crate) mod sample;
mod suggest;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{CommandFactory, Parser};

use local_sa_core::pacing::MasterPace;
use local_sa_core::quota::RegistrationLimits;
use local_sa_core::{AgentConfig, QosCacheLimits, SmKey};

use crate::sm_key_file;
use acm_options::AcmOptions;
use config_file::{FileError, FileSetting};
use local_sa_cli::number;

/// The headings `--help` lists the options under, by task.
const SETTINGS: &str = "Ports and settings";
const ANSWERING: &str = "Answering from the cache";
const LOADS: &str = "Loads";
const REGISTRATIONS: &str = "Registrations at the master";
const DOORS: &str = "Local doors: the API, ibacm's protocol, the kernel's queries";
const OBSERVING: &str = "Counters and logs";

/// Serve SA PathRecord queries from a local cache, on this node's ports.
///
/// local-sa registers as the Subnet Administration agent on QP1 of each
/// active InfiniBand port of the node (or of the adapter and port given
/// with -C/-P), with a cache, registrations and local API socket per port
/// and one ibacm-protocol door for all of them. It answers PathRecord Get/GetTable exactly as the
/// master SA (OpenSM) would, from records fetched from the master at start,
/// on SM changes and every --refresh-interval; what it cannot answer it
/// forwards to the master (one query per distinct question, however many
/// ask). It accepts PathRecord loads and deletes (Set/Delete carrying the
/// --sm-key; see docs/wire-contract.md) and follows ports going out of and
/// into service through traps 64/65. It proxies notice subscriptions
/// (InformInfo) and multicast joins (MCMemberRecord) from this node's
/// consumers — MAD clients, and programs on the local API — to the master
/// with one registration per distinct subscription or group, released when
/// the last consumer goes and re-sent when the master changes or restarts.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "local-sa",
    version,
    args_override_self = true,
    after_help = "\
The common options; --help lists every option under the same headings,
with the config file, local API, counters, logs, signals, kept tables,
files and exit status. Manual: local-sa(8), local-sa.toml(5).",
    after_long_help = "\
CONFIG FILE:
  Settings are read first from /etc/local-sa/local-sa.toml, if it exists,
  or from --config FILE: TOML whose keys are the long options' names
  (refresh-interval = 300, sm-key-file = \"/etc/local-sa/sm_key\",
  acm-socket = [\"/run/a.sock\"]); local-sa.toml(5) and the commented
  sample, local-sa.toml, list them all. An option on the command line
  replaces the file's. Errors name the file, line, column and key.
  local-sa --check-config checks them all and prints the settings in
  effect, with where each came from, as a config file.

LOCAL API:
  Programs on this node that cannot open the umad device ask for paths,
  notices and multicast memberships over a Unix socket (--api-socket,
  default /run/local-sa/<ca>-<port>.sock; docs/local-api.md). Whatever a
  connection subscribed to or joined is released when it closes.

COUNTERS:
  Every --stats-interval the daemon rewrites --stats-file (default
  /run/local-sa/<ca>-<port>.counters) with `name value` lines: hits,
  misses, coalesced, upstream_queries, loaded, deleted, denied, errors,
  rmpp_transfers, records, ... Read it with cat; it is replaced whole.
  --metrics ADDR serves the same counters to Prometheus (GET /metrics).

LOGS:
  To stderr; --log-level (else RUST_LOG, else info) sets the level, e.g.
  --log-level local_sa=debug for every query forwarded. Under systemd
  (stderr is the journal: JOURNAL_STREAM), to the journal directly, each
  event's fields as journal fields (F_PORT=..., journalctl -o verbose).

SIGNALS:
  SIGTERM or SIGINT: withdraw this port's subscriptions, memberships and
  canary ServiceRecord at the master, write the counters, exit 0. A
  second one exits at once.
  SIGHUP: read the command line's config file (and the SM_Key file and
  ibacm hosts file) again and apply what can change while running: log
  level, SM_Key, time-outs, intervals and lifetimes, connection limits,
  host names. Records, subscriptions, memberships and connections stay.
  A file with errors changes nothing (the log says why); settings that
  need a restart (ports, sockets, directories) are named in the log.

KEPT TABLES:
  <run-dir>/<ca>-<port>.tables keeps the port's tables, stamped with the
  master and any distributor's lease, rewritten as they change. A
  local-sa started after a restart or a crash answers from them at once,
  without asking the master for its table, if they are the port's, from
  the same master, no older than --refresh-interval (or under a lease
  still running) and no fabric change awaited a refresh; a few of their
  paths are then checked against the master.

REGISTRATIONS RECORD:
  <run-dir>/<ca>-<port>.registrations lists what local-sa asked the master
  SA to hold for the port. A local-sa that ends without withdrawing it
  (SIGKILL, a crash) leaves it there; the next one on the port removes
  whatever nobody holds any more. A clean exit removes the file.

FILES:
  /etc/local-sa/local-sa.toml          settings (local-sa.toml(5))
  /run/local-sa/<ca>-<port>.lock       one local-sa per port
  /run/local-sa/<ca>-<port>.sock       the port's local API socket
  /run/local-sa/<ca>-<port>.counters   the port's counters
  /run/local-sa/<ca>-<port>.registrations  what the master holds for it
  /run/local-sa/<ca>-<port>.tables     its tables, kept for a restart
  /run/ibacm-unix.sock, /run/ibacm.sock  the ibacm protocol's sockets
  /etc/rdma/ibacm_hosts.data, /etc/rdma/ibacm_addr.cfg  ibacm's names
  /dev/infiniband/umad*                the ports' MAD devices

EXIT STATUS:
  0 stopped by SIGTERM or SIGINT, or --check-config/--generate done;
  2 the settings are wrong (command line, config file, SM_Key file);
  3 it could not start or went on no longer (no usable port, a port
  another local-sa serves, a socket it cannot bind).

EXAMPLES:
  local-sa                                 every active port, defaults
  local-sa -C mlx5_0 -P 1 --sm-key 0xbeef  a given port and SM_Key
  local-sa --config ./test.toml --check-config
  lsaquery -p --sgid-to-dgid A-B           ask it (lsaquery's default SA
                                           is this node's local-sa)"
)]
pub(crate) struct Options {
    /// Channel adapter to serve (default: every one with an active port).
    ///
    /// Channel adapter to serve (default: every adapter with an active
    /// InfiniBand port): its active ports, or the one -P names.
    #[arg(short = 'C', long, value_name = "CA", help_heading = SETTINGS)]
    pub(crate) ca: Option<String>,
    /// Port of that adapter to serve (default: its active ports).
    ///
    /// Port to serve (of -C's adapter, else of the first adapter that has
    /// it); only that port.
    #[arg(short = 'P', long, value_name = "N", help_heading = SETTINGS)]
    pub(crate) port: Option<u8>,
    /// Settings file read before the command line (default /etc/local-sa/local-sa.toml).
    ///
    /// Read settings from FILE before the command line (see CONFIG
    /// FILE); default /etc/local-sa/local-sa.toml if it exists; "none"
    /// reads none.
    #[arg(short = 'c', long, value_name = "FILE", help_heading = SETTINGS)]
    pub(crate) config: Option<PathBuf>,
    /// Check the settings, print those in effect with their sources, and exit.
    ///
    /// Check the config file and the command line, print the settings in
    /// effect (as a config file, each with where it came from) and exit:
    /// 0 if they are good, 2 with the first mistake if not. Starts
    /// nothing.
    #[arg(long, help_heading = SETTINGS)]
    pub(crate) check_config: bool,
    /// Print a manual page (man: local-sa(8); config-man:
    /// local-sa.toml(5)), the commented sample config file (config), the
    /// catalogue of --metrics' metrics in Markdown (metrics) or a shell's
    /// completion script (bash, zsh, fish) and exit.
    #[arg(long, value_name = "WHAT", value_parser = GENERATE, help_heading = SETTINGS, hide_short_help = true)]
    pub(crate) generate: Option<String>,
    /// Directory of each port's lock (<ca>-<port>.lock: one local-sa per
    /// port) and, by default, its local API socket and counters file.
    #[arg(long, value_name = "DIR", default_value = "/run/local-sa", help_heading = SETTINGS, hide_short_help = true)]
    pub(crate) run_dir: PathBuf,
    /// A service unit of a subnet manager: where one is enabled or runs, leave it the SA class.
    ///
    /// A service unit that runs a subnet manager; repeatable (default
    /// opensm.service; "none": no unit). Where one is enabled or active on
    /// this node, local-sa leaves every port's SA class to the SM: it
    /// answers no SA request on QP1 and takes no loads there, and serves
    /// its other doors from a cache it fetches as the master's client. So
    /// it does too where the port's IsSM capability is set, or the master
    /// at the port's own LID answers.
    #[arg(long = "sm-unit", value_name = "UNIT", help_heading = SETTINGS)]
    pub(crate) sm_units: Vec<String>,
    /// Seconds after start at which local-sa tells systemd it is ready
    /// (Type=notify) even if a port has no paths yet (it serves meanwhile,
    /// forwarding its queries to the master); it says so as soon as every
    /// port has its first table. 0 waits for the tables however long.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "60", help_heading = SETTINGS, hide_short_help = true)]
    pub(crate) ready_timeout: u64,
    /// Seconds between port checks where no verbs device reports port
    /// events (the simulator).
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "2", help_heading = SETTINGS, hide_short_help = true)]
    pub(crate) port_poll_interval: u64,
    /// Milliseconds each request to the master SA waits for its answer.
    #[arg(long, value_name = "MS", value_parser = number::<u64>, default_value = "1000", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) upstream_timeout: u64,
    /// Attempts after the first for requests to the master SA.
    #[arg(long, value_name = "N", value_parser = number::<u32>, default_value = "3", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) upstream_retries: u32,
    /// Milliseconds each attempt of a request for a whole table (this
    /// port's paths, the names, a QoS table at a key) waits, plus this
    /// port's share of half as long again: when a whole fabric starts at
    /// once the master queues every port's table, and giving up on one it
    /// is still to answer would cost it the table twice.
    #[arg(long, value_name = "MS", value_parser = number::<u64>, default_value = "12000", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) table_timeout: u64,
    /// Seconds between refreshes of this port's paths from the master.
    ///
    /// Seconds between full refreshes of this port's paths, at least: on
    /// a fabric whose N² paths would take more than --master-share of the
    /// master's time at this interval, longer (the log and `lsaquery
    /// --status` say how long, and the worst staleness it implies). While
    /// a distributor's lease runs (`lsaquery --distribute --watch`) the
    /// port does not refresh at all.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "600", help_heading = ANSWERING)]
    pub(crate) refresh_interval: u64,
    /// Nanoseconds of the master's time per record it puts in a
    /// whole-table answer (a path, a host of a names table), for
    /// --master-share (OpenSM: about 250 a path measured under the
    /// simulator, 1,700 reported on a busy master).
    #[arg(long, value_name = "NS", value_parser = number::<u64>, default_value = "1000", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) master_path_cost: u64,
    /// Percent of the master's time the periodic refreshes of the
    /// fabric's local-sa nodes may take together: each port refreshes (its
    /// table, then its two names tables) no more often than every 3 × N²
    /// × --master-path-cost / this (N: the fabric's ports). 0: no
    /// periodic refresh more often than daily.
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100), default_value = "5", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) master_share: u8,
    /// Seconds after a notice that a switch port's link went up or down
    /// (trap 128: the master sweeps and may reroute) before a port that
    /// keeps its own tables refreshes them, plus its share of the refresh
    /// window (and no sooner than --master-share allows).
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "5", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) change_settle: u64,
    /// Seconds between polls of the master SM's SMInfoRecord by a port
    /// that keeps its own tables: a rise of its ActCount well past what
    /// its light sweeps send is a heavy sweep (a link went up or down),
    /// taken as that notice would be when the notice itself was lost on
    /// the way (OpenSM sends it before it reroutes). One small record a
    /// poll, no more often than the fabric's polls together take a fifth
    /// of --master-share of the master's time (at 10,000 ports with the
    /// default share: every 20 s); none while a distributor's lease runs.
    /// 0: no polls.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "30", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) sweep_poll: u64,
    /// Seconds between checks of a table this port did not fetch itself
    /// (a distributor's, its QoS tables included): a few of its paths
    /// asked again of the master and compared; a difference and the port
    /// fetches its own tables (in a QoS table: the distributor's QoS
    /// tables are forgotten, each pair then asked of the master).
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "21600", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) check_interval: u64,
    /// Seconds a failed refresh or subscription waits before trying again;
    /// a refresh that fails again also waits this port's share of a
    /// window that doubles each time (ports turned away together come
    /// back spread).
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "5", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) retry_backoff: u64,
    /// Seconds the master's answer to a forwarded query is reused.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "60", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) answer_ttl: u64,
    /// Seconds a forwarded query's "no such record" is reused.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "5", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) negative_ttl: u64,
    /// Port pairs the QoS cache keeps: each pair's paths as the master
    /// gives them for a ServiceID, QoS class or P_Key its QoS policy
    /// matches on (or for another partition), asked once and kept until
    /// the fabric changes; the least recently used go first when full.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "65536", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) qos_cache_entries: usize,
    /// Bytes the QoS cache may hold (about 150 per port pair).
    #[arg(long, value_name = "BYTES", value_parser = number::<usize>, default_value = "16777216", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) qos_cache_bytes: usize,
    /// Seconds between checks that the master still holds this port's
    /// registrations (a master restarted without a port event is noticed
    /// this way; docs/wire-contract.md). Each port takes its own phase
    /// within the interval, so that nodes started together do not ask
    /// together.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "180", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) audit_interval: u64,
    /// PathRecords per second the fabric's local-sa nodes together may ask
    /// a new master SA to compute when they refresh after an SM change:
    /// each port waits its own share of a window of N² / this (N: the
    /// fabric's ports), 1 s to 5 min, serving what it holds meanwhile.
    #[arg(long, value_name = "N", value_parser = number::<u32>, default_value = "250000", help_heading = ANSWERING, hide_short_help = true)]
    pub(crate) master_paths_per_second: u32,
    /// SM_Key that PathRecord loads and deletes must carry; others are
    /// refused with ERR_REQ_DENIED. There is no default: until a key is
    /// given, every load and delete is refused. Prefer --sm-key-file (the
    /// command line shows in `ps`).
    #[arg(long, value_name = "KEY", value_parser = number::<u64>, conflicts_with = "sm_key_file", help_heading = LOADS, hide_short_help = true)]
    pub(crate) sm_key: Option<u64>,
    /// File with the SM_Key loads must carry (the key, or OpenSM's opensm.conf: its sa_key).
    ///
    /// Read the SM_Key from FILE, which only its owner may read: the key
    /// alone, or an OpenSM configuration file, whose `sa_key` is the key
    /// (the one OpenSM's SA trusts and a distributor's loads carry; share
    /// the master's /etc/opensm/opensm.conf).
    #[arg(long, value_name = "FILE", help_heading = LOADS)]
    pub(crate) sm_key_file: Option<PathBuf>,
    /// Seconds the first refresh waits at start for a load of this port's
    /// paths (from a distributor next to the master, or `lsaquery --load
    /// FILE --replace`) before asking the master itself (plus this port's
    /// share of a quarter as long again, so that the ports a distributor
    /// has not reached do not all ask at once); a load of this
    /// port's paths always counts as a refresh. 0 asks at once.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "0", help_heading = LOADS, hide_short_help = true)]
    pub(crate) load_wait: u64,
    /// Subscription and membership requests per second the fabric's
    /// local-sa nodes together may send the master SA. Each port sends
    /// every registration (its consumers' joins, leaves and
    /// subscriptions, and their withdrawal when a consumer goes) at its
    /// share, this / N a second (N: the fabric's ports; at least 1 a
    /// second), after a burst of 32, with at most 16 out at once; after
    /// an SM change each port registers again at its own point of a
    /// window of N × (its own registrations) / this, 1 s to 5 min.
    #[arg(long, value_name = "N", value_parser = number::<u32>, default_value = "5000", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) master_registrations_per_second: u32,
    /// Seconds a multicast member that joined by MAD is kept without
    /// joining again.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "600", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) member_lease: u64,
    /// Distinct multicast groups one user's local API connections (or one
    /// port's MAD members) may hold through local-sa, those being joined
    /// included; a join of one more is refused with ERR_NO_RESOURCES.
    /// Root and local-sa's own user may hold 16 times as many. A group
    /// many of a user's processes join counts once.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "64", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) max_groups_per_user: usize,
    /// Of those, groups one user's joins may create at the master (each
    /// takes one of the fabric's multicast LIDs, of which OpenSM has about
    /// a thousand); root and local-sa's own user 16 times as many.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "16", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) max_group_creations_per_user: usize,
    /// Distinct notice subscriptions (InformInfo filters) one user's local
    /// API connections (or one subscriber port's MADs) may hold through
    /// local-sa; root and local-sa's own user 16 times as many.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "256", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) max_subscriptions_per_user: usize,
    /// The local API's Unix socket (default <run-dir>/<ca>-<port>.sock);
    /// "none" serves no local API.
    #[arg(long, value_name = "PATH", help_heading = DOORS, hide_short_help = true)]
    pub(crate) api_socket: Option<PathBuf>,
    /// File mode of the API socket, octal: who may connect (ib_usa's
    /// default, 0666, lets every local user; 0660 with --api-group limits
    /// it to a group).
    #[arg(long, value_name = "MODE", value_parser = octal, default_value = "666", help_heading = DOORS, hide_short_help = true)]
    pub(crate) api_mode: u32,
    /// Numeric group ID to give the API socket.
    #[arg(long, value_name = "GID", help_heading = DOORS, hide_short_help = true)]
    pub(crate) api_group: Option<u32>,
    /// Unix socket for ibacm's protocol; repeatable (default: ibacm's two; "none").
    ///
    /// A Unix socket to serve ibacm's client protocol on (ib_acme,
    /// libibacm, librdmacm); repeatable. Default: ibacm's two,
    /// /run/ibacm-unix.sock (ib_acme) and /run/ibacm.sock (librdmacm),
    /// where the daemon may create them; "none" serves no ibacm protocol.
    #[arg(long = "acm-socket", value_name = "PATH", help_heading = DOORS)]
    pub(crate) acm_sockets: Vec<PathBuf>,
    /// ibacm's hosts file (`address GID` lines: names and IP addresses of
    /// hosts); default: the one ibacm's options file names with
    /// `addr_preload acm_hosts` (as ibacm, which reads none otherwise);
    /// "none" reads none.
    #[arg(long, value_name = "FILE", help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_hosts: Option<PathBuf>,
    /// ibacm's options file, read so that a node moving from ibacm keeps
    /// its settings: server_mode, server_port, acme_plus_kernel_only,
    /// addr_preload/addr_data_file, timeout, retries and log_level become
    /// the options here that do the same (local-sa's config file and
    /// command line win); the rest are named in the log. Default
    /// /etc/rdma/ibacm_opts.cfg if it exists; "none" reads none.
    #[arg(long, value_name = "FILE", help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_options: Option<PathBuf>,
    /// How ibacm's clients reach the ibacm door, as ibacm's server_mode:
    /// "unix" on its Unix sockets (--acm-socket), "loop" on TCP at
    /// 127.0.0.1, "open" on TCP at every address of the host (anyone who
    /// can reach it may ask). With TCP, the port goes into ibacm-tcp.port
    /// (ib_acme) and ibacm.port (librdmacm) in --acm-port-dir, removed at
    /// exit.
    #[arg(long, value_name = "MODE", default_value = "unix", value_parser = ["unix", "loop", "open"], help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_server_mode: String,
    /// The TCP port of the "loop" and "open" server modes (ibacm's
    /// server_port; 0: one the kernel picks, written to the port files).
    #[arg(long, value_name = "PORT", default_value = "6125", help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_server_port: u16,
    /// "yes": serve ib_acme and the kernel, not librdmacm, as ibacm's
    /// acme_plus_kernel_only (no /run/ibacm.sock by default, no
    /// ibacm.port).
    #[arg(long, value_name = "yes|no", default_value = "no", value_parser = ["yes", "no"], help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_kernel_only: String,
    /// Where the TCP server modes write the port files librdmacm and
    /// ib_acme read.
    #[arg(long, value_name = "DIR", default_value = "/run", help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_port_dir: PathBuf,
    /// ibacm's address file (`address device port pkey` lines: names and
    /// addresses of this node's endpoints); default
    /// /etc/rdma/ibacm_addr.cfg if it exists.
    #[arg(long, value_name = "FILE", help_heading = DOORS, hide_short_help = true)]
    pub(crate) acm_addr: Option<PathBuf>,
    /// The host name this port publishes in the local-sa directory at the
    /// master SA, where every local-sa finds it (ib_acme -f n, librdmacm
    /// by name); default: the kernel's host name; "none" publishes nothing.
    #[arg(long, value_name = "NAME", help_heading = DOORS, hide_short_help = true)]
    pub(crate) host_name: Option<String>,
    /// An IP address of this host to publish with its name (repeatable;
    /// at most 3 with the address file's IPs for this port), so that other
    /// nodes resolve it (ib_acme -f i, rdma_getaddrinfo) without hosts
    /// files. The port's IPoIB interfaces' addresses are published too,
    /// while there is room.
    #[arg(long = "address", value_name = "IP", help_heading = DOORS, hide_short_help = true)]
    pub(crate) addresses: Vec<std::net::IpAddr>,
    /// Answer the kernel's RDMA_NL_LS path and IP queries ("auto") or not ("none").
    ///
    /// The kernel's RDMA_NL_LS queries (PathRecords for rdma_cm, IPoIB,
    /// SRP, iSER and NVMe-oF; IP addresses to GIDs): "auto" answers them
    /// on a NETLINK_RDMA socket of the daemon's own (or on the one systemd
    /// passed, `ListenNetlink=rdma 4`), "none" leaves them to the kernel's
    /// own SA queries. Only one listener may answer them: stop ibacm if it
    /// runs.
    #[arg(long, value_name = "auto|none", default_value = "auto", value_parser = ["auto", "none"], help_heading = DOORS)]
    pub(crate) netlink: String,
    /// Milliseconds the kernel waits for each answer before it asks the SA
    /// itself (sent to it at start as SET_TIMEOUT; 40 to 200000). A query
    /// the master has not answered by nine tenths of this gets an error
    /// at once, so the kernel falls back without waiting. Default: every
    /// attempt at the master (--upstream-timeout × (--upstream-retries +
    /// 1)) and 500 ms; the kernel's own default, until told, is 2000.
    #[arg(long, value_name = "MS", value_parser = number::<u64>, help_heading = DOORS, hide_short_help = true)]
    pub(crate) netlink_timeout: Option<u64>,
    /// Local connections open at once, the local API's and the ibacm
    /// protocol's together (further ones are closed at once). Lowered to
    /// what the open-files limit allows with 128 descriptors kept back;
    /// an eighth is kept for root and local-sa's own user.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "4096", help_heading = DOORS, hide_short_help = true)]
    pub(crate) max_connections: usize,
    /// Local connections one user may have open at once. Whatever this
    /// says, a user other than root and local-sa's own holds at most a
    /// quarter of --max-connections (as lowered by the open-files limit),
    /// and an eighth of it is kept for root and local-sa's own user.
    #[arg(long, value_name = "N", value_parser = number::<usize>, default_value = "1024", help_heading = DOORS, hide_short_help = true)]
    pub(crate) max_connections_per_user: usize,
    /// Counters file (default <run-dir>/<ca>-<port>.counters).
    ///
    /// Where to write the counters (see COUNTERS; default
    /// <run-dir>/<ca>-<port>.counters).
    #[arg(long, value_name = "PATH", help_heading = OBSERVING)]
    pub(crate) stats_file: Option<PathBuf>,
    /// Seconds between counter writes; 0 writes them only at exit.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "1", help_heading = OBSERVING, hide_short_help = true)]
    pub(crate) stats_interval: u64,
    /// Log level or RUST_LOG directives (default RUST_LOG, else info).
    ///
    /// Log level or filter directives, as RUST_LOG takes them (info,
    /// debug, local_sa=debug,warn); default RUST_LOG, else info.
    #[arg(long, value_name = "LEVEL", help_heading = OBSERVING)]
    pub(crate) log_level: Option<String>,
    /// Serve Prometheus metrics at ADDR (host:port or a Unix socket path).
    ///
    /// Serve the counters in Prometheus' text format at
    /// http://ADDR/metrics: a TCP address (127.0.0.1:9464) or an absolute
    /// Unix socket path (/run/local-sa/metrics.sock). Every port's
    /// counters, labelled port="<ca>/<port>", and the doors'; refreshed
    /// every --stats-interval (every second when that is 0). Default: none.
    #[arg(long, value_name = "ADDR", value_parser = crate::metrics_server::parse_addr, help_heading = OBSERVING)]
    pub(crate) metrics: Option<crate::metrics_server::MetricsAddr>,
    /// What reading --sm-key-file noticed, to say in the log.
    #[arg(skip)]
    pub(crate) sm_key_note: Option<&'static str>,
    /// ibacm's options file as read, for the log.
    #[arg(skip)]
    pub(crate) acm_options_read: Option<(PathBuf, AcmOptions)>,
}

/// What `--generate` can write (generate.rs).
pub(crate) const GENERATE: [&str; 7] = [
    "man",
    "config-man",
    "config",
    "metrics",
    "bash",
    "zsh",
    "fish",
];

/// A settings problem, with where it came from.
#[derive(Debug)]
pub(crate) enum OptionsError {
    /// clap's own (usage errors, and --help/--version, which are "errors"
    /// that print to stdout and exit 0).
    Clap(clap::Error),
    /// The config file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A mistake at a place in the config file.
    File(FileError),
    /// The config file's settings do not go together (`sm-key` and
    /// `sm-key-file`).
    Together {
        /// The file.
        path: PathBuf,
        /// clap's verdict.
        error: clap::Error,
    },
    /// The SM_Key file cannot be used.
    SmKeyFile(String),
}

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Clap(e) => write!(f, "{e}"),
            Self::Read { path, source } => {
                write!(f, "cannot read config file {}: {source}", path.display())
            }
            Self::File(e) => write!(f, "{e}"),
            Self::Together { path, error } => write!(
                f,
                "in config file {}: {}",
                path.display(),
                kind_message(error)
            ),
            Self::SmKeyFile(why) => write!(f, "--sm-key-file: {why}"),
        }
    }
}

impl std::error::Error for OptionsError {}

/// clap's message without its usage footer; for a refused value, the
/// value and why.
fn kind_message(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() == ErrorKind::ValueValidation
        && let (Some(ContextValue::String(value)), Some(why)) = (
            error.get(ContextKind::InvalidValue),
            std::error::Error::source(error),
        )
    {
        return format!("invalid value {value:?}: {why}");
    }
    let text = error.to_string();
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned()
}

/// The arguments the settings are parsed from: the config file's, then
/// the command line's.
pub(crate) struct Sources {
    /// The program name, the config file's settings (those the command
    /// line does not give), then the command line.
    pub(crate) merged: Vec<OsString>,
    /// The config file read, if any.
    pub(crate) file: Option<PathBuf>,
    /// The long names of the settings the command line gave.
    pub(crate) from_command_line: Vec<String>,
    /// ibacm's options file read, and what it said.
    pub(crate) acm_options: Option<(PathBuf, AcmOptions)>,
    /// The long names of the settings ibacm's options file gave.
    pub(crate) from_ibacm: Vec<String>,
}

impl Sources {
    /// Where the setting `long` came from, when not from a default.
    pub(crate) fn origin(&self, long: &str) -> &'static str {
        if self.from_command_line.iter().any(|l| l == long) {
            "command line"
        } else if self.from_ibacm.iter().any(|l| l == long) {
            "ibacm options file"
        } else {
            "config file"
        }
    }
}

impl Options {
    /// Parses the command line `args` (program name first), reading the
    /// config file it names (or the default one, if it exists) first.
    pub(crate) fn load<I, T>(args: I) -> Result<Self, OptionsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let sources = Self::sources(args)?;
        let mut options = Self::try_parse_from(&sources.merged).map_err(OptionsError::Clap)?;
        options.acm_options_read = sources.acm_options;
        if let Some(path) = &options.sm_key_file {
            let read = sm_key_file::read(path).map_err(OptionsError::SmKeyFile)?;
            options.sm_key = Some(read.key);
            options.sm_key_note = read.note;
        }
        Ok(options)
    }

    /// The config file's settings and the command line's, checked.
    pub(crate) fn sources<I, T>(args: I) -> Result<Sources, OptionsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let command = Self::command();
        let cli = command
            .clone()
            .try_get_matches_from(&args)
            .map_err(OptionsError::Clap)?;
        let given = |long: &str| {
            command
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .is_some_and(|a| {
                    cli.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine)
                })
        };
        let from_command_line: Vec<String> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| given(l))
            .map(str::to_owned)
            .collect();
        let program = args.first().cloned().unwrap_or_else(|| "local-sa".into());
        let Some((path, text)) = Self::config_text(cli.get_one::<PathBuf>("config"))? else {
            return Self::with_acm_options(args, None, from_command_line, &[]);
        };
        let settings = config_file::parse(&path, &text, &command).map_err(OptionsError::File)?;
        // Each setting alone first, so that a refused value names its
        // place in the file.
        for s in &settings {
            Self::try_parse_from(std::iter::once(program.clone()).chain(s.args())).map_err(
                |e| {
                    OptionsError::File(FileError {
                        path: path.clone(),
                        at: s.at,
                        key: Some(s.name.clone()),
                        message: kind_message(&e),
                    })
                },
            )?;
        }
        let file_args = || settings.iter().flat_map(FileSetting::args);
        Self::try_parse_from(std::iter::once(program.clone()).chain(file_args())).map_err(
            |error| OptionsError::Together {
                path: path.clone(),
                error,
            },
        )?;
        // A setting the command line gives replaces the file's whole
        // (a list of sockets too, which would otherwise add up).
        let kept: Vec<&FileSetting> = settings.iter().filter(|s| !given(&s.name)).collect();
        let merged = std::iter::once(program)
            .chain(kept.iter().flat_map(|s| s.args()))
            .chain(args.into_iter().skip(1))
            .collect();
        let in_file: Vec<String> = settings.iter().map(|s| s.name.clone()).collect();
        Self::with_acm_options(merged, Some(path), from_command_line, &in_file)
    }

    /// `merged` (the program name, the config file's settings, the
    /// command line) preceded by what ibacm's options file sets that
    /// neither the config file (`in_file`) nor the command line does.
    fn with_acm_options(
        merged: Vec<OsString>,
        file: Option<PathBuf>,
        from_command_line: Vec<String>,
        in_file: &[String],
    ) -> Result<Sources, OptionsError> {
        let options = Self::try_parse_from(&merged).map_err(OptionsError::Clap)?;
        let mut sources = Sources {
            merged,
            file,
            from_command_line,
            acm_options: None,
            from_ibacm: Vec::new(),
        };
        let Some(path) = acm_options::path(options.acm_options.as_ref()) else {
            return Ok(sources);
        };
        let text = std::fs::read_to_string(&path).map_err(|source| OptionsError::Read {
            path: path.clone(),
            source,
        })?;
        let read = acm_options::translate(&text);
        let set_here = |long: &str| {
            sources.from_command_line.iter().any(|l| l == long) || in_file.iter().any(|l| l == long)
        };
        let taken: Vec<&acm_options::Translated> = read
            .translated
            .iter()
            .filter(|t| !set_here(t.long))
            .collect();
        let mut merged: Vec<OsString> = sources.merged[..1].to_vec();
        merged.extend(taken.iter().flat_map(|t| t.args()).map(OsString::from));
        merged.extend(sources.merged.drain(1..));
        sources.from_ibacm = taken.iter().map(|t| t.long.to_owned()).collect();
        sources.merged = merged;
        sources.acm_options = Some((path, read));
        Ok(sources)
    }

    /// The config file to read and its text: `--config`'s (an error if it
    /// cannot be read), none for `--config none`, else the default one
    /// if it exists.
    fn config_text(given: Option<&PathBuf>) -> Result<Option<(PathBuf, String)>, OptionsError> {
        let (path, required) = match given {
            Some(p) if p.as_os_str() == "none" => return Ok(None),
            Some(p) => (p.clone(), true),
            None => (PathBuf::from(config_file::DEFAULT_PATH), false),
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some((path, text))),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(OptionsError::Read { path, source }),
        }
    }

    /// Where the local API listens for `facts`' port, if anywhere.
    pub(crate) fn api_socket_path(&self, facts: &umad::port::PortFacts) -> Option<PathBuf> {
        match &self.api_socket {
            Some(p) if p.as_os_str() == "none" => None,
            Some(p) => Some(p.clone()),
            None => Some(self.port_file(facts, "sock")),
        }
    }

    /// `<run-dir>/<ca>-<port>.<ext>`: where a port's own files live.
    pub(crate) fn port_file(&self, facts: &umad::port::PortFacts, ext: &str) -> PathBuf {
        self.run_dir
            .join(format!("{}-{}.{ext}", facts.ca, facts.port))
    }

    /// Where to serve ibacm's protocol: the sockets, and whether they are
    /// the defaults (which may be skipped when they cannot be created).
    pub(crate) fn acm_socket_paths(&self) -> (Vec<PathBuf>, bool) {
        match &self.acm_sockets[..] {
            // ibacm's TCP modes serve no Unix socket.
            [] if self.acm_server_mode != "unix" => (Vec::new(), true),
            // ib_acme's, and librdmacm's unless only ib_acme and the
            // kernel are served.
            [] if !self.serves_librdmacm() => (vec![PathBuf::from("/run/ibacm-unix.sock")], true),
            [] => (
                vec![
                    PathBuf::from("/run/ibacm-unix.sock"),
                    PathBuf::from("/run/ibacm.sock"),
                ],
                true,
            ),
            [none] if none.as_os_str() == "none" => (Vec::new(), false),
            given => (given.to_vec(), false),
        }
    }

    /// The service units whose state says a subnet manager runs, or is
    /// set to run, on this node.
    pub(crate) fn sm_unit_names(&self) -> Vec<String> {
        match &self.sm_units[..] {
            [] => vec!["opensm.service".to_owned()],
            [none] if none == "none" => Vec::new(),
            given => given.to_vec(),
        }
    }

    /// Whether librdmacm is served besides ib_acme and the kernel: not
    /// with `--acm-kernel-only yes` (ibacm's `acme_plus_kernel_only`).
    pub(crate) fn serves_librdmacm(&self) -> bool {
        self.acm_kernel_only != "yes"
    }

    /// The SA core's configuration.
    pub(crate) fn agent_config(&self) -> AgentConfig {
        AgentConfig {
            sm_key: self.sm_key.map(SmKey::new),
            upstream_timeout: Duration::from_millis(self.upstream_timeout.max(1)),
            upstream_retries: self.upstream_retries,
            table_timeout: Duration::from_millis(self.table_timeout.max(1)),
            refresh_interval: Duration::from_secs(self.refresh_interval.max(1)),
            change_settle: Duration::from_secs(self.change_settle),
            sweep_poll: Duration::from_secs(self.sweep_poll),
            check_interval: Duration::from_secs(self.check_interval.max(1)),
            load_wait: Duration::from_secs(self.load_wait),
            retry_backoff: Duration::from_secs(self.retry_backoff.max(1)),
            answer_ttl: Duration::from_secs(self.answer_ttl),
            negative_ttl: Duration::from_secs(self.negative_ttl),
            qos_cache: QosCacheLimits {
                entries: self.qos_cache_entries,
                bytes: self.qos_cache_bytes,
            },
            member_lease: Duration::from_secs(self.member_lease.max(1)),
            audit_interval: Duration::from_secs(self.audit_interval.max(1)),
            pace: MasterPace {
                paths_per_second: self.master_paths_per_second.max(1),
                registrations_per_second: self.master_registrations_per_second.max(1),
                path_cost: Duration::from_nanos(self.master_path_cost),
                upkeep_share_percent: self.master_share,
                ..MasterPace::default()
            },
            limits: RegistrationLimits {
                groups: self.max_groups_per_user,
                created_groups: self.max_group_creations_per_user,
                subscriptions: self.max_subscriptions_per_user,
            },
            ..AgentConfig::default()
        }
    }
}

/// Parses an octal file mode ("660", "0660").
fn octal(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("{s:?} is not a file mode (octal, e.g. 660)"))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn defaults_match_the_core_defaults() {
        let o = Options::load(["local-sa"]).unwrap();
        let (a, d) = (o.agent_config(), AgentConfig::default());
        assert_eq!(
            (a.sm_key, a.upstream_timeout, a.upstream_retries),
            (d.sm_key, d.upstream_timeout, d.upstream_retries)
        );
        assert_eq!(
            (a.refresh_interval, a.answer_ttl, a.negative_ttl),
            (d.refresh_interval, d.answer_ttl, d.negative_ttl)
        );
        assert_eq!(a.retry_backoff, d.retry_backoff);
        assert_eq!(a.qos_cache, d.qos_cache);
    }

    #[test]
    fn the_file_comes_first_and_the_command_line_wins() {
        let f = file(
            "# site settings\nsm-key = \"0xbeef\"\nrefresh-interval = 300   # five minutes\n\n\
             ca = \"mlx5_0\"\nacm-socket = [\"/run/a.sock\", \"/run/b.sock\"]\n",
        );
        let path = f.path().to_str().unwrap();
        let o = Options::load(["local-sa", "--config", path]).unwrap();
        assert_eq!(
            (o.sm_key, o.refresh_interval, o.ca.as_deref()),
            (Some(0xbeef), 300, Some("mlx5_0"))
        );
        assert_eq!(
            o.acm_sockets,
            [PathBuf::from("/run/a.sock"), "/run/b.sock".into()]
        );
        let o = Options::load([
            "local-sa",
            "--config",
            path,
            "--sm-key",
            "7",
            "--acm-socket",
            "/run/c.sock",
        ])
        .unwrap();
        assert_eq!((o.sm_key, o.refresh_interval), (Some(7), 300));
        assert_eq!(
            o.acm_sockets,
            [PathBuf::from("/run/c.sock")],
            "replaced, not added to"
        );
    }

    #[test]
    fn bad_files_say_where() {
        let load = |text: &str| {
            let f = file(text);
            let path = f.path().to_str().unwrap().to_owned();
            let e = Options::load(["local-sa", "-c", &path])
                .unwrap_err()
                .to_string();
            e.strip_prefix(&path).map(str::to_owned).unwrap_or(e)
        };
        assert_eq!(
            load("sm-key = 1\nsmkey = 2\n"),
            ":2:1: smkey: unknown setting; did you mean `sm-key`?"
        );
        assert_eq!(
            load("port = 1\nupstream-retries = \"many\"\n"),
            ":2:20: upstream-retries: invalid value \"many\": \"many\" is not a number (decimal, or hex with 0x)"
        );
        assert_eq!(
            load("api-mode = 999\n"),
            ":1:12: api-mode: invalid value \"999\": \"999\" is not a file mode (octal, e.g. 660)"
        );
        assert_eq!(
            load("netlink = \"yes\"\n"),
            ":1:11: netlink: invalid value 'yes' for '--netlink <auto|none>'"
        );
        assert!(
            load("sm-key = 1\nsm-key-file = \"/etc/k\"\n").starts_with("in config file"),
            "settings that conflict"
        );
        assert!(load("sm-key 2\n").starts_with(":1:8: "), "TOML syntax");
        assert!(load("config = \"/etc/other\"\n").contains("unknown setting"));
        let e = Options::load(["local-sa", "-c", "/nonexistent/local-sa.toml"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read config file /nonexistent/local-sa.toml"),
            "{e}"
        );
        assert!(
            Options::load(["local-sa", "-c", "none"]).is_ok(),
            "none reads none"
        );
    }

    #[test]
    fn cli_is_consistent() {
        Options::command().debug_assert();
    }
}
