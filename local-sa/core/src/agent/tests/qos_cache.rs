//! Queries naming what a QoS master's policy matches on (ServiceID,
//! QoS class, P_Key), or another partition: each port pair asked once
//! with those fields, every later query with them answered from its
//! records until something that could change them happens.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{
    AttributeId, ComponentMask, MadStatus, Method, Mtu, PathRecord, Selector, TrapDetails,
};

use super::bench::{Bench, HOSTS, MY_LID, client, path_records, pr_request, status};
use super::fake_master::{FakeMaster, gid};
use crate::agent::AgentConfig;
use crate::config::QosCacheLimits;
use crate::request::Request;

const MASTER_LID: u16 = super::bench::MASTER_LID;
/// In the policy's range: SL 1.
const RDMA_CM_SID: u64 = 0x0000_0000_0106_0001;

/// An agent whose master applies QoS (rdma_cm's ServiceIDs on SL 1) and
/// has partition 0x8001 (SL 3) beside the default one.
fn qos_bench(config: AgentConfig) -> Bench {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.qos = true;
    master.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 1)];
    master.partitions.insert(0x0001, 3);
    Bench::new(master, config)
}

/// A Get from this port to `dlid` with `mask` beside both LIDs.
fn get(
    tid: u64,
    dlid: u16,
    mask: ComponentMask,
    fill: impl FnOnce(&mut PathRecord),
) -> bytes::Bytes {
    pr_request(Method::GET, tid, pr::SLID | pr::DLID | mask, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(dlid);
        fill(t);
    })
}

/// ServiceID and P_Key, as rdma_cm's kernel queries name them.
fn rdma_cm(pkey: u16) -> impl FnOnce(&mut PathRecord) {
    move |t| {
        t.set_service_id(RDMA_CM_SID);
        t.set_pkey(pkey);
    }
}

const RDMA_CM: ComponentMask = ComponentMask(pr::SERVICE_ID.0 | pr::PKEY.0);

fn path_queries(b: &Bench) -> usize {
    b.master.count(AttributeId::PATH_RECORD)
}

fn one_record(answer: &[u8]) -> PathRecord {
    assert_eq!(status(answer), MadStatus::OK);
    let r = path_records(answer);
    assert_eq!(r.len(), 1);
    r[0]
}

#[test]
fn under_a_lease_a_renewal_that_says_the_master_swept_forgets_the_qos_answers() {
    use super::loads::{KEY, LOADER};
    use super::upkeep::{load_under_lease, renewal};
    use crate::config::SmKey;
    use crate::load_flags::{FORGET_QOS, RENEW_ONLY, with_lease};

    let mut b = qos_bench(AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    });
    load_under_lease(&mut b, 600);
    let ask = |b: &mut Bench, tid| {
        one_record(&b.query(client(30), &get(tid, 7, RDMA_CM, rdma_cm(0xFFFF))))
    };
    assert_eq!(ask(&mut b, 1).sl(), 1);
    // OpenSM's policy edited and OpenSM told: rdma_cm's ServiceIDs on SL
    // 2 now. The watch's plain renewal keeps the answer...
    b.master.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 2)];
    let plain = b.ask(client(LOADER), &renewal(KEY, with_lease(RENEW_ONLY, 600)));
    assert_eq!(status(&plain[0]), MadStatus::OK);
    assert_eq!(ask(&mut b, 2).sl(), 1, "kept: nobody said the master swept");
    // ... the one after the sweep forgets it: the master's new answer.
    let swept = renewal(KEY, with_lease(RENEW_ONLY | FORGET_QOS, 600));
    let answer = b.ask(client(LOADER), &swept);
    assert_eq!(status(&answer[0]), MadStatus::OK);
    assert_eq!(ask(&mut b, 3).sl(), 2);
    let c = b.core.counters();
    assert_eq!((c.qos_forgotten, c.lease_renewals), (1, 3));
}

#[test]
fn a_pair_asked_once_answers_every_later_query_with_its_fields() {
    let mut b = qos_bench(AgentConfig::default());
    let before = path_queries(&b);
    let first = one_record(&b.query(client(30), &get(1, 7, RDMA_CM, rdma_cm(0xFFFF))));
    assert_eq!((first.sl(), first.pkey()), (1, 0xFFFF), "the policy's SL");
    assert_eq!(path_queries(&b), before + 1);
    let asked = b.master.requests.last().unwrap();
    assert_eq!(asked.method, Method::GET_TABLE);
    assert_eq!(asked.mask, pr::SGID | pr::DGID | pr::PKEY | pr::SERVICE_ID);
    assert_eq!(
        (asked.template.sgid(), asked.template.dgid()),
        (gid(MY_LID), gid(7))
    );

    // The same fields with other constraints: from the cache.
    let limited = one_record(&b.query(client(31), &get(2, 7, RDMA_CM, rdma_cm(0x7FFF))));
    assert_eq!(
        (limited.sl(), limited.pkey()),
        (1, 0x7FFF),
        "the key echoed as asked"
    );
    let below = get(3, 7, RDMA_CM | pr::MTU_SELECTOR | pr::MTU, |t| {
        rdma_cm(0xFFFF)(t);
        t.set_mtu_selector(Selector::LessThan);
        t.set_mtu(Mtu::MTU_2048);
    });
    assert_eq!(
        one_record(&b.query(client(31), &below)).mtu(),
        Mtu::MTU_1024
    );
    let same_sl = get(4, 7, RDMA_CM | pr::SL, |t| {
        rdma_cm(0xFFFF)(t);
        t.set_sl(1);
    });
    assert_eq!(one_record(&b.query(client(31), &same_sl)).sl(), 1);
    assert_eq!(path_queries(&b), before + 1, "nothing more asked");
    let c = b.core.counters();
    assert_eq!(
        (c.qos_cache_hits, c.qos_cache_fetches, c.qos_cache_entries),
        (3, 1, 1)
    );
    assert!(c.qos_cache_bytes >= 64);

    // Another ServiceID outside the policy, another pair: each asked once.
    let other_sid = |t: &mut PathRecord| {
        t.set_service_id(0x1000);
        t.set_pkey(0xFFFF);
    };
    assert_eq!(
        one_record(&b.query(client(30), &get(5, 7, RDMA_CM, other_sid))).sl(),
        0
    );
    assert_eq!(
        one_record(&b.query(client(30), &get(6, 8, RDMA_CM, rdma_cm(0xFFFF)))).sl(),
        1
    );
    assert_eq!(path_queries(&b), before + 3);

    // An SL the master did not choose is the master's to judge.
    let other_sl = get(7, 7, RDMA_CM | pr::SL, |t| {
        rdma_cm(0xFFFF)(t);
        t.set_sl(5);
    });
    let refused = b.query(client(31), &other_sl);
    assert_eq!(
        status(&refused),
        MadStatus::ERR_NO_RECORDS,
        "the policy says SL 1"
    );
    assert_eq!(path_queries(&b), before + 4, "the pair asked with that SL");
    assert_eq!(
        b.master.requests.last().unwrap().mask,
        pr::SGID | pr::DGID | RDMA_CM | pr::SL
    );
    let again = b.query(client(32), &other_sl);
    assert_eq!(status(&again), MadStatus::ERR_NO_RECORDS);
    assert_eq!(path_queries(&b), before + 4, "and kept");
    // Where no level sets the SL, the master takes the one asked.
    let free_sl = get(8, 7, pr::SERVICE_ID | pr::SL, |t| {
        t.set_service_id(0x1000);
        t.set_sl(5);
    });
    assert_eq!(one_record(&b.query(client(31), &free_sl)).sl(), 5);
    assert_eq!(
        path_queries(&b),
        before + 6,
        "the pair for the ServiceID (SL 0), then with SL 5"
    );
}

#[test]
fn warmed_pairs_are_answered_while_the_master_is_silent_and_asked_again_after_a_change() {
    let mut b = qos_bench(AgentConfig::default());
    for (tid, dlid) in (3..=HOSTS).enumerate() {
        b.query(client(30), &get(tid as u64, dlid, RDMA_CM, rdma_cm(0x8001)));
    }
    let warmed = path_queries(&b);
    b.master.answering = false;
    for dlid in 3..=HOSTS {
        let r = one_record(&b.query(client(31), &get(100, dlid, RDMA_CM, rdma_cm(0x8001))));
        // The ServiceID's level wins over the partition's SL.
        assert_eq!((r.dlid(), r.sl(), r.pkey()), (dlid, 1, 0x8001));
    }
    assert_eq!(path_queries(&b), warmed, "not one asked");

    // A port going out of service and coming back: its pairs are asked
    // again, the others stay.
    b.master.answering = true;
    let held = b.core.counters().qos_cache_entries;
    b.master
        .report(TrapDetails::GidOutOfService { gid: gid(7) });
    b.pump();
    assert_eq!(b.core.counters().qos_cache_entries, held - 1);
    b.master.report(TrapDetails::GidInService { gid: gid(7) });
    b.pump();
    let after_traps = path_queries(&b);
    one_record(&b.query(client(31), &get(101, 7, RDMA_CM, rdma_cm(0x8001))));
    one_record(&b.query(client(31), &get(102, 8, RDMA_CM, rdma_cm(0x8001))));
    assert_eq!(path_queries(&b), after_traps + 1, "only the pair to 7");

    // A flush forgets every pair.
    b.core.handle_local(b.now, 7, 1, Request::Flush);
    b.pump();
    assert_eq!(b.core.counters().qos_cache_entries, 0);
}

#[test]
fn without_qos_another_partition_is_asked_per_pair_and_kept() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.partitions.insert(0x0001, 3);
    let mut b = Bench::new(master, AgentConfig::default());
    let before = path_queries(&b);
    // The paths' own partition, ServiceID or not: from the table.
    one_record(&b.query(client(30), &get(1, 7, RDMA_CM, rdma_cm(0xFFFF))));
    assert_eq!(path_queries(&b), before);
    // Partition 0x8001: its SL, asked once for the pair.
    for tid in 2..5 {
        let r = one_record(&b.query(client(30), &get(tid, 7, RDMA_CM, rdma_cm(0x8001))));
        assert_eq!((r.sl(), r.pkey()), (3, 0x8001));
    }
    assert_eq!(path_queries(&b), before + 1);
    assert_eq!(
        b.master.requests.last().unwrap().mask,
        pr::SGID | pr::DGID | pr::PKEY
    );
    // A partition the master does not have: no record, and that is kept
    // too.
    for tid in 5..7 {
        let answer = b.query(client(30), &get(tid, 7, pr::PKEY, |t| t.set_pkey(0x8002)));
        assert_eq!(status(&answer), MadStatus::ERR_NO_RECORDS);
    }
    assert_eq!(path_queries(&b), before + 2);
}

#[test]
fn askers_of_one_pair_share_its_query_and_a_full_cache_drops_the_oldest() {
    let config = AgentConfig {
        qos_cache: QosCacheLimits {
            entries: 4,
            ..QosCacheLimits::default()
        },
        ..AgentConfig::default()
    };
    let mut b = qos_bench(config);
    let before = path_queries(&b);
    b.master.answering = false;
    for lid in 30..35 {
        b.deliver(
            client(lid),
            &get(u64::from(lid), 7, RDMA_CM, rdma_cm(0xFFFF)),
        );
    }
    b.pump();
    assert_eq!(path_queries(&b), before + 1, "five askers, one query");
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    for lid in 30..35 {
        assert_eq!(one_record(&b.take_sent(lid)[0]).sl(), 1, "asker {lid}");
    }
    let c = b.core.counters();
    assert_eq!((c.coalesced, c.qos_cache_entries), (4, 1));

    for dlid in 3..=HOSTS {
        b.query(client(30), &get(1, dlid, RDMA_CM, rdma_cm(0xFFFF)));
    }
    let c = b.core.counters();
    assert!(c.qos_cache_entries <= 4);
    assert!(c.qos_cache_evicted >= 6, "{c:?}");
}

#[test]
fn a_source_asking_many_pairs_gets_its_whole_table_once() {
    let mut b = qos_bench(AgentConfig::default());
    let pairs = usize::from(crate::agent::answers::qos_tables::PAIRS_BEFORE_TABLE);
    let before = path_queries(&b);
    let first: Vec<bytes::Bytes> = (3..=HOSTS)
        .map(|dlid| {
            b.query(
                client(30),
                &get(u64::from(dlid), dlid, RDMA_CM, rdma_cm(0xFFFF)),
            )
        })
        .collect();
    assert_eq!(
        path_queries(&b),
        before + pairs + 1,
        "a few pairs, then the table"
    );
    let asked = b.master.requests.last().unwrap();
    assert_eq!(asked.method, Method::GET_TABLE);
    assert_eq!(asked.mask, pr::SGID | pr::PKEY | pr::SERVICE_ID);
    assert_eq!(asked.template.sgid(), gid(MY_LID));
    let c = b.core.counters();
    assert_eq!((c.qos_cache_fetches, c.qos_cache_tables), (pairs as u64, 1));
    for (dlid, answer) in (3..=HOSTS).zip(&first) {
        let r = one_record(answer);
        assert_eq!((r.dlid(), r.sl(), r.pkey()), (dlid, 1, 0xFFFF));
    }

    // Asked again with the master silent: the pairs asked alone and those
    // from the table answer the same bytes.
    b.master.answering = false;
    for (dlid, answer) in (3..=HOSTS).zip(&first) {
        let again = b.query(
            client(31),
            &get(u64::from(dlid), dlid, RDMA_CM, rdma_cm(0xFFFF)),
        );
        assert_eq!(again[..], answer[..], "to {dlid}");
    }
    assert_eq!(path_queries(&b), before + pairs + 1, "not one more asked");

    // Many askers at once at another key: those after the first few wait
    // for the one table.
    let before = path_queries(&b);
    for dlid in 3..=HOSTS {
        b.deliver(
            client(40 + dlid),
            &get(u64::from(dlid), dlid, RDMA_CM, rdma_cm(0x8001)),
        );
    }
    b.pump();
    assert_eq!(path_queries(&b), before + pairs + 1);
    b.master.answering = true;
    // A table's attempt waits a table's time (spread by up to half).
    b.advance(AgentConfig::default().table_timeout * 2);
    for dlid in 3..=HOSTS {
        let r = one_record(&b.take_sent(40 + dlid)[0]);
        assert_eq!(
            (r.dlid(), r.sl(), r.pkey()),
            (dlid, 1, 0x8001),
            "asker {dlid}"
        );
    }
    assert_eq!(b.core.counters().qos_cache_tables, 2);
}

#[test]
fn where_tables_come_cut_the_pairs_are_asked_alone() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.qos = true;
    master.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 1)];
    master.delivery = super::fake_master::Delivery::Cut;
    let mut b = Bench::new(master, AgentConfig::default());
    let before = path_queries(&b);
    for dlid in 3..=HOSTS {
        let r = one_record(&b.query(
            client(30),
            &get(u64::from(dlid), dlid, RDMA_CM, rdma_cm(0xFFFF)),
        ));
        assert_eq!((r.dlid(), r.sl()), (dlid, 1));
    }
    // This port's own table came cut at start (and was fetched per
    // destination): no QoS table is asked, to come cut too.
    let c = b.core.counters();
    assert_eq!(
        (c.qos_cache_fetches, c.qos_cache_tables),
        (u64::from(HOSTS) - 2, 0)
    );
    assert_eq!(path_queries(&b), before + usize::from(HOSTS) - 2);
}

#[test]
fn an_asker_its_sources_table_leaves_out_is_asked_alone_and_counted_once() {
    let mut b = qos_bench(AgentConfig::default());
    // Host 9 left partition 0x8001 after this port learned of it.
    b.master.outside.insert(0x0001, [9].into());
    let before = b.core.counters().misses;
    b.master.answering = false;
    for dlid in 3..=HOSTS {
        b.deliver(
            client(40 + dlid),
            &get(u64::from(dlid), dlid, RDMA_CM, rdma_cm(0x8001)),
        );
    }
    b.pump();
    b.master.answering = true;
    b.advance(AgentConfig::default().table_timeout * 2);
    for dlid in 3..=HOSTS {
        let answer = &b.take_sent(40 + dlid)[0];
        if dlid == 9 {
            assert_eq!(status(answer), MadStatus::ERR_NO_RECORDS, "asked alone");
        } else {
            assert_eq!(one_record(answer).dlid(), dlid);
        }
    }
    assert_eq!(
        b.core.counters().misses - before,
        u64::from(HOSTS) - 2,
        "one miss per query"
    );
}
