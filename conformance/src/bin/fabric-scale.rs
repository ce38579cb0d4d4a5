//! What a job start costs OpenSM on a simulated fat tree, counted by
//! OpenSM itself: the "SA MADs rcvd" of its console's `status` (every SA
//! MAD it took off the wire: queries, RMPP ACKs, registrations).
//!
//! Four fabrics of the same topology, one after the other (ibsim allows
//! ten clients: OpenSM, eight nodes and one more):
//!
//! 1. **baseline**: no local-sa; on each of eight nodes `path-sweep` asks
//!    OpenSM for the path to every host, `RANKS` times over (a job start
//!    without a cache). Two job starts.
//! 2. **local-sa, self-filled**: local-sa on the eight nodes fetches its
//!    table from OpenSM; then the same job through each node's ibacm
//!    socket (clients in this process). Two job starts.
//! 3. **local-sa, distributor**: the eight wait for a load
//!    (`--load-wait`); `lsaquery --distribute` on a ninth node fills them
//!    from OpenSM (and writes a snapshot); then one job start.
//! 4. **local-sa, distributor from a dump**: as 3, filled `--from` that
//!    snapshot: nothing asked of OpenSM for the paths.
//!
//! After each fill the count is taken again once OpenSM has had no SA MAD
//! for 10 s (local-sa's registrations and name directory follow its first
//! table at a paced delay), so the job's count is the job's alone.
//!
//! ```text
//! cargo run --release -p conformance --bin fabric-scale -- [LEAVES HOSTS_PER_LEAF SPINES [RANKS]]
//! ```
//!
//! Default: 18 × 18 hosts (324), 9 spines, 1 rank per node.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use conformance::acm_client::{ACK, RESOLVE, path_dlid, read_reply, resolve_lid};
use conformance::{LocalSa, SimulatedFabric, Topology};

/// The SM_Key the local-sa nodes take loads with.
const KEY: &str = "0x5eed";

/// Nodes running local-sa (or the baseline's clients).
const NODES: usize = 8;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabric-scale: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A fabric with OpenSM's console on a loopback port.
struct Counted {
    fabric: SimulatedFabric,
    console_port: u16,
}

impl Counted {
    fn start(topology: Topology) -> Result<Self, String> {
        // A free port for OpenSM's console: bound, read, released.
        let console_port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let fabric = SimulatedFabric::builder(topology)
            .opensm_config([
                "console loopback".to_string(),
                format!("console_port {console_port}"),
            ])
            .ready_timeout(Duration::from_secs(300))
            .start()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            fabric,
            console_port,
        })
    }

    /// OpenSM's count of SA MADs received.
    fn sa_mads(&self) -> Result<u64, String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.read_status() {
                Ok(n) => return Ok(n),
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("OpenSM's console: {e}"));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }

    fn read_status(&self) -> Result<u64, String> {
        let mut s =
            TcpStream::connect(("127.0.0.1", self.console_port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        s.write_all(b"status\n").map_err(|e| e.to_string())?;
        let lines = BufReader::new(s.try_clone().map_err(|e| e.to_string())?).lines();
        for line in lines {
            let line = line.map_err(|e| e.to_string())?;
            if let Some(rest) = line.trim().strip_prefix("SA MADs rcvd") {
                let n = rest
                    .trim_start_matches([' ', ':'])
                    .trim()
                    .parse()
                    .map_err(|_| format!("unreadable count {line:?}"))?;
                let _ = s.write_all(b"quit\n");
                return Ok(n);
            }
        }
        Err("no \"SA MADs rcvd\" in its status".into())
    }

    /// Waits until OpenSM has received no SA MAD for `quiet` (at most
    /// `limit`); returns the count then.
    fn settled(&self, quiet: Duration, limit: Duration) -> Result<u64, String> {
        let end = Instant::now() + limit;
        let mut last = self.sa_mads()?;
        let mut since = Instant::now();
        while Instant::now() < end {
            std::thread::sleep(Duration::from_secs(1));
            let now = self.sa_mads()?;
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() >= quiet {
                break;
            }
        }
        Ok(last)
    }

    fn lid(&self, node: &str) -> Result<u16, String> {
        self.fabric
            .node(node)
            .and_then(|n| n.port())
            .map(|p| p.lid)
            .map_err(|e| e.to_string())
    }
}

/// One phase's cost at OpenSM and its duration.
struct Phase {
    name: String,
    sa_mads: u64,
    seconds: f64,
    /// What the local-sa nodes say they sent upstream meanwhile (their
    /// `upstream_queries` counters): a cross-check of OpenSM's count.
    upstream: Option<u64>,
}

fn report(scenario: &str, phases: &[Phase]) {
    for p in phases {
        let upstream = p
            .upstream
            .map(|u| format!("  (local-sa counters: {u} requests upstream)"))
            .unwrap_or_default();
        println!(
            "{scenario:<28} {:<34} {:>9} SA MADs at OpenSM {:>9.2} s{upstream}",
            p.name, p.sa_mads, p.seconds
        );
    }
}

/// The local-sa nodes' requests to the master so far.
fn upstream(sas: &[LocalSa<'_>]) -> u64 {
    sas.iter().map(|sa| sa.counter("upstream_queries")).sum()
}

/// The nodes that run local-sa (or clients), spread over the leaves, and
/// the one the distributor runs on: never OpenSM's.
fn pick_nodes(fabric: &SimulatedFabric) -> (Vec<String>, String) {
    let hosts: Vec<String> = fabric
        .topology()
        .hcas()
        .iter()
        .filter(|h| *h != fabric.opensm_node())
        .cloned()
        .collect();
    let step = (hosts.len() / (NODES + 1)).max(1);
    let nodes = (0..NODES).map(|i| hosts[i * step].clone()).collect();
    (nodes, hosts[NODES * step].clone())
}

fn host_lids(c: &Counted) -> Result<Vec<u16>, String> {
    c.fabric
        .topology()
        .hcas()
        .iter()
        .map(|h| c.lid(h))
        .collect()
}

/// The job start without a cache: every node asks OpenSM directly.
fn baseline(topology: &Topology, ranks: u32) -> Result<Vec<Phase>, String> {
    let c = Counted::start(topology.clone())?;
    let (nodes, _) = pick_nodes(&c.fabric);
    let master = c.lid(c.fabric.opensm_node())?;
    let lids = host_lids(&c)?;
    let sweep = conformance::sibling("path-sweep")?;
    let list: Vec<String> = lids.iter().map(u16::to_string).collect();
    let list = list.join(",");
    let mut phases = Vec::new();
    for job in 1..=2 {
        let before = c.settled(Duration::from_secs(5), Duration::from_secs(60))?;
        let start = Instant::now();
        let sweeps: Vec<_> = nodes
            .iter()
            .map(|n| {
                c.fabric
                    .node(n)
                    .map_err(|e| e.to_string())?
                    .command(&sweep)
                    .args([
                        "--sa-lid",
                        &master.to_string(),
                        "--dlids",
                        &list,
                        "--ranks",
                        &ranks.to_string(),
                    ])
                    .timeout(Duration::from_secs(600))
                    .spawn()
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        for mut s in sweeps {
            s.wait_timeout(Duration::from_secs(600));
            let out = s.stdout();
            let asked = u64::from(ranks) * lids.len() as u64;
            if !out.contains(&format!("answered {asked} ")) {
                return Err(format!("a baseline client: {out}{}", s.stderr()));
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let after = c.sa_mads()?;
        phases.push(Phase {
            name: format!("job {job} ({NODES} nodes x {ranks} x {} hosts)", lids.len()),
            sa_mads: after - before,
            seconds,
            upstream: None,
        });
    }
    Ok(phases)
}

/// A job start through each node's ibacm socket: `ranks` clients per node,
/// each resolving every host by LID, one at a time; every answer checked.
fn acm_job(sas: &[LocalSa<'_>], lids: &[u16], ranks: u32) -> Result<(), String> {
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for sa in sas {
            for _ in 0..ranks {
                let socket = sa.acm_socket().to_path_buf();
                handles.push(scope.spawn(move || -> Result<(), String> {
                    let mut s = UnixStream::connect(&socket).map_err(|e| e.to_string())?;
                    s.set_read_timeout(Some(Duration::from_secs(60)))
                        .map_err(|e| e.to_string())?;
                    for (tid, lid) in lids.iter().enumerate() {
                        s.write_all(&resolve_lid(*lid, tid as u64))
                            .map_err(|e| e.to_string())?;
                        let (op, status, _, body) =
                            read_reply(&mut s).map_err(|e| e.to_string())?;
                        if op != RESOLVE | ACK || status != 0 || path_dlid(&body) != Some(*lid) {
                            return Err(format!("resolving LID {lid}: status {status}"));
                        }
                    }
                    Ok(())
                }));
            }
        }
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
    })
}

/// Records the job phase(s) after a fill.
fn jobs(
    c: &Counted,
    sas: &[LocalSa<'_>],
    ranks: u32,
    count: u32,
    phases: &mut Vec<Phase>,
) -> Result<(), String> {
    let lids = host_lids(c)?;
    for job in 1..=count {
        let before = c.sa_mads()?;
        let asked = upstream(sas);
        let start = Instant::now();
        acm_job(sas, &lids, ranks)?;
        let seconds = start.elapsed().as_secs_f64();
        let sa_mads = c.sa_mads()? - before;
        // The counters files are rewritten every second.
        std::thread::sleep(Duration::from_millis(2500));
        phases.push(Phase {
            name: format!("job {job} ({NODES} nodes x {ranks} x {} hosts)", lids.len()),
            sa_mads,
            seconds,
            upstream: Some(upstream(sas) - asked),
        });
    }
    Ok(())
}

/// The quiet after a fill: local-sa's registrations and name directory.
/// OpenSM's count is taken from `filled`; the nodes' from `asked` (for a
/// distribution, their count before it began: their counters lag a
/// second, so what they sent during the fill is counted here too).
fn after_fill(
    c: &Counted,
    sas: &[LocalSa<'_>],
    (filled, asked): (u64, u64),
    phases: &mut Vec<Phase>,
) -> Result<(), String> {
    let start = Instant::now();
    let settled = c.settled(Duration::from_secs(10), Duration::from_secs(180))?;
    phases.push(Phase {
        name: "after the fill, until 10 s quiet".into(),
        sa_mads: settled - filled,
        seconds: start.elapsed().as_secs_f64(),
        upstream: Some(upstream(sas) - asked),
    });
    Ok(())
}

fn self_filled(topology: &Topology, ranks: u32) -> Result<Vec<Phase>, String> {
    let c = Counted::start(topology.clone())?;
    let (nodes, _) = pick_nodes(&c.fabric);
    let mut phases = Vec::new();
    let before = c.settled(Duration::from_secs(5), Duration::from_secs(60))?;
    let start = Instant::now();
    let mut sas = nodes
        .iter()
        .map(|n| LocalSa::start_unfilled(&c.fabric, n, &[]).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    for sa in &mut sas {
        sa.wait_until("its table", Duration::from_secs(600), |k| {
            k.get("refreshes").is_some_and(|r| *r >= 1)
        })
        .map_err(|e| e.to_string())?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let filled = c.sa_mads()?;
    let asked = upstream(&sas);
    phases.push(Phase {
        name: format!("fill: each node its own table ({NODES})"),
        sa_mads: filled - before,
        seconds,
        upstream: Some(asked),
    });
    after_fill(&c, &sas, (filled, asked), &mut phases)?;
    jobs(&c, &sas, ranks, 2, &mut phases)?;
    Ok(phases)
}

fn distributed(
    topology: &Topology,
    ranks: u32,
    snapshot: &std::path::Path,
    from_file: bool,
) -> Result<Vec<Phase>, String> {
    let c = Counted::start(topology.clone())?;
    let (nodes, distributor) = pick_nodes(&c.fabric);
    let mut sas = nodes
        .iter()
        .map(|n| {
            LocalSa::start_unfilled(&c.fabric, n, &["--sm-key", KEY, "--load-wait", "900"])
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut phases = Vec::new();
    let before = c.settled(Duration::from_secs(5), Duration::from_secs(60))?;
    let asked_before = upstream(&sas);
    let snap = snapshot.to_str().ok_or("snapshot path")?;
    let mut args = vec!["--distribute", "--smkey", KEY, "--window", "8"];
    if from_file {
        args.extend(["--from", snap]);
    } else {
        args.extend(["--snapshot", snap]);
    }
    let start = Instant::now();
    let out = c
        .fabric
        .node(&distributor)
        .map_err(|e| e.to_string())?
        .lsaquery()
        .args(&args)
        .timeout(Duration::from_secs(900))
        .output()
        .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "lsaquery --distribute: {}{}",
            out.stdout, out.stderr
        ));
    }
    let filled = c.sa_mads()?;
    for line in out.stdout.lines() {
        println!("    {line}");
    }
    for sa in &mut sas {
        sa.filled_by_a_load().map_err(|e| e.to_string())?;
    }
    // The nodes' counters lag up to a second behind: what they sent
    // during the fill is counted with what they sent after it.
    phases.push(Phase {
        name: if from_file {
            "fill: lsaquery --distribute --from".into()
        } else {
            "fill: lsaquery --distribute".into()
        },
        sa_mads: filled - before,
        seconds,
        upstream: None,
    });
    after_fill(&c, &sas, (filled, asked_before), &mut phases)?;
    jobs(&c, &sas, ranks, 1, &mut phases)?;
    Ok(phases)
}

fn run() -> Result<(), String> {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (leaves, per_leaf, spines, ranks) = (arg(1, 18), arg(2, 18), arg(3, 9), arg(4, 1) as u32);
    let topology = Topology::fat_tree(leaves, per_leaf, spines);
    // Build what runs on the nodes before anything is timed.
    for program in ["local-sa", "lsaquery"] {
        conformance::program(program)?;
    }
    conformance::sibling("path-sweep")?;
    println!(
        "{} hosts, {} switches; {NODES} nodes with clients, {ranks} rank(s) each",
        topology.hcas().len(),
        topology.switches().len()
    );
    let snapshot = std::env::temp_dir().join(format!("fabric-scale-{}.snap", std::process::id()));
    report("baseline (no local-sa)", &baseline(&topology, ranks)?);
    report("local-sa, self-filled", &self_filled(&topology, ranks)?);
    report(
        "local-sa, distributor",
        &distributed(&topology, ranks, &snapshot, false)?,
    );
    report(
        "local-sa, distributor --from",
        &distributed(&topology, ranks, &snapshot, true)?,
    );
    let _ = std::fs::remove_file(&snapshot);
    Ok(())
}
