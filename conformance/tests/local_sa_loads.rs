//! PathRecord loads and deletes through the simulator: lsaquery on one
//! host pushes thousands of records over RMPP to local-sa on another, reads
//! them back exactly, deletes exactly what it names, and is refused without
//! the SM_Key; loads survive packet loss; and a node that starts loads and
//! never finishes them cannot make local-sa hold memory without end.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use conformance::saquery::{path_record_dump, printed_answer};
use conformance::{LocalSa, Node, RunOutput, SimulatedFabric, Topology};
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, Mtu, PathRecord, PathRecordRepr, Rate, Selector};

/// The SM_Key local-sa is started with.
const KEY: &str = "0x5eed";

/// Fake source ports (not on the fabric) and what they reach: 30 × 100.
const SOURCES: std::ops::Range<u16> = 3000..3030;
const DESTS: std::ops::Range<u16> = 1..101;

fn source_gid(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_PREFIX, 0x0050_0000_0000_0000 | u64::from(lid))
}

/// A distinct record per pair, with fields varied so that a byte out of
/// place shows.
fn record(slid: u16, dlid: u16) -> PathRecord {
    PathRecordRepr {
        sgid: source_gid(slid),
        dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x0060_0000_0000_0000 | u64::from(dlid)),
        slid,
        dlid,
        flow_label: u32::from(slid) << 4 | u32::from(dlid & 0xF),
        hop_limit: (dlid & 0xFF) as u8,
        tclass: (slid & 0xFF) as u8,
        reversible: dlid.is_multiple_of(2),
        pkey: 0xFFFF,
        sl: (dlid % 16) as u8,
        mtu_selector: Selector::Exactly,
        mtu: if dlid.is_multiple_of(3) {
            Mtu::MTU_4096
        } else {
            Mtu::MTU_2048
        },
        rate_selector: Selector::Exactly,
        rate: Rate::GBPS_10,
        packet_life_selector: Selector::Exactly,
        packet_life: 18,
        ..PathRecordRepr::default()
    }
    .to_wire()
}

/// A small fat tree, for tests that need a few nodes.
fn small_fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa on `node`, taking loads that carry [`KEY`].
fn keyed_local_sa<'f>(fabric: &'f SimulatedFabric, node: &str) -> LocalSa<'f> {
    LocalSa::start(fabric, node, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"))
}

/// `node`'s LID, as lsaquery's `--sa-lid` takes it.
fn lid_of(fabric: &SimulatedFabric, node: &str) -> String {
    fabric.node(node).unwrap().port().unwrap().lid.to_string()
}

fn write_dump(path: &Path, records: &[PathRecord]) {
    let text: String = records.iter().map(path_record_dump).collect();
    std::fs::write(path, text).unwrap();
}

fn lsaquery(node: &Node<'_>, args: &[&str]) -> RunOutput {
    node.lsaquery()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The records local-sa at `sa_lid` answers for a GetTable from `sgid`,
/// as bytes.
fn table_from(node: &Node<'_>, sa_lid: &str, sgid: Gid) -> BTreeSet<Vec<u8>> {
    let out = lsaquery(
        node,
        &["--sa-lid", sa_lid, "-p", "--sgid", &sgid.to_string(), "-d"],
    );
    let (_, data) = response(&out);
    data.chunks_exact(64).map(<[u8]>::to_vec).collect()
}

/// The status and data of the SA answer lsaquery printed with `-d`.
fn response(out: &RunOutput) -> (mad_codec::MadStatus, Vec<u8>) {
    printed_answer(&out.stdout).unwrap_or_else(|| panic!("no answer: {}{}", out.stdout, out.stderr))
}

/// Writes the table of local-sa at LID `me` for its own port, as `node`
/// reads it, to a file to load back.
fn own_table_file(fabric: &SimulatedFabric, node: &Node<'_>, me: &str) -> std::path::PathBuf {
    let table = lsaquery(node, &["--sa-lid", me, "-p", "--slid", me]);
    assert!(table.status.success(), "{}", table.stderr);
    let file = fabric.dir().join("own.txt");
    std::fs::write(&file, &table.stdout).unwrap();
    file
}

fn expect_line(out: &RunOutput, line: &str) {
    assert!(
        out.status.success() && out.stdout.contains(line),
        "expected {line:?}:\n{}{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn a_settable_of_thousands_is_answered_back_exactly_and_deletes_remove_what_they_name() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(10, 10, 4))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = keyed_local_sa(&fabric, "h5");
    let sa_lid = lid_of(&fabric, "h5");
    let loader = fabric.node("h9").unwrap();
    let all: Vec<PathRecord> = SOURCES
        .flat_map(|s| DESTS.map(move |d| record(s, d)))
        .collect();
    let file = fabric.dir().join("paths.txt");
    write_dump(&file, &all);
    let file = file.to_str().unwrap();

    // Without the key: refused, nothing stored.
    let denied = lsaquery(
        &loader,
        &["--sa-lid", &sa_lid, "--load", file, "--smkey", "0x1"],
    );
    assert_eq!(denied.status.code(), Some(1), "{}", denied.stderr);
    assert!(
        denied.stderr.contains("0x0700"),
        "ERR_REQ_DENIED: {}",
        denied.stderr
    );
    assert!(table_from(&loader, &sa_lid, source_gid(3000)).is_empty());

    // 3000 records, 192,000 bytes: 960 RMPP segments through ibsim.
    let loaded = lsaquery(
        &loader,
        &[
            "--sa-lid",
            &sa_lid,
            "--load",
            file,
            "--replace",
            "--smkey",
            KEY,
        ],
    );
    expect_line(&loaded, "loaded 3000 of 3000 PathRecords");
    for s in [3000, 3017, 3029] {
        let expected: BTreeSet<Vec<u8>> = all
            .iter()
            .filter(|r| r.slid() == s)
            .map(|r| r.as_bytes().to_vec())
            .collect();
        assert_eq!(
            table_from(&loader, &sa_lid, source_gid(s)),
            expected,
            "the table from LID {s}"
        );
    }

    // Delete named records: exactly those go.
    let named: Vec<PathRecord> = [(3000, 1), (3000, 2), (3005, 50), (3029, 100)]
        .map(|(s, d)| record(s, d))
        .to_vec();
    let del = fabric.dir().join("delete.txt");
    write_dump(&del, &named);
    let out = lsaquery(
        &loader,
        &[
            "--sa-lid",
            &sa_lid,
            "--delete",
            del.to_str().unwrap(),
            "--smkey",
            KEY,
        ],
    );
    expect_line(&out, "deleted 4 of 4 PathRecords");
    // A kept record is answered from the cache; a deleted one is unknown
    // now, so its Get goes to OpenSM, which never knew these made-up
    // sources. (The source's whole table also goes to OpenSM: a Delete
    // leaves it incomplete.)
    let get = |slid: u16, dlid: u16| {
        let out = lsaquery(
            &loader,
            &[
                "--sa-lid",
                &sa_lid,
                "--src-to-dst",
                &format!("{slid}:{dlid}"),
                "--method",
                "get",
                "-d",
            ],
        );
        let (status, data) = response(&out);
        (status, data[..64].to_vec())
    };
    assert_eq!(
        get(3000, 3),
        (
            mad_codec::MadStatus::OK,
            record(3000, 3).as_bytes().to_vec()
        )
    );
    assert_eq!(get(3000, 1).0, mad_codec::MadStatus::ERR_NO_RECORDS);
    sa.wait_until("the named deletes counted", Duration::from_secs(5), |c| {
        c["deleted"] == 4
    })
    .unwrap_or_else(|e| panic!("{e}"));

    // Delete by template: every record to DLID 77, loaded or fetched.
    sa.wait_until("the load counted", Duration::from_secs(5), |c| {
        c["loaded"] == 3000 && c["deleted"] == 4
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let before = sa.counter("records");
    let out = lsaquery(
        &loader,
        &[
            "--sa-lid",
            &sa_lid,
            "--delete-matching",
            "--dlid",
            "77",
            "--smkey",
            KEY,
        ],
    );
    let to_77_from_h5 = 1;
    expect_line(
        &out,
        &format!("deleted {} PathRecords", SOURCES.len() + to_77_from_h5),
    );
    sa.wait_until("the deletes counted", Duration::from_secs(5), |c| {
        c["records"] == before - (SOURCES.len() as u64 + 1)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sa.counter("denied"), 1);
}

/// A Delete never turns into "no such path": after a whole-table load of
/// its own port and a Delete of everything in the default partition,
/// local-sa asks OpenSM and answers with OpenSM's record.
#[test]
fn after_a_delete_all_local_sa_answers_what_the_master_knows() {
    let fabric = small_fabric();
    let mut sa = keyed_local_sa(&fabric, "h2");
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap().lid.to_string();
    let peer = lid_of(&fabric, "h9");
    let pair = format!("{me}:{peer}");
    // Its own table, as it holds it, loaded back whole (replacing).
    let file = own_table_file(&fabric, &node, &me);
    let out = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--load",
            file.to_str().unwrap(),
            "--replace",
            "--smkey",
            KEY,
        ],
    );
    expect_line(&out, "loaded");
    let out = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--delete-matching",
            "--pkey",
            "0xffff",
            "--smkey",
            KEY,
        ],
    );
    expect_line(&out, "deleted");
    sa.wait_until("everything deleted", Duration::from_secs(5), |c| {
        c["records"] == 0
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let ours = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--src-to-dst",
            &pair,
            "--method",
            "get",
            "-d",
        ],
    );
    let theirs = lsaquery(
        &node,
        &["--master", "--src-to-dst", &pair, "--method", "get", "-d"],
    );
    let data = |out: &RunOutput| -> Vec<u8> {
        let (status, data) = response(out);
        assert_eq!(status, mad_codec::MadStatus::OK, "{}", out.stdout);
        data[..64].to_vec()
    };
    assert_eq!(
        data(&ours),
        data(&theirs),
        "OpenSM's record, through local-sa"
    );
}

/// No default SM_Key: until one is configured every load is refused
/// (OpenSM's well-known 1 included), and the log says why once. The key
/// comes from a file only its owner reads, and never shows in the log.
#[test]
fn without_a_configured_sm_key_loads_are_refused_and_the_key_never_shows() {
    use std::os::unix::fs::PermissionsExt;
    let fabric = small_fabric();
    let node = fabric.node("h2").unwrap();
    let lid = node.port().unwrap().lid.to_string();
    let file = fabric.dir().join("paths.txt");
    write_dump(&file, &[record(3000, 1), record(3000, 2)]);
    let file = file.to_str().unwrap();
    let sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    for key in ["0x1", "0x0", KEY] {
        let out = lsaquery(&node, &["--sa-lid", &lid, "--load", file, "--smkey", key]);
        assert!(
            out.status.code() == Some(1) && out.stderr.contains("0x0700"),
            "SM_Key {key}: {}",
            out.stderr
        );
    }
    let (_, log) = sa.stop();
    assert!(
        log.contains("no SM_Key configured"),
        "said at start:\n{log}"
    );
    assert_eq!(
        log.matches("no SM_Key is configured: every load").count(),
        1,
        "said once when loads arrive:\n{log}"
    );

    // A key file others may read is refused at start, saying how to fix it.
    let key_file = fabric.dir().join("sm_key");
    std::fs::write(&key_file, format!("# the key\n{KEY}\n")).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = node
        .workspace_program("local-sa")
        .arg("--sm-key-file")
        .arg(&key_file)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("chmod 600"), "{}", out.stderr);
    // Mode 600: loads with the key are taken, and the log never shows it.
    // (On another node: the simulator may still route h2's SA MADs to the
    // local-sa that just stopped there.)
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key_file = key_file.to_str().unwrap().to_owned();
    let sa = LocalSa::start(&fabric, "h3", &["--sm-key-file", &key_file])
        .unwrap_or_else(|e| panic!("{e}"));
    let lid = lid_of(&fabric, "h3");
    let out = lsaquery(&node, &["--sa-lid", &lid, "--load", file, "--smkey", KEY]);
    expect_line(&out, "loaded 2 of 2 PathRecords");
    let denied = lsaquery(&node, &["--sa-lid", &lid, "--load", file, "--smkey", "0x1"]);
    assert_eq!(denied.status.code(), Some(1));
    let (_, log) = sa.stop();
    let digits = KEY.trim_start_matches("0x");
    let decimal = u64::from_str_radix(digits, 16).unwrap().to_string();
    assert!(
        !log.contains(digits) && !log.contains(&decimal),
        "the key in the log:\n{log}"
    );
}

/// A peer sending loads with a wrong key cannot flood the log: thirty
/// denied loads from one node, one warning line (the next would come a
/// minute later, counting the ones left out).
#[test]
fn denied_loads_from_one_node_are_one_log_line() {
    let fabric = small_fabric();
    let mut sa = keyed_local_sa(&fabric, "h2");
    let lid = lid_of(&fabric, "h2");
    let loader = fabric.node("h9").unwrap();
    let file = fabric.dir().join("paths.txt");
    write_dump(&file, &[record(3000, 1)]);
    let file = file.to_str().unwrap();
    for _ in 0..30 {
        let out = lsaquery(
            &loader,
            &["--sa-lid", &lid, "--load", file, "--smkey", "0x1"],
        );
        assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    }
    sa.wait_until("30 denied", Duration::from_secs(5), |c| c["denied"] == 30)
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, log) = sa.stop();
    assert_eq!(
        log.matches("without the SM_Key: denied").count(),
        1,
        "one line for thirty:\n{log}"
    );
}

/// Loads survive loss: with ibsim dropping a share of the packets through
/// the loader's port, both RMPP ends retransmit (the loader resends from
/// the last ACK, local-sa repeats its ACKs), and every record arrives
/// intact. `LOSS_RECORDS` and `LOSS_PERCENT` set the size and the drop
/// rate (CI: 10,000 records at 5 %; scripts/long-tests.sh: 100,000 at 5 %
/// and 10 %).
#[test]
fn a_load_through_a_lossy_port_arrives_whole() {
    let env = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (count, percent) = (env("LOSS_RECORDS", 10_000), env("LOSS_PERCENT", 5));
    let fabric = small_fabric();
    let _sa = keyed_local_sa(&fabric, "h2");
    let sa_lid = lid_of(&fabric, "h2");
    let loader = fabric.node("h9").unwrap();
    // `count` records from 100 sources.
    let per_source = count.div_ceil(100);
    let all: Vec<PathRecord> = (0..count)
        .map(|i| record(3000 + (i / per_source) as u16, 1 + (i % per_source) as u16))
        .collect();
    let file = fabric.dir().join("paths.txt");
    write_dump(&file, &all);
    fabric.set_drop_rate("h9", 1, percent as u8).unwrap();
    let started = std::time::Instant::now();
    let loaded = loader
        .lsaquery()
        .args([
            "--sa-lid",
            &sa_lid,
            "--load",
            file.to_str().unwrap(),
            "--replace",
            "--smkey",
            KEY,
        ])
        .timeout(Duration::from_secs(900))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{count} records at {percent} % loss: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    fabric.set_drop_rate("h9", 1, 0).unwrap();
    expect_line(&loaded, &format!("loaded {count} of {count} PathRecords"));
    for s in [3000, 3000 + (count - 1) / per_source] {
        let expected: BTreeSet<Vec<u8>> = all
            .iter()
            .filter(|r| u32::from(r.slid()) == s)
            .map(|r| r.as_bytes().to_vec())
            .collect();
        let got = table_from(&loader, &sa_lid, source_gid(s as u16));
        assert_eq!(got.len(), expected.len(), "records of source {s}");
        assert!(got == expected, "source {s}: the records differ");
    }
}

/// On a terminal a long load shows how far it has come (`script` gives
/// lsaquery one); the bar is wiped before the result line.
#[test]
fn a_long_load_on_a_terminal_shows_its_progress() {
    let fabric = small_fabric();
    let _sa = keyed_local_sa(&fabric, "h2");
    let sa_lid = lid_of(&fabric, "h2");
    let loader = fabric.node("h9").unwrap();
    let all: Vec<PathRecord> = (0..20_000u32)
        .map(|i| record(3000 + (i / 200) as u16, 1 + (i % 200) as u16))
        .collect();
    let file = fabric.dir().join("paths.txt");
    write_dump(&file, &all);
    let lsaquery = conformance::program("lsaquery").unwrap();
    // `script` runs its command through a shell: the paths go through
    // the environment (they may hold a space).
    let command = format!("\"$LSAQUERY\" --sa-lid {sa_lid} --load \"$PATHS\" --smkey {KEY}");
    let out = loader
        .command("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("LSAQUERY", &lsaquery)
        .env("PATHS", &file)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    let shown = out.stdout.matches(" segments acknowledged").count();
    assert!(shown >= 1, "no progress shown: {:?}", out.stdout);
    assert!(
        out.stdout
            .contains("\x1b[Kloaded 20000 of 20000 PathRecords"),
        "the bar is wiped before the result: {:?}",
        out.stdout
    );
}

/// Loads one node may have in progress at once (local-sa's default).
const PER_SOURCE: u64 = 8;

/// Resident memory of `pid`, in bytes.
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc status");
    kb * 1024
}

/// `key=value` from rmpp-flood's summary line.
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

/// A node that starts loads and never finishes them (10,000, each
/// announcing a million records, only the first segment sent) gets its
/// first eight held and every other one refused with STOP (ResX), counted;
/// local-sa's resident memory stays within 64 MB of idle; and another
/// node's load and queries are served meanwhile. `FLOOD_COUNT=100000`
/// gives the full figure (scripts/long-tests.sh).
#[test]
fn half_finished_loads_from_one_node_are_refused_past_eight_and_cost_no_memory() {
    let count: u64 = std::env::var("FLOOD_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let fabric = small_fabric();
    let mut sa = keyed_local_sa(&fabric, "h2");
    let me = lid_of(&fabric, "h2");
    let idle = resident(sa.pid());

    let hostile = fabric.node("h9").unwrap();
    let out = hostile
        .command(env!("CARGO_BIN_EXE_rmpp-flood"))
        .args([
            "--sa-lid",
            &me,
            "--smkey",
            KEY,
            "--count",
            &count.to_string(),
        ])
        .timeout(Duration::from_secs(900))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", out.stderr);
    let line = out.stdout.trim();
    assert_eq!(field(line, "stop"), count - PER_SOURCE, "{line}");
    assert_eq!(field(line, "ack"), PER_SOURCE, "{line}");
    sa.wait_until("the refusals counted", Duration::from_secs(10), |c| {
        c["rmpp_refused_per_peer"] == count - PER_SOURCE && c["transfers_active"] == PER_SOURCE
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let grown = resident(sa.pid()).saturating_sub(idle);
    eprintln!(
        "{count} half-finished loads: {line}; resident {} KB idle, +{} KB after",
        idle >> 10,
        grown >> 10
    );
    assert!(
        grown < 64 << 20,
        "resident memory grew {} MB over idle",
        grown >> 20
    );

    // Another node loads and asks as usual while the eight are held.
    let node = fabric.node("h5").unwrap();
    let peer = lid_of(&fabric, "h7");
    let pair = format!("{me}:{peer}");
    let file = own_table_file(&fabric, &node, &me);
    let out = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--load",
            file.to_str().unwrap(),
            "--smkey",
            KEY,
        ],
    );
    expect_line(&out, "loaded");
    let got = lsaquery(
        &node,
        &[
            "--sa-lid",
            &me,
            "--src-to-dst",
            &pair,
            "--method",
            "get",
            "-d",
        ],
    );
    assert_eq!(response(&got).0, mad_codec::MadStatus::OK);
    let (_, log) = sa.stop();
    assert!(
        log.matches("RMPP transfer refused").count() <= 2,
        "refusals are not logged one by one:\n{log}"
    );
}

/// A distributor next to the master fills a node: local-sa started with
/// `--load-wait` does not ask OpenSM for its table; the load of its own
/// paths (OpenSM's, pushed from another node with REPLACE_SOURCES) stands
/// for its refresh, and its answers are then OpenSM's, byte for byte.
#[test]
fn a_distributors_load_stands_for_the_nodes_own_refresh() {
    let fabric = small_fabric();
    let mut sa = LocalSa::start_unfilled(&fabric, "h2", &["--sm-key", KEY, "--load-wait", "300"])
        .unwrap_or_else(|e| panic!("{e}"));
    let me = fabric.node("h2").unwrap().port().unwrap();
    let distributor = fabric.node("h9").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        (sa.counter("refreshes"), sa.counter("records")),
        (0, 0),
        "waiting for the load, not asking OpenSM"
    );

    // What OpenSM holds for h2's port, one destination at a time (the
    // simulator cuts multi-MAD answers).
    let mut records = Vec::new();
    for host in fabric.topology().hcas() {
        let dlid = fabric.node(host).unwrap().port().unwrap().lid;
        let out = lsaquery(
            &distributor,
            &[
                "--master",
                "-p",
                "--slid",
                &me.lid.to_string(),
                "--dlid",
                &dlid.to_string(),
                "-d",
            ],
        );
        let (status, data) = response(&out);
        assert_eq!(status, mad_codec::MadStatus::OK, "{}", out.stderr);
        records.extend(
            data.chunks_exact(64)
                .map(|r| PathRecord::read_from_bytes(r).unwrap()),
        );
    }
    let file = fabric.dir().join("h2-from-opensm.txt");
    write_dump(&file, &records);
    let loaded = lsaquery(
        &distributor,
        &[
            "--sa-lid",
            &me.lid.to_string(),
            "--load",
            file.to_str().unwrap(),
            "--replace",
            "--smkey",
            KEY,
        ],
    );
    let n = records.len();
    expect_line(&loaded, &format!("loaded {n} of {n} PathRecords"));
    sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sa.counter("refreshes_loaded"), 1);
    assert_eq!(sa.counter("records"), n as u64);

    // A GetTable from h2's port, answered by h2's local-sa from the load,
    // equals what OpenSM holds.
    let gid = Gid::new(Gid::DEFAULT_PREFIX, me.guid);
    let from_sa = table_from(&distributor, &me.lid.to_string(), gid);
    let from_opensm: BTreeSet<Vec<u8>> = records.iter().map(|r| r.as_bytes().to_vec()).collect();
    assert_eq!(from_sa, from_opensm);
    assert_eq!(sa.counter("refreshes"), 0);
}
