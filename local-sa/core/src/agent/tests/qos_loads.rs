//! QoS-table loads (docs/wire-contract.md, `QOS_TABLES`): a distributor's
//! tables at a ServiceID go to the QoS cache, and the queries with that
//! key are answered from them with the master silent; a malformed or
//! unkeyed one changes nothing.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{ComponentMask, MadStatus, Method, PathRecord};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, path_records, pr_request, status};
use super::fake_master::{FakeMaster, path};
use super::loads::{KEY, load_header, modifier, push};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::load_flags::{QOS_TABLES, REPLACE_SOURCES};

/// In the policy's range: SL 1.
const SID: u64 = 0x0000_0000_0106_0001;

/// A keyed agent whose master applies QoS: rdma_cm's ServiceIDs on SL 1.
fn keyed_qos_bench() -> Bench {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.qos = true;
    master.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 1)];
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    };
    Bench::new(master, config)
}

/// The key record, then this port's table at (ServiceID, P_Key 0xffff)
/// as the master gives it: SL 1, and neither ServiceID nor QoS class.
fn table_at_sid() -> Vec<PathRecord> {
    let mut key = PathRecord::new_zeroed();
    key.set_service_id(SID);
    key.set_pkey(0xFFFF);
    let table = (1..=HOSTS).map(|d| {
        let mut r = path(MY_LID, d);
        r.set_sl(1);
        r
    });
    std::iter::once(key).chain(table).collect()
}

/// rdma_cm's kernel query from this port to `dlid`.
fn rdma_cm_get(tid: u64, dlid: u16) -> bytes::Bytes {
    pr_request(
        Method::GET,
        tid,
        pr::SLID | pr::DLID | pr::SERVICE_ID | pr::PKEY,
        |t| {
            t.set_slid(MY_LID);
            t.set_dlid(dlid);
            t.set_service_id(SID);
            t.set_pkey(0xFFFF);
        },
    )
}

fn qos_load(
    tid: u64,
    sm_key: u64,
    modifier: u32,
    mask: ComponentMask,
) -> mad_codec::header::SaMadHeader {
    let mut h = load_header(Method::SET, tid, sm_key, modifier);
    h.sa.set_component_mask(mask);
    h
}

#[test]
fn a_table_at_a_service_id_answers_its_queries_with_the_master_silent() {
    let mut b = keyed_qos_bench();
    let answer = push(
        &mut b,
        qos_load(1, KEY, QOS_TABLES, pr::SERVICE_ID | pr::PKEY),
        &table_at_sid(),
    );
    assert_eq!(status(&answer), MadStatus::OK);
    assert_eq!(modifier(&answer), u32::from(HOSTS), "every record stored");
    let c = b.core.counters();
    assert_eq!(
        (c.qos_cache_loaded, c.qos_cache_entries),
        (u64::from(HOSTS), u64::from(HOSTS))
    );

    b.master.answering = false;
    let asked = b.master.requests.len();
    for dlid in 1..=HOSTS {
        let got = path_records(&b.query(client(30), &rdma_cm_get(u64::from(dlid), dlid)));
        let mut expected = path(MY_LID, dlid);
        expected.set_sl(1);
        assert_eq!(
            got,
            [expected],
            "to {dlid}: the loaded record, byte for byte"
        );
    }
    assert_eq!(b.master.requests.len(), asked, "not one asked");
    assert_eq!(b.core.counters().qos_cache_hits, u64::from(HOSTS));

    // A path load changes the tables the pairs came from: they go.
    let answer = push(
        &mut b,
        load_header(Method::SET, 2, KEY, REPLACE_SOURCES),
        &(1..=HOSTS).map(|d| path(MY_LID, d)).collect::<Vec<_>>(),
    );
    assert_eq!(status(&answer), MadStatus::OK);
    assert_eq!(b.core.counters().qos_cache_entries, 0);
}

#[test]
fn a_malformed_or_unkeyed_qos_table_changes_nothing() {
    let mut b = keyed_qos_bench();
    let table = table_at_sid();
    let mut zero_lid = table.clone();
    zero_lid[3].set_dlid(0);
    for (why, header, records, expected) in [
        (
            "no SM_Key",
            qos_load(1, 0, QOS_TABLES, pr::SERVICE_ID | pr::PKEY),
            &table,
            MadStatus::ERR_REQ_DENIED,
        ),
        (
            "a key naming the SGID",
            qos_load(2, KEY, QOS_TABLES, pr::SERVICE_ID | pr::SGID),
            &table,
            MadStatus::ERR_REQ_INVALID,
        ),
        (
            "no key at all",
            qos_load(3, KEY, QOS_TABLES, ComponentMask::NONE),
            &table,
            MadStatus::ERR_REQ_INVALID,
        ),
        (
            "with REPLACE_SOURCES",
            qos_load(4, KEY, QOS_TABLES | REPLACE_SOURCES, pr::SERVICE_ID),
            &table,
            MadStatus::ERR_REQ_INVALID,
        ),
        (
            "a record with DLID 0",
            qos_load(5, KEY, QOS_TABLES, pr::SERVICE_ID),
            &zero_lid,
            MadStatus::ERR_REQ_INVALID,
        ),
    ] {
        let answer = push(&mut b, header, records);
        assert_eq!(status(&answer), expected, "{why}");
        assert_eq!(modifier(&answer), 0, "{why}");
        assert_eq!(b.core.counters().qos_cache_entries, 0, "{why}");
    }
}

#[test]
fn a_qos_table_the_cache_cannot_hold_is_not_counted_as_stored() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.qos = true;
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        // Less than one destination's entry.
        qos_cache: crate::config::QosCacheLimits {
            entries: 16,
            bytes: 64,
        },
        ..AgentConfig::default()
    };
    let mut b = Bench::new(master, config);
    let answer = push(
        &mut b,
        qos_load(1, KEY, QOS_TABLES, pr::SERVICE_ID | pr::PKEY),
        &table_at_sid(),
    );
    assert_eq!(status(&answer), MadStatus::OK, "a valid load");
    assert_eq!(modifier(&answer), 0, "nothing kept, nothing claimed");
    let c = b.core.counters();
    assert_eq!((c.qos_cache_loaded, c.qos_cache_entries), (0, 0));
}

/// A keyed QoS agent holding a distributor's path tables under a lease,
/// checked every ten minutes, then this port's table at SID with SL `sl`
/// (the master gives SL 1).
fn leased_with_table_at_sid(sl: u8) -> Bench {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.qos = true;
    master.qos_policy = vec![(0x0106_0000..=0x0106_FFFF, 1)];
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        check_interval: Duration::from_secs(600),
        ..AgentConfig::default()
    };
    let mut b = Bench::new(master, config);
    let lease = crate::load_flags::with_lease(REPLACE_SOURCES, 3_600);
    let own: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    let answer = push(&mut b, load_header(Method::SET, 1, KEY, lease), &own);
    assert_eq!(status(&answer), MadStatus::OK);
    let mut table = table_at_sid();
    for r in &mut table[1..] {
        r.set_sl(sl);
    }
    let answer = push(
        &mut b,
        qos_load(2, KEY, QOS_TABLES, pr::SERVICE_ID | pr::PKEY),
        &table,
    );
    assert_eq!(status(&answer), MadStatus::OK);
    b
}

/// The check's questions at a ServiceID, so far.
fn qos_checks(b: &Bench) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| s.mask.contains(pr::SERVICE_ID) && s.mask.contains(pr::DGID))
        .count()
}

#[test]
fn a_check_under_a_lease_draws_from_the_loaded_qos_tables_and_forgets_wrong_ones() {
    // Right: the check asks some of the pairs and passes.
    let mut b = leased_with_table_at_sid(1);
    b.advance(Duration::from_secs(600));
    let c = b.core.counters();
    assert_eq!((c.checks_passed, c.checks_failed), (1, 0));
    assert!(qos_checks(&b) > 0, "a loaded pair asked");
    assert_eq!(c.qos_cache_entries, u64::from(HOSTS), "kept");

    // Wrong (the policy's SL changed since the distributor asked): the
    // loaded tables go, and the next query gets the master's record.
    let mut b = leased_with_table_at_sid(2);
    b.advance(Duration::from_secs(600));
    let c = b.core.counters();
    assert_eq!((c.checks_passed, c.checks_failed), (0, 1));
    assert_eq!(
        c.qos_cache_entries, 0,
        "the distributor's QoS tables forgotten"
    );
    let got = path_records(&b.query(client(30), &rdma_cm_get(40, 5)));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].sl(), 1, "the master's SL");
}
