//! Multicast joins through the agent: members on this port share one
//! membership at the master holding the union of their JoinStates; a join
//! whose bits are held completes with no SA traffic; a leave deletes only
//! the bits nobody holds; a closed connection or an ended lease leaves; a
//! new master gets every membership back.

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, Gid, JoinState, MadStatus, McMemberRecord, Method, Records, SaMad, SaMadBuilder,
};

use super::bench::{Bench, HOSTS, MY_LID, client, my_port, padded, status};
use super::fake_master::{FakeMaster, gid};
use crate::address::Address;
use crate::agent::{AgentConfig, PortIdentity};
use crate::request::{LocalBody, LocalReply, Request};

const MGID: Gid = Gid::new(0xff12_601b_ffff_0000, 0x42);

fn record(mgid: Gid, bits: JoinState) -> McMemberRecord {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_qkey(0x1234);
    r.set_pkey(0xFFFF);
    r.set_join_state(bits);
    r
}

/// Connection `conn` joins (or leaves) `mgid` with `bits`; its replies.
fn local(b: &mut Bench, conn: u64, join: bool, mgid: Gid, bits: JoinState) -> Vec<LocalReply> {
    let (mask, r) = (mc::CREATE, record(mgid, bits));
    let req = if join {
        Request::Join { mask, record: r }
    } else {
        Request::Leave { mask, record: r }
    };
    b.core.handle_local(b.now, conn, 7, req);
    b.pump();
    std::iter::from_fn(|| b.core.poll_local()).collect()
}

fn only_record(replies: &[LocalReply]) -> (MadStatus, Option<McMemberRecord>) {
    assert_eq!(replies.len(), 1, "one reply: {replies:?}");
    let r = &replies[0];
    let rec = match &r.body {
        LocalBody::Records { data, .. } => Records::<McMemberRecord>::with_standard_stride(data)
            .next()
            .copied(),
        _ => None,
    };
    (r.status, rec)
}

fn sets(b: &Bench) -> (usize, usize) {
    let n = |m| {
        b.master
            .requests
            .iter()
            .filter(|s| s.attribute == AttributeId::MC_MEMBER_RECORD && s.method == m)
            .count()
    };
    (n(Method::SET), n(Method::DELETE))
}

fn held(b: &Bench, mgid: Gid) -> JoinState {
    b.master.member_state(mgid, gid(MY_LID))
}

#[test]
fn four_members_one_membership_holding_the_union() {
    let mut b = Bench::started();
    let f = JoinState::FULL_MEMBER;
    let n = JoinState::NON_MEMBER;
    let s = JoinState::SEND_ONLY_NON_MEMBER;
    for (conn, bits) in [(1, f), (2, n), (3, s), (4, f)] {
        let (st, rec) = only_record(&local(&mut b, conn, true, MGID, bits));
        assert_eq!(st, MadStatus::OK, "member {conn} joined");
        assert!(rec.unwrap().join_state().contains(bits));
    }
    assert_eq!(
        held(&b, MGID),
        f | n | s,
        "the master holds the union for this port"
    );
    assert_eq!(sets(&b), (3, 0), "the fourth join was completed here");
    assert_eq!(b.core.counters().joins_local, 1);

    // Partial leaves: only bits nobody else holds are deleted.
    assert_eq!(
        only_record(&local(&mut b, 4, false, MGID, f)).0,
        MadStatus::OK
    );
    assert_eq!(
        (held(&b, MGID), sets(&b).1),
        (f | n | s, 0),
        "member 1 still holds Full"
    );
    let (st, rec) = only_record(&local(&mut b, 2, false, MGID, n));
    assert_eq!(st, MadStatus::OK);
    assert_eq!(rec.unwrap().join_state(), f | s, "the remaining state");
    assert_eq!((held(&b, MGID), sets(&b).1), (f | s, 1));
    local(&mut b, 3, false, MGID, s);
    assert_eq!(held(&b, MGID), f);
    local(&mut b, 1, false, MGID, f);
    assert_eq!(
        held(&b, MGID),
        JoinState::NONE,
        "the last leave removes the membership"
    );
    assert!(b.master.groups.is_empty(), "and with it the group");
    assert_eq!(b.core.counters().groups, 0);
}

#[test]
fn a_leave_of_bits_not_held_is_refused_and_changes_nothing() {
    let mut b = Bench::started();
    local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER);
    let (st, _) = only_record(&local(&mut b, 1, false, MGID, JoinState::NON_MEMBER));
    assert_eq!(st, MadStatus::ERR_REQ_INVALID);
    let (st, _) = only_record(&local(&mut b, 2, false, MGID, JoinState::FULL_MEMBER));
    assert_eq!(st, MadStatus::ERR_REQ_INVALID, "not a member");
    assert_eq!(held(&b, MGID), JoinState::FULL_MEMBER);
}

#[test]
fn a_closed_connection_leaves_its_groups() {
    let mut b = Bench::started();
    local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER);
    local(
        &mut b,
        2,
        true,
        MGID,
        JoinState::FULL_MEMBER | JoinState::NON_MEMBER,
    );
    b.core.handle_local_closed(b.now, 2);
    b.pump();
    assert_eq!(
        held(&b, MGID),
        JoinState::FULL_MEMBER,
        "Non went with its only holder"
    );
    b.core.handle_local_closed(b.now, 1);
    b.pump();
    assert!(b.master.groups.is_empty());
    assert_eq!(b.core.counters().members, 0);
}

#[test]
fn the_masters_verdict_reaches_the_member_unchanged() {
    let mut b = Bench::started();
    local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER);
    // Another Q_Key: not the group's, so the master decides, and refuses.
    let mut r = record(MGID, JoinState::FULL_MEMBER);
    r.set_qkey(0x9999);
    b.core.handle_local(
        b.now,
        2,
        8,
        Request::Join {
            mask: mc::CREATE,
            record: r,
        },
    );
    b.pump();
    let replies: Vec<LocalReply> = std::iter::from_fn(|| b.core.poll_local()).collect();
    assert_eq!(only_record(&replies).0, MadStatus::ERR_REQ_INVALID);
    // Too few components for a new group: 0x0600, from the master.
    let mut r = record(
        Gid::new(0xff12_601b_ffff_0000, 0x77),
        JoinState::FULL_MEMBER,
    );
    r.set_port_gid(gid(MY_LID));
    b.core.handle_local(
        b.now,
        3,
        9,
        Request::Join {
            mask: mc::JOIN,
            record: r,
        },
    );
    b.pump();
    let replies: Vec<LocalReply> = std::iter::from_fn(|| b.core.poll_local()).collect();
    assert_eq!(
        only_record(&replies).0,
        MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS
    );
    assert_eq!(b.core.counters().groups, 1, "the refused group is not kept");
}

#[test]
fn an_sa_assigned_mgid_is_learnt_and_shared() {
    let mut b = Bench::started();
    let (st, rec) = only_record(&local(&mut b, 1, true, Gid::ZERO, JoinState::FULL_MEMBER));
    assert_eq!(st, MadStatus::OK);
    let mgid = rec.unwrap().mgid();
    assert_ne!(mgid, Gid::ZERO, "the master's MGID");
    local(&mut b, 2, true, mgid, JoinState::FULL_MEMBER);
    assert_eq!(sets(&b), (1, 0), "the second joiner found the group here");
}

#[test]
fn joins_and_leaves_by_mad_from_this_port_and_the_member_lease() {
    let mut b = Bench::started();
    let me = Address {
        qpn: 77,
        ..client(MY_LID)
    };
    let mut r = record(MGID, JoinState::FULL_MEMBER);
    r.set_port_gid(gid(MY_LID));
    let mut q = SaMadBuilder::request(Method::SET, 5, AttributeId::MC_MEMBER_RECORD).record(&r);
    q.header_mut().sa.set_component_mask(mc::CREATE);
    let join = padded(&q.into_bytes());
    let answer = b.ask(me, &join);
    let m = SaMad::parse(&answer[0]).unwrap();
    assert_eq!(
        (m.mad().method(), m.mad().status(), m.mad().transaction_id()),
        (Method::GET_RESP, MadStatus::OK, 5)
    );
    assert_eq!(held(&b, MGID), JoinState::FULL_MEMBER);
    // Another port cannot join through this one.
    assert_eq!(
        status(&b.ask(client(5), &join)[0]),
        MadStatus::ERR_REQ_INVALID
    );
    // Not renewed: the lease ends and the membership goes.
    b.advance(AgentConfig::default().member_lease);
    assert_eq!(held(&b, MGID), JoinState::NONE);
    assert_eq!(b.core.counters().leases_ended, 1);
}

#[test]
fn queries_about_held_groups_are_answered_here() {
    let mut b = Bench::started();
    local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER);
    let mut t = McMemberRecord::new_zeroed();
    t.set_mgid(MGID);
    let mut q =
        SaMadBuilder::request(Method::GET_TABLE, 6, AttributeId::MC_MEMBER_RECORD).record(&t);
    q.header_mut().sa.set_component_mask(mc::MGID);
    let before = b.master.requests.len();
    let table = b.query(client(30), &padded(&q.into_bytes()));
    let m = SaMad::parse(&table).unwrap();
    let records: Vec<McMemberRecord> = m.records::<McMemberRecord>().unwrap().copied().collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].mgid(), records[0].mlid(), records[0].qkey()),
        (MGID, 0xC001, 0x1234)
    );
    assert_eq!(
        (records[0].port_gid(), records[0].join_state()),
        (Gid::ZERO, JoinState::NONE),
        "untrusted: no member shown"
    );
    assert_eq!(b.master.requests.len(), before, "not asked of the master");
    // Any other component is the master's to match.
    let mut q =
        SaMadBuilder::request(Method::GET_TABLE, 7, AttributeId::MC_MEMBER_RECORD).record(&t);
    q.header_mut().sa.set_component_mask(mc::MGID | mc::QKEY);
    b.query(client(30), &padded(&q.into_bytes()));
    assert_eq!(b.master.requests.len(), before + 1, "relayed to the master");
    // This port's groups for the local API.
    b.core.handle_local(b.now, 9, 1, Request::ListGroups);
    let (_, rec) = only_record(&std::iter::from_fn(|| b.core.poll_local()).collect::<Vec<_>>());
    assert_eq!(rec.unwrap().join_state(), JoinState::FULL_MEMBER);
    assert_eq!(McMemberRecord::ATTRIBUTE_OFFSET, 7);
}

#[test]
fn a_new_master_gets_every_membership_back() {
    let mut b = Bench::started();
    local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER);
    local(&mut b, 2, true, MGID, JoinState::NON_MEMBER);
    b.master = FakeMaster::new(3, HOSTS);
    b.master.next_mlid = 0xC050;
    b.core.handle_port_change(
        b.now,
        PortIdentity {
            sm_lid: 3,
            ..my_port()
        },
    );
    b.advance(AgentConfig::default().pace.min_window);
    assert_eq!(
        b.master.member_state(MGID, gid(MY_LID)),
        JoinState::FULL_MEMBER | JoinState::NON_MEMBER
    );
    assert_eq!(
        b.master.groups[&MGID].0.mlid(),
        0xC001,
        "the group's MLID asked for again"
    );
}

#[test]
fn a_member_gone_before_the_master_answers_leaves_nothing_behind() {
    let mut b = Bench::started();
    b.master.answering = false;
    assert!(
        local(&mut b, 1, true, MGID, JoinState::FULL_MEMBER).is_empty(),
        "waiting for the master"
    );
    b.core.handle_local_closed(b.now, 1);
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    assert_eq!(
        held(&b, MGID),
        JoinState::NONE,
        "the late join was taken back"
    );
    assert!(b.core.poll_local().is_none(), "nobody to answer");
    assert_eq!(
        (b.core.counters().groups, b.core.counters().members),
        (0, 0)
    );
}
