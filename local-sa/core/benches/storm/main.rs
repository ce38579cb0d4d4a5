//! The storm simulator: an all-to-all job start on N nodes against a model
//! master SA, with and without local-sa on every node, on a virtual clock
//! (no fabric; repeatable but for the core's hash-map order). Each node
//! runs the real local-sa core ([`local_sa_core::SaCore`]) behind its QP1
//! door; ranks resolve every
//! other host with PathRecord Gets. Prints, per N, what the master served
//! (queries in total and in its busiest second), how long until the last
//! rank had all its paths, and the resolves' p50/p99.
//!
//! `cargo bench -p local-sa-core --bench storm -- [N,N,...] [RANKS] [SETUPS]`
//! (default 128,512,2048, 1 rank per node, and every setup; SETUPS is a
//! comma-separated choice of `baseline`, `local-sa` (each node loads its
//! own table) and `distributor` (a distributor next to the master pushes
//! every node its table, 32 nodes at a time). `--plot=FILE` also writes
//! the master's path queries against N as an SVG, log–log, with each
//! setup's fitted slope.
//!
//! `cargo bench -p local-sa-core --bench storm -- N,N,... 1 events` runs
//! instead, for each N, an SM failover and a reboot of 5 % of the nodes
//! after the job, with and without the cores' jitter, and prints what
//! the master received from the event on.
#![allow(missing_docs)]

mod distributor;
#[path = "../fixture/mod.rs"]
mod fixture;
mod master;
mod plot;
mod world;

use std::time::Duration;

use master::MasterModel;
use world::{Disturbance, Outcome, Scenario};

fn main() {
    let plot_to = std::env::args().find_map(|a| a.strip_prefix("--plot=").map(String::from));
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
    };
    println!(
        "model master: {} queries/s + {} records/s in table answers, queue {}, requests dropped while the queue's wait passes {:?}; {ranks} rank(s) per node, 16 resolves outstanding per rank",
        model.queries_per_second, model.records_per_second, model.queue, model.fifo_timeout
    );
    if args.get(2).map(String::as_str) == Some("events") {
        return events(&sizes, ranks, model);
    }
    let setups: Vec<Setup> = match args.get(2) {
        Some(list) => list.split(',').filter_map(Setup::parse).collect(),
        None => vec![Setup::Baseline, Setup::BulkLoad, Setup::Distributor],
    };
    println!(
        "\n| N | setup | master path queries | of them tables | other queries | records served | busiest second | dropped | fill time | job time | p50 | p99 | slowest | rank retries | loads pushed again |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut series = [
        plot::Series {
            name: "no local-sa: ranks ask the master",
            colour: "#c0392b",
            points: Vec::new(),
        },
        plot::Series {
            name: "local-sa on every node (bulk load)",
            colour: "#2471a3",
            points: Vec::new(),
        },
    ];
    for &hosts in &sizes {
        for &setup in &setups {
            let s = Scenario {
                hosts,
                ranks,
                window: 16,
                local_sa: setup != Setup::Baseline,
                distributor: (setup == Setup::Distributor).then_some(32),
                disturbance: None,
                jitter: true,
                master: model,
                wire: Duration::from_micros(5),
                rank_timeout: Duration::from_secs(1),
                horizon: Duration::from_secs(60),
            };
            let o = world::run(s, Duration::from_secs(3600));
            print_row(hosts, setup, &o);
            let queries = o.fill.path_queries + o.job.path_queries;
            // Log axes: the distributor's zero has no place on them.
            if let Some(s) = series.get_mut(setup as usize) {
                s.points.push((f64::from(hosts), queries as f64));
            }
        }
    }
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
            Ok(()) => println!("plot written to {path}"),
            Err(e) => eprintln!("cannot write the plot to {path}: {e}"),
        }
    }
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
                    hosts,
                    ranks,
                    window: 16,
                    local_sa: true,
                    distributor: None,
                    disturbance: Some(event),
                    jitter,
                    master: model,
                    wire: Duration::from_micros(5),
                    rank_timeout: Duration::from_secs(1),
                    horizon: Duration::from_secs(60),
                };
                let o = world::run(s, Duration::from_secs(3600));
                let Some(a) = o.aftermath else { continue };
                let l = &a.load;
                println!(
                    "| {hosts} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    match event {
                        Disturbance::Failover => "SM failover".to_string(),
                        Disturbance::Reboot(p) => format!("{p} % of nodes reboot"),
                    },
                    if jitter { "yes" } else { "no" },
                    l.path_queries + l.other_queries,
                    l.path_queries,
                    l.records,
                    l.busiest_second(),
                    l.dropped,
                    a.settled
                        .map_or("not within the run".to_string(), |d| format!(
                            "{:.2} s",
                            d.as_secs_f64()
                        )),
                );
            }
        }
    }
}

/// Who gives the ranks their paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// No local-sa: the ranks ask the master.
    Baseline,
    /// local-sa on every node, each loading its own table from the master.
    BulkLoad,
    /// local-sa on every node, filled by a distributor next to the master.
    Distributor,
}

impl Setup {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "baseline" => Some(Self::Baseline),
            "local-sa" => Some(Self::BulkLoad),
            "distributor" => Some(Self::Distributor),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Baseline => "no local-sa",
            Self::BulkLoad => "local-sa (bulk load)",
            Self::Distributor => "local-sa (distributor, 32 at a time)",
        }
    }
}

fn print_row(hosts: u16, setup: Setup, o: &Outcome) {
    let both = |f: fn(&master::MasterLoad) -> u64| f(&o.fill) + f(&o.job);
    let busiest = o.fill.busiest_second().max(o.job.busiest_second());
    println!(
        "| {hosts} | {} | {} | {} | {} | {} | {} | {} | {:.2} s | {:.2} s | {} | {} | {} | {} | {} |",
        setup.label(),
        both(|l| l.path_queries),
        both(|l| l.tables),
        both(|l| l.other_queries),
        both(|l| l.records),
        busiest,
        both(|l| l.dropped),
        o.fill_time.as_secs_f64(),
        o.job_time.as_secs_f64(),
        shown(o.p50),
        shown(o.p99),
        shown(o.max),
        o.rank_retries,
        o.loads_retried,
    );
}

/// A latency in the unit that reads best.
fn shown(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{} µs", d.as_micros())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}
