//! local-sa against OpenSM run as many production fabrics run it: QoS on,
//! a policy that puts rdma_cm's ServiceIDs on SL 1 and a storage range on
//! SL 2 with lower MTU and rate limits, a level for partition 0x8002, and
//! partitions 0x8001 and 0x8002 (SL 3) beside the default one. Every
//! P_Key × ServiceID × SL query must be answered as OpenSM answers it,
//! from local-sa's partition tables or its QoS cache after the first, and
//! still so with OpenSM frozen; a partition's pairs nobody asked are
//! answered from its table.

use std::collections::HashMap;
use std::time::Duration;

use conformance::sa_compare::{SaAnswer, ask, assert_none_differ, differences};
use conformance::{LocalSa, SimulatedFabric, Topology};

const POLICY: &str = "\
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: RDMA_CM
        sl: 1
    end-qos-level
    qos-level
        name: STORAGE
        sl: 2
        mtu-limit: 3
        rate-limit: 2
    end-qos-level
    qos-level
        name: P2
        sl: 4
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        service-id: 0x0000000001060000-0x000000000106ffff
        qos-level-name: RDMA_CM
    end-qos-match-rule
    qos-match-rule
        service-id: 0x0000000000010000-0x000000000001ffff
        qos-level-name: STORAGE
    end-qos-match-rule
    qos-match-rule
        pkey: 0x0002
        qos-level-name: P2
    end-qos-match-rule
end-qos-match-rules
";

const PARTITIONS: &str = "\
Default=0x7fff, ipoib, defmember=full : ALL, ALL_SWITCHES=full, SELF=full ;
P1=0x8001 : ALL=full ;
P2=0x8002, sl=3 : ALL=full ;
";

fn fabric() -> SimulatedFabric {
    fabric_with(&[])
}

/// [`fabric`] with more lines of OpenSM's configuration.
fn fabric_with(config: &[&str]) -> SimulatedFabric {
    let mut lines = vec![
        "qos TRUE",
        "qos_policy_file qos-policy.conf",
        "partition_config_file partitions.conf",
    ];
    lines.extend(config);
    SimulatedFabric::builder(Topology::fat_tree(4, 5, 2))
        .opensm_file("qos-policy.conf", POLICY)
        .opensm_file("partitions.conf", PARTITIONS)
        .opensm_config(lines)
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa's counters once two writes of the counters file a second
/// apart agree (every answer given so far is in them).
fn settled(sa: &LocalSa<'_>) -> HashMap<String, u64> {
    let mut last = sa.counters();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(1100));
        let now = sa.counters();
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("local-sa's counters kept moving: {last:?}");
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// A PathRecord query from LID `s` to LID `d` with `extra`.
fn between(s: &str, d: &str, extra: &[&str]) -> Vec<String> {
    let mut q = args(&["-p", "--slid", s, "--dlid", d]);
    q.extend(args(extra));
    q
}

/// Every P_Key (none, the default full and limited, 0x8001 full and
/// limited, 0x8002, one no port holds) × ServiceID (none, rdma_cm's, the
/// storage range's, one outside the policy) × SL (none, 1, 3), from `s`
/// to `d`; and a few tables.
fn queries(s: &str, d: &str) -> Vec<Vec<String>> {
    let pkeys = [None, Some("0xffff"), Some("0x7fff"), Some("0x8001")];
    let more_pkeys = [Some("0x0001"), Some("0x8002"), Some("0x8003")];
    let sids = [None, Some("0x1060001"), Some("0x10005"), Some("0x99")];
    let sls = [None, Some("1"), Some("3")];
    let mut out = Vec::new();
    for pkey in pkeys.iter().chain(&more_pkeys) {
        for sid in sids {
            for sl in sls {
                let mut q = between(s, d, &["--method", "get"]);
                for (flag, v) in [("--pkey", pkey), ("--service_id", &sid), ("--sl", &sl)] {
                    if let Some(v) = v {
                        q.extend(args(&[flag, v]));
                    }
                }
                out.push(q);
            }
        }
    }
    for extra in [
        &["--pkey", "0x8001", "--service_id", "0x1060001"][..],
        &["--service_id", "0x10005", "-M", "0x84"],
        &["--pkey", "0x8002", "--reversible", "1"],
        &["--qos_class", "3", "--pkey", "0x8001"],
    ] {
        out.push(between(s, d, extra));
    }
    out
}

#[test]
fn every_pkey_service_id_and_sl_is_answered_as_opensm_does_and_from_the_cache() {
    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    let (me, other) = (
        node.port().unwrap(),
        fabric.node("h17").unwrap().port().unwrap(),
    );
    let (s, d) = (me.lid.to_string(), other.lid.to_string());
    let queries = queries(&s, &d);
    let theirs: Vec<SaAnswer> = queries
        .iter()
        .map(|q| ask(&node, &["--master"], q))
        .collect();
    // The policy is in force: SL 1 for rdma_cm's ServiceIDs, the storage
    // level's limits.
    let rdma_cm = ask(
        &node,
        &["--master"],
        &between(&s, &d, &["--service_id", "0x1060001"]),
    );
    assert_eq!(rdma_cm.data[53] & 0x0F, 1, "OpenSM's policy: SL 1");
    let storage = ask(
        &node,
        &["--master"],
        &between(&s, &d, &["--service_id", "0x10005"]),
    );
    assert_eq!(
        (
            storage.data[53] & 0x0F,
            storage.data[54] & 0x3F,
            storage.data[55] & 0x3F
        ),
        (2, 3, 2),
        "OpenSM's storage level: SL 2, MTU 1024, 2.5 Gb/s"
    );

    let before = sa.counters();
    let found = differences(&node, &queries, &theirs);
    assert_none_differ(&found, queries.len(), "");
    // One master query per distinct port pair × key (P_Key's partition,
    // ServiceID, an SL OpenSM did not choose), not one per query.
    let after = settled(&sa);
    let fetched = after["qos_cache_fetches"] - before["qos_cache_fetches"];
    assert!(
        fetched > 0 && fetched < queries.len() as u64,
        "{fetched} port pairs asked for {} queries",
        queries.len()
    );

    // With OpenSM frozen, every query is answered as before, from the cache.
    let frozen = fabric.with_opensm_frozen(|| differences(&node, &queries, &theirs));
    assert_none_differ(&frozen, queries.len(), "with OpenSM frozen, ");
    let c = settled(&sa);
    let answered_here = |c: &HashMap<String, u64>| c["hits"] + c["qos_cache_hits"];
    assert!(answered_here(&c) >= answered_here(&after) + queries.len() as u64);
    assert_eq!(
        (c["misses"], c["qos_cache_fetches"]),
        (after["misses"], after["qos_cache_fetches"]),
        "nothing asked of the master"
    );
}

/// Waits until local-sa on `node` holds `tables` partition tables, each
/// complete.
fn partition_tables_complete(node: &conformance::Node<'_>, sa: &LocalSa<'_>, tables: usize) {
    for _ in 0..240 {
        let out = node
            .lsaquery()
            .args(["--status", "--json", "--api-socket"])
            .arg(sa.api_socket())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let complete = out.stdout.matches("\"state\":\"complete\"").count();
        if complete == tables && out.stdout.matches("\"pkey\":").count() == tables {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "local-sa never held {tables} complete partition tables:\n{}",
        sa.stderr()
    );
}

#[test]
fn a_partitions_pairs_nobody_asked_are_answered_from_its_table_with_opensm_frozen() {
    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    // OpenSM applies QoS: the port's three P_Keys (0xffff, 0x8001,
    // 0x8002) each get a table, the default one included.
    partition_tables_complete(&node, &sa, 3);
    let s = node.port().unwrap().lid.to_string();
    let mut queries = Vec::new();
    for host in fabric.topology().hcas() {
        let d = fabric.node(host).unwrap().port().unwrap().lid.to_string();
        for pkey in ["0xffff", "0x8001", "0x0001", "0x8002", "0x7fff"] {
            queries.push(between(&s, &d, &["--method", "get", "--pkey", pkey]));
        }
    }
    for pkey in ["0x8001", "0x8002"] {
        queries.push(args(&["-p", "--slid", &s, "--pkey", pkey]));
        queries.push(args(&[
            "-p",
            "--slid",
            &s,
            "--pkey",
            pkey,
            "--reversible",
            "1",
        ]));
    }
    let theirs: Vec<SaAnswer> = queries
        .iter()
        .map(|q| ask(&node, &["--master"], q))
        .collect();
    assert_eq!(
        theirs[1 + 5].data[53] & 0x0F,
        0,
        "OpenSM: partition 0x8001 keeps SL 0"
    );
    assert_eq!(
        theirs[3 + 5].data[53] & 0x0F,
        4,
        "OpenSM: the policy's level for P_Key 0x0002 (SL 4)"
    );
    let before = settled(&sa);

    let frozen = fabric.with_opensm_frozen(|| differences(&node, &queries, &theirs));
    assert_none_differ(&frozen, queries.len(), "with OpenSM frozen, ");
    let after = settled(&sa);
    assert_eq!(
        (after["misses"], after["qos_cache_fetches"]),
        (before["misses"], before["qos_cache_fetches"]),
        "nothing asked of the master"
    );
    assert_eq!(after["hits"], before["hits"] + queries.len() as u64);
    assert_eq!(after["partition_tables"], 3);

    // Each table dumps on its own, its records carrying its P_Key.
    let dump = node
        .lsaquery()
        .args(["--dump", "--json", "--pkey", "0x8002", "--api-socket"])
        .arg(sa.api_socket())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(dump.status.success(), "{}", dump.stderr);
    let lines: Vec<&str> = dump.stdout.lines().collect();
    assert_eq!(
        lines.len() as u64 * 3,
        after["partition_records"],
        "three tables of one record per port"
    );
    assert!(
        lines.iter().all(|l| l.contains("\"pkey\":32770,")),
        "{}",
        dump.stdout
    );
}

#[test]
fn the_kernels_resolves_with_a_pkey_and_service_id_come_from_the_tables_and_the_qos_cache() {
    use conformance::kernel_end::Kernel;
    use local_sa_core::doors::netlink::wire::{self, Header, PathUse, Resolve, reply_records};
    use mad_codec::Gid;
    use mad_codec::zerocopy::IntoBytes;

    let fabric = fabric();
    let (ours, kernel) = Kernel::pair(Duration::from_secs(20));
    let sa = LocalSa::start_passing(&fabric, "h5", &[], "netlink", ours)
        .unwrap_or_else(|e| panic!("{e}"));
    kernel.reply(); // SET_TIMEOUT
    let node = fabric.node("h5").unwrap();
    partition_tables_complete(&node, &sa, 3);
    let gid = |host: &str| {
        let guid = fabric.node(host).unwrap().port().unwrap().guid;
        Gid::new(Gid::DEFAULT_PREFIX, guid)
    };
    let me = gid("h5");
    // rdma_cm's route resolution: a ServiceID in the policy's range (SL 1
    // at OpenSM) beside the P_Key; IPoIB's and the others': the P_Key
    // alone.
    let mut resolves = Vec::new();
    for host in fabric.topology().hcas().iter().step_by(2) {
        for pkey in [0xffff, 0x8001, 0x8002] {
            for service_id in [None, Some(0x0000_0000_0106_1234u64)] {
                resolves.push(Resolve {
                    device: "ibsim0".into(),
                    port: 1,
                    path_use: PathUse::GMP,
                    service_id,
                    dgid: Some(gid(host)),
                    sgid: Some(me),
                    tclass: None,
                    pkey: Some(pkey),
                    qos_class: None,
                });
            }
        }
    }
    let theirs: Vec<SaAnswer> = resolves
        .iter()
        .map(|r| {
            let mut q = args(&["-p", "--method", "get", "--reversible", "1"]);
            q.extend(args(&["--sgid", &me.to_string()]));
            q.extend(args(&["--dgid", &r.dgid.unwrap().to_string()]));
            q.extend(args(&["--pkey", &format!("{:#x}", r.pkey.unwrap())]));
            if let Some(id) = r.service_id {
                q.extend(args(&["--service_id", &format!("{id:#x}")]));
            }
            ask(&node, &["--master"], &q)
        })
        .collect();
    let round = |first_seq: u32| -> Vec<String> {
        let mut wrong = Vec::new();
        for (i, (r, t)) in resolves.iter().zip(&theirs).enumerate() {
            let seq = first_seq + i as u32;
            let reply = kernel.ask(&wire::resolve_request(seq, r));
            let h = Header::parse(&reply).unwrap();
            let ours = reply_records(&reply);
            let same = h.seq == seq
                && h.flags == 0
                && ours.len() == 1
                && ours[0].1.as_bytes() == &t.data[..];
            if !same {
                wrong.push(format!(
                    "{:?} P_Key {:#x} ServiceID {:?}: flags {:#x}, {} records",
                    r.dgid,
                    r.pkey.unwrap(),
                    r.service_id,
                    h.flags,
                    ours.len()
                ));
            }
        }
        wrong
    };
    let first = round(100);
    assert_none_differ(&first, resolves.len(), "");
    assert_eq!(theirs[3].data[53] & 0x0F, 1, "OpenSM: SL 1 for rdma_cm");
    let before = settled(&sa);

    let frozen = fabric.with_opensm_frozen(|| round(1000));
    assert_none_differ(&frozen, resolves.len(), "with OpenSM frozen, ");
    let after = settled(&sa);
    assert_eq!(
        after["netlink_from_cache"],
        before["netlink_from_cache"] + resolves.len() as u64,
        "every RESOLVE answered from the cache"
    );
    assert_eq!(
        after["misses"], before["misses"],
        "nothing asked of the master"
    );
}

/// The number `key` has in the JSON object `json`.
fn json_number(json: &str, key: &str) -> u64 {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {json}"));
    json[at + key.len() + 3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {json}: {e}"))
}

#[test]
fn a_warmed_jobs_queries_are_answered_as_opensm_does_with_opensm_frozen() {
    use mad_codec::Gid;

    let fabric = fabric();
    let sa = LocalSa::start(&fabric, "h5", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h5").unwrap();
    partition_tables_complete(&node, &sa, 3);
    let me = node.port().unwrap();
    let gid = |guid: u64| Gid::new(Gid::DEFAULT_PREFIX, guid).to_string();
    let peers: Vec<conformance::Node<'_>> = fabric
        .topology()
        .hcas()
        .iter()
        .filter(|h| *h != "h5")
        .step_by(3)
        .take(6)
        .map(|h| fabric.node(h).unwrap())
        .collect();
    // The job's hosts as a prolog knows them: by name, LID or GID.
    let hosts: Vec<String> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| match i % 3 {
            0 => p.name().to_owned(),
            1 => p.port().unwrap().lid.to_string(),
            _ => gid(p.port().unwrap().guid),
        })
        .collect();
    let sids = ["0x1060001", "0x10005", "0x10006"];
    let pkeys = ["0xffff", "0x8001", "0x8002"];
    let mut queries = Vec::new();
    for p in &peers {
        for pkey in pkeys {
            for sid in [None].into_iter().chain(sids.map(Some)) {
                let mut q = args(&["-p", "--method", "get", "--sgid", &gid(me.guid)]);
                q.extend(args(&[
                    "--dgid",
                    &gid(p.port().unwrap().guid),
                    "--pkey",
                    pkey,
                ]));
                if let Some(sid) = sid {
                    q.extend(args(&["--service_id", sid]));
                }
                queries.push(q);
            }
        }
    }
    let theirs: Vec<SaAnswer> = queries
        .iter()
        .map(|q| ask(&node, &["--master"], q))
        .collect();
    let warm = || {
        let out = node
            .lsaquery()
            .args(["--warm", &hosts.join(","), "--json"])
            .args(["--service-id", sids[0], "--service-id", "0x10005-0x10006"])
            .arg("--api-socket")
            .arg(sa.api_socket())
            .arg("--acm-socket")
            .arg(sa.acm_socket())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        out.stdout
    };

    let first = warm();
    let n = queries.len() as u64;
    assert_eq!(json_number(&first, "peers"), peers.len() as u64, "{first}");
    assert_eq!(json_number(&first, "queries"), n, "{first}");
    assert_eq!(json_number(&first, "answered"), n, "{first}");
    // Each P_Key and ServiceID's pairs (9 keys, 6 peers each) asked alone:
    // OpenSM's tables reach this port cut (the simulator has no RMPP for
    // OpenSM's answers; this port's own table came cut at start), so no
    // whole table at a key is asked (over RMPP one would be after four
    // pairs: the core's tests; that OpenSM's table holds each
    // destination's pair records: the test after this one).
    assert_eq!(
        (
            json_number(&first, "pairs_asked"),
            json_number(&first, "tables_asked")
        ),
        (9 * 6, 0),
        "{first}"
    );

    // The job starts with OpenSM frozen: everything warmed is answered,
    // as OpenSM answered it, and nothing waits for the master.
    let (again, found) =
        fabric.with_opensm_frozen(|| (warm(), differences(&node, &queries, &theirs)));
    assert_eq!(json_number(&again, "answered"), n, "{again}");
    assert_eq!(
        (
            json_number(&again, "from_master"),
            json_number(&again, "pairs_asked")
        ),
        (0, 0),
        "{again}"
    );
    assert_none_differ(&found, queries.len(), "warmed, with OpenSM frozen, ");
}

/// What local-sa's QoS cache relies on when it asks a port's whole table
/// at a key rather than its pairs: OpenSM answers a GetTable of SGID,
/// P_Key and ServiceID with each destination's records exactly as it
/// answers that pair's own GetTable (the simulator cuts the table to its
/// first records: those are compared, for every P_Key and ServiceID).
#[test]
fn opensm_gives_each_destination_the_same_records_in_a_sources_table_at_a_key_as_for_the_pair() {
    use mad_codec::PathRecord;
    use mad_codec::zerocopy::FromBytes;

    let fabric = fabric();
    let node = fabric.node("h5").unwrap();
    let me = mad_codec::Gid::new(mad_codec::Gid::DEFAULT_PREFIX, node.port().unwrap().guid);
    let mut compared = 0;
    for pkey in ["0xffff", "0x8001", "0x8002"] {
        for sid in ["0x1060001", "0x10005", "0x99"] {
            let key = ["--pkey", pkey, "--service_id", sid];
            let mut table = args(&["-p", "--sgid", &me.to_string()]);
            table.extend(args(&key));
            let whole = ask(&node, &["--master"], &table);
            assert!(whole.status.is_ok(), "{table:?}: {}", whole.status);
            let records = whole.records();
            assert!(!records.is_empty(), "{table:?}: no record");
            for r in records {
                let dgid = PathRecord::read_from_bytes(r).unwrap().dgid();
                let mut pair = args(&["-p", "--sgid", &me.to_string()]);
                pair.extend(args(&["--dgid", &dgid.to_string()]));
                pair.extend(args(&key));
                let alone = ask(&node, &["--master"], &pair);
                assert_eq!(
                    alone.records().first(),
                    Some(&r),
                    "{pair:?}: the pair's own answer differs from its record in {table:?}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 9, "{compared} destinations compared");
}

#[test]
fn the_distributor_sends_each_node_its_partition_tables_and_its_tables_at_service_ids() {
    const KEY: &str = "0x5eed";
    // The SA key OpenSM gives P_KeyTableRecords for is the nodes' SM_Key.
    let fabric = fabric_with(&["sa_key 0x5eed"]);
    let names = ["h2", "h11"];
    let nodes: Vec<LocalSa<'_>> = names
        .iter()
        .map(|n| {
            LocalSa::start_unfilled(&fabric, n, &["--sm-key", KEY, "--load-wait", "300"])
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let h2 = fabric.node("h2").unwrap();
    let s = h2.port().unwrap().lid.to_string();
    let mut queries = Vec::new();
    for host in fabric.topology().hcas().iter().step_by(3) {
        let d = fabric.node(host).unwrap().port().unwrap().lid.to_string();
        for pkey in ["0x8001", "0x8002", "0xffff"] {
            queries.push(between(&s, &d, &["--method", "get", "--pkey", pkey]));
            // rdma_cm's key and the storage range's: what the QoS tables
            // hold.
            for sid in ["0x1060001", "0x10005"] {
                queries.push(between(
                    &s,
                    &d,
                    &["--method", "get", "--pkey", pkey, "--service_id", sid],
                ));
            }
        }
    }
    let theirs: Vec<SaAnswer> = queries.iter().map(|q| ask(&h2, &["--master"], q)).collect();

    let snapshot = fabric.dir().join("paths.snap");
    let distribute = |extra: &[&str]| {
        let out = fabric
            .node("h9")
            .unwrap()
            .lsaquery()
            .args(["--distribute", "--smkey", KEY, "--json"])
            .args(["--service-id", "0x1060001", "--service-id", "0x10005"])
            .arg("--snapshot")
            .arg(&snapshot)
            .args(extra)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        out
    };
    let out = distribute(&[]);
    // OpenSM applies QoS: each node's three P_Keys get a table each.
    assert_eq!(json_number(&out.stdout, "filled"), 2, "{}", out.stdout);
    assert_eq!(
        json_number(&out.stdout, "partition_tables"),
        3 * names.len() as u64,
        "{}",
        out.stdout
    );

    // Frozen at once, OpenSM cannot give the nodes anything more: what
    // they hold came from the distributor.
    fabric.with_opensm_frozen(|| {
        for (sa, name) in nodes.iter().zip(names) {
            partition_tables_complete(&fabric.node(name).unwrap(), sa, 3);
        }
        let found = differences(&h2, &queries, &theirs);
        assert_none_differ(&found, queries.len(), "distributed, with OpenSM frozen, ");
    });
    let stored = json_number(&out.stdout, "partition_stored");
    let held: u64 = nodes.iter().map(|n| n.counter("partition_records")).sum();
    assert_eq!(held, stored, "every record sent is held");
    // Each node's three P_Keys × two ServiceIDs, sent after its default
    // table (whose load empties the QoS cache): the queries at them were
    // answered from what was sent, none asked of the master.
    assert_eq!(
        json_number(&out.stdout, "qos_tables"),
        6 * names.len() as u64,
        "{}",
        out.stdout
    );
    let counters: Vec<HashMap<String, u64>> = nodes.iter().map(settled).collect();
    let loaded: u64 = counters.iter().map(|c| c["qos_cache_loaded"]).sum();
    assert_eq!(loaded, json_number(&out.stdout, "qos_stored"));
    assert!(loaded > 0);
    let at_service_ids = queries
        .iter()
        .filter(|q| q.contains(&"--service_id".to_owned()))
        .count();
    assert_eq!(counters[0]["qos_cache_fetches"], 0, "{:?}", counters[0]);
    assert!(
        counters[0]["qos_cache_hits"] >= at_service_ids as u64,
        "{at_service_ids} queries at a ServiceID: {:?}",
        counters[0]
    );

    // The snapshot keeps the partition tables' records apart: every one
    // sent is in its own section.
    let first = std::fs::read_to_string(&snapshot).unwrap();
    let (_, partition_section) = first
        .split_once(PARTITION_SECTION)
        .unwrap_or_else(|| panic!("no partition section in the snapshot:\n{first}"));
    assert_eq!(
        partition_section.matches("PathRecord dump:").count() as u64,
        stored
    );

    // A delta after h2's table of partition 0x8001 went stale, as the
    // snapshot says it was sent: one pair at an SL OpenSM no longer
    // gives, one pair OpenSM does not have.
    let sa_lid = |extra: &[&str]| {
        let out = h2
            .lsaquery()
            .args(["--sa-lid", &s])
            .args(extra)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{extra:?}: {}{}",
            out.stdout,
            out.stderr
        );
    };
    let (fresh, changed, gone) = stale_partition_records(partition_section, &s);
    let d = field(&changed, "dlid").to_owned();
    let stale = fabric.dir().join("stale.txt");
    std::fs::write(&stale, format!("{changed}{gone}")).unwrap();
    let make_stale = || {
        sa_lid(&[
            "--smkey",
            KEY,
            "--partitions",
            "--load",
            stale.to_str().unwrap(),
        ]);
    };
    make_stale();
    let known_query = between(&s, &d, &["--method", "get", "--pkey", "0x8001"]);
    let known = [ask(&h2, &["--master"], &known_query)];
    let gone_query = between(&s, "0xB000", &["--method", "get", "--pkey", "0x8001"]);
    let stale_snapshot = format!(
        "{}{PARTITION_SECTION}{}{gone}",
        first.split_once(PARTITION_SECTION).unwrap().0,
        partition_section.replacen(&fresh, &changed, 1)
    );
    std::fs::write(&snapshot, &stale_snapshot).unwrap();
    let out = distribute(&["--delta", snapshot.to_str().unwrap()]);
    for (key, value) in [
        ("filled", 1),
        ("unchanged", 1),
        ("stored", 0),
        ("deleted", 0),
        ("partition_tables", 0),
        ("partition_stored", 1),
        ("partition_deleted", 1),
        // Every time: a node's refresh empties its QoS cache.
        ("qos_tables", 6 * names.len() as u64),
    ] {
        assert_eq!(
            json_number(&out.stdout, key),
            value,
            "{key}: {}",
            out.stdout
        );
    }
    // (The master's records may come in another order.)
    assert!(
        sections(&std::fs::read_to_string(&snapshot).unwrap()) == sections(&first),
        "the new snapshot holds what the first one did"
    );
    let put_right = |when: &str| {
        fabric.with_opensm_frozen(|| {
            let found = differences(&h2, std::slice::from_ref(&known_query), &known);
            assert_none_differ(&found, 1, when);
            // Known absent: h2's table still answers for the pair itself.
            let local = ask(&h2, &[], &gone_query);
            assert_eq!(local.status, mad_codec::MadStatus::ERR_NO_RECORDS, "{when}");
        });
    };
    put_right("after the delta, ");

    // The snapshot given as --from carries the partition tables too (a
    // dump's are never asked of the master): each goes whole.
    make_stale();
    let out = distribute(&["--from", snapshot.to_str().unwrap(), "--targets", &s]);
    assert_eq!(
        json_number(&out.stdout, "partition_tables"),
        3,
        "{}",
        out.stdout
    );
    put_right("after --from the snapshot, ");
}

/// The line that opens a snapshot's partition tables (lsaquery's
/// records_file.rs).
const PARTITION_SECTION: &str = "# local-sa: partition tables";

/// A snapshot's printed records, each section's as a set.
fn sections(snapshot: &str) -> [std::collections::BTreeSet<String>; 2] {
    let (default, partitions) = snapshot.split_once(PARTITION_SECTION).unwrap_or_default();
    let records = |section: &str| {
        section
            .split("PathRecord dump:")
            .skip(1)
            .map(|r| r.trim().to_owned())
            .collect()
    };
    [records(default), records(partitions)]
}

/// From a snapshot's partition section: one printed record of partition
/// 0x8001 from LID `slid` to another port, the same at another SL, and
/// that one to LID 0xB000 (a port that is not there).
fn stale_partition_records(section: &str, slid: &str) -> (String, String, String) {
    let fresh = section
        .split("PathRecord dump:")
        .map(|b| format!("PathRecord dump:{b}"))
        .find(|b| {
            b.contains("pkey.")
                && field(b, "slid") == slid
                && field(b, "pkey") == "0x8001"
                && field(b, "dlid") != slid
        })
        .unwrap_or_else(|| panic!("no record of partition 0x8001 from LID {slid}:\n{section}"));
    let sl = u8::from_str_radix(field(&fresh, "sl").trim_start_matches("0x"), 16).unwrap();
    let changed = with_field(&fresh, "sl", &format!("0x{:X}", (sl + 1) % 16));
    let gone = with_field(
        &with_field(&changed, "dlid", "45056"),
        "dgid",
        "fe80::ff:0:0:1",
    );
    (fresh, changed, gone)
}

/// The value of field `name` in a printed record.
fn field<'a>(record: &'a str, name: &str) -> &'a str {
    record
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(name)
                .filter(|rest| rest.starts_with('.'))
        })
        .map(|rest| rest.trim_start_matches('.'))
        .unwrap_or_else(|| panic!("no {name} in {record}"))
}

/// A printed record with field `name` set to `value`.
fn with_field(record: &str, name: &str, value: &str) -> String {
    let old = field(record, name);
    record
        .lines()
        .map(|l| {
            let named = l
                .trim()
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('.'));
            let line = if named {
                l.replace(old, value)
            } else {
                l.to_owned()
            };
            line + "\n"
        })
        .collect()
}
