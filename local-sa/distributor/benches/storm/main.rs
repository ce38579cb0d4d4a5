//! The storm simulator: an all-to-all job start on N nodes against a model
//! master SA, with and without local-sa on every node, on a virtual clock
//! (no fabric; repeatable but for the core's hash-map order). Each node
//! runs the real local-sa core ([`local_sa_core::SaCore`]) behind its QP1
//! door; ranks resolve every
//! other host with PathRecord Gets. Prints, per N, what the master served
//! (queries in total and in its busiest second), how long until the last
//! rank had all its paths, the resolves' p50/p99, and the simulator's
//! peak memory per node.
//!
//! `cargo bench -p local-sa-distributor --bench storm -- [N,N,...] [RANKS] [SETUPS]`
//! (default 128,512,2048, 1 rank per node, and the first three setups;
//! SETUPS is a comma-separated choice of `baseline`, `local-sa` (each node
//! loads its own table), `distributor` (a distributor next to the master
//! pushes every node its table, 32 nodes at a time), `acm` (as `local-sa`,
//! the ranks asking through the ibacm door) and `cold` (local-sa with an
//! empty cache: every resolve a miss it forwards, coalescing the ranks'
//! identical ones). On a QoS master (a policy putting rdma_cm's
//! ServiceIDs on SL 1), with the ranks naming an rdma_cm ServiceID as
//! rdma_cm's route resolution does: `qos-baseline` (no local-sa),
//! `qos-local-sa` (each node's QoS cache asks the master once per port
//! pair), `qos-warm` (as `qos-local-sa`, a prolog on every node warming
//! its cache for every peer first, as `lsaquery --warm` does; its load
//! counted in the fill) and `qos-distributor` (the distributor pushes the
//! default tables and each node's table at the ServiceID, which it asks
//! the master for: `lsaquery --distribute --service-id`).
//! `--plot=FILE` (relative to the workspace root) also writes
//! the master's path queries against N as an SVG, log–log, with each
//! setup's fitted slope.
//!
//! `cargo bench -p local-sa-distributor --bench storm -- N,N,... 1 fill` runs
//! only the fill, by a distributor that asks the master for every node's
//! table (`distributor-master`) and by 1, 4 and 16 that compute them from
//! the fabric's description (`compute`, `compute-4`, `compute-16`), and
//! prints what each costs the master (queries, records, bytes, its time)
//! and how long it takes, with each one's fitted slope of records
//! against N.
//!
//! `cargo bench -p local-sa-distributor --bench storm -- N,N,... 1 upkeep` runs,
//! after a fill, what keeping the tables costs: a quiet hour, a link down
//! with a reroute, a rolling restart of every local-sa — with each node
//! refreshing its own tables every 600 s, with the interval bounded by
//! the master's share, and under a watch (`--distribute --compute
//! --watch`).
//!
//! `cargo bench -p local-sa-distributor --bench storm -- N,N,... 1 events` runs
//! instead, for each N, an SM failover and a reboot of 5 % of the nodes
//! after the job, with and without the cores' jitter, and prints what
//! the master received from the event on.
#![allow(missing_docs)]

mod check;
mod distributor;
#[path = "../../../core/benches/fixture/mod.rs"]
mod fixture;
mod master;
mod memory;
mod plot;
mod requests;
mod watcher;
mod world;

use std::path::Path;
use std::time::Duration;

use distributor::Source;
use master::{MasterModel, QosRule};
use world::{Disturbance, Door, Outcome, Scenario};

/// The argument that makes the process run one (N, setup) and print its
/// row: each run gets a process of its own, so that its peak memory is
/// its own.
const SINGLE: &str = "--single";

/// Virtual time a run may take: the baseline at 10,000 nodes needs about
/// 4,100 s of master time (N(N-1) Gets at 24,391 a second).
const LIMIT: Duration = Duration::from_secs(3 * 3600);

fn main() {
    // Relative to the workspace root, where the documented commands run
    // (cargo runs a bench in its package's directory).
    let plot_to = std::env::args().find_map(|a| {
        a.strip_prefix("--plot=")
            .map(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p))
    });
    let single = std::env::args().any(|a| a == SINGLE);
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sizes: Vec<u16> = args
        .first()
        .map(|s| s.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![128, 512, 2048]);
    let ranks: u16 = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(1);
    let model = MasterModel {
        queries_per_second: 25_000.0,
        records_per_second: 1_000_000.0,
        queue: 4096,
        fifo_timeout: Duration::from_secs(10),
        qos: None,
    };
    if single {
        let (Some(&hosts), Some(setup)) =
            (sizes.first(), args.get(2).and_then(|s| Setup::parse(s)))
        else {
            eprintln!("{SINGLE} takes N RANKS SETUP");
            std::process::exit(2);
        };
        let o = world::run(scenario(hosts, ranks, setup, model), LIMIT);
        print_row(hosts, setup, &o, memory::peak() / u64::from(hosts));
        print_fill_row(hosts, setup, &o);
        if o.unfinished_ranks == 0 {
            println!("path queries {}", o.fill.path_queries + o.job.path_queries);
        }
        return;
    }
    println!(
        "model master: {} queries/s + {} records/s in table answers, queue {}, requests dropped while the queue's wait passes {:?}; {ranks} rank(s) per node, 16 resolves outstanding per rank",
        model.queries_per_second, model.records_per_second, model.queue, model.fifo_timeout
    );
    if args.get(2).map(String::as_str) == Some("events") {
        return events(&sizes, ranks, model);
    }
    if args.get(2).map(String::as_str) == Some("fill") {
        return fill(&sizes, ranks);
    }
    if args.get(2).map(String::as_str) == Some("upkeep") {
        // A fourth argument keeps to the watch's rows ("watch") or to
        // those of the nodes keeping their own, bounded ("own").
        let only = match args.get(3).map(String::as_str) {
            Some("watch") => Some(Keeper::Watch),
            Some("own") => Some(Keeper::Bounded),
            _ => None,
        };
        return upkeep(&sizes, model, only);
    }
    let setups: Vec<Setup> = match args.get(2) {
        Some(list) => list.split(',').filter_map(Setup::parse).collect(),
        None => vec![Setup::Baseline, Setup::BulkLoad, Setup::Distributor],
    };
    println!(
        "\n| N | setup | master path queries | of them tables | other queries | records served | busiest second | dropped | fill time | job time | p50 | p99 | slowest | rank retries | loads pushed again | memory per node |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut series: Vec<(Setup, plot::Series)> = setups
        .iter()
        .filter_map(|s| {
            let (name, colour) = s.series()?;
            let points = Vec::new();
            Some((
                *s,
                plot::Series {
                    name,
                    colour,
                    points,
                },
            ))
        })
        .collect();
    for &hosts in &sizes {
        for &setup in &setups {
            let Some(queries) = run_alone(hosts, ranks, setup) else {
                continue;
            };
            if let Some((_, s)) = series.iter_mut().find(|(s, _)| *s == setup) {
                s.points.push((f64::from(hosts), queries as f64));
            }
        }
    }
    let series: Vec<plot::Series> = series.into_iter().map(|(_, s)| s).collect();
    println!();
    for s in &series {
        if let Some(k) = plot::slope(&s.points) {
            println!(
                "fitted slope of master path queries against N, {}: {k:.3}",
                s.name
            );
        }
    }
    if let Some(path) = plot_to {
        let title = format!(
            "An all-to-all job start: the master's PathRecord queries ({} queries/s model master)",
            model.queries_per_second
        );
        match std::fs::write(&path, plot::svg(&title, &series)) {
            Ok(()) => println!("plot written to {}", path.display()),
            Err(e) => eprintln!("cannot write the plot to {}: {e}", path.display()),
        }
    }
}

/// Runs one (N, setup) in a process of its own, prints its row and
/// returns the master's path queries.
fn run_alone(hosts: u16, ranks: u16, setup: Setup) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .args([SINGLE, &hosts.to_string(), &ranks.to_string(), setup.name()])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut queries = None;
    for line in text.lines() {
        match line.strip_prefix("path queries ") {
            Some(n) => queries = n.parse().ok(),
            None if line.starts_with(FILL_ROW) => {}
            None => println!("{line}"),
        }
    }
    if queries.is_none() && out.status.success() {
        eprintln!(
            "the run of {hosts} nodes, {} did not finish within {LIMIT:?}: left out of the fit",
            setup.label()
        );
    } else if queries.is_none() {
        eprintln!(
            "the run of {hosts} nodes, {} failed: {}",
            setup.label(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    queries
}

/// What marks a run's row of the fill's cost (printed by `--single`,
/// shown by the `fill` mode).
const FILL_ROW: &str = "fill-row ";

/// The fill alone: what filling every node costs the master with a
/// distributor that asks it for every table and with distributors that
/// compute them, and how long the fill takes, with a fit of the master's
/// records against N for each.
fn fill(sizes: &[u16], ranks: u16) {
    println!(
        "\n| N | setup | master queries | records | bytes | master time | of them PathRecord queries | fill time |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let setups = [
        Setup::DistributorFromMaster,
        Setup::Computed(1),
        Setup::Computed(4),
        Setup::Computed(16),
    ];
    let mut fits: Vec<(Setup, Vec<(f64, f64)>)> = setups.iter().map(|s| (*s, Vec::new())).collect();
    for &hosts in sizes {
        for (setup, points) in &mut fits {
            let Ok(exe) = std::env::current_exe() else {
                return;
            };
            let Ok(out) = std::process::Command::new(exe)
                .args([SINGLE, &hosts.to_string(), &ranks.to_string(), setup.name()])
                .output()
            else {
                continue;
            };
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some(row) = line.strip_prefix(FILL_ROW) {
                    println!("{row}");
                    let records: Option<f64> = row
                        .split('|')
                        .nth(4)
                        .and_then(|r| r.trim().replace(',', "").parse().ok());
                    if let Some(r) = records {
                        points.push((f64::from(hosts), r));
                    }
                }
            }
        }
    }
    println!();
    for (setup, points) in &fits {
        if let Some(k) = plot::slope(points) {
            println!(
                "fitted slope of the master's records against N, {}: {k:.3}",
                setup.label()
            );
        }
    }
}

fn print_fill_row(hosts: u16, setup: Setup, o: &Outcome) {
    let l = &o.fill;
    println!(
        "{FILL_ROW}| {hosts} | {} | {} | {} | {} | {:.3} s | {} | {:.2} s |",
        setup.label(),
        l.path_queries + l.other_queries,
        l.records,
        l.bytes,
        l.busy.as_secs_f64(),
        l.path_queries,
        o.fill_time.as_secs_f64(),
    );
}

/// The scenario of one (N, setup) row.
fn scenario(hosts: u16, ranks: u16, setup: Setup, model: MasterModel) -> Scenario {
    let qos = setup.qos();
    Scenario {
        hosts,
        ranks,
        window: 16,
        local_sa: !matches!(setup, Setup::Baseline | Setup::QosBaseline),
        door: if setup == Setup::Acm {
            Door::Acm
        } else {
            Door::Qp1
        },
        cold: setup == Setup::Cold,
        distributor: matches!(
            setup,
            Setup::Distributor
                | Setup::QosDistributor
                | Setup::DistributorFromMaster
                | Setup::Computed(_)
        )
        .then_some(32),
        source: match setup {
            Setup::DistributorFromMaster => Source::Master,
            Setup::Computed(_) => Source::Computed,
            _ => Source::Dump,
        },
        shards: match setup {
            Setup::Computed(k) => k,
            _ => 1,
        },
        service_id: qos.then_some(RDMA_CM_SERVICE_ID),
        warm: setup == Setup::QosWarm,
        disturbance: None,
        jitter: true,
        master: MasterModel {
            qos: qos.then_some(RDMA_CM_ON_SL1),
            ..model
        },
        wire: Duration::from_micros(5),
        rank_timeout: Duration::from_secs(1),
        horizon: Duration::from_secs(60),
        watch: false,
        master_share: 5,
    }
}

/// Who keeps the nodes' tables in an upkeep run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeper {
    /// Each node its own, refreshing every 600 s whatever the fabric's
    /// size (`--master-share 100`: today's behaviour before the bound).
    Periodic,
    /// Each node its own, the interval bounded by the master's share
    /// (5 %, the default) and a refresh after a link-change notice.
    Bounded,
    /// A watch after a computed fill: the nodes under its lease.
    Watch,
}

impl Keeper {
    fn label(self) -> &'static str {
        match self {
            Self::Periodic => "each node its own, every 600 s",
            Self::Bounded => "each node its own, bounded to the master's 5 %",
            Self::Watch => "a watch (--distribute --compute --watch)",
        }
    }

    fn scenario(self, hosts: u16, model: MasterModel, what: Disturbance) -> Scenario {
        let setup = match self {
            Self::Watch => Setup::Computed(1),
            _ => Setup::BulkLoad,
        };
        Scenario {
            ranks: 0,
            disturbance: Some(what),
            // Past the fill's own tail (the names tables each node fetches
            // at its phase of the refresh window after its first table).
            horizon: Duration::from_secs(600),
            watch: self == Self::Watch,
            master_share: if self == Self::Periodic { 100 } else { 5 },
            ..scenario(hosts, 0, setup, model)
        }
    }
}

/// The upkeep after the fill: an hour of a quiet fabric, a link down
/// with a reroute, a rolling restart of every local-sa; what each costs
/// the master and how long until every node is right again.
fn upkeep(sizes: &[u16], model: MasterModel, only: Option<Keeper>) {
    let keep = |k: Keeper| only.is_none_or(|o| o == k);
    println!("\n### A quiet fabric: per hour, over three hours\n");
    println!(
        "| N | who keeps the tables | master PathRecords | master records | master time | its share |"
    );
    println!("|---:|---|---:|---:|---:|---:|");
    for &hosts in sizes {
        for keeper in [Keeper::Periodic, Keeper::Bounded, Keeper::Watch] {
            if !keep(keeper) {
                continue;
            }
            let o = world::run(keeper.scenario(hosts, model, Disturbance::Quiet), LIMIT);
            let Some(a) = o.aftermath else { continue };
            let hours = world::QUIET_HOURS;
            let busy = a.load.busy.as_secs_f64() / f64::from(hours);
            println!(
                "| {hosts} | {} | {} | {} | {busy:.2} s | {:.2} % |",
                keeper.label(),
                a.load.path_records / u64::from(hours),
                a.load.records / u64::from(hours),
                busy / 36.0
            );
        }
    }
    println!("\n### A link down and a reroute\n");
    println!(
        "(the master's load from the event until every node answers the new paths; \"not within the run\": over the event's 8,000 s)\n"
    );
    println!(
        "| N | who keeps the tables | nodes whose paths changed | master PathRecords | master records | master time | until every node answers the new paths |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for &hosts in sizes {
        let changed = world::reroute(hosts).len();
        for (keeper, what) in [
            (Keeper::Bounded, Disturbance::Reroute),
            (Keeper::Watch, Disturbance::Reroute),
            (Keeper::Bounded, Disturbance::RerouteUnannounced),
            (Keeper::Watch, Disturbance::RerouteUnannounced),
        ] {
            if !keep(keeper) {
                continue;
            }
            let o = world::run(keeper.scenario(hosts, model, what), LIMIT);
            let Some(a) = o.aftermath else { continue };
            let load = a.until_settled.as_ref().unwrap_or(&a.load);
            let report = match what {
                Disturbance::Reroute => "",
                _ => ", the Report lost",
            };
            println!(
                "| {hosts} | {}{report} | {changed} | {} | {} | {:.2} s | {} |",
                keeper.label(),
                load.path_records,
                load.records,
                load.busy.as_secs_f64(),
                settled(a.settled)
            );
        }
    }
    println!("\n### A rolling restart of every local-sa (over 100 s)\n");
    println!(
        "| N | who keeps the tables | tables kept | master PathRecords | master records | longest from a restart to ready |"
    );
    println!("|---:|---|---|---:|---:|---:|");
    for &hosts in sizes {
        for (keeper, kept) in [
            (Keeper::Bounded, false),
            (Keeper::Bounded, true),
            (Keeper::Watch, true),
        ] {
            if !keep(keeper) {
                continue;
            }
            let what = Disturbance::RollingRestart { kept };
            let o = world::run(keeper.scenario(hosts, model, what), LIMIT);
            let Some(a) = o.aftermath else { continue };
            let longest = match a.settled {
                Some(_) => shown(a.longest_restart),
                None => "not within the run".to_string(),
            };
            println!(
                "| {hosts} | {} | {} | {} | {} | {longest} |",
                keeper.label(),
                if kept { "yes" } else { "no" },
                a.load.path_records,
                a.load.records,
            );
        }
    }
}

/// A time to settle, or that it did not within the run.
fn settled(d: Option<Duration>) -> String {
    d.map_or_else(
        || "not within the run".to_string(),
        |d| format!("{:.2} s", d.as_secs_f64()),
    )
}

/// An SM failover and a 5 % reboot wave after the job, with and without
/// the cores' jitter: what the master receives from the event on.
fn events(sizes: &[u16], ranks: u16, model: MasterModel) {
    println!(
        "\n| N | event | jitter | master requests | of them PathRecord | records | busiest second | dropped | until every port touched refreshed |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for &hosts in sizes {
        for event in [Disturbance::Failover, Disturbance::Reboot(5)] {
            for jitter in [true, false] {
                let s = Scenario {
                    disturbance: Some(event),
                    jitter,
                    ..scenario(hosts, ranks, Setup::BulkLoad, model)
                };
                let o = world::run(s, LIMIT);
                let Some(a) = o.aftermath else { continue };
                let l = &a.load;
                println!(
                    "| {hosts} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    match event {
                        Disturbance::Failover => "SM failover".to_string(),
                        Disturbance::Reboot(p) => format!("{p} % of nodes reboot"),
                        other => format!("{other:?}"),
                    },
                    if jitter { "yes" } else { "no" },
                    l.path_queries + l.other_queries,
                    l.path_queries,
                    l.records,
                    l.busiest_second(),
                    l.dropped,
                    settled(a.settled),
                );
            }
        }
    }
}

/// The QoS setups' policy: rdma_cm's port space (RDMA_PS_TCP) on SL 1.
const RDMA_CM_ON_SL1: QosRule = QosRule {
    first: 0x0000_0000_0106_0000,
    last: 0x0000_0000_0106_FFFF,
    sl: 1,
};

/// The ServiceID the QoS setups' ranks name: rdma_cm's for TCP port
/// 18515 (perftest's), as its route resolution asks.
const RDMA_CM_SERVICE_ID: u64 = 0x0000_0000_0106_4853;

/// Who gives the ranks their paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// No local-sa: the ranks ask the master.
    Baseline,
    /// local-sa on every node, each loading its own table from the master.
    BulkLoad,
    /// local-sa on every node, filled by a distributor next to the master.
    Distributor,
    /// As `BulkLoad`, the ranks asking through the ibacm door.
    Acm,
    /// local-sa on every node with an empty cache.
    Cold,
    /// A QoS master, the ranks naming rdma_cm's ServiceID: no local-sa.
    QosBaseline,
    /// ... local-sa on every node (bulk load; the ServiceID's pairs in
    /// its QoS cache).
    QosLocalSa,
    /// ... and a prolog warming each node's cache before the job.
    QosWarm,
    /// ... local-sa filled by the distributor.
    QosDistributor,
    /// local-sa on every node, filled by a distributor that asks the master
    /// for each node's table (`lsaquery --distribute`).
    DistributorFromMaster,
    /// ... by distributors that compute the tables from the fabric's
    /// description (`lsaquery --distribute --compute`), 1, 4 or 16 of
    /// them (`--shard`).
    Computed(u16),
}

impl Setup {
    fn parse(name: &str) -> Option<Self> {
        [
            Self::Baseline,
            Self::BulkLoad,
            Self::Distributor,
            Self::Acm,
            Self::Cold,
            Self::QosBaseline,
            Self::QosLocalSa,
            Self::QosWarm,
            Self::QosDistributor,
            Self::DistributorFromMaster,
            Self::Computed(1),
            Self::Computed(4),
            Self::Computed(16),
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::BulkLoad => "local-sa",
            Self::Distributor => "distributor",
            Self::Acm => "acm",
            Self::Cold => "cold",
            Self::QosBaseline => "qos-baseline",
            Self::QosLocalSa => "qos-local-sa",
            Self::QosWarm => "qos-warm",
            Self::QosDistributor => "qos-distributor",
            Self::DistributorFromMaster => "distributor-master",
            Self::Computed(1) => "compute",
            Self::Computed(4) => "compute-4",
            Self::Computed(_) => "compute-16",
        }
    }

    /// Whether the master applies QoS and the ranks name a ServiceID.
    fn qos(self) -> bool {
        matches!(
            self,
            Self::QosBaseline | Self::QosLocalSa | Self::QosWarm | Self::QosDistributor
        )
    }

    /// Its line in the plot, if it has one (the distributor's zero has no
    /// place on log axes).
    fn series(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Self::Baseline => ("no local-sa: ranks ask the master", "#c0392b"),
            Self::BulkLoad => ("local-sa on every node (bulk load)", "#2471a3"),
            Self::QosBaseline => ("QoS master, rdma_cm ServiceID: no local-sa", "#e67e22"),
            Self::QosLocalSa => ("QoS master, rdma_cm ServiceID: local-sa", "#27ae60"),
            Self::QosWarm => ("QoS master, rdma_cm ServiceID: local-sa, warmed", "#8e44ad"),
            Self::QosDistributor => ("QoS master, rdma_cm ServiceID: distributor", "#16a085"),
            Self::Distributor
            | Self::Acm
            | Self::Cold
            | Self::DistributorFromMaster
            | Self::Computed(_) => return None,
        })
    }

    fn label(self) -> &'static str {
        match self {
            Self::Baseline => "no local-sa",
            Self::BulkLoad => "local-sa (bulk load)",
            Self::Distributor => "local-sa (distributor, 32 at a time)",
            Self::Acm => "local-sa (bulk load), ibacm door",
            Self::Cold => "local-sa, empty cache (misses forwarded)",
            Self::QosBaseline => "QoS, rdma_cm ServiceID: no local-sa",
            Self::QosLocalSa => "QoS, rdma_cm ServiceID: local-sa (bulk load)",
            Self::QosWarm => "QoS, rdma_cm ServiceID: local-sa, warmed by a prolog",
            Self::QosDistributor => "QoS, rdma_cm ServiceID: local-sa (distributor)",
            Self::DistributorFromMaster => "distributor, tables from the master",
            Self::Computed(1) => "distributor, tables computed",
            Self::Computed(4) => "4 distributors (--shard), tables computed",
            Self::Computed(_) => "16 distributors (--shard), tables computed",
        }
    }
}

fn print_row(hosts: u16, setup: Setup, o: &Outcome, memory_per_node: u64) {
    let both = |f: fn(&master::MasterLoad) -> u64| f(&o.fill) + f(&o.job);
    let busiest = o.fill.busiest_second().max(o.job.busiest_second());
    println!(
        "| {hosts} | {} | {} | {} | {} | {} | {} | {} | {:.2} s | {} | {} | {} | {} | {} | {} | {:.0} kB |",
        setup.label(),
        both(|l| l.path_queries),
        both(|l| l.tables),
        both(|l| l.other_queries),
        both(|l| l.records),
        busiest,
        both(|l| l.dropped),
        o.fill_time.as_secs_f64(),
        job_time(o),
        shown(o.p50),
        shown(o.p99),
        shown(o.max),
        o.rank_retries,
        o.loads_retried,
        memory_per_node as f64 / 1000.0,
    );
}

/// The job's time, or how many ranks the time limit left unfinished.
fn job_time(o: &Outcome) -> String {
    match o.unfinished_ranks {
        0 => format!("{:.2} s", o.job_time.as_secs_f64()),
        n => format!("unfinished: {n} ranks at the {} s limit", LIMIT.as_secs()),
    }
}

/// A latency in the unit that reads best.
fn shown(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{} µs", d.as_micros())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}
