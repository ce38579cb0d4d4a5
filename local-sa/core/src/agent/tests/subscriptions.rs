//! Subscriptions through the agent: ports subscribing with InformInfo
//! MADs share one upstream subscription per filter, get each notice once
//! as Reports of their own, lose their subscriptions when they stop
//! answering, and are listed by InformInfoRecord queries.

use std::time::Duration;

use bytes::Bytes;
use mad_codec::attr::inform_info_record::mask as iir;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, Gid, InformInfo, InformInfoRecord, InformInfoRepr, MadStatus, Method, Notice,
    SaMad, SaMadBuilder, TrapDetails, TrapNumber,
};

use super::bench::{Bench, MY_LID, client, padded, status};
use super::fake_master::gid;
use crate::agent::AgentConfig;

fn inform(tid: u64, trap: u16, subscribe: bool) -> Bytes {
    let ii = InformInfoRepr::generic_subscription(TrapNumber(trap), subscribe, 1, 19);
    padded(
        &SaMadBuilder::request(Method::SET, tid, AttributeId::INFORM_INFO)
            .record(&ii.to_wire())
            .into_bytes(),
    )
}

/// Sends a Set(InformInfo) from `lid` and returns the agent's answer to it.
fn set(b: &mut Bench, lid: u16, trap: u16, subscribe: bool) -> Vec<Bytes> {
    b.deliver(client(lid), &inform(u64::from(lid), trap, subscribe));
    b.pump();
    b.take_sent(lid)
}

/// The Reports the agent sent `lid`, as (TID, notice).
fn reports(b: &mut Bench, lid: u16) -> Vec<(u64, Notice)> {
    b.take_sent(lid)
        .iter()
        .filter_map(|m| {
            let m = SaMad::parse(m).ok()?;
            let notice = *m.record::<Notice>().ok()?;
            (m.mad().method() == Method::REPORT).then(|| (m.mad().transaction_id(), notice))
        })
        .collect()
}

fn ack(b: &mut Bench, lid: u16, tid: u64) {
    let resp = SaMadBuilder::request(Method::REPORT_RESP, tid, AttributeId::NOTICE);
    b.deliver(client(lid), &padded(&resp.into_bytes()));
    b.pump();
}

/// The InformInfo at the start of a request's data (the fake master keeps
/// the first 64 bytes as a PathRecord template).
fn inform_info_of(t: &mad_codec::PathRecord) -> &InformInfo {
    use mad_codec::zerocopy::{FromBytes, IntoBytes};
    InformInfo::ref_from_prefix(t.as_bytes())
        .map(|(ii, _)| ii)
        .expect("36 of 64 bytes")
}

fn subscribe_requests(b: &Bench, trap: u16) -> (usize, usize) {
    let of = |on: bool| {
        b.master
            .requests
            .iter()
            .filter(|s| s.attribute == AttributeId::INFORM_INFO)
            .filter(|s| {
                let ii = InformInfoRepr::parse(inform_info_of(&s.template));
                ii.trap_number == trap && (ii.subscribe == 1) == on
            })
            .count()
    };
    (of(true), of(false))
}

#[test]
fn three_subscribers_one_upstream_subscription_and_the_last_one_out_withdraws_it() {
    let mut b = Bench::started();
    for lid in [5, 6, 7] {
        let answer = set(&mut b, lid, 66, true);
        assert_eq!(answer.len(), 1, "subscriber {lid} answered");
        let m = SaMad::parse(&answer[0]).unwrap();
        assert_eq!(
            (m.mad().method(), m.mad().status()),
            (Method::GET_RESP, MadStatus::OK)
        );
        assert_eq!(m.sa().attribute_offset(), InformInfo::ATTRIBUTE_OFFSET);
        assert_eq!(
            answer[0].len(),
            SaMadHeader::LEN + InformInfo::LEN,
            "OpenSM's length"
        );
    }
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 0),
        "one subscription upstream for three"
    );
    assert!(b.master.subscriptions.contains(&(66, 1)));
    assert_eq!(
        b.core.counters().subscribers,
        4,
        "three ports and the agent itself"
    );

    b.master.report(TrapDetails::McGroupCreated {
        mgid: Gid::new(0xff12_601b_ffff_0000, 1),
    });
    b.pump();
    for lid in [5, 6, 7] {
        let got = reports(&mut b, lid);
        assert_eq!(got.len(), 1, "subscriber {lid} got the notice once");
        ack(&mut b, lid, got[0].0);
    }
    b.advance(Duration::from_secs(10));
    for lid in [5, 6, 7] {
        assert!(
            reports(&mut b, lid).is_empty(),
            "acknowledged Reports are not resent"
        );
    }

    assert_eq!(status(&set(&mut b, 5, 66, false)[0]), MadStatus::OK);
    assert_eq!(status(&set(&mut b, 6, 66, false)[0]), MadStatus::OK);
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 0),
        "still held by the third"
    );
    assert_eq!(status(&set(&mut b, 7, 66, false)[0]), MadStatus::OK);
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 1),
        "the exact unsubscribe once nobody holds it"
    );
    assert!(!b.master.subscriptions.contains(&(66, 1)));
}

#[test]
fn a_subscriber_resending_while_the_master_is_asked_gets_one_answer() {
    let mut b = Bench::started();
    b.master.answering = false;
    // The same Set (same TransactionID) three times while the master is
    // silent: it waits once.
    for _ in 0..3 {
        b.deliver(client(5), &inform(5, 66, true));
        b.pump();
    }
    assert!(b.take_sent(5).is_empty(), "nothing answered yet");
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    let answers = b.take_sent(5);
    assert_eq!(answers.len(), 1, "one answer for the one request");
    assert_eq!(status(&answers[0]), MadStatus::OK);
    assert_eq!(
        subscribe_requests(&b, 66).0,
        2,
        "the first attempt and its retry"
    );
}

#[test]
fn overlapping_subscriptions_get_each_notice_once() {
    let mut b = Bench::started();
    // Trap 65 is the agent's own subscription too; 0xFFFF is every trap.
    set(&mut b, 5, 65, true);
    set(&mut b, 6, 0xFFFF, true);
    assert_eq!(
        subscribe_requests(&b, 65),
        (1, 0),
        "the agent's own, shared"
    );
    // A master holding both 65 and "all" sends trap 65 twice.
    let gone = TrapDetails::GidOutOfService { gid: gid(9) };
    b.master.report(gone);
    b.master.report(gone);
    b.pump();
    assert_eq!(
        b.master.report_resps.len(),
        2,
        "both copies acknowledged to the master"
    );
    assert_eq!(reports(&mut b, 5).len(), 1);
    assert_eq!(reports(&mut b, 6).len(), 1);
    assert_eq!(b.core.counters().notices, 1, "acted on once");
    assert!(b.core.store().get(MY_LID, 9).is_none());
}

#[test]
fn a_subscriber_that_stops_answering_loses_its_subscriptions() {
    let mut b = Bench::started();
    set(&mut b, 5, 66, true);
    let config = AgentConfig::default().delivery;
    for i in 0..config.max_misses {
        b.master.report(TrapDetails::McGroupCreated {
            mgid: Gid::new(0xff12_601b_ffff_0000, u64::from(i)),
        });
        b.pump();
        b.advance(config.timeout * (config.retries + 1));
    }
    let sent = reports(&mut b, 5).len();
    assert_eq!(
        sent,
        (config.max_misses * (config.retries + 1)) as usize,
        "every notice tried 1 + retries times"
    );
    assert_eq!(b.core.counters().leases_ended, 1);
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 1),
        "its subscription withdrawn upstream"
    );
    b.master.report(TrapDetails::McGroupCreated {
        mgid: Gid::new(0xff12_601b_ffff_0000, 99),
    });
    b.pump();
    assert!(reports(&mut b, 5).is_empty(), "no more Reports");
}

#[test]
fn a_port_that_leaves_the_fabric_loses_its_subscriptions() {
    let mut b = Bench::started();
    set(&mut b, 5, 66, true);
    b.master
        .report(TrapDetails::GidOutOfService { gid: gid(5) });
    b.pump();
    assert_eq!(subscribe_requests(&b, 66), (1, 1));
}

#[test]
fn malformed_and_unmatched_requests_are_refused_as_opensm_refuses_them() {
    let mut b = Bench::started();
    let mut bad = InformInfoRepr::generic_subscription(TrapNumber(66), true, 1, 19);
    bad.subscribe = 2;
    let req = padded(
        &SaMadBuilder::request(Method::SET, 1, AttributeId::INFORM_INFO)
            .record(&bad.to_wire())
            .into_bytes(),
    );
    assert_eq!(
        status(&b.ask(client(5), &req)[0]),
        MadStatus::ERR_REQ_INVALID
    );
    assert_eq!(
        status(&set(&mut b, 5, 66, false)[0]),
        MadStatus::ERR_REQ_INVALID,
        "nothing to unsubscribe"
    );
    let security = InformInfoRepr::generic_subscription(TrapNumber(257), true, 1, 19);
    let req = padded(
        &SaMadBuilder::request(Method::SET, 2, AttributeId::INFORM_INFO)
            .record(&security.to_wire())
            .into_bytes(),
    );
    assert_eq!(
        status(&b.ask(client(5), &req)[0]),
        MadStatus::ERR_REQ_INVALID,
        "security traps need the SM_Key"
    );
    assert_eq!(
        status(&set(&mut b, 900, 66, true)[0]),
        MadStatus::ERR_REQ_INVALID,
        "a requester nobody knows"
    );
    assert_eq!(b.core.counters().subscribers, 1, "only the agent itself");
}

#[test]
fn inform_info_records_list_this_ports_subscribers() {
    let mut b = Bench::started();
    set(&mut b, 5, 66, true);
    set(&mut b, 5, 67, true);
    let query = |b: &mut Bench, who: Gid, method| {
        let mut t = InformInfoRecord::new_zeroed();
        t.set_subscriber_gid(who);
        let mut q = SaMadBuilder::request(method, 3, AttributeId::INFORM_INFO_RECORD).record(&t);
        q.header_mut().sa.set_component_mask(iir::SUBSCRIBER_GID);
        b.query(client(30), &padded(&q.into_bytes()))
    };
    let table = query(&mut b, gid(5), Method::GET_TABLE);
    let m = SaMad::parse(&table).unwrap();
    let records: Vec<InformInfoRecord> =
        m.records::<InformInfoRecord>().unwrap().copied().collect();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.subscriber_gid() == gid(5)));
    let traps: Vec<u16> = records
        .iter()
        .map(|r| InformInfoRepr::parse(&r.inform_info()).trap_number)
        .collect();
    assert_eq!(traps, [66, 67]);
    assert_eq!(
        InformInfoRepr::parse(&records[0].inform_info()).qpn,
        0,
        "QPN hidden from an untrusted asker"
    );
    let own = query(&mut b, gid(MY_LID), Method::GET_TABLE);
    assert_eq!(
        SaMad::parse(&own)
            .unwrap()
            .records::<InformInfoRecord>()
            .unwrap()
            .len(),
        3,
        "the agent's 64, 65 and 128"
    );
    assert_eq!(
        status(&query(&mut b, gid(5), Method::GET)),
        MadStatus::ERR_TOO_MANY_RECORDS
    );
    // Anyone else's subscriptions are the master's to tell.
    let before = b.master.count(AttributeId::INFORM_INFO_RECORD);
    query(&mut b, gid(8), Method::GET_TABLE);
    assert_eq!(
        b.master.count(AttributeId::INFORM_INFO_RECORD),
        before + 1,
        "relayed"
    );
}

#[test]
fn a_new_master_gets_every_held_subscription_again() {
    let mut b = Bench::started();
    set(&mut b, 5, 66, true);
    set(&mut b, 6, 66, true);
    set(&mut b, 6, 67, true);
    let mut fresh = super::fake_master::FakeMaster::new(3, super::bench::HOSTS);
    fresh.subscriptions.clear();
    b.master = fresh;
    b.core.handle_port_change(
        b.now,
        crate::agent::PortIdentity {
            sm_lid: 3,
            ..super::bench::my_port()
        },
    );
    b.advance(AgentConfig::default().pace.min_window);
    let held: Vec<u16> = b.master.subscriptions.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        held,
        [64, 65, 66, 67, 128],
        "each distinct filter once, no consumer involved"
    );
}

#[test]
fn local_connections_subscribe_get_notices_and_release_on_close() {
    use crate::request::{LocalBody, Request};
    let mut b = Bench::started();
    let ii = InformInfoRepr::generic_subscription(TrapNumber(66), true, 1, 19).to_wire();
    for conn in [1, 2] {
        b.core.handle_local(b.now, conn, 10, Request::Inform(ii));
        b.pump();
    }
    let replies: Vec<_> = std::iter::from_fn(|| b.core.poll_local()).collect();
    assert_eq!(replies.len(), 2);
    assert!(
        replies
            .iter()
            .all(|r| r.status == MadStatus::OK && r.request == 10)
    );
    assert_eq!(subscribe_requests(&b, 66), (1, 0));
    b.master.report(TrapDetails::McGroupCreated {
        mgid: Gid::new(0xff12_601b_ffff_0000, 1),
    });
    b.pump();
    let notices: Vec<_> = std::iter::from_fn(|| b.core.poll_local()).collect();
    assert_eq!(notices.len(), 2, "one notice per connection");
    assert!(
        notices
            .iter()
            .all(|r| r.request == 0 && matches!(r.body, LocalBody::Notice(_)))
    );
    b.core.handle_local_closed(b.now, 1);
    b.pump();
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 0),
        "still held by connection 2"
    );
    b.core.handle_local_closed(b.now, 2);
    b.pump();
    assert_eq!(
        subscribe_requests(&b, 66),
        (1, 1),
        "the last connection gone: withdrawn"
    );
}

#[test]
fn a_master_restarted_on_the_same_lid_gets_everything_back() {
    use crate::request::Request;
    let mut b = Bench::started();
    set(&mut b, 5, 66, true);
    let mut r = mad_codec::McMemberRecord::new_zeroed();
    r.set_mgid(Gid::new(0xff12_601b_ffff_0000, 9));
    r.set_join_state(mad_codec::JoinState::FULL_MEMBER);
    let mask = mad_codec::attr::mc_member_record::mask::CREATE;
    b.core
        .handle_local(b.now, 1, 1, Request::Join { mask, record: r });
    b.pump();
    // The master restarts: same LID, nothing remembered, no port event.
    b.master = super::fake_master::FakeMaster::new(super::bench::MASTER_LID, super::bench::HOSTS);
    let config = AgentConfig::default();
    b.advance(config.audit_interval + config.pace.min_window);
    let held: Vec<u16> = b.master.subscriptions.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        held,
        [64, 65, 66, 67, 128],
        "subscriptions back, no consumer involved (66 and 67 held by the agent itself while the port is in a group)"
    );
    assert_eq!(
        b.master.member_state(r.mgid(), gid(MY_LID)),
        mad_codec::JoinState::FULL_MEMBER,
        "membership back"
    );
    assert_eq!(b.master.services.len(), 1, "and the canary");
    assert_eq!(b.core.counters().reregistrations, 1);
}
