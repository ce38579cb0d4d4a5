//! Captures golden MAD vectors from OpenSM and saquery on a simulated
//! fabric and writes them to `conformance/vectors/` (or `--out DIR`).
//!
//! The fabric is Debian's ibsim example `net.2sw2path4hca` with OpenSM on
//! `Hca1`; every query runs `saquery -d -d` on `Hca2`, which prints the
//! request and response MADs and then its own decoding of the response.
//! Both are stored, so tests can check our decoding against saquery's.

use std::path::PathBuf;
use std::process::ExitCode;

use conformance::golden::{self, Section, Vector};
use conformance::saquery::parse_mad_dump;
use conformance::{Fabric, Topology};

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

fn run(out: &std::path::Path) -> Result<usize, String> {
    let topology = Topology::debian_example(TOPOLOGY).map_err(|e| e.to_string())?;
    let fabric = Fabric::builder(topology)
        .opensm_on(SM_NODE)
        .start()
        .map_err(|e| e.to_string())?;
    let client = fabric.node(CLIENT).map_err(|e| e.to_string())?;
    let sm = fabric
        .node(SM_NODE)
        .and_then(|n| n.port())
        .map_err(|e| e.to_string())?;
    let me = client.port().map_err(|e| e.to_string())?;
    let gid = |guid: u64| mad_codec::Gid::new(mad_codec::Gid::DEFAULT_PREFIX, guid).to_string();
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
    Ok(written)
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
