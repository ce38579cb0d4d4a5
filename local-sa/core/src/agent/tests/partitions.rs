//! A table per partition: each P_Key of the port's table gets its own
//! bulk table from the master, refreshed, trap-invalidated and loadable
//! like the default one, and queries naming that P_Key are answered from
//! it — a pair never asked included — while the master is silent.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, TrapDetails};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, path_records, pr_request, status};
use super::fake_master::{Delivery, FakeMaster, gid, path};
use super::loads::{KEY, load_header, modifier, push};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::load_flags::{PARTITION_TABLES, REPLACE_SOURCES};
use crate::request::Request;

/// The host outside partition 0x8001.
const OUTSIDER: u16 = 9;
/// Partition 0x8001's SL at the master.
const PARTITION_SL: u8 = 3;

/// A master with partition 0x8001 (SL 3) holding every host but
/// [`OUTSIDER`].
fn master() -> FakeMaster {
    let mut m = FakeMaster::new(MASTER_LID, HOSTS);
    m.partitions.insert(0x0001, PARTITION_SL);
    m.outside.insert(0x0001, [OUTSIDER].into());
    m
}

fn keyed() -> AgentConfig {
    AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    }
}

fn path_queries(b: &Bench) -> usize {
    b.master.count(AttributeId::PATH_RECORD)
}

/// A Get from this port to `dlid` naming `pkey`.
fn get(b: &mut Bench, tid: u64, dlid: u16, pkey: u16) -> bytes::Bytes {
    let q = pr_request(Method::GET, tid, pr::SLID | pr::DLID | pr::PKEY, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(dlid);
        t.set_pkey(pkey);
    });
    b.query(client(30), &q)
}

/// A GetTable of this port's paths naming `pkey`.
fn table(b: &mut Bench, tid: u64, pkey: u16) -> Vec<PathRecord> {
    let q = pr_request(Method::GET_TABLE, tid, pr::SGID | pr::PKEY, |t| {
        t.set_sgid(gid(MY_LID));
        t.set_pkey(pkey);
    });
    let answer = b.query(client(30), &q);
    assert_eq!(status(&answer), MadStatus::OK);
    path_records(&answer)
}

#[test]
fn a_partition_is_fetched_whole_and_answers_every_pair_while_the_master_is_silent() {
    let mut b = Bench::with_pkeys(master(), AgentConfig::default(), &[0xFFFF, 0x8001]);
    let asked: Vec<_> = b
        .master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD)
        .map(|s| (s.mask, s.template.pkey()))
        .collect();
    assert_eq!(
        asked,
        [(pr::SGID, 0), (pr::SGID | pr::PKEY, 0x8001)],
        "the default table, then the partition's; 0xFFFF is the default table's own"
    );
    let c = b.core.counters();
    assert_eq!(
        (c.partition_tables, c.partition_records),
        (1, u64::from(HOSTS) - 1)
    );
    assert!(c.partition_bytes > 0);

    b.master.answering = false;
    let before = path_queries(&b);
    for dlid in (1..=HOSTS).filter(|d| *d != OUTSIDER) {
        let answer = get(&mut b, u64::from(dlid), dlid, 0x8001);
        assert_eq!(status(&answer), MadStatus::OK, "to {dlid}");
        let r = path_records(&answer)[0];
        assert_eq!((r.dlid(), r.sl(), r.pkey()), (dlid, PARTITION_SL, 0x8001));
    }
    // A limited member's key: the same partition, the key echoed.
    let limited = path_records(&get(&mut b, 40, 7, 0x0001))[0];
    assert_eq!((limited.sl(), limited.pkey()), (PARTITION_SL, 0x0001));
    assert_eq!(
        status(&get(&mut b, 41, OUTSIDER, 0x8001)),
        MadStatus::ERR_NO_RECORDS,
        "a port outside the partition has no path on it"
    );
    let all = table(&mut b, 42, 0x8001);
    assert_eq!(all.len(), usize::from(HOSTS) - 1);
    assert!(
        all.iter()
            .all(|r| r.sl() == PARTITION_SL && r.dlid() != OUTSIDER)
    );
    // The default partition: the default table, as before.
    assert_eq!(path_records(&get(&mut b, 43, 7, 0xFFFF))[0].sl(), 0);
    assert_eq!(path_queries(&b), before, "not one asked");
    assert_eq!(b.core.counters().qos_cache_fetches, 0);

    // Dumped by its P_Key, in any membership; a partition without a
    // table dumps nothing.
    for (id, pkey, records) in [(1, 0x0001, HOSTS - 1), (2, 0x8005, 0)] {
        let dump = Request::Dump {
            from: 0,
            max: 100,
            partition: Some(pkey),
        };
        b.core.handle_local(b.now, 7, id, dump);
        let page: Vec<PathRecord> = std::iter::from_fn(|| b.core.poll_local())
            .flat_map(|r| r.body.path_records().collect::<Vec<_>>())
            .collect();
        assert_eq!(page.len(), usize::from(records), "{pkey:#x}");
        assert!(page.iter().all(|r| r.pkey() == 0x8001));
    }
}

#[test]
fn a_qos_master_gets_a_table_for_every_pkey_and_serviceids_still_go_per_pair() {
    let mut m = master();
    m.qos = true;
    m.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 1)];
    let mut b = Bench::with_pkeys(m, AgentConfig::default(), &[0xFFFF, 0x8001]);
    assert_eq!(
        b.core.counters().partition_tables,
        2,
        "0x7fff's answers too"
    );
    let before = path_queries(&b);
    assert_eq!(path_records(&get(&mut b, 1, 7, 0xFFFF))[0].sl(), 0);
    assert_eq!(
        path_records(&get(&mut b, 2, 7, 0x8001))[0].sl(),
        PARTITION_SL
    );
    assert_eq!(path_queries(&b), before, "both from tables");
    // A ServiceID may match another QoS level: that pair is asked.
    let q = pr_request(
        Method::GET,
        3,
        pr::SLID | pr::DLID | pr::PKEY | pr::SERVICE_ID,
        |t| {
            t.set_slid(MY_LID);
            t.set_dlid(7);
            t.set_pkey(0x8001);
            t.set_service_id(0x0106_0001);
        },
    );
    assert_eq!(path_records(&b.query(client(30), &q))[0].sl(), 1);
    assert_eq!(path_queries(&b), before + 1);
    // An SL other than the table's is the master's to judge.
    let q = pr_request(
        Method::GET,
        4,
        pr::SLID | pr::DLID | pr::PKEY | pr::SL,
        |t| {
            t.set_slid(MY_LID);
            t.set_dlid(7);
            t.set_pkey(0x8001);
            t.set_sl(5);
        },
    );
    b.query(client(30), &q);
    assert_eq!(path_queries(&b), before + 2);
}

#[test]
fn a_partition_table_the_master_refuses_leaves_the_rest_alone() {
    let mut m = master();
    m.partitions.insert(0x0002, 4);
    m.refused_tables.insert(0x0001);
    let mut b = Bench::with_pkeys(m, AgentConfig::default(), &[0xFFFF, 0x8001, 0x8002]);
    assert!(b.core.is_ready());
    let tables = |b: &Bench| {
        let asked = b.master.requests.iter();
        asked
            .filter(|s| s.mask.contains(pr::SGID) && !s.mask.contains(pr::DGID))
            .count()
    };
    assert_eq!(
        tables(&b),
        3,
        "the default table and both partitions', once each"
    );
    let c = b.core.counters();
    assert_eq!((c.partition_tables, c.refreshes), (1, 1), "0x8002's is in");
    let before = path_queries(&b);
    assert_eq!(path_records(&get(&mut b, 1, 7, 0x8002))[0].sl(), 4);
    assert_eq!(path_queries(&b), before, "from 0x8002's table");
    // 0x8001's pairs are asked one by one, as the master allows.
    let answer = get(&mut b, 2, 7, 0x8001);
    assert_eq!(path_records(&answer)[0].sl(), PARTITION_SL);
    assert_eq!(path_queries(&b), before + 1);
    // Later the master gives it: it is asked again after the back-off,
    // without the default table.
    b.master.refused_tables.clear();
    b.advance(AgentConfig::default().retry_backoff * 3);
    assert_eq!(tables(&b), 4);
    assert_eq!(b.core.counters().partition_tables, 2);
}

#[test]
fn a_cut_partition_table_is_walked_with_its_pkey() {
    let mut m = master();
    m.delivery = Delivery::Cut;
    let mut b = Bench::with_pkeys(m, AgentConfig::default(), &[0xFFFF, 0x8001]);
    assert!(b.core.is_ready());
    assert!(
        b.master
            .requests
            .iter()
            .any(|s| s.mask == pr::SGID | pr::DLID | pr::PKEY && s.template.pkey() == 0x8001),
        "per destination, naming the partition"
    );
    assert_eq!(b.core.counters().partition_records, u64::from(HOSTS) - 1);
    b.master.answering = false;
    assert_eq!(table(&mut b, 1, 0x8001).len(), usize::from(HOSTS) - 1);
}

#[test]
fn a_flush_in_the_middle_of_a_walk_starts_the_refresh_again_whole() {
    let mut m = master();
    m.delivery = Delivery::Cut;
    let config = AgentConfig {
        walk_window: 2,
        ..AgentConfig::default()
    };
    let mut b = Bench::with_pkeys(m, config, &[0xFFFF, 0x8001]);
    let partition_walks = |b: &Bench| {
        let walk = pr::SGID | pr::DLID | pr::PKEY;
        b.master.requests.iter().filter(|s| s.mask == walk).count()
    };
    let before = partition_walks(&b);
    b.core.handle_local(b.now, 7, 1, Request::Refresh);
    // Into the partition's walk: some of its destinations answered,
    // others still to come.
    while partition_walks(&b) < before + 5 {
        assert!(b.step(), "the refresh stalled");
    }
    b.core.handle_local(b.now, 7, 2, Request::Flush);
    b.advance(Duration::from_millis(1));
    b.pump();
    let replies: Vec<_> = std::iter::from_fn(|| b.core.poll_local()).collect();
    let all = u64::from(HOSTS) + u64::from(HOSTS) - 1;
    let changes: Vec<_> = replies
        .iter()
        .map(|r| match r.body {
            crate::request::LocalBody::CacheChange { after, .. } => (r.request, r.status, after),
            ref other => panic!("not a cache change: {other:?}"),
        })
        .collect();
    assert_eq!(
        changes,
        [(2, MadStatus::OK, 0), (1, MadStatus::OK, all)],
        "the flush, then the refresh asked before it, with every record"
    );
    assert_eq!(b.core.counters().partition_records, u64::from(HOSTS) - 1);

    // Nothing the flush dropped is answered as missing.
    b.master.answering = false;
    for dlid in (1..=HOSTS).filter(|d| *d != OUTSIDER) {
        let answer = get(&mut b, u64::from(dlid), dlid, 0x8001);
        assert_eq!(status(&answer), MadStatus::OK, "to {dlid}");
    }
}

#[test]
fn traps_refreshes_and_pkey_changes_keep_the_tables_exact() {
    let mut b = Bench::with_pkeys(master(), AgentConfig::default(), &[0xFFFF, 0x8001]);
    let pairs = u64::from(HOSTS) - 1;

    // A port out of service leaves the partition's table too.
    b.master
        .report(TrapDetails::GidOutOfService { gid: gid(7) });
    b.pump();
    assert_eq!(b.core.counters().partition_records, pairs - 1);
    // Back in service: its paths are asked in each table.
    let before = path_queries(&b);
    b.master.report(TrapDetails::GidInService { gid: gid(7) });
    b.pump();
    assert_eq!(path_queries(&b), before + 2);
    assert_eq!(
        b.master.requests.last().unwrap().mask,
        pr::SGID | pr::PKEY | pr::DGID
    );
    assert_eq!(b.core.counters().partition_records, pairs);
    b.master.answering = false;
    assert_eq!(
        path_records(&get(&mut b, 1, 7, 0x8001))[0].sl(),
        PARTITION_SL
    );

    // The master moves a port out of the partition: the next refresh
    // sweeps it from the table.
    b.master.answering = true;
    b.master.outside.insert(0x0001, [OUTSIDER, 8].into());
    b.core.handle_local(b.now, 7, 1, Request::Refresh);
    b.pump();
    assert_eq!(b.core.counters().partition_records, pairs - 1);
    assert_eq!(
        status(&get(&mut b, 2, 8, 0x8001)),
        MadStatus::ERR_NO_RECORDS
    );

    // The port leaves the partition and joins another: the old table
    // goes at once, the new one comes at the port's phase.
    b.master.partitions.insert(0x0002, 4);
    b.core.handle_pkeys(b.now, &[0xFFFF, 0x8002]);
    let c = b.core.counters();
    assert_eq!((c.partition_tables, c.partition_records), (0, 0));
    b.advance(Duration::from_secs(60));
    assert_eq!(b.core.counters().partition_records, u64::from(HOSTS));
    let before = path_queries(&b);
    assert_eq!(path_records(&get(&mut b, 3, 8, 0x8002))[0].sl(), 4);
    assert_eq!(path_queries(&b), before);
    // A key it no longer holds: only the master knows (per pair).
    assert_eq!(
        status(&get(&mut b, 4, 7, 0x8001)),
        MadStatus::OK,
        "asked of the master"
    );
    assert_eq!(path_queries(&b), before + 1);
}

#[test]
fn partition_loads_fill_the_tables_of_partitions_the_port_holds() {
    let mut m = master();
    m.answering = false;
    let config = AgentConfig {
        load_wait: Duration::from_secs(30),
        ..keyed()
    };
    let mut b = Bench::with_pkeys(m, config, &[0xFFFF, 0x8001]);
    let on = |pkey: u16, sl: u8| {
        move |d: u16| {
            let mut r = path(MY_LID, d);
            r.set_pkey(pkey);
            r.set_sl(sl);
            r
        }
    };
    // The partition's table (and one of a partition the port does not
    // hold, which is not stored), then the default one.
    let mut records: Vec<PathRecord> = (1..=HOSTS).map(on(0x8001, 6)).collect();
    records.extend((1..=4).map(on(0x8005, 7)));
    let answer = push(
        &mut b,
        load_header(Method::SET, 1, KEY, REPLACE_SOURCES | PARTITION_TABLES),
        &records,
    );
    assert_eq!(status(&answer), MadStatus::OK);
    assert_eq!(
        modifier(&answer),
        u32::from(HOSTS),
        "the 0x8005 records are not stored"
    );
    let own: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    push(
        &mut b,
        load_header(Method::SET, 2, KEY, REPLACE_SOURCES),
        &own,
    );
    assert!(b.core.is_ready());
    let c = b.core.counters();
    assert_eq!(
        (c.records, c.partition_records),
        (u64::from(HOSTS), u64::from(HOSTS))
    );
    assert_eq!(path_records(&get(&mut b, 3, 9, 0x8001))[0].sl(), 6);
    assert_eq!(table(&mut b, 4, 0x8001).len(), usize::from(HOSTS));
    assert_eq!(path_queries(&b), 0, "the master was never asked for paths");

    // A partition delete takes the pair from that table only.
    let mut gone = path(MY_LID, 9);
    gone.set_pkey(0x8001);
    let answer = push(
        &mut b,
        load_header(Method::DELETE, 5, KEY, PARTITION_TABLES),
        &[gone],
    );
    assert_eq!(modifier(&answer), 1);
    assert_eq!(b.core.counters().records, u64::from(HOSTS));
    // The table lost a pair it cannot vouch for: queries on it go to the
    // master (silent here), the default table still answers.
    let q = pr_request(Method::GET, 6, pr::SLID | pr::DLID | pr::PKEY, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(7);
        t.set_pkey(0x8001);
    });
    assert!(b.ask(client(30), &q).is_empty(), "waits for the master");
    let q = pr_request(Method::GET, 7, pr::SLID | pr::DLID, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(7);
    });
    assert_eq!(path_records(&b.query(client(30), &q))[0].dlid(), 7);
}

#[test]
fn a_check_under_a_lease_draws_from_the_partition_tables_too() {
    let config = AgentConfig {
        load_wait: Duration::from_secs(30),
        check_interval: Duration::from_secs(600),
        ..keyed()
    };
    let mut b = Bench::with_pkeys(master(), config, &[0xFFFF, 0x8001]);
    let lease = |flags| crate::load_flags::with_lease(flags, 3_600);
    // The default table as the master has it; the partition's with an SL
    // the master does not give (its sl= changed since the distributor
    // read it).
    let stale: Vec<PathRecord> = (1..=HOSTS)
        .filter(|d| *d != OUTSIDER)
        .map(|d| {
            let mut r = path(MY_LID, d);
            r.set_pkey(0x8001);
            r.set_sl(PARTITION_SL + 1);
            r
        })
        .collect();
    let answer = push(
        &mut b,
        load_header(
            Method::SET,
            1,
            KEY,
            lease(REPLACE_SOURCES | PARTITION_TABLES),
        ),
        &stale,
    );
    assert_eq!(status(&answer), MadStatus::OK);
    let own: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    let answer = push(
        &mut b,
        load_header(Method::SET, 2, KEY, lease(REPLACE_SOURCES)),
        &own,
    );
    assert_eq!(status(&answer), MadStatus::OK);
    let asked = b.master.requests.len();
    b.advance(Duration::from_secs(600));
    let checks: Vec<bool> = b.master.requests[asked..]
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD && s.mask.contains(pr::DLID))
        .map(|s| s.mask.contains(pr::PKEY))
        .collect();
    assert!(
        checks.contains(&true),
        "a destination of the partition's table asked"
    );
    assert!(checks.contains(&false), "and of the default table");
    assert_eq!(
        b.core.counters().checks_failed,
        1,
        "the partition's SL differs"
    );
    // The master's word wins: the port fetches its own tables.
    b.advance(Duration::from_secs(10));
    let answer = get(&mut b, 9, 7, 0x8001);
    assert_eq!(path_records(&answer)[0].sl(), PARTITION_SL);
}
