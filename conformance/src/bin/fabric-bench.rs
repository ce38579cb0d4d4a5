//! The same PathRecord load against OpenSM, local-sa and two do-nothing
//! echo agents — one in C on libibumad (`conformance/bench/sa_echo.c`,
//! compiled here with the system's C compiler: the floor of answering a
//! MAD at all), one on local-sa's own transport — on one simulated
//! fabric, in one run: answers per second, latency
//! percentiles (from `lsaquery --bench`), and the CPU each server process
//! (and ibsim, which carries every MAD) spends per 10 000 answers. Then
//! the same path through local-sa's ibacm socket — resolved by LID and by
//! host name — and through its kernel door (an RDMA_NL_LS RESOLVE on a
//! socketpair, as the kernel would send it), with the same window, from a
//! client in this process; and the same RESOLVEs to a C program that
//! sends each datagram back (`conformance/bench/dgram_echo.c`), the floor
//! of answering anything on that socket.
//!
//! Build the Rust echo agent first (local-sa and lsaquery are built on
//! demand; the C agent needs libibumad-dev), then run it:
//!
//! ```text
//! cargo build --release -p umad --example sa_echo
//! cargo run --release -p conformance --bin fabric-bench -- [QUERIES] [WINDOW] [ROUNDS]
//! ```
//!
//! Defaults: 20 000 queries, 16 outstanding, 3 rounds (the servers take
//! turns within each round). With `LOCAL_SA_BEFORE=PATH` (another build of
//! local-sa, e.g. an earlier commit's), that build serves one more node
//! and takes its turn too: before and after, in one run.

use std::collections::HashMap;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use conformance::acm_client::{ACK, RESOLVE, path_dlid, read_reply, resolve_lid, resolve_name};
use conformance::bench::{arg, cpu_seconds, median};
use conformance::{LocalSa, Node, SimulatedFabric, Topology};
use local_sa_core::doors::netlink::wire::{self, Header, PathUse, Resolve, reply_records};
use mad_codec::Gid;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabric-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A server under test.
struct Server {
    name: &'static str,
    lid: u16,
    pid: u32,
}

/// One measurement.
struct Sample {
    rate: f64,
    p50: f64,
    p99: f64,
    cpu_per_10k: f64,
    ibsim_per_10k: f64,
}

fn json_number(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let tail = &json[at..];
    let end = tail.find([',', '}']).unwrap_or(tail.len());
    tail[..end].trim().parse().ok()
}

/// The load every server gets.
struct Load<'f> {
    client: Node<'f>,
    lsaquery: PathBuf,
    pair: String,
    queries: u64,
    window: usize,
}

impl Load<'_> {
    /// Runs the load against `server` and measures it.
    fn measure(&self, fabric: &SimulatedFabric, server: &Server) -> Result<Sample, String> {
        let (cpu0, sim0) = (cpu_seconds(server.pid)?, cpu_seconds(fabric.ibsim_pid())?);
        let out = self
            .client
            .command(&self.lsaquery)
            .args([
                "--sa-lid",
                &server.lid.to_string(),
                "--src-to-dst",
                &self.pair,
                "--method",
                "get",
                "--json",
            ])
            .args([
                "--bench",
                &self.queries.to_string(),
                "--window",
                &self.window.to_string(),
            ])
            .timeout(Duration::from_secs(600))
            .output()
            .map_err(|e| e.to_string())?;
        let (cpu1, sim1) = (cpu_seconds(server.pid)?, cpu_seconds(fabric.ibsim_pid())?);
        let num = |k| {
            json_number(&out.stdout, k).ok_or_else(|| {
                format!("{}: no {k} in {:?} {}", server.name, out.stdout, out.stderr)
            })
        };
        let answered = num("answered")?;
        if answered < self.queries as f64 || num("error_status")? > 0.0 {
            return Err(format!(
                "{}: not every query was answered OK: {}",
                server.name, out.stdout
            ));
        }
        let per_10k = 10_000.0 / answered;
        Ok(Sample {
            rate: num("answers_per_second")?,
            p50: json_number(&out.stdout, "p50").unwrap_or(0.0),
            p99: json_number(&out.stdout, "p99").unwrap_or(0.0),
            cpu_per_10k: (cpu1 - cpu0) * per_10k,
            ibsim_per_10k: (sim1 - sim0) * per_10k,
        })
    }
}

/// Builds the RESOLVE message with TransactionID `tid`.
type MessageFor<'a> = &'a dyn Fn(u64) -> Vec<u8>;

/// A load on the ibacm socket: `queries` RESOLVEs (`message(tid)`),
/// `window` outstanding, each answer checked to be the path to `dlid`.
struct AcmLoad<'a> {
    socket: &'a Path,
    message: MessageFor<'a>,
    dlid: u16,
    queries: u64,
    window: usize,
}

impl AcmLoad<'_> {
    fn measure(&self, server: u32) -> Result<Sample, String> {
        let mut s = UnixStream::connect(self.socket)
            .map_err(|e| format!("{}: {e}", self.socket.display()))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let cpu0 = cpu_seconds(server)?;
        let start = Instant::now();
        let mut sent_at: HashMap<u64, Instant> = HashMap::new();
        let mut latencies = Vec::with_capacity(self.queries as usize);
        let mut sent = 0u64;
        while (latencies.len() as u64) < self.queries {
            while sent < self.queries && sent_at.len() < self.window {
                s.write_all(&(self.message)(sent))
                    .map_err(|e| e.to_string())?;
                sent_at.insert(sent, Instant::now());
                sent += 1;
            }
            let (op, status, tid, body) = read_reply(&mut s).map_err(|e| e.to_string())?;
            if op != RESOLVE | ACK || status != 0 || path_dlid(&body) != Some(self.dlid) {
                return Err(format!(
                    "the ibacm door answered request {tid} with opcode {op:#x} status {status}"
                ));
            }
            let at = sent_at.remove(&tid).ok_or("an answer to no request")?;
            latencies.push(at.elapsed().as_secs_f64() * 1e6);
        }
        let cpu = cpu_seconds(server)? - cpu0;
        Ok(Sample::of_socket(latencies, start.elapsed(), cpu))
    }
}

/// A load on the kernel door: `queries` RESOLVEs from `sgid` to `dgid`
/// (GMP use, as rdma_cm's route resolution), `window` outstanding, each
/// reply checked to carry the record to `dlid` (or, from the datagram
/// echo, to be the RESOLVE sent).
struct KernelLoad<'a> {
    socket: &'a UnixDatagram,
    /// The server sends each RESOLVE back as it came (the datagram floor):
    /// only its sequence number is checked.
    echoed: bool,
    sgid: Gid,
    dgid: Gid,
    dlid: u16,
    queries: u64,
    window: usize,
}

impl KernelLoad<'_> {
    fn measure(&self, server: u32) -> Result<Sample, String> {
        let resolve = Resolve {
            device: "ibsim0".into(),
            port: 1,
            path_use: PathUse::GMP,
            service_id: None,
            dgid: Some(self.dgid),
            sgid: Some(self.sgid),
            tclass: None,
            pkey: Some(0xffff),
            qos_class: None,
        };
        let cpu0 = cpu_seconds(server)?;
        let start = Instant::now();
        let mut sent_at: HashMap<u32, Instant> = HashMap::new();
        let mut latencies = Vec::with_capacity(self.queries as usize);
        let mut buf = vec![0u8; 4096];
        let mut sent = 0u32;
        while (latencies.len() as u64) < self.queries {
            while u64::from(sent) < self.queries && sent_at.len() < self.window {
                self.socket
                    .send(&wire::resolve_request(sent, &resolve))
                    .map_err(|e| e.to_string())?;
                sent_at.insert(sent, Instant::now());
                sent += 1;
            }
            let n = self.socket.recv(&mut buf).map_err(|e| e.to_string())?;
            let reply = &buf[..n];
            let h = Header::parse(reply).ok_or("a reply without a netlink header")?;
            let records = reply_records(reply);
            if !self.echoed
                && (h.flags != 0 || records.len() != 1 || records[0].1.dlid() != self.dlid)
            {
                return Err(format!(
                    "the kernel door answered RESOLVE {} with flags {:#x} and {} records",
                    h.seq,
                    h.flags,
                    records.len()
                ));
            }
            let at = sent_at.remove(&h.seq).ok_or("a reply to no RESOLVE")?;
            latencies.push(at.elapsed().as_secs_f64() * 1e6);
        }
        let cpu = cpu_seconds(server)? - cpu0;
        Ok(Sample::of_socket(latencies, start.elapsed(), cpu))
    }
}

impl Sample {
    /// A run on one of local-sa's sockets: answers' latencies in µs, the
    /// run's duration, local-sa's CPU seconds.
    fn of_socket(mut latencies: Vec<f64>, elapsed: Duration, cpu: f64) -> Self {
        latencies.sort_by(f64::total_cmp);
        let n = latencies.len().max(1);
        let pct = |p: f64| {
            latencies
                .get(((n - 1) as f64 * p) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        Self {
            rate: n as f64 / elapsed.as_secs_f64(),
            p50: pct(0.5),
            p99: pct(0.99),
            cpu_per_10k: cpu * 10_000.0 / n as f64,
            ibsim_per_10k: 0.0,
        }
    }
}

/// Starts the local-sa at `program` on `node` with its sockets and files in
/// the fabric's directory and no kernel door, and waits until it has its
/// port's paths.
fn start_other_local_sa<'f>(
    fabric: &'f SimulatedFabric,
    node: &str,
    program: &Path,
) -> Result<conformance::NodeProcess<'f>, String> {
    let dir = fabric.dir();
    let file = |suffix: &str| dir.join(format!("{node}.{suffix}"));
    let counters = file("counters");
    let process = fabric
        .node(node)
        .and_then(|n| {
            n.command(program)
                .serve_requests()
                .arg("--stats-file")
                .arg(&counters)
                .arg("--acm-socket")
                .arg(file("acm.sock"))
                .arg("--api-socket")
                .arg(file("api.sock"))
                .arg("--run-dir")
                .arg(file("run"))
                .args(["--netlink", "none"])
                .spawn()
        })
        .map_err(|e| e.to_string())?;
    let fetched = conformance::eventually(Duration::from_secs(60), || {
        std::fs::read_to_string(&counters).is_ok_and(|text| {
            text.lines().any(|l| {
                l.strip_prefix("refreshes ")
                    .is_some_and(|n| n.trim() != "0")
            })
        })
    });
    if !fetched {
        return Err(format!(
            "{}: no paths fetched on {node} within 60 s",
            program.display()
        ));
    }
    Ok(process)
}

/// Compiles `conformance/bench/<name>.c` to `out` with `$CC` (else
/// `cc`), optimised as a C program would ship, with `libs`.
fn compile_c(name: &str, out: &Path, libs: &[&str]) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("bench/{name}.c"));
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let status = std::process::Command::new(&cc)
        .args(["-O2", "-Wall", "-o"])
        .arg(out)
        .arg(&source)
        .args(libs)
        .status()
        .map_err(|e| format!("{}: {e}", cc.to_string_lossy()))?;
    if !status.success() {
        return Err(format!(
            "compiling {} failed ({status}){}",
            source.display(),
            if libs.is_empty() {
                ""
            } else {
                ": is libibumad-dev installed?"
            }
        ));
    }
    Ok(out.to_path_buf())
}

/// The C datagram echo, serving `socket` (its descriptor 0) until it is
/// dropped.
struct DatagramEcho(std::process::Child);

impl DatagramEcho {
    fn start(program: &Path, socket: OwnedFd) -> Result<Self, String> {
        std::process::Command::new(program)
            .stdin(std::process::Stdio::from(socket))
            .spawn()
            .map(Self)
            .map_err(|e| format!("{}: {e}", program.display()))
    }
}

impl Drop for DatagramEcho {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run() -> Result<(), String> {
    let (queries, window, rounds) = (arg(1, 20_000), arg(2, 16) as usize, arg(3, 3) as usize);
    let lsaquery = conformance::program("lsaquery")?;
    let local_sa = conformance::program("local-sa")?;
    let echo = local_sa.with_file_name("examples").join("sa_echo");
    if !echo.exists() {
        return Err(format!(
            "{} not found: cargo build --release -p umad --example sa_echo",
            echo.display()
        ));
    }
    let c_echo = compile_c(
        "sa_echo",
        &local_sa.with_file_name("sa_echo_c"),
        &["-libumad"],
    )?;
    let dgram_echo = compile_c("dgram_echo", &local_sa.with_file_name("dgram_echo"), &[])?;
    let fabric = SimulatedFabric::builder(Topology::fat_tree(10, 10, 4))
        .start()
        .map_err(|e| e.to_string())?;
    let node_lid = |n: &str| {
        fabric
            .node(n)
            .and_then(|n| n.port())
            .map(|p| p.lid)
            .map_err(|e| e.to_string())
    };
    // local-sa's kernel door on one end of a socketpair; this process is
    // the kernel on the other.
    let (ours, kernel) = UnixDatagram::pair().map_err(|e| e.to_string())?;
    kernel
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let mut sa = LocalSa::start_passing(&fabric, "h20", &[], "netlink", OwnedFd::from(ours))
        .map_err(|e| e.to_string())?;
    // The SET_TIMEOUT local-sa sends at start.
    kernel.recv(&mut [0u8; 256]).map_err(|e| e.to_string())?;
    // Host names (NodeDescriptions) for the by-name load.
    sa.wait_until("host names", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= 100)
    })
    .map_err(|e| e.to_string())?;
    let echo_process = fabric
        .node("h30")
        .and_then(|n| n.command(&echo).serve_requests().spawn())
        .map_err(|e| e.to_string())?;
    let c_echo_process = fabric
        .node("h50")
        .and_then(|n| n.command(&c_echo).serve_requests().spawn())
        .map_err(|e| e.to_string())?;
    let before = match std::env::var_os("LOCAL_SA_BEFORE") {
        Some(path) => Some(start_other_local_sa(&fabric, "h60", Path::new(&path))?),
        None => None,
    };
    let mut servers = vec![
        Server {
            name: "OpenSM 3.3.23",
            lid: node_lid("h1")?,
            pid: fabric.opensm_pid().ok_or("OpenSM is not running")?,
        },
        Server {
            name: "local-sa",
            lid: node_lid("h20")?,
            pid: sa.pid(),
        },
        Server {
            name: "echo agent (transport floor)",
            lid: node_lid("h30")?,
            pid: echo_process.pid(),
        },
        Server {
            name: "C echo agent, libibumad (floor)",
            lid: node_lid("h50")?,
            pid: c_echo_process.pid(),
        },
    ];
    if let Some(p) = &before {
        servers.push(Server {
            name: "local-sa, LOCAL_SA_BEFORE build",
            lid: node_lid("h60")?,
            pid: p.pid(),
        });
    }
    // The path from local-sa's own port: what it holds for its node.
    let pair = format!("{}:{}", node_lid("h20")?, node_lid("h77")?);
    let load = Load {
        client: fabric.node("h40").map_err(|e| e.to_string())?,
        lsaquery,
        pair,
        queries,
        window,
    };
    let pair = &load.pair;
    println!(
        "fabric: 100-host fat tree under ibsim; client lsaquery on h40, PathRecord Get {pair}, {queries} queries, \
         {window} outstanding, {rounds} rounds"
    );
    let mut samples: Vec<Vec<Sample>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (server, list) in servers.iter().zip(samples.iter_mut()) {
            let s = load.measure(&fabric, server)?;
            println!(
                "round {round}  {:<30} {:>8.0} answers/s  p50 {:>6.0} µs  p99 {:>6.0} µs  CPU {:.3} s/10K  ibsim {:.3} s/10K",
                server.name, s.rate, s.p50, s.p99, s.cpu_per_10k, s.ibsim_per_10k
            );
            list.push(s);
        }
    }
    println!(
        "\n| server | answers/s | p50 µs | p99 µs | server CPU s per 10K answers | ibsim CPU s per 10K |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut cpu = Vec::new();
    for (server, list) in servers.iter().zip(&samples) {
        let m = |f: fn(&Sample) -> f64| median(list.iter().map(f).collect());
        let c = m(|s| s.cpu_per_10k);
        cpu.push(c);
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} |",
            server.name,
            m(|s| s.rate),
            m(|s| s.p50),
            m(|s| s.p99),
            c,
            m(|s| s.ibsim_per_10k)
        );
    }
    println!("\n(medians of {rounds} rounds)");
    println!(
        "local-sa CPU per answer / the C agent's: {:.2}x; / the Rust echo agent's: {:.2}x; / OpenSM's: {:.2}x",
        cpu[1] / cpu[3],
        cpu[1] / cpu[2],
        cpu[1] / cpu[0]
    );
    if let Some(b) = cpu.get(4) {
        println!(
            "the LOCAL_SA_BEFORE build's CPU per answer / the C agent's: {:.2}x; this build's / that one's: {:.2}x",
            b / cpu[3],
            cpu[1] / b
        );
    }

    // The same path through the ibacm socket: no MAD crosses the fabric.
    let dlid = node_lid("h77")?;
    let by_lid = move |tid| resolve_lid(dlid, tid);
    let by_name = |tid| resolve_name("h77", tid);
    let loads: [(&str, MessageFor<'_>); 2] = [
        ("ibacm socket, by LID", &by_lid),
        ("ibacm socket, by host name", &by_name),
    ];
    let node_gid = |n: &str| {
        fabric
            .node(n)
            .and_then(|n| n.port())
            .map(|p| Gid::new(Gid::DEFAULT_PREFIX, p.guid))
            .map_err(|e| e.to_string())
    };
    let kernel_load = KernelLoad {
        socket: &kernel,
        echoed: false,
        sgid: node_gid("h20")?,
        dgid: node_gid("h77")?,
        dlid,
        queries,
        window,
    };
    // The floor of the kernel door's socket: the same load on a socketpair
    // served by a C program that sends each datagram back.
    let (floor_end, floor_client) = UnixDatagram::pair().map_err(|e| e.to_string())?;
    floor_client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let floor = DatagramEcho::start(&dgram_echo, OwnedFd::from(floor_end))?;
    let floor_load = KernelLoad {
        socket: &floor_client,
        echoed: true,
        ..kernel_load
    };
    const KERNEL_DOOR: &str = "kernel door (RDMA_NL_LS RESOLVE, socketpair)";
    const FLOOR: &str = "datagram echo in C (the socketpair's floor)";
    let mut acm: Vec<Vec<Sample>> = loads.iter().map(|_| Vec::new()).collect();
    let mut netlink = Vec::new();
    let mut floors = Vec::new();
    for round in 1..=rounds {
        let report = |name: &str, s: &Sample| {
            println!(
                "round {round}  {name:<37} {:>8.0} answers/s  p50 {:>6.0} µs  p99 {:>6.0} µs  CPU {:.3} s/10K",
                s.rate, s.p50, s.p99, s.cpu_per_10k
            );
        };
        for ((name, message), list) in loads.iter().zip(acm.iter_mut()) {
            let s = AcmLoad {
                socket: sa.acm_socket(),
                message: *message,
                dlid,
                queries,
                window,
            }
            .measure(sa.pid())?;
            report(&format!("local-sa {name}"), &s);
            list.push(s);
        }
        let s = kernel_load.measure(sa.pid())?;
        report(&format!("local-sa {KERNEL_DOOR}"), &s);
        netlink.push(s);
        let s = floor_load.measure(floor.0.id())?;
        report(FLOOR, &s);
        floors.push(s);
    }
    println!("\n| local-sa door | answers/s | p50 µs | p99 µs | local-sa CPU s per 10K answers |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| QP1 (PathRecord Get MAD, above) | {:.0} | {:.0} | {:.0} | {:.3} |",
        median(samples[1].iter().map(|s| s.rate).collect()),
        median(samples[1].iter().map(|s| s.p50).collect()),
        median(samples[1].iter().map(|s| s.p99).collect()),
        cpu[1]
    );
    let sockets = loads
        .iter()
        .map(|(name, _)| *name)
        .chain([KERNEL_DOOR, FLOOR])
        .zip(acm.iter().chain([&netlink, &floors]));
    for (name, list) in sockets {
        let m = |f: fn(&Sample) -> f64| median(list.iter().map(f).collect());
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.3} |",
            m(|s| s.rate),
            m(|s| s.p50),
            m(|s| s.p99),
            m(|s| s.cpu_per_10k)
        );
    }
    let cpu_median = |list: &[Sample]| median(list.iter().map(|s| s.cpu_per_10k).collect());
    println!(
        "\n(medians of {rounds} rounds; the ibacm client and the kernel's end are this process, on the same machine;\n\
         the floor row is the C program's CPU, not local-sa's)\n\
         kernel door CPU per answer / the datagram floor's: {:.2}x",
        cpu_median(&netlink) / cpu_median(&floors)
    );
    drop(echo_process);
    drop(c_echo_process);
    drop(floor);
    drop(before);
    drop(sa);
    Ok(())
}
