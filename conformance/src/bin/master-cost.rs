//! What filling every node's tables costs OpenSM, with and without
//! computing them, on one simulated fat tree, in one run: OpenSM's CPU
//! (from `/proc`) and the records it served, for
//!
//! * every endport's whole table, a GetTable by SLID each (what each
//!   node's own refresh asks, and a distributor without `--compute`;
//!   the simulator cuts the answers, OpenSM computes them whole);
//! * `lsaquery --compute` next to the master: the fabric's description
//!   (asked record by record, the simulator cutting the whole tables), a
//!   path per partition and a 1,000-pair check.
//!
//! Each is done `ROUNDS` times (OpenSM's CPU is counted in clock ticks of
//! 10 ms) and shown per fill.
//!
//! ```text
//! cargo run --release -p conformance --bin master-cost -- [LEAVES] [HOSTS_PER_LEAF] [SPINES] [ROUNDS]
//! ```
//!
//! Defaults: 18 leaves of 18 hosts, 9 spines (324 hosts), 10 rounds.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use conformance::bench::{arg, cpu_seconds};
use conformance::{SimulatedFabric, Topology};

/// OpenSM's SA key, given to lsaquery for the P_Key tables.
const KEY: &str = "0x5eed";

fn main() -> ExitCode {
    conformance::report("master-cost", run())
}

fn run() -> Result<String, String> {
    let (leaves, hosts, spines) = (arg(1, 18) as usize, arg(2, 18) as usize, arg(3, 9) as usize);
    let rounds = arg(4, 10).max(1);
    let fabric = SimulatedFabric::builder(Topology::fat_tree(leaves, hosts, spines))
        .opensm_config([format!("sa_key {KEY}")])
        .ready_timeout(Duration::from_secs(120))
        .start()
        .map_err(|e| e.to_string())?;
    let opensm = fabric.opensm_pid().ok_or("OpenSM is not running")?;
    let node = fabric
        .node(fabric.opensm_node())
        .map_err(|e| e.to_string())?;
    let master = node.port().map_err(|e| e.to_string())?.sm_lid;
    let ports = leaves * hosts + leaves + spines;

    // lsaquery --compute, its costs from its own JSON and OpenSM's CPU.
    let cpu = cpu_seconds(opensm)?;
    let t0 = Instant::now();
    let mut out = None;
    for round in 0..rounds {
        let o = node
            .lsaquery()
            .args(["--compute", "--smkey", KEY, "--json", "--check-seed"])
            .arg((round + 1).to_string())
            .timeout(Duration::from_secs(600))
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(format!("lsaquery --compute: {}{}", o.stdout, o.stderr));
        }
        out = Some(o);
    }
    let out = out.ok_or("no round")?;
    let compute_time = t0.elapsed() / rounds as u32;
    let compute_cpu = (cpu_seconds(opensm)? - cpu) / rounds as f64;
    let field = |path: &[&str]| -> u64 {
        let mut at = out.stdout.as_str();
        for key in path {
            let Some(i) = at.find(&format!("\"{key}\":")) else {
                return 0;
            };
            at = &at[i + key.len() + 3..];
        }
        at.split([',', '}'])
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    let described = field(&["description", "master", "records"]);
    let checked = field(&["check", "master", "records"]);
    let tables = field(&["without_compute", "records"]);

    // Every port's whole table.
    let cpu = cpu_seconds(opensm)?;
    let t0 = Instant::now();
    let lids = format!("1-{}", ports + 16);
    let sweep = node
        .command(conformance::sibling("path-sweep")?)
        .args([
            "--sa-lid",
            &master.to_string(),
            "--dlids",
            &lids,
            "--tables",
        ])
        .args(["--ranks", &rounds.to_string()])
        .timeout(Duration::from_secs(600))
        .output()
        .map_err(|e| e.to_string())?;
    let tables_time = t0.elapsed() / rounds as u32;
    let tables_cpu = (cpu_seconds(opensm)? - cpu) / rounds as f64;
    if !sweep.status.success() {
        return Err(format!("path-sweep --tables: {}", sweep.stderr));
    }
    Ok(format!(
        "fabric: fat tree {leaves}x{hosts}x{spines}, {ports} ports; per fill, the mean of {rounds}\n\
         | fill | OpenSM CPU | records OpenSM served | wall time |\n\
         |---|---:|---:|---:|\n\
         | every port's table, a GetTable each | {:.3} s | {tables} PathRecords | {:.2} s |\n\
         | lsaquery --compute (description, check) | {:.3} s | {described} description + {checked} checked | {:.2} s |\n\
         per path of the tables: {:.2} µs of OpenSM's CPU; tables ({}): {}",
        tables_cpu,
        tables_time.as_secs_f64(),
        compute_cpu,
        compute_time.as_secs_f64(),
        tables_cpu * 1e6 / tables.max(1) as f64,
        lids,
        sweep.stdout.trim()
    ))
}
