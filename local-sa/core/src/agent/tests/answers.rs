//! What clients get back: cached PathRecords byte for byte, tables through
//! RMPP, the statuses of requests the agent does not serve, ClassPortInfo,
//! and silence for what is not an SA MAD.

use bytes::BytesMut;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, ComponentMask, MadStatus, Method, NodeRecord,
    PathRecord, SaMad, SaMadBuilder,
};

use super::bench::{Bench, HOSTS, MY_LID, client, padded, path_records, pr_request, status};
use super::fake_master::{gid, path};

#[test]
fn get_is_answered_from_the_cache_with_the_masters_bytes() {
    let mut b = Bench::started();
    let before = b.master.requests.len();
    let req = pr_request(Method::GET, 0x1234_5678_9abc, pr::SGID | pr::DGID, |t| {
        t.set_sgid(gid(MY_LID));
        t.set_dgid(gid(5));
    });
    let answer = b.ask(client(30), &req);
    assert_eq!(answer.len(), 1);
    let m = SaMad::parse(&answer[0]).unwrap();
    assert_eq!(m.mad().method(), Method::GET_RESP);
    assert_eq!(m.mad().status(), MadStatus::OK);
    assert_eq!(
        m.mad().transaction_id(),
        0x1234_5678_9abc,
        "the asker's TID comes back"
    );
    assert_eq!(answer[0].len(), SaMadHeader::LEN + PathRecord::LEN);
    assert_eq!(m.data(), path(MY_LID, 5).as_bytes());
    assert_eq!(b.master.requests.len(), before, "the master was not asked");
    assert_eq!(b.core.counters().hits, 1);
}

#[test]
fn gettable_of_every_path_from_this_port_comes_through_rmpp() {
    let mut b = Bench::started();
    let req = pr_request(Method::GET_TABLE, 77, pr::SGID, |t| t.set_sgid(gid(MY_LID)));
    let whole = b.query(client(30), &req);
    let m = SaMad::parse(&whole).unwrap();
    assert_eq!(
        (m.mad().method(), m.mad().status()),
        (Method::GET_TABLE_RESP, MadStatus::OK)
    );
    assert_eq!(m.sa().attribute_offset(), PathRecord::ATTRIBUTE_OFFSET);
    let expected: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    assert_eq!(path_records(&whole), expected);
    let c = b.core.counters();
    assert_eq!(
        (c.rmpp_transfers, c.transfers_active),
        (1, 0),
        "the transfer completed and was forgotten"
    );
}

#[test]
fn get_with_no_match_and_gettable_with_no_match_answer_as_opensm_does() {
    let mut b = Bench::started();
    let none = |method| {
        pr_request(method, 5, pr::SLID | pr::DLID, |t| {
            t.set_slid(MY_LID);
            t.set_dlid(900);
        })
    };
    let get = b.ask(client(30), &none(Method::GET));
    assert_eq!(status(&get[0]), MadStatus::ERR_NO_RECORDS);
    let table = b.query(client(30), &none(Method::GET_TABLE));
    assert_eq!(status(&table), MadStatus::OK);
    assert!(
        path_records(&table).is_empty(),
        "an empty table, not an error"
    );
    let m = SaMad::parse(&table).unwrap();
    assert_eq!(m.sa().attribute_offset(), 0);
}

#[test]
fn queries_for_records_the_agent_does_not_keep_are_the_masters_to_answer() {
    let mut b = Bench::started();
    for lid in 3..=HOSTS {
        b.master
            .descriptions
            .insert(lid, format!("node{lid} mlx5_0"));
    }
    // A NodeRecord table: more than one MAD, passed on through an RMPP
    // transfer of the agent's own, under the asker's TransactionID.
    let table =
        padded(&SaMadBuilder::request(Method::GET_TABLE, 8, AttributeId::NODE_RECORD).into_bytes());
    let answer = b.query(client(30), &table);
    let m = SaMad::parse(&answer).unwrap();
    assert_eq!(m.mad().status(), MadStatus::OK);
    assert_eq!(
        (m.mad().method(), m.mad().transaction_id()),
        (Method::GET_TABLE_RESP, 8)
    );
    let nodes: Vec<&NodeRecord> = m.records::<NodeRecord>().unwrap().collect();
    assert_eq!(
        nodes.len(),
        usize::from(HOSTS) - 2,
        "every node the master knows"
    );
    assert_eq!(nodes[0].description(), "node3 mlx5_0");
    // The master's refusal comes back as it gave it.
    let get = padded(&SaMadBuilder::request(Method::GET, 9, AttributeId::NODE_RECORD).into_bytes());
    let refused = b.ask(client(30), &get);
    assert_eq!(refused.len(), 1);
    let m = SaMad::parse(&refused[0]).unwrap();
    assert_eq!(m.mad().status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert_eq!(m.mad().transaction_id(), 9);
    assert_eq!(b.core.counters().relayed, 2);
}

#[test]
fn relayed_queries_waiting_for_the_master_are_bounded() {
    let mut b = Bench::started();
    let get = |tid: u64| {
        padded(&SaMadBuilder::request(Method::GET, tid, AttributeId::NODE_RECORD).into_bytes())
    };
    // A master that does not answer: every relay waits.
    b.master.answering = false;
    for tid in 0..1024 {
        b.deliver(client(30), &get(100 + tid));
    }
    b.pump();
    assert!(b.take_sent(30).is_empty(), "all waiting for the master");
    b.deliver(client(30), &get(5000));
    b.pump();
    let refused = b.take_sent(30);
    assert_eq!(refused.len(), 1);
    assert_eq!(status(&refused[0]), MadStatus::BUSY);
    assert_eq!(
        SaMad::parse(&refused[0]).unwrap().mad().transaction_id(),
        5000
    );
    assert_eq!(
        (b.core.counters().relayed, b.core.counters().relays_refused),
        (1024, 1)
    );
    // Given up on (BUSY, as the master never answered), they make room
    // again.
    b.advance(std::time::Duration::from_secs(10));
    let busy = b.take_sent(30);
    assert_eq!(busy.len(), 1024);
    assert!(busy.iter().all(|m| status(m) == MadStatus::BUSY));
    b.master.answering = true;
    assert_eq!(b.ask(client(30), &get(5001)).len(), 1);
    assert_eq!(b.core.counters().relays_refused, 1);
}

#[test]
fn other_methods_the_agent_does_not_serve_get_0x000c_and_bad_versions_0x0004() {
    let mut b = Bench::started();
    let node =
        padded(&SaMadBuilder::request(Method::SET, 9, AttributeId::NODE_RECORD).into_bytes());
    let answer = b.ask(client(30), &node);
    assert_eq!(answer.len(), 1, "not silence");
    let m = SaMad::parse(&answer[0]).unwrap();
    assert_eq!(m.mad().status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert_eq!(
        (m.mad().method(), m.mad().transaction_id()),
        (Method::GET_RESP, 9)
    );
    assert_eq!(b.core.counters().relayed, 0);

    let mut bad = BytesMut::from(&pr_request(Method::GET, 10, ComponentMask::NONE, |_| {})[..]);
    bad[0] = 2; // base version 2
    let answer = b.ask(client(30), &bad);
    assert_eq!(status(&answer[0]), MadStatus::BAD_VERSION);
    let mut bad_class_version =
        BytesMut::from(&pr_request(Method::GET, 11, ComponentMask::NONE, |_| {})[..]);
    bad_class_version[2] = 1;
    let answer = b.ask(client(30), &bad_class_version);
    assert_eq!(status(&answer[0]), MadStatus::BAD_VERSION);
    assert_eq!(b.core.counters().errors, 3);
}

#[test]
fn service_id_needs_both_halves() {
    let mut b = Bench::started();
    let req = pr_request(Method::GET_TABLE, 12, pr::SGID | pr::SERVICE_ID_MSB, |t| {
        t.set_sgid(gid(MY_LID));
        t.set_service_id(0x1000_0000_0000_0001);
    });
    let answer = b.ask(client(30), &req);
    assert_eq!(
        status(&answer[0]),
        MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS
    );
}

#[test]
fn class_port_info_tells_what_this_agent_is() {
    let mut b = Bench::started();
    let req =
        padded(&SaMadBuilder::request(Method::GET, 13, AttributeId::CLASS_PORT_INFO).into_bytes());
    let answer = b.ask(client(30), &req);
    let m = SaMad::parse(&answer[0]).unwrap();
    assert_eq!(m.mad().status(), MadStatus::OK);
    let cpi = ClassPortInfoRepr::parse(m.record::<ClassPortInfo>().unwrap());
    assert_eq!((cpi.base_version, cpi.class_version), (1, 2));
    assert_eq!(
        (cpi.capability_mask, cpi.capability_mask2),
        (0, 0),
        "no capability it lacks is claimed"
    );
    // 4.096 µs × 2^18 ≈ 1.07 s covers the default 1 s upstream time-out.
    assert_eq!(cpi.resp_time_value, 18);
    assert_eq!(cpi.redirect_qp, 1);
}

#[test]
fn what_is_not_an_sa_request_is_dropped_and_counted() {
    let mut b = Bench::started();
    assert!(
        b.ask(client(30), &[1, 3, 2]).is_empty(),
        "shorter than the headers"
    );
    let mut perf = BytesMut::from(&pr_request(Method::GET, 14, ComponentMask::NONE, |_| {})[..]);
    perf[1] = 0x04; // Performance management class
    assert!(b.ask(client(30), &perf).is_empty());
    assert_eq!(b.core.counters().malformed, 2);
}
