//! The path engine against OpenSM on simulated fabrics: for every source
//! and every destination, the records `lsaquery --compute` works out from
//! the fabric's description equal OpenSM's own answers — fat trees of
//! several shapes, LMC 1 and 2, the routing engines minhop, updn, dnup,
//! ftree and dor, partitions with their SLs and limited members, links of
//! different widths and speeds, a link gone down after OpenSM's reroute,
//! a QoS master. Where OpenSM's answer depends on something it does not
//! publish (LASH's and DFSSSP's SLs), the check catches it and the
//! distributor serves the master's records instead.
//!
//! Two witnesses: lsaquery's own check of every pair (`--check-sample
//! all`), and OpenSM's answers asked here by `opensm-paths` (a Get per
//! LID pair) and compared with the computed tables lsaquery wrote, byte
//! for byte. A Get naming both LIDs is answered with Preference 0, and the
//! simulator cuts the GetTable answers that would show the other LMC
//! pairs' Preference 2, so Preference is compared where OpenSM shows it
//! (LMC 0) and left out of the LMC pairs.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use conformance::path_answers::{
    Ask, KEY, QOS_POLICY, answer_differences, answers, differences, start, waiting_nodes,
    with_port_options,
};
use conformance::saquery::{parse_printed_records, path_record_from_printed};
use conformance::{LocalSa, RunOutput, SimulatedFabric, Topology};
use mad_codec::PathRecord;

/// OpenSM's answers by LID pair: its record, or none.
type OpenSmAnswers = HashMap<(u16, u16), Option<PathRecord>>;

/// What `lsaquery --compute` computed and said.
struct Computed {
    out: RunOutput,
    json: serde_json::Value,
    /// Default tables' records by (SLID, DLID).
    default: HashMap<(u16, u16), PathRecord>,
    /// Partition tables' records by (SLID, DLID, P_Key).
    partitions: HashMap<(u16, u16, u16), PathRecord>,
}

impl Computed {
    /// Every LID some table names.
    fn lids(&self) -> Vec<u16> {
        let all: BTreeSet<u16> = self.default.keys().flat_map(|(s, d)| [*s, *d]).collect();
        all.into_iter().collect()
    }

    fn differences(&self) -> usize {
        self.json["check"]["differences"]
            .as_array()
            .map_or(usize::MAX, Vec::len)
    }

    fn rates(&self) -> BTreeSet<u8> {
        self.default.values().map(|r| r.rate().0).collect()
    }
}

/// `lsaquery --compute` with every pair checked, on the master's node.
fn compute(fabric: &SimulatedFabric) -> Computed {
    compute_with(fabric, &[])
}

/// [`compute`] with `args` more.
fn compute_with(fabric: &SimulatedFabric, args: &[&str]) -> Computed {
    let node = fabric.node(fabric.opensm_node()).unwrap();
    let snapshot = fabric.dir().join("computed.snap");
    let out = node
        .lsaquery()
        .args([
            "--compute",
            "--check-sample",
            "all",
            "--smkey",
            KEY,
            "--json",
        ])
        .args(args)
        .arg("--snapshot")
        .arg(&snapshot)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "lsaquery --compute printed no JSON ({e}): {}{}",
            out.stdout, out.stderr
        )
    });
    let (mut default, mut partitions) = (HashMap::new(), HashMap::new());
    if let Ok(text) = std::fs::read_to_string(&snapshot) {
        let (head, tail) = text
            .split_once("# local-sa: partition tables")
            .unwrap_or((&text, ""));
        for r in parse_printed_records(head) {
            let r = path_record_from_printed(&r).expect("a whole record");
            default.insert((r.slid(), r.dlid()), r);
        }
        for r in parse_printed_records(tail) {
            let r = path_record_from_printed(&r).expect("a whole record");
            partitions.insert((r.slid(), r.dlid(), r.pkey()), r);
        }
    }
    Computed {
        out,
        json,
        default,
        partitions,
    }
}

/// OpenSM's answer to a Get naming each ordered pair of `lids` (and
/// `pkey`): the record, or none.
fn opensm_answers(fabric: &SimulatedFabric, lids: &[u16], pkey: Option<u16>) -> OpenSmAnswers {
    let node = fabric.opensm_node();
    let sa_lid = fabric.node(node).unwrap().port().unwrap().sm_lid;
    let ask = Ask {
        sa_lid,
        lids,
        sources: None,
        pkey,
        service_id: None,
        qos_class: None,
    };
    answers(
        fabric,
        node,
        Path::new(env!("CARGO_BIN_EXE_opensm-paths")),
        ask,
    )
}

/// Every computed record of the default tables equals OpenSM's answer, by
/// lsaquery's check and by OpenSM's answers asked here.
fn assert_equal_to_opensm(fabric: &SimulatedFabric, label: &str) -> Computed {
    assert_equal_to_opensm_with(fabric, label, &[])
}

/// [`assert_equal_to_opensm`], lsaquery given OpenSM's own configuration
/// (`--opensm-config`, the file the fabric's OpenSM runs with).
fn assert_equal_with_opensm_s_configuration(fabric: &SimulatedFabric, label: &str) -> Computed {
    let conf = fabric.opensm_dir().join("opensm.conf");
    assert_equal_to_opensm_with(fabric, label, &["--opensm-config", conf.to_str().unwrap()])
}

/// [`assert_equal_to_opensm`] with `args` more to `lsaquery --compute`.
fn assert_equal_to_opensm_with(fabric: &SimulatedFabric, label: &str, args: &[&str]) -> Computed {
    let c = compute_with(fabric, args);
    assert!(
        c.out.status.success() && c.differences() == 0,
        "{label}: lsaquery --compute:\n{}{}",
        c.out.stdout,
        c.out.stderr
    );
    let lids = c.lids();
    assert!(
        lids.len() > 4,
        "{label}: the tables name every port: {lids:?}"
    );
    let theirs = opensm_answers(fabric, &lids, None);
    assert_eq!(theirs.len(), lids.len() * lids.len());
    let diff = differences(&c.default, &theirs);
    assert!(
        diff.is_empty(),
        "{label}: {} of {} LID pairs differ:\n{}",
        diff.len(),
        theirs.len(),
        diff.join("\n")
    );
    assert!(
        theirs.values().filter(|r| r.is_some()).count() >= lids.len(),
        "{label}: OpenSM has paths"
    );
    c
}

/// `c`'s computed records of partition `pkey` between `members`, and
/// OpenSM's answers to the same queries, which they equal record for
/// record.
fn partition_equal_to_opensm(
    fabric: &SimulatedFabric,
    c: &Computed,
    pkey: u16,
    members: &[&str],
) -> (HashMap<(u16, u16), PathRecord>, OpenSmAnswers) {
    let lids: Vec<u16> = members
        .iter()
        .map(|m| fabric.node(m).unwrap().port().unwrap().lid)
        .collect();
    let theirs = opensm_answers(fabric, &lids, Some(pkey));
    let ours: HashMap<(u16, u16), PathRecord> = c
        .partitions
        .iter()
        .filter(|((_, _, p), _)| *p == pkey)
        .map(|((s, d, _), r)| ((*s, *d), *r))
        .collect();
    let diff = differences(&ours, &theirs);
    assert!(diff.is_empty(), "partition {pkey:#x}:\n{}", diff.join("\n"));
    (ours, theirs)
}

/// The differences `c`'s check found: it must have exited 1 with some.
fn caught(c: &Computed, label: &str) -> Vec<serde_json::Value> {
    assert_eq!(
        c.out.status.code(),
        Some(1),
        "{label}: {}{}",
        c.out.stdout,
        c.out.stderr
    );
    let differences = c.json["check"]["differences"].as_array().unwrap().clone();
    assert!(!differences.is_empty(), "{label}");
    differences
}

/// `lsaquery --distribute --compute` from node `at`, with `args` more.
fn distribute(fabric: &SimulatedFabric, at: &str, args: &[&str]) -> RunOutput {
    fabric
        .node(at)
        .unwrap()
        .lsaquery()
        .args(["--distribute", "--compute", "--smkey", KEY])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn computed_tables_equal_opensm_s_on_fat_trees_of_several_shapes() {
    for (leaves, hosts, spines) in [(3, 4, 2), (4, 2, 3)] {
        let fabric = start(Topology::fat_tree(leaves, hosts, spines), &[], &[]);
        let c = assert_equal_to_opensm(&fabric, &format!("fat tree {leaves}x{hosts}x{spines}"));
        let ports = leaves * hosts + leaves + spines;
        assert_eq!(c.json["computed"]["default_tables"], ports);
        assert_eq!(c.default.len(), ports * ports, "every pair has a path");
    }
}

#[test]
fn computed_tables_equal_opensm_s_with_lmc_1_and_2() {
    for (lmc, topology) in [
        (1, Topology::fat_tree(3, 4, 2)),
        (2, Topology::fat_tree(2, 3, 2)),
    ] {
        let fabric = start(topology, &[&format!("lmc {lmc}")], &[]);
        let c = assert_equal_to_opensm(&fabric, &format!("LMC {lmc}"));
        // Each pair of hosts has 2^LMC × 2^LMC records, in OpenSM's order:
        // equal offsets first with Preference 0, then the rest.
        let host = *c.default.keys().map(|(s, _)| s).max().unwrap();
        let to_peer: Vec<&PathRecord> = c
            .default
            .values()
            .filter(|r| r.dlid() == host && r.slid() != host)
            .collect();
        assert!(to_peer.iter().any(|r| r.preference() == 2), "LMC {lmc}");
    }
}

#[test]
fn computed_tables_equal_opensm_s_for_every_routing_engine() {
    for engine in ["updn", "dnup", "ftree", "dor"] {
        let fabric = start(
            Topology::fat_tree(3, 4, 2),
            &[&format!("routing_engine {engine}")],
            &[],
        );
        assert_equal_to_opensm(&fabric, engine);
    }
    let example = Topology::debian_example("net.2sw2path4hca").unwrap();
    let fabric = start(example, &[], &[]);
    assert_equal_to_opensm(&fabric, "net.2sw2path4hca");
}

/// Port GUIDs of hosts h1, h2, ... as ibsim numbers them in a fat tree.
fn host_guid(n: u64) -> String {
    format!("{:#x}", 0x10_0000 + 2 * (n - 1) + 1)
}

#[test]
fn partition_tables_and_their_sls_equal_opensm_s() {
    // With QoS on (and no policy), OpenSM gives each partition's paths its
    // `sl=`. h3 is a limited member of P1, h1 of P2; h1 and h2 share all
    // three partitions, and OpenSM's common P_Key for them is the first in
    // its byte-swapped order: 0x0100 (swapped 0x0001) before 0x0002
    // (0x0200) and 0x7fff (0xff7f).
    let partitions = format!(
        "Default=0x7fff, ipoib : ALL=full ;\n\
         P1=0x8100, sl=1 : {}=full, {}=full, {} ;\n\
         P2=0x8002, sl=2 : {}, {}=full, {}=full, {}=full, {}=full ;\n",
        host_guid(1),
        host_guid(2),
        host_guid(3),
        host_guid(1),
        host_guid(2),
        host_guid(4),
        host_guid(5),
        host_guid(6)
    );
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &["qos TRUE", "partition_config_file partitions.conf"],
        &[("partitions.conf", &partitions)],
    );
    let c = assert_equal_to_opensm(&fabric, "partitions");
    assert_eq!(c.json["qos"], true);
    let sls: Vec<(String, u64)> = c.json["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pkey"].as_str().unwrap().to_owned(),
                p["sl"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        sls.contains(&("0x0100".into(), 1)) && sls.contains(&("0x0002".into(), 2)),
        "{sls:?}"
    );
    let lid = |n: &str| fabric.node(n).unwrap().port().unwrap().lid;
    let h1_h2 = c.default[&(lid("h1"), lid("h2"))];
    assert_eq!((h1_h2.pkey(), h1_h2.sl()), (0x8100, 1));
    let h1_h4 = c.default[&(lid("h1"), lid("h4"))];
    assert_eq!(
        (h1_h4.pkey(), h1_h4.sl()),
        (0x0002, 2),
        "h1's own (limited) entry"
    );
    for (pkey, sl, members) in [
        (0x8100u16, 1, ["h1", "h2", "h3"].as_slice()),
        (0x8002, 2, &["h1", "h2", "h4", "h5", "h6"]),
    ] {
        let (ours, theirs) = partition_equal_to_opensm(&fabric, &c, pkey, members);
        assert!(ours.values().all(|r| r.sl() == sl));
        // The limited member's path to itself is none: no full member.
        assert!(theirs.values().any(Option::is_none), "{pkey:#x}");
    }
}

#[test]
fn computed_tables_equal_opensm_s_with_ports_that_are_only_limited_members() {
    // Hosts are limited members of the default partition: they share it
    // only with the switches (and the master's own port); OpenSM hides
    // their links (LinkRecords need a full member at one end).
    let partitions = format!(
        "Default=0x7fff, ipoib, defmember=limited : ALL, ALL_SWITCHES=full, SELF=full ;\n\
         P1=0x0001 : {}=full, {}, {} ;\n",
        host_guid(1),
        host_guid(2),
        host_guid(3)
    );
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &["partition_config_file partitions.conf"],
        &[("partitions.conf", &partitions)],
    );
    let c = assert_equal_to_opensm(&fabric, "limited members");
    let h5 = fabric.node("h5").unwrap().port().unwrap().lid;
    let h6 = fabric.node("h6").unwrap().port().unwrap().lid;
    assert!(
        !c.default.contains_key(&(h5, h6)),
        "two limited members have no path"
    );
}

#[test]
fn computed_tables_equal_opensm_s_over_links_of_different_widths_and_speeds() {
    // A 1x host link, an SDR up-link from leaf2 to spine1, FDR on h5's
    // link: rates of 10, 20, 40 and (h5 to itself) 56 Gb/s.
    let topology = with_port_options(
        &Topology::fat_tree(3, 4, 2),
        &[
            ("h1", "[1]", "w=1"),
            ("leaf1", "[1]", "w=1"),
            ("leaf2", "[5]", "s=1"),
            ("spine1", "[2]", "s=1"),
            ("h5", "[1]", "e=1"),
            ("leaf2", "[1]", "e=1"),
        ],
    );
    let fabric = start(topology, &[], &[]);
    let c = assert_equal_to_opensm(&fabric, "widths and speeds");
    let rates = c.rates();
    assert!(rates.len() >= 3, "several rates: {rates:?}");
}

/// A fat tree whose links have every width (1x, 2x, 4x, 8x, 12x) and
/// speed (SDR, DDR, QDR, FDR10, FDR, EDR, HDR) ibsim 0.10 gives, written
/// after both ends of each link as ibsim reads them (`# lid 0 WxSPEED`).
fn every_width_and_speed() -> Topology {
    let links = [
        ("h1", "leaf1", "[1]", "4xHDR"),
        ("h2", "leaf1", "[2]", "2xHDR"),
        ("h3", "leaf1", "[3]", "1xEDR"),
        ("h4", "leaf1", "[4]", "12xFDR"),
        ("h5", "leaf2", "[1]", "8xEDR"),
        ("h6", "leaf2", "[2]", "4xFDR10"),
        ("h7", "leaf2", "[3]", "4xQDR"),
        ("h8", "leaf2", "[4]", "2xEDR"),
        ("h9", "leaf3", "[1]", "1xSDR"),
        ("h10", "leaf3", "[2]", "12xDDR"),
        ("h11", "leaf3", "[3]", "8xHDR"),
    ];
    let spines = [
        ("leaf1", "[5]", "spine1", "[1]", "4xHDR"),
        ("leaf1", "[6]", "spine2", "[1]", "4xEDR"),
        ("leaf2", "[5]", "spine1", "[2]", "12xQDR"),
        ("leaf2", "[6]", "spine2", "[2]", "4xFDR"),
        ("leaf3", "[5]", "spine1", "[3]", "2xHDR"),
        ("leaf3", "[6]", "spine2", "[3]", "8xEDR"),
    ];
    let comments: Vec<String> = links
        .iter()
        .map(|l| l.3)
        .chain(spines.iter().map(|l| l.4))
        .map(|kind| format!("# lid 0 {kind}"))
        .collect();
    let mut edits = Vec::new();
    for ((host, leaf, port, _), c) in links.iter().zip(&comments) {
        edits.push((*host, "[1]", c.as_str()));
        edits.push((*leaf, *port, c.as_str()));
    }
    for ((leaf, lp, spine, sp, _), c) in spines.iter().zip(&comments[links.len()..]) {
        edits.push((*leaf, *lp, c.as_str()));
        edits.push((*spine, *sp, c.as_str()));
    }
    with_port_options(&Topology::fat_tree(3, 4, 2), &edits)
}

#[test]
fn computed_tables_equal_opensm_s_over_every_width_and_speed_with_lmc_1_and_2() {
    for lmc in [1, 2] {
        let fabric = start(every_width_and_speed(), &[&format!("lmc {lmc}")], &[]);
        let label = format!("every width and speed, LMC {lmc}");
        let c = assert_equal_to_opensm(&fabric, &label);
        let rates = c.rates();
        assert!(rates.len() >= 6, "{label}: rates {rates:?}");
        // Samples whose first pair's records fit one MAD and whose later
        // ones do not: the master's answers to those come cut through the
        // simulator, and are asked again LID pair by LID pair rather than
        // taken for fewer records.
        let node = fabric.node(fabric.opensm_node()).unwrap();
        for seed in 1..=12 {
            let out = node
                .lsaquery()
                .args(["--compute", "--check-sample", "50", "--smkey", KEY])
                .args(["--check-seed", &seed.to_string()])
                .timeout(Duration::from_secs(120))
                .output()
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                out.status.success() && out.stdout.contains(": all equal"),
                "{label}, seed {seed}: {}{}",
                out.stdout,
                out.stderr
            );
        }
        if lmc == 1 {
            same_preferences_as_opensm(&fabric);
        }
    }
}

/// A local-sa filled with computed tables answers a GetTable from one of
/// its LIDs to another port as OpenSM does, Preference included: each
/// destination LID once, the one at the source's offset first with
/// Preference 0, the other with 2 (with LMC 1 the two records fit one MAD,
/// whole through the simulator).
fn same_preferences_as_opensm(fabric: &SimulatedFabric) {
    let mut nodes = waiting_nodes(fabric, &["h2"], &[]);
    let out = distribute(fabric, "h9", &[]);
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    nodes[0]
        .filled_by_a_load()
        .unwrap_or_else(|e| panic!("{e}"));
    let h2 = fabric.node("h2").unwrap();
    let me = h2.port().unwrap();
    for peer in ["h5", "h6", "h11"] {
        let to = fabric.node(peer).unwrap().port().unwrap();
        let dgid = mad_codec::Gid::new(mad_codec::Gid::DEFAULT_PREFIX, to.guid).to_string();
        for slid in [me.lid, me.lid + 1] {
            let ask = |master: bool| {
                let mut cmd = h2.lsaquery();
                if master {
                    cmd = cmd.arg("--master");
                }
                let out = cmd
                    .args(["-p", "--slid", &slid.to_string(), "--dgid", &dgid])
                    .output()
                    .unwrap_or_else(|e| panic!("{e}"));
                assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
                parse_printed_records(&out.stdout)
            };
            let (ours, theirs) = (ask(false), ask(true));
            assert_eq!(ours, theirs, "{slid} -> {peer}");
            let preferences: Vec<Option<u64>> =
                theirs.iter().map(|r| r.number("preference")).collect();
            assert_eq!(preferences, [Some(0), Some(2)], "{slid} -> {peer}");
        }
    }
}

#[test]
fn computed_tables_equal_opensm_s_after_a_link_goes_down_and_opensm_reroutes() {
    let fabric = start(Topology::fat_tree(3, 4, 2), &[], &[]);
    let before = assert_equal_to_opensm(&fabric, "before");
    // leaf1's link to spine1 goes; OpenSM sweeps and routes around it.
    fabric.unlink("leaf1", 5).unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let c = compute(&fabric);
        let rerouted = c.out.status.success()
            && c.differences() == 0
            && c.json["description"]["master"]["records"]
                != before.json["description"]["master"]["records"];
        if rerouted {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "OpenSM's reroute never showed:\n{}{}",
            c.out.stdout,
            c.out.stderr
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let after = assert_equal_to_opensm(&fabric, "after the reroute");
    assert_eq!(
        after.default.len(),
        before.default.len(),
        "every pair still has a path"
    );
}

/// The keys the nodes get tables at: two ServiceIDs and a QoS class, and
/// the SL OpenSM's policy gives each.
const KEYS: [(Option<u64>, Option<u16>, u8); 3] = [
    (Some(0x1060001), None, 1),
    (Some(0x1060002), None, 2),
    (None, Some(3), 3),
];

/// What `nodes` answer at each of [`KEYS`], on each P_Key and on none, is
/// OpenSM's answer record for record; at the partition every port holds,
/// from the tables the distributor sent, none asked of the master.
fn answers_at_keys_equal_opensm_s(
    fabric: &SimulatedFabric,
    names: &[&str],
    nodes: &mut [LocalSa<'_>],
) {
    let lids: Vec<u16> = (1..=17).collect();
    let sm = fabric
        .node(fabric.opensm_node())
        .unwrap()
        .port()
        .unwrap()
        .sm_lid;
    let program = Path::new(env!("CARGO_BIN_EXE_opensm-paths"));
    for (name, sa) in names.iter().zip(nodes) {
        let lid = [fabric.node(name).unwrap().port().unwrap().lid];
        // 0xffff first, at every key: the counters file is rewritten every
        // second, and nothing before this round changes them (asked
        // without a P_Key, the node asks the master).
        for pkey in [Some(0xFFFF), None, Some(0x8001)] {
            for (service_id, qos_class, sl) in KEYS {
                let ask = |sa_lid| Ask {
                    sa_lid,
                    lids: &lids,
                    sources: Some(&lid),
                    pkey,
                    service_id,
                    qos_class,
                };
                let (hits, fetches) = (
                    sa.counter("qos_cache_hits"),
                    sa.counter("qos_cache_fetches"),
                );
                let ours = answers(fabric, name, program, ask(lid[0]));
                let label = format!("{name}, {service_id:x?} {qos_class:?} P_Key {pkey:x?}");
                if pkey == Some(0xFFFF) {
                    sa.wait_until("the answers counted", Duration::from_secs(10), |c| {
                        c.get("qos_cache_hits")
                            .is_some_and(|n| *n >= hits + lids.len() as u64)
                    })
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                    assert_eq!(sa.counter("qos_cache_fetches"), fetches, "{label}");
                }
                let theirs = answers(fabric, fabric.opensm_node(), program, ask(sm));
                let diff = answer_differences(&ours, &theirs);
                assert!(diff.is_empty(), "{label}: {}", diff.join("\n"));
                assert!(theirs.values().flatten().count() > 0, "{label}");
                assert!(
                    theirs.values().flatten().all(|r| r.sl() == sl),
                    "{label}: the policy's SL"
                );
            }
        }
    }
}

#[test]
fn on_a_qos_master_tables_at_keys_are_fetched_without_opensm_s_configuration_and_computed_with_it()
{
    let partitions = format!(
        "Default=0x7fff, ipoib : ALL=full ;\nP1=0x8001, sl=3 : {}=full, {}=full, {}=full ;\n",
        host_guid(2),
        host_guid(5),
        host_guid(11)
    );
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &[
            "qos TRUE",
            "qos_policy_file qos-policy.conf",
            "partition_config_file partitions.conf",
        ],
        &[
            ("partitions.conf", &partitions),
            ("qos-policy.conf", QOS_POLICY),
        ],
    );
    assert_equal_to_opensm(&fabric, "QoS master");
    let names = ["h2", "h5", "h11"];
    let mut nodes = waiting_nodes(&fabric, &names, &[]);
    let keys = [
        "--service-id",
        "0x1060001",
        "--service-id",
        "0x1060002",
        "--qos-class",
        "3",
        "--json",
    ];
    let distributed = |more: &[&str]| {
        let args: Vec<&str> = keys.iter().chain(more).copied().collect();
        let out = distribute(&fabric, "h9", &args);
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert_eq!(json["compute"]["used"], true, "{json}");
        assert_eq!(
            json["compute"]["refused_because"],
            serde_json::Value::Null,
            "{json}"
        );
        // Three keys on each of a node's two P_Keys.
        assert_eq!(json["qos_tables"], 3 * 6, "{json}");
        json
    };
    // Without OpenSM's configuration: each node's default table and its
    // partition tables (0x7fff and P1) computed; those at the keys from
    // the master, which the summary says and why.
    let json = distributed(&[]);
    let compute = &json["compute"];
    assert_eq!(compute["tables"], 3 * 3, "{json}");
    assert_eq!(compute["nodes_also_from_master"], 3, "{json}");
    assert!(
        compute["from_master_because"]
            .as_str()
            .is_some_and(|w| w.contains("--opensm-config")),
        "{json}"
    );
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
        sa.wait_until("its QoS tables taken", Duration::from_secs(10), |c| {
            c.get("qos_cache_loaded").is_some_and(|n| *n > 0)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    answers_at_keys_equal_opensm_s(&fabric, &names, &mut nodes);
    // With it: the tables at the keys computed too, each kind drawn by
    // the check, none from the master.
    let loaded: Vec<u64> = nodes
        .iter()
        .map(|sa| sa.counter("qos_cache_loaded"))
        .collect();
    let conf = fabric.opensm_dir().join("opensm.conf");
    let json = distributed(&["--opensm-config", conf.to_str().unwrap()]);
    let compute = &json["compute"];
    assert_eq!(compute["tables"], 3 * 3 + 3 * 6, "{json}");
    assert_eq!(compute["nodes_also_from_master"], 0, "{json}");
    let drawn: Vec<&str> = compute["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["table"].as_str())
        .collect();
    for kind in ["0x7fff ServiceID 0x0000000001060002", "0x0001 QoS class 3"] {
        assert!(drawn.contains(&kind), "{kind} drawn: {drawn:?}");
    }
    for (sa, before) in nodes.iter_mut().zip(loaded) {
        sa.wait_until("its QoS tables taken again", Duration::from_secs(30), |c| {
            c.get("qos_cache_loaded").is_some_and(|n| *n > before)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    answers_at_keys_equal_opensm_s(&fabric, &names, &mut nodes);
    // `--compute` alone, every pair checked: the tables at the keys
    // computed (three on each of a port's P_Keys) and each equal to the
    // master's answers.
    let mut args: Vec<&str> = keys.iter().copied().filter(|a| *a != "--json").collect();
    args.extend(["--opensm-config", conf.to_str().unwrap()]);
    let c = compute_with(&fabric, &args);
    assert!(c.out.status.success(), "{}{}", c.out.stdout, c.out.stderr);
    let computed = &c.json["computed"];
    let tables = computed["key_tables"].as_u64().unwrap();
    let partition_tables = computed["partition_tables"].as_u64().unwrap();
    assert_eq!(tables, 3 * partition_tables, "{computed}");
    assert!(computed["key_records"].as_u64().unwrap() > 0, "{computed}");
    assert_eq!(c.json["check"]["differences"], serde_json::json!([]));
    // Without the configuration, none: the report says why.
    let c = compute_with(&fabric, &args[..args.len() - 2]);
    let computed = &c.json["computed"];
    assert_eq!(computed["key_tables"], 0, "{computed}");
    assert!(
        computed["keys_not_computed_because"]
            .as_str()
            .is_some_and(|w| w.contains("--opensm-config")),
        "{computed}"
    );
}

/// A QoS policy that gives the partition every port holds (0x7fff) a
/// level of its own: a query naming its P_Key gets MTU 512.
const ALL_MEMBERS_LEVEL: &str = "
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: small-mtu
        sl: 0
        mtu-limit: 2
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        pkey: 0x7fff
        qos-level-name: small-mtu
    end-qos-match-rule
end-qos-match-rules
";

#[test]
fn a_qos_level_of_the_partition_every_port_holds_is_caught_and_only_its_tables_come_from_the_master()
 {
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &["qos TRUE", "qos_policy_file qos-policy.conf"],
        &[("qos-policy.conf", ALL_MEMBERS_LEVEL)],
    );
    // The check draws from the partition's own table too, and finds the
    // level's MTU there; the default tables (no P_Key asked) are equal.
    let c = compute(&fabric);
    let differences = caught(&c, "a level for 0x7fff");
    assert!(
        differences
            .iter()
            .all(|d| d["table"] == "0x7fff" && d["field"] == "mtu"),
        "{differences:?}"
    );
    // Distributed: the default tables computed, the partition's from the
    // master, for every node.
    let mut nodes = waiting_nodes(&fabric, &["h2", "h5", "h11"], &[]);
    let out = distribute(&fabric, "h9", &["--json"]);
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        json["compute"]["refused_because"],
        serde_json::Value::Null,
        "{json}"
    );
    assert_eq!(json["compute"]["nodes_also_from_master"], 3, "{json}");
    // The summary says what each kind of table was checked with.
    let coverage = json["compute"]["coverage"].as_array().unwrap();
    let differ = |table: &str| {
        coverage
            .iter()
            .find(|c| c["table"] == table)
            .and_then(|c| c["differ"].as_u64())
    };
    assert_eq!(differ("default"), Some(0), "{json}");
    assert!(differ("0x7fff").is_some_and(|d| d > 0), "{json}");
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    // Each node answers a Get naming the P_Key as OpenSM does (MTU 512),
    // and one naming none as OpenSM does too.
    let lids: Vec<u16> = c.lids();
    let sm = fabric
        .node(fabric.opensm_node())
        .unwrap()
        .port()
        .unwrap()
        .sm_lid;
    for name in ["h2", "h5", "h11"] {
        let lid = [fabric.node(name).unwrap().port().unwrap().lid];
        for pkey in [Some(0xFFFF), None] {
            let ask = |sa_lid| Ask {
                sa_lid,
                lids: &lids,
                sources: Some(&lid),
                pkey,
                service_id: None,
                qos_class: None,
            };
            let program = Path::new(env!("CARGO_BIN_EXE_opensm-paths"));
            let ours = answers(&fabric, name, program, ask(lid[0]));
            let theirs = answers(&fabric, fabric.opensm_node(), program, ask(sm));
            let diff = answer_differences(&ours, &theirs);
            assert!(
                diff.is_empty(),
                "{name}, P_Key {pkey:?}: {}",
                diff.join("\n")
            );
            if pkey.is_some() {
                assert!(
                    theirs.values().flatten().all(|r| r.mtu().0 == 2),
                    "OpenSM's level applies"
                );
            }
        }
    }
}

/// A policy of every kind of criterion, on the 3x4x2 fat tree: h2's
/// paths (source group by GUID) get SL 2 and MTU 512; paths to h5 (a
/// destination group by port name) 10 Gb/s at most; a query naming the
/// partition every port holds, PacketLifeTime 9; and P1 (partitions.conf)
/// its own SL 3.
fn every_kind_of_policy() -> (String, String) {
    let policy = format!(
        "port-groups
            port-group
                name: h2
                port-guid: {}
            end-port-group
            port-group
                name: to-h5
                port-name: h5/P1
            end-port-group
         end-port-groups
         qos-levels
            qos-level
                name: default
                sl: 0
            end-qos-level
            qos-level
                name: from-h2
                sl: 2
                mtu-limit: 2
            end-qos-level
            qos-level
                name: slow
                sl: 0
                rate-limit: 3
            end-qos-level
            qos-level
                name: long-life
                sl: 0
                packet-life: 9
            end-qos-level
         end-qos-levels
         qos-match-rules
            qos-match-rule
                source: h2
                qos-level-name: from-h2
            end-qos-match-rule
            qos-match-rule
                destination: to-h5
                qos-level-name: slow
            end-qos-match-rule
            qos-match-rule
                pkey: 0x7fff
                qos-level-name: long-life
            end-qos-match-rule
         end-qos-match-rules
",
        host_guid(2)
    );
    let partitions = format!(
        "Default=0x7fff, ipoib : ALL=full ;\nP1=0x8001, sl=3 : {}=full, {}=full, {}=full ;\n",
        host_guid(2),
        host_guid(5),
        host_guid(11)
    );
    (policy, partitions)
}

#[test]
fn with_opensm_s_configuration_every_policy_class_is_computed_and_none_comes_from_the_master() {
    let (policy, partitions) = every_kind_of_policy();
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &[
            "qos TRUE",
            "qos_policy_file qos-policy.conf",
            "partition_config_file partitions.conf",
        ],
        &[
            ("qos-policy.conf", &policy),
            ("partitions.conf", &partitions),
        ],
    );
    let conf = fabric.opensm_dir().join("opensm.conf");
    let conf = conf.to_str().unwrap();
    // Without it, the check catches what the policy decides.
    caught(
        &compute(&fabric),
        "the policy without OpenSM's configuration",
    );
    // With it, every sampled pair of every table equals OpenSM's, and the
    // default tables equal OpenSM's answers pair by pair.
    let with = assert_equal_with_opensm_s_configuration(&fabric, "the policy");
    assert!(
        with.json["opensm_config"]
            .as_str()
            .is_some_and(|c| c.contains("QoS policy"))
    );
    let lids = with.lids();
    let sls: BTreeSet<u8> = with.default.values().map(PathRecord::sl).collect();
    assert!(sls.contains(&2), "h2's level: {sls:?}");
    // Distributed: nothing from the master, and every node answers as
    // OpenSM with each P_Key and none.
    let mut nodes = waiting_nodes(&fabric, &["h2", "h5", "h11"], &[]);
    let out = distribute(&fabric, "h9", &["--opensm-config", conf, "--json"]);
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        json["compute"]["refused_because"],
        serde_json::Value::Null,
        "{json}"
    );
    assert_eq!(json["compute"]["nodes_also_from_master"], 0, "{json}");
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let sm = fabric
        .node(fabric.opensm_node())
        .unwrap()
        .port()
        .unwrap()
        .sm_lid;
    let program = Path::new(env!("CARGO_BIN_EXE_opensm-paths"));
    for name in ["h2", "h5", "h11"] {
        let lid = [fabric.node(name).unwrap().port().unwrap().lid];
        for pkey in [None, Some(0xFFFF), Some(0x8001)] {
            let ask = |sa_lid| Ask {
                sa_lid,
                lids: &lids,
                sources: Some(&lid),
                pkey,
                service_id: None,
                qos_class: None,
            };
            let ours = answers(&fabric, name, program, ask(lid[0]));
            let theirs = answers(&fabric, fabric.opensm_node(), program, ask(sm));
            let diff = answer_differences(&ours, &theirs);
            assert!(
                diff.is_empty(),
                "{name}, P_Key {pkey:?}: {}",
                diff.join("\n")
            );
        }
    }
}

#[test]
fn opensm_s_quirks_for_tavor_adapters_are_caught_without_its_configuration_and_followed_with_it() {
    // h1 and h2 Tavor adapters (ibsim's vendid/devid lines apply to the
    // nodes after them).
    let base = Topology::fat_tree(3, 4, 2);
    let text = base
        .text()
        .replacen(
            "Hca 1 \"h1\"",
            "vendid=0x2c9\ndevid=0x5a44\nHca 1 \"h1\"",
            1,
        )
        .replacen("Hca 1 \"h3\"", "vendid=0\ndevid=0\nHca 1 \"h3\"", 1);
    let topology = Topology::parse("tavor", text).unwrap();
    let fabric = start(topology, &["enable_quirks TRUE"], &[]);
    let found = caught(&compute(&fabric), "quirks without OpenSM's configuration");
    assert!(found.iter().all(|d| d["field"] == "mtu"), "{found:?}");
    let with = assert_equal_with_opensm_s_configuration(&fabric, "quirks");
    assert!(
        with.default.values().any(|r| r.mtu().0 == 3),
        "1024 to the Tavors"
    );
}

#[test]
fn opensm_s_original_extended_rates_are_caught_without_its_configuration_and_followed_with_it() {
    // Links whose rates only 2x or HDR give (28, 50, 400, 600 Gb/s):
    // OpenSM answers them lowered to a rate up to 300 Gb/s.
    let fabric = start(
        every_width_and_speed(),
        &["use_original_extended_sa_rates_only TRUE"],
        &[],
    );
    let found = caught(
        &compute(&fabric),
        "original rates without the configuration",
    );
    assert!(found.iter().all(|d| d["field"] == "rate"), "{found:?}");
    let with = assert_equal_with_opensm_s_configuration(&fabric, "original rates");
    let rates = with.rates();
    assert!(
        rates.iter().all(|r| *r <= 18) && rates.len() >= 4,
        "only original extended rates: {rates:?}"
    );
}

#[test]
fn with_allow_both_pkeys_ports_holding_a_partition_both_ways_are_computed_as_opensm_answers() {
    // h1 holds P1 both as a full and a limited member, h2 as a limited
    // one, h3 as a full one; every host of P2 both ways but h4 (limited).
    let partitions = format!(
        "Default=0x7fff, ipoib : ALL=full ;\n\
         P1=0x8001 : {}=both, {}=limited, {}=full ;\n\
         P2=0x8002, defmember=both : {}, {}=limited, {}, {} ;\n",
        host_guid(1),
        host_guid(2),
        host_guid(3),
        host_guid(1),
        host_guid(4),
        host_guid(5),
        host_guid(6)
    );
    let fabric = start(
        Topology::fat_tree(3, 4, 2),
        &[
            "allow_both_pkeys TRUE",
            "partition_config_file partitions.conf",
        ],
        &[("partitions.conf", &partitions)],
    );
    // Without OpenSM's configuration the engine keys a table by partition:
    // h1's path to h3 carries h1's full 0x8001, where OpenSM's walk by the
    // whole P_Key meets h1's limited 0x0001 first. The check catches it.
    let found = caught(
        &compute(&fabric),
        "allow_both_pkeys without the configuration",
    );
    assert!(found.iter().any(|d| d["field"] == "pkey"), "{found:?}");
    let c = assert_equal_with_opensm_s_configuration(&fabric, "allow_both_pkeys");
    for (pkey, members) in [
        (0x8001u16, ["h1", "h2", "h3"].as_slice()),
        (0x8002, &["h1", "h4", "h5", "h6"]),
    ] {
        let (ours, _) = partition_equal_to_opensm(&fabric, &c, pkey, members);
        assert!(!ours.is_empty(), "{pkey:#x} computed");
    }
}

#[test]
fn a_policy_opensm_drops_or_a_configuration_not_the_master_s_is_said_and_computed_without() {
    let fabric = start(Topology::fat_tree(2, 2, 1), &["qos TRUE"], &[]);
    let dir = fabric.dir();
    let run = |conf: &str| {
        let path = dir.join("test-opensm.conf");
        std::fs::write(&path, conf).unwrap();
        fabric
            .node(fabric.opensm_node())
            .unwrap()
            .lsaquery()
            .args(["--compute", "--smkey", KEY, "--opensm-config"])
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    // A policy OpenSM refuses (no default level): OpenSM drops it whole
    // and runs without one, and so do the computed tables, which then
    // equal its answers (the fabric's OpenSM has no policy either).
    std::fs::write(
        dir.join("bad-policy.conf"),
        "qos-levels\n qos-level\n  name: x\n  sl: 1\n end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    let out = run("qos TRUE\nqos_policy_file bad-policy.conf\n");
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("drops the whole policy")
            && out
                .stderr
                .contains("Default qos-level (default) not defined"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("no QoS policy"), "{}", out.stdout);
    // Not the master's (it applies QoS): said, in the log and the
    // summary, and the tables computed without it.
    let out = run("qos FALSE\n");
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("not the configuration the master runs with"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("not used: not the master's"),
        "{}",
        out.stdout
    );
    // What the engine does not follow is refused.
    let out = run("qos TRUE\nmax_rate_enum 18\n");
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("max_rate_enum 18"), "{}", out.stderr);
}

#[test]
fn what_opensm_does_not_publish_is_caught_and_those_tables_come_from_the_master() {
    // Five switches in a ring: LASH and DFSSSP need several SLs to keep
    // its routes free of deadlocks, and give each path its own.
    let ring = || Topology::ring(5);
    // dor on the ring: every SL 0, computed.
    let fabric = start(ring(), &["routing_engine dor"], &[]);
    assert_equal_to_opensm(&fabric, "ring, dor");
    drop(fabric);
    for engine in ["lash", "dfsssp"] {
        let fabric = start(ring(), &[&format!("routing_engine {engine}")], &[]);
        let c = compute(&fabric);
        let differences = caught(&c, engine);
        assert!(
            differences.iter().all(|d| d["field"] == "sl"),
            "{engine}: only the SLs differ: {differences:?}"
        );
        assert!(
            differences[0]["cause"]
                .as_str()
                .unwrap()
                .contains("routing engine"),
            "{:?}",
            differences[0]
        );
        // DFSSSP draws each path's SL at random: some pairs the master
        // answers otherwise when asked again, and the check says so
        // rather than report a difference; LASH's SLs are the same each
        // time.
        let varying = differences.iter().filter(|d| d["varies"] == true).count();
        match engine {
            "dfsssp" => assert!(varying > 0, "{differences:?}"),
            _ => assert_eq!(varying, 0, "{differences:?}"),
        }
        // Told OpenSM's configuration, the distributor refuses the
        // engine's SLs by name: every table comes from the master, said
        // once in the summary.
        let conf = fabric.opensm_dir().join("opensm.conf");
        let told = compute_with(&fabric, &["--opensm-config", conf.to_str().unwrap()]);
        let config = told.json["opensm_config"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            config.contains(&format!("routing engine {engine}, with SLs of its own")),
            "{engine}: {}",
            told.json
        );
        // Told not to fall back, the distributor sends nothing.
        let mut nodes = waiting_nodes(&fabric, &["h3"], &[]);
        let out = distribute(&fabric, "h1", &["--no-fallback"]);
        assert_eq!(out.status.code(), Some(5), "{}{}", out.stdout, out.stderr);
        assert!(
            out.stderr
                .contains("the check did not prove every computed table")
                && out.stderr.contains("sl: computed"),
            "{engine}: {}",
            out.stderr
        );
        assert_eq!(nodes[0].counter("loaded"), 0, "{engine}");
        // Else it sends the master's tables instead, and says why and what
        // they cost.
        let out = distribute(&fabric, "h1", &[]);
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains("every table came from the master")
                && out.stdout.contains("sl: computed")
                && out
                    .stdout
                    .contains("the fill fell back to the master's tables: it served"),
            "{engine}: {}",
            out.stdout
        );
        let sa = &mut nodes[0];
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
        // What h3 holds is what OpenSM answers, SLs included.
        let h3 = fabric.node("h3").unwrap().port().unwrap().lid;
        let lids = c.lids();
        let theirs = opensm_answers(&fabric, &lids, None);
        let from_h3: Vec<((u16, u16), Option<PathRecord>)> = theirs
            .iter()
            .filter(|((s, _), _)| *s == h3)
            .map(|(k, v)| (*k, *v))
            .collect();
        assert!(
            from_h3.iter().any(|(_, r)| r.is_some_and(|r| r.sl() != 0)),
            "{engine}: OpenSM's SLs vary"
        );
        assert_eq!(
            sa.counter("records"),
            from_h3.iter().filter(|(_, r)| r.is_some()).count() as u64
        );
        // Record by record, from h3's own local-sa, without a query of
        // the master (but the polls of its activity, which go on).
        let asked_of_master = |c: HashMap<String, u64>| c["upstream_queries"] - c["sweep_polls"];
        let asked = asked_of_master(sa.counters());
        let ours = answers(
            &fabric,
            "h3",
            Path::new(env!("CARGO_BIN_EXE_opensm-paths")),
            Ask {
                sa_lid: h3,
                lids: &lids,
                sources: Some(&[h3]),
                pkey: None,
                service_id: None,
                qos_class: None,
            },
        );
        let theirs: HashMap<(u16, u16), Option<PathRecord>> = from_h3.into_iter().collect();
        // DFSSSP spreads a pair's traffic over several SLs at random: each
        // of OpenSM's answers draws one (`get_dfsssp_sl`: res + rand() %
        // vl_split_count[res]), so two asks of OpenSM itself differ; the
        // SL is compared for LASH only.
        let sl_drawn = |answers: &HashMap<(u16, u16), Option<PathRecord>>| {
            answers
                .iter()
                .map(|(k, r)| {
                    let r = r.map(|mut r| {
                        if engine == "dfsssp" {
                            r.set_sl(0);
                        }
                        r
                    });
                    (*k, r)
                })
                .collect::<HashMap<_, _>>()
        };
        let diff = answer_differences(&sl_drawn(&ours), &sl_drawn(&theirs));
        assert!(diff.is_empty(), "{engine}: {}", diff.join("\n"));
        assert_eq!(asked_of_master(sa.counters()), asked, "{engine}");
    }
}

#[test]
fn the_distributor_fills_every_local_sa_with_computed_tables_and_asks_the_master_for_none() {
    let fabric = start(Topology::fat_tree(3, 4, 2), &[], &[]);
    let mut nodes = waiting_nodes(&fabric, &["h2", "h5", "h11"], &[]);
    let snapshot = fabric.dir().join("distributed.snap");
    let out = distribute(
        &fabric,
        "h9",
        &["--json", "--snapshot", snapshot.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    let json: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(json["filled"], 3, "{json}");
    assert_eq!(json["compute"]["tables"], 3, "{json}");
    assert_eq!(json["compute"]["differences"], 0, "{json}");
    // No PathRecord table was asked of the master: its one whole table
    // is the directory's (the adapters' NodeRecords, the other names
    // table, are the description's).
    assert_eq!(json["master_tables"], 1, "{json}");
    assert_eq!(json["names_tables_taken"], 6, "{json}");
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    // What the nodes hold is what OpenSM answers for their ports.
    let text = std::fs::read_to_string(&snapshot).unwrap();
    let held: HashMap<(u16, u16), PathRecord> = parse_printed_records(&text)
        .iter()
        .map(|r| path_record_from_printed(r).unwrap())
        .map(|r| ((r.slid(), r.dlid()), r))
        .collect();
    let lids: Vec<u16> = held
        .keys()
        .flat_map(|(s, d)| [*s, *d])
        .collect::<BTreeSet<u16>>()
        .into_iter()
        .collect();
    let sources: BTreeSet<u16> = held.keys().map(|(s, _)| *s).collect();
    assert_eq!(sources.len(), 3);
    let theirs: HashMap<(u16, u16), Option<PathRecord>> = opensm_answers(&fabric, &lids, None)
        .into_iter()
        .filter(|((s, _), _)| sources.contains(s))
        .collect();
    let diff = differences(&held, &theirs);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
    for (sa, name) in nodes.iter().zip(["h2", "h5", "h11"]) {
        let lid = fabric.node(name).unwrap().port().unwrap().lid;
        let mine = held.keys().filter(|(s, _)| *s == lid).count() as u64;
        assert_eq!(sa.counter("records"), mine, "{name}");
    }
}

#[test]
fn two_shards_fill_disjoint_shares_that_together_are_every_node() {
    let fabric = start(Topology::fat_tree(3, 4, 2), &[], &[]);
    let names = ["h2", "h4", "h5", "h7", "h11"];
    let mut nodes = waiting_nodes(&fabric, &names, &[]);
    // Two distributors on two nodes, at once.
    let shards: Vec<_> = [("h9", "1/2"), ("h10", "2/2")]
        .iter()
        .map(|(at, shard)| {
            fabric
                .node(at)
                .unwrap()
                .lsaquery()
                .args([
                    "--distribute",
                    "--compute",
                    "--smkey",
                    KEY,
                    "--json",
                    "--shard",
                    shard,
                ])
                .timeout(Duration::from_secs(120))
                .spawn()
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let mut filled = 0;
    for mut p in shards {
        assert!(
            p.wait_timeout(Duration::from_secs(120))
                .is_some_and(|s| s.success()),
            "{}{}",
            p.stdout(),
            p.stderr()
        );
        let json: serde_json::Value = serde_json::from_str(p.stdout().trim()).unwrap();
        assert_eq!(json["failed"], 0, "{json}");
        assert_eq!(json["compute"]["used"], true, "{json}");
        filled += json["filled"].as_u64().unwrap();
    }
    assert_eq!(
        filled,
        names.len() as u64,
        "the shares add up to every node"
    );
    for (sa, name) in nodes.iter_mut().zip(names) {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sa.counter("refreshes_loaded"), 1, "{name} filled once");
    }
}

/// What `lsaquery -p` prints for a Get from `node`'s port to `dlid` with
/// rate byte `rate` (selector in bits 7..6), asked of the master or of
/// the node's local-sa; ERR_NO_RECORDS prints nothing.
fn rate_get(fabric: &SimulatedFabric, node: &str, master: bool, dlid: u16, rate: u8) -> String {
    let n = fabric.node(node).unwrap();
    let me = n.port().unwrap().lid;
    let master: &[&str] = if master { &["--master"] } else { &[] };
    let out = n
        .lsaquery()
        .args(master)
        .args(["-p", "--slid", &me.to_string(), "--dlid", &dlid.to_string()])
        .args(["--rate", &format!("{rate:#04x}"), "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    out.stdout
}

#[test]
fn rate_selectors_are_answered_as_opensm_answers_them_in_its_order_and_before_it_lowers_rates() {
    // OpenSM orders rates by their 8b/10b equivalents (100 Gb/s above 120)
    // and applies a rate selector before it lowers a rate only 2x or HDR
    // give (here for every path: use_original_extended_sa_rates_only), so
    // a node must neither order rates by bandwidth nor judge a selector on
    // a lowered rate it holds. Exactly 40 Gb/s, less than 100, exactly 25.
    let lids: Vec<u16> = (1..=17).collect();
    for (options, node) in [
        (&[][..], "h2"),
        (&["use_original_extended_sa_rates_only TRUE"][..], "h8"),
    ] {
        let fabric = start(every_width_and_speed(), options, &[]);
        let sa =
            LocalSa::start(&fabric, node, &["--sm-key", KEY]).unwrap_or_else(|e| panic!("{e}"));
        let misses = sa.counter("misses");
        for dlid in &lids {
            for rate in [0x87u8, 0x50, 0x8F] {
                let ours = rate_get(&fabric, node, false, *dlid, rate);
                let theirs = rate_get(&fabric, node, true, *dlid, rate);
                assert_eq!(
                    ours, theirs,
                    "{options:?}: {node} to LID {dlid}, rate byte {rate:#04x}"
                );
            }
        }
        eprintln!(
            "{options:?}: {} of {} rate-selector queries from {node} went to the master",
            sa.counter("misses") - misses,
            lids.len() * 3
        );
    }
}
