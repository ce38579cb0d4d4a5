//! Captures golden MAD vectors from OpenSM and saquery on a simulated
//! fabric and writes them to `conformance/vectors/` (or `--out DIR`).
//!
//! The fabric is Debian's ibsim example `net.2sw2path4hca` with OpenSM on
//! `Hca1`; every query runs `saquery -d -d` on `Hca2`, which prints the
//! request and response MADs and then its own decoding of the response.
//! Both are stored, so tests can check our decoding against saquery's.
//!
//! A second phase drives lsaquery (built next to this binary) on the nodes
//! for what saquery cannot do: PathRecord Get and its errors, InformInfo
//! subscriptions and the Reports they bring when a host is unplugged and
//! plugged back (traps 64 and 65) and when a multicast group is created and
//! deleted (traps 66 and 67), and MCMemberRecord joins and leaves.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use conformance::golden::{self, Section, Vector};
use conformance::saquery::{mad_blocks, parse_mad_dump};
use conformance::{SimulatedFabric, Topology};
use mad_codec::{Gid, McMemberRecord, SaMad};

const TOPOLOGY: &str = "net.2sw2path4hca";
const SM_NODE: &str = "Hca1";
const CLIENT: &str = "Hca2";

fn main() -> ExitCode {
    let mut out = golden::vectors_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            "-h" | "--help" => {
                println!(
                    "usage: capture-vectors [--out DIR]\n\n{}",
                    include_str!("capture-vectors.txt")
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("capture-vectors: unknown argument {other:?} (try --help)");
                return ExitCode::from(2);
            }
        }
    }
    match run(&out) {
        Ok(n) => {
            println!("wrote {n} vectors to {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("capture-vectors: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(out: &Path) -> Result<usize, String> {
    let topology = Topology::debian_example(TOPOLOGY).map_err(|e| e.to_string())?;
    let fabric = SimulatedFabric::builder(topology)
        .opensm_on(SM_NODE)
        .start()
        .map_err(|e| e.to_string())?;
    let client = fabric.node(CLIENT).map_err(|e| e.to_string())?;
    let sm = fabric
        .node(SM_NODE)
        .and_then(|n| n.port())
        .map_err(|e| e.to_string())?;
    let me = client.port().map_err(|e| e.to_string())?;
    let gid = |guid: u64| Gid::new(Gid::DEFAULT_PREFIX, guid).to_string();
    let opensm_version = std::process::Command::new("opensm")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.contains("OpenSM"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "OpenSM (version unknown)".into());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();

    let pair = format!("{}:{}", me.lid, sm.lid);
    let queries: Vec<(&str, &str, Vec<String>)> = vec![
        ("cpi-get", "ClassPortInfo Get", vec!["-c".into()]),
        (
            "pr-gettable-all",
            "PathRecord GetTable, empty component mask (every path)",
            vec!["-p".into()],
        ),
        (
            "pr-gettable-lids",
            "PathRecord GetTable by SLID and DLID, NumbPath 127",
            vec!["--src-to-dst".into(), pair.clone()],
        ),
        (
            "pr-gettable-gids",
            "PathRecord GetTable by SGID and DGID, NumbPath 127",
            vec![
                "--sgid-to-dgid".into(),
                format!("{}-{}", gid(me.guid), gid(sm.guid)),
            ],
        ),
        (
            "pr-gettable-pkey-service-id",
            "PathRecord GetTable by LIDs with P_Key 0x7fff and a ServiceID",
            vec![
                "--src-to-dst".into(),
                pair.clone(),
                "--pkey".into(),
                "0x7fff".into(),
                "--service_id".into(),
                "0x1000000000000abc".into(),
            ],
        ),
        (
            "pr-gettable-unknown-dlid",
            "PathRecord GetTable to a DLID no port has: an empty table",
            vec!["-p".into(), "--dlid".into(), "999".into()],
        ),
        (
            "pr-gettable-bad-mtu",
            "PathRecord GetTable with MTU code 9 (selector >): ERR_REQ_INVALID",
            vec!["-p".into(), "-M".into(), "9".into()],
        ),
        (
            "nr-gettable-lid",
            "NodeRecord GetTable by LID",
            vec!["NR".into(), sm.lid.to_string()],
        ),
        (
            "nr-gettable-all",
            "NodeRecord GetTable, every node",
            vec!["NR".into()],
        ),
        (
            "mcmr-gettable-groups",
            "MCMemberRecord GetTable, untrusted (groups)",
            vec!["-g".into()],
        ),
        (
            "mcmr-gettable-trusted-no-members",
            "MCMemberRecord GetTable with SM_Key 1: per-member records; no port has joined, so none",
            vec!["-m".into(), "--smkey".into(), "1".into()],
        ),
        (
            "iir-gettable-empty",
            "InformInfoRecord GetTable with no subscriptions",
            vec!["-I".into()],
        ),
        (
            "sr-gettable-empty",
            "ServiceRecord GetTable with no services",
            vec!["-S".into()],
        ),
    ];

    let mut written = 0;
    for (name, title, args) in queries {
        let run = client
            .command("saquery")
            .args(["-d", "-d"])
            .args(&args)
            .output()
            .map_err(|e| e.to_string())?;
        let dump = parse_mad_dump(&run.stdout).ok_or_else(|| {
            format!(
                "{name}: saquery printed no MAD dump:\n{}\n{}",
                run.stdout, run.stderr
            )
        })?;
        let mut v = Vector {
            name: name.into(),
            ..Vector::default()
        };
        let mut meta = |k: &str, val: String| v.meta.push((k.into(), val));
        meta("title", title.into());
        meta("command", format!("saquery -d -d {}", args.join(" ")));
        meta(
            "fabric",
            format!(
                "ibsim example {TOPOLOGY}; {opensm_version} (Debian 12) on {SM_NODE} (LID {}), started with -d0",
                sm.lid
            ),
        );
        meta(
            "client",
            format!("{CLIENT} (LID {}, port GUID {:#018x})", me.lid, me.guid),
        );
        meta("captured", date.clone());
        if let Some(resp) = &dump.response {
            if is_truncated(resp) {
                meta(
                    "truncated",
                    "yes: OpenSM sent more than one MAD and the simulator delivered only the first 256 bytes; \
                     only the first 168 data bytes are whole records"
                        .into(),
                );
            }
        } else {
            meta("response", "none: saquery timed out".into());
        }
        v.sections
            .insert("request".into(), Section::Mad(dump.request));
        if let Some(resp) = dump.response {
            v.sections.insert("response".into(), Section::Mad(resp));
        }
        let printed = printed_text(&run.stdout);
        if !printed.trim().is_empty() {
            v.sections.insert("saquery".into(), Section::Text(printed));
        }
        golden::save(out, &v).map_err(|e| format!("writing {name}: {e}"))?;
        println!("{name}: {title}");
        written += 1;
    }
    let context = Context {
        fabric: &fabric,
        out,
        opensm_version,
        date,
        sm_lid: sm.lid,
    };
    Ok(written + scenario(&context)?)
}

/// saquery's decoded output: everything but the `-d -d` MAD dumps (of
/// this query and of any helper query saquery made afterwards).
fn printed_text(stdout: &str) -> String {
    let is_hex = |l: &str| {
        let groups: Vec<&str> = l.split_whitespace().collect();
        !groups.is_empty()
            && groups
                .iter()
                .all(|g| g.len() == 4 && g.chars().all(|c| c.is_ascii_hexdigit()))
    };
    stdout
        .lines()
        .filter(|l| !is_hex(l) && !matches!(l.trim(), "SA Request:" | "SA Response:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A 256-byte GetTableResp with RMPP Active: OpenSM wrote a longer answer
/// for kernel RMPP and the simulator cut it to one MAD.
fn is_truncated(resp: &[u8]) -> bool {
    resp.len() == mad_codec::MAD_LEN
        && resp.get(3) == Some(&0x92)
        && resp.get(26).is_some_and(|f| f & 1 != 0)
}

/// What every phase-two vector notes about its capture.
struct Context<'a> {
    fabric: &'a SimulatedFabric,
    out: &'a Path,
    opensm_version: String,
    date: String,
    sm_lid: u16,
}

impl Context<'_> {
    fn vector(&self, name: &str, title: &str, command: &str, node: &str) -> Vector {
        let mut v = Vector {
            name: name.into(),
            ..Vector::default()
        };
        v.meta.push(("title".into(), title.into()));
        v.meta.push(("command".into(), command.into()));
        v.meta.push((
            "fabric".into(),
            format!(
                "ibsim example {TOPOLOGY}; {} (Debian 12) on {SM_NODE} (LID {}), started with -d0",
                self.opensm_version, self.sm_lid
            ),
        ));
        v.meta.push((
            "client".into(),
            format!("{node}, running lsaquery (local-sa)"),
        ));
        v.meta.push(("captured".into(), self.date.clone()));
        v
    }

    fn save(&self, v: Vector) -> Result<usize, String> {
        golden::save(self.out, &v).map_err(|e| format!("writing {}: {e}", v.name))?;
        println!("{}: {}", v.name, v.meta("title").unwrap_or_default());
        Ok(1)
    }

    /// Runs lsaquery on `node` to completion; its dumps, in order.
    fn lsaquery(&self, node: &str, args: &[&str]) -> Result<Vec<(String, Vec<u8>)>, String> {
        let bin = conformance::program("lsaquery")?;
        let out = self
            .fabric
            .node(node)
            .and_then(|n| {
                n.command(&bin)
                    .arg("--master")
                    .args(args)
                    .arg("-d")
                    .output()
            })
            .map_err(|e| e.to_string())?;
        let blocks = mad_blocks(&out.stdout);
        if blocks.is_empty() {
            return Err(format!(
                "lsaquery {} on {node} printed no MADs:\n{}{}",
                args.join(" "),
                out.stdout,
                out.stderr
            ));
        }
        Ok(blocks)
    }

    /// Saves a request/response exchange from lsaquery's dumps.
    fn exchange(
        &self,
        name: &str,
        title: &str,
        node: &str,
        args: &[&str],
        blocks: &[(String, Vec<u8>)],
    ) -> Result<usize, String> {
        let mut v = self.vector(
            name,
            title,
            &format!("lsaquery -d {}", args.join(" ")),
            node,
        );
        for (label, section) in [("SA Request", "request"), ("SA Response", "response")] {
            let bytes = blocks
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, b)| b.clone())
                .ok_or_else(|| format!("{name}: no {label}"))?;
            v.sections.insert(section.into(), Section::Mad(bytes));
        }
        self.save(v)
    }

    /// Starts a subscriber for `trap` on `node` that stops after one notice.
    fn subscriber(&self, node: &str, trap: &str) -> Result<conformance::NodeProcess<'_>, String> {
        let bin = conformance::program("lsaquery")?;
        self.fabric
            .node(node)
            .and_then(|n| {
                n.command(&bin)
                    .args([
                        "--master",
                        "--subscribe",
                        trap,
                        "--count",
                        "1",
                        "--duration",
                        "60",
                        "-d",
                    ])
                    .serve_requests()
                    .spawn()
            })
            .map_err(|e| e.to_string())
    }

    /// Waits for a subscriber to finish and returns its dumps.
    fn finished(
        &self,
        mut p: conformance::NodeProcess<'_>,
        what: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, String> {
        match p.wait_timeout(Duration::from_secs(90)) {
            Some(s) if s.success() => Ok(mad_blocks(&p.stdout())),
            other => Err(format!(
                "{what}: subscriber ended with {other:?}:\n{}{}",
                p.stdout(),
                p.stderr()
            )),
        }
    }

    /// Saves a subscriber's exchanges: subscribe, the Report, unsubscribe.
    fn subscription(
        &self,
        trap: &str,
        node: &str,
        event: &str,
        affected: &str,
        blocks: &[(String, Vec<u8>)],
    ) -> Result<usize, String> {
        let labels: Vec<&str> = blocks.iter().map(|(l, _)| l.as_str()).collect();
        if labels
            != [
                "SA Request",
                "SA Response",
                "SA Report",
                "SA Request",
                "SA Response",
            ]
        {
            return Err(format!("trap {trap} subscriber printed {labels:?}"));
        }
        let command = format!("lsaquery -d --subscribe {trap} --count 1 (SIM_SET_ISSM=1)");
        let mut n = 0;
        for (name, title, at) in [
            (
                format!("informinfo-set-subscribe-{trap}"),
                format!("InformInfo Set: subscribe to trap {trap}"),
                0,
            ),
            (
                format!("informinfo-set-unsubscribe-{trap}"),
                format!("InformInfo Set: unsubscribe from trap {trap}"),
                3,
            ),
        ] {
            let mut v = self.vector(&name, &title, &command, node);
            v.sections
                .insert("request".into(), Section::Mad(blocks[at].1.clone()));
            v.sections
                .insert("response".into(), Section::Mad(blocks[at + 1].1.clone()));
            n += self.save(v)?;
        }
        let mut v = self.vector(
            &format!("report-trap-{trap}"),
            &format!("Report of a trap {trap} Notice from OpenSM"),
            &command,
            node,
        );
        v.meta.push(("event".into(), event.into()));
        v.meta.push(("affected-gid".into(), affected.into()));
        v.sections
            .insert("mad".into(), Section::Mad(blocks[2].1.clone()));
        n += self.save(v)?;
        Ok(n)
    }
}

fn gid_of(fabric: &SimulatedFabric, node: &str) -> Result<Gid, String> {
    let port = fabric
        .node(node)
        .and_then(|n| n.port())
        .map_err(|e| e.to_string())?;
    Ok(Gid::new(Gid::DEFAULT_PREFIX, port.guid))
}

/// Polls `saquery -I` until `n` subscriptions exist.
fn wait_for_subscriptions(fabric: &SimulatedFabric, n: usize) -> Result<(), String> {
    let node = fabric.node(CLIENT).map_err(|e| e.to_string())?;
    for _ in 0..100 {
        let out = node.saquery(["-I"]).map_err(|e| e.to_string())?;
        if conformance::saquery::parse_printed_records(&out.stdout).len() >= n {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("OpenSM never showed {n} subscriptions"))
}

/// Phase two: PathRecord Get, subscriptions and Reports, joins and leaves.
fn scenario(cx: &Context<'_>) -> Result<usize, String> {
    let fabric = cx.fabric;
    let mut n = 0;
    let me = fabric
        .node(CLIENT)
        .and_then(|c| c.port())
        .map_err(|e| e.to_string())?;
    let pair = format!("{}:{}", me.lid, cx.sm_lid);
    for (name, title, args) in [
        (
            "pr-get-lids",
            "PathRecord Get by SLID and DLID",
            vec!["--src-to-dst", pair.as_str(), "--method", "get"],
        ),
        (
            "pr-get-no-records",
            "PathRecord Get to a DLID no port has: ERR_NO_RECORDS",
            vec!["-p", "--dlid", "999", "--method", "get"],
        ),
        (
            "pr-get-one-service-id-bit",
            "PathRecord Get with only ServiceID's first mask bit: ERR_REQ_INSUFFICIENT_COMPONENTS",
            vec![
                "-p",
                "--service_id",
                "0x10",
                "--comp-mask",
                "0x1",
                "--method",
                "get",
            ],
        ),
    ] {
        let blocks = cx.lsaquery(CLIENT, &args)?;
        n += cx.exchange(name, title, CLIENT, &args, &blocks)?;
    }

    // Traps 64/65: subscribers on Hca2 and Hca3, then Hca4 unplugged and
    // plugged back.
    let sub65 = cx.subscriber(CLIENT, "65")?;
    let sub64 = cx.subscriber("Hca3", "64")?;
    wait_for_subscriptions(fabric, 2)?;
    n += capture_saquery(
        cx,
        "iir-gettable-subscribed",
        "InformInfoRecord GetTable with two subscriptions",
        &["-I"],
    )?;
    n += capture_saquery(
        cx,
        "iir-gettable-subscribed-trusted",
        "InformInfoRecord GetTable with SM_Key 1 (QPN shown)",
        &["-I", "--smkey", "1"],
    )?;
    let hca4 = gid_of(fabric, "Hca4")?.to_string();
    fabric.unlink("Hca4", 1).map_err(|e| e.to_string())?;
    let blocks = cx.finished(sub65, "trap 65")?;
    n += cx.subscription(
        "65",
        CLIENT,
        "ibsim console: Unlink \"Hca4\"[1]",
        &hca4,
        &blocks,
    )?;
    fabric.relink("Hca4", 1).map_err(|e| e.to_string())?;
    let blocks = cx.finished(sub64, "trap 64")?;
    n += cx.subscription(
        "64",
        "Hca3",
        "ibsim console: ReLink \"Hca4\"[1]",
        &hca4,
        &blocks,
    )?;

    // Traps 66/67 around a group's life, with joins and leaves from Hca2.
    let sub66 = cx.subscriber("Hca4", "66")?;
    let sub67 = cx.subscriber("Hca3", "67")?;
    wait_for_subscriptions(fabric, 2)?;
    let args = ["--join", "::"];
    let blocks = cx.lsaquery(CLIENT, &args)?;
    n += cx.exchange(
        "mcmr-set-create",
        "MCMemberRecord Set: FullMember join with MGID 0 creates a group",
        CLIENT,
        &args,
        &blocks,
    )?;
    let response = &blocks
        .iter()
        .find(|(l, _)| l == "SA Response")
        .ok_or("no join response")?
        .1;
    let mgid = SaMad::parse(response)
        .and_then(|m| m.record::<McMemberRecord>().map(|r| r.mgid()))
        .map_err(|e| format!("join answer: {e}"))?
        .to_string();
    let blocks = cx.finished(sub66, "trap 66")?;
    n += cx.subscription(
        "66",
        "Hca4",
        "Hca2 created the group with the join above",
        &mgid,
        &blocks,
    )?;

    let args = ["--join", mgid.as_str(), "-J", "2"];
    let blocks = cx.lsaquery(CLIENT, &args)?;
    n += cx.exchange(
        "mcmr-set-add-non-member",
        "MCMemberRecord Set: the same port adds NonMember; states OR",
        CLIENT,
        &args,
        &blocks,
    )?;
    n += capture_saquery(
        cx,
        "mcmr-gettable-trusted-members",
        "MCMemberRecord GetTable with SM_Key 1: one member",
        &["-m", "--smkey", "1"],
    )?;
    let args = ["--leave", mgid.as_str(), "-J", "2"];
    let blocks = cx.lsaquery(CLIENT, &args)?;
    n += cx.exchange(
        "mcmr-delete-partial",
        "MCMemberRecord Delete of the NonMember bit only",
        CLIENT,
        &args,
        &blocks,
    )?;
    let args = ["--leave", mgid.as_str(), "-J", "1"];
    let blocks = cx.lsaquery(CLIENT, &args)?;
    n += cx.exchange(
        "mcmr-delete-last",
        "MCMemberRecord Delete of the last FullMember: the group goes",
        CLIENT,
        &args,
        &blocks,
    )?;
    let blocks = cx.finished(sub67, "trap 67")?;
    n += cx.subscription(
        "67",
        "Hca3",
        "Hca2's last leave above deleted the group",
        &mgid,
        &blocks,
    )?;
    Ok(n)
}

/// A saquery exchange on the client node (phase-two state).
fn capture_saquery(
    cx: &Context<'_>,
    name: &str,
    title: &str,
    args: &[&str],
) -> Result<usize, String> {
    let node = cx.fabric.node(CLIENT).map_err(|e| e.to_string())?;
    let run = node
        .command("saquery")
        .args(["-d", "-d"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    let dump = parse_mad_dump(&run.stdout)
        .ok_or_else(|| format!("{name}: no dump:\n{}{}", run.stdout, run.stderr))?;
    let mut v = cx.vector(
        name,
        title,
        &format!("saquery -d -d {}", args.join(" ")),
        CLIENT,
    );
    v.meta.retain(|(k, _)| k != "client");
    v.meta.push(("client".into(), CLIENT.into()));
    v.sections
        .insert("request".into(), Section::Mad(dump.request));
    if let Some(r) = dump.response {
        v.sections.insert("response".into(), Section::Mad(r));
    }
    let printed = printed_text(&run.stdout);
    if !printed.trim().is_empty() {
        v.sections.insert("saquery".into(), Section::Text(printed));
    }
    cx.save(v)
}
