//! The real librdmacm's `rdma_getaddrinfo` through local-sa: calls per
//! second for one process asking in a loop (as a job's ranks do at
//! start), and local-sa's CPU per call, for each form librdmacm sends —
//! by destination IP (the path from local-sa's cache), with
//! RAI_NUMERICHOST (NODELAY), with a source IP, and the RAI_ROUTEONLY
//! request of `rdma_resolve_route`. librdmacm runs in a private mount
//! namespace with a fake verbs device (`conformance::rdmacm`; root).
//!
//! ```text
//! cargo run --release -p conformance --bin rdmacm-bench -- [CALLS] [ROUNDS]
//! ```
//!
//! Defaults: 20 000 calls, 3 rounds; medians are printed.

use std::process::ExitCode;
use std::time::Duration;

use conformance::bench::{arg, cpu_seconds, median};
use conformance::rdmacm::{Librdmacm, Reach};
use conformance::{LocalSa, SimulatedFabric, Topology};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rdmacm-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let (calls, rounds) = (arg(1, 20_000), arg(2, 3).max(1));
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .map_err(|e| e.to_string())?;
    let librdmacm = Librdmacm::prepare(fabric.dir())?;
    let _server = LocalSa::start(
        &fabric,
        "h9",
        &["--host-name", "node-b", "--address", "192.0.2.41"],
    )
    .map_err(|e| e.to_string())?;
    let mut sa = LocalSa::start(
        &fabric,
        "h2",
        &["--host-name", "node-a", "--address", "192.0.2.22"],
    )
    .map_err(|e| e.to_string())?;
    let hosts = fabric.topology().hcas().len() as u64;
    sa.wait_until("the directory", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= hosts + 4)
    })
    .map_err(|e| e.to_string())?;
    let socket = sa.acm_socket().to_path_buf();
    let forms: [(&str, &[&str]); 4] = [
        ("by destination IP", &["192.0.2.41"]),
        ("RAI_NUMERICHOST (NODELAY)", &["--numeric", "192.0.2.41"]),
        ("with a source IP", &["--src", "192.0.2.22", "192.0.2.41"]),
        (
            "RAI_ROUTEONLY (rdma_resolve_route)",
            &["--route-only", "--src", "192.0.2.22", "192.0.2.41"],
        ),
    ];
    println!(
        "librdmacm {calls} calls per round, one process, local-sa on h2 (2-core machine; the caller and ibsim share it)"
    );
    println!("\n| form | calls/s | µs per call | local-sa CPU µs per call |");
    println!("|---|---:|---:|---:|");
    for (name, args) in forms {
        let (mut rates, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let cpu0 = cpu_seconds(sa.pid())?;
            let took = librdmacm.time_calls(Reach::Socket(&socket), args, calls)?;
            let cpu = cpu_seconds(sa.pid())? - cpu0;
            rates.push(calls as f64 / took.as_secs_f64());
            cpus.push(cpu * 1e6 / calls as f64);
        }
        let rate = median(rates);
        println!(
            "| {name} | {rate:.0} | {:.1} | {:.1} |",
            1e6 / rate,
            median(cpus)
        );
    }
    println!("\n(medians of {rounds} rounds)");
    Ok(())
}
