//! What one user may make the master hold through the agent: distinct
//! groups, groups its joins created, distinct subscriptions, each past its
//! limit refused with ERR_NO_RESOURCES, counted per owner; root's limits
//! higher; a group or filter many of a user's connections share counting
//! once; everything released when the connections close.

use std::collections::BTreeMap;

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    Gid, InformInfoRepr, JoinState, MadStatus, McMemberRecord, SaMadBuilder, TrapNumber,
};

use super::bench::{Bench, MY_LID, client, padded, status};
use super::fake_master::gid;
use crate::quota::{LocalUser, Owner, PRIVILEGED_FACTOR, RegistrationLimits};
use crate::request::Request;

const ALICE: LocalUser = LocalUser {
    uid: 1000,
    privileged: false,
};
const BOB: LocalUser = LocalUser {
    uid: 1001,
    privileged: false,
};
const ROOT: LocalUser = LocalUser {
    uid: 0,
    privileged: true,
};

/// A group the master has already (another port is in it).
fn existing(n: u64) -> Gid {
    Gid::new(0xff12_601b_ffff_0000, 0x100 + n)
}

/// A group nobody has created.
fn new_group(n: u64) -> Gid {
    Gid::new(0xff12_601b_ffff_0000, 0x10_000 + n)
}

/// The master with `n` groups another port is in.
fn with_groups(n: u64) -> Bench {
    let mut b = Bench::started();
    for i in 0..n {
        let mut r = McMemberRecord::new_zeroed();
        r.set_mgid(existing(i));
        r.set_qkey(0x1234);
        r.set_pkey(0xFFFF);
        r.set_mlid(0xC100 + i as u16);
        let members = BTreeMap::from([(gid(7), JoinState::FULL_MEMBER)]);
        b.master.groups.insert(existing(i), (r, members));
    }
    b
}

/// Connection `conn` joins `mgid` (Full, with what creating it needs);
/// the status it is answered with, time passing as the pace needs.
fn join(b: &mut Bench, conn: u64, mgid: Gid) -> MadStatus {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_qkey(0x1234);
    r.set_pkey(0xFFFF);
    r.set_join_state(JoinState::FULL_MEMBER);
    let request = Request::Join {
        mask: mc::CREATE,
        record: r,
    };
    answer(b, conn, request)
}

fn answer(b: &mut Bench, conn: u64, request: Request) -> MadStatus {
    b.core.handle_local(b.now, conn, 1, request);
    b.pump();
    loop {
        if let Some(r) = b.core.poll_local() {
            return r.status;
        }
        b.advance(std::time::Duration::from_millis(50));
    }
}

/// Connection `conn` subscribes to generic trap `trap`.
fn subscribe(b: &mut Bench, conn: u64, trap: u16) -> MadStatus {
    let ii = InformInfoRepr::generic_subscription(TrapNumber(trap), true, 0, 0).to_wire();
    answer(b, conn, Request::Inform(ii))
}

fn usage(b: &Bench, owner: Owner) -> (usize, usize, usize, u64) {
    b.core
        .registrants()
        .into_iter()
        .find(|r| r.owner == owner)
        .map_or((0, 0, 0, 0), |r| {
            (r.groups, r.created, r.subscriptions, r.refused)
        })
}

#[test]
fn a_users_groups_past_its_limit_are_refused_and_shared_groups_count_once() {
    let limits = RegistrationLimits::default();
    let mut b = with_groups(limits.groups as u64 + 6);
    b.core.handle_local_opened(1, ALICE);
    b.core.handle_local_opened(2, ALICE);
    b.core.handle_local_opened(3, BOB);
    let statuses: Vec<MadStatus> = (0..limits.groups as u64 + 6)
        .map(|i| join(&mut b, 1, existing(i)))
        .collect();
    assert!(
        statuses[..limits.groups]
            .iter()
            .all(|s| *s == MadStatus::OK)
    );
    assert!(
        statuses[limits.groups..]
            .iter()
            .all(|s| *s == MadStatus::ERR_NO_RESOURCES),
        "{statuses:?}"
    );
    assert_eq!(b.core.counters().refused_groups, 6);
    let alice = Owner::User(ALICE.uid);
    assert_eq!(usage(&b, alice), (limits.groups, 0, 0, 6));

    // Alice's second connection: a group she holds costs nothing more, a
    // new one is refused; Bob has his own limit.
    assert_eq!(join(&mut b, 2, existing(0)), MadStatus::OK);
    assert_eq!(
        join(&mut b, 2, existing(limits.groups as u64)),
        MadStatus::ERR_NO_RESOURCES
    );
    assert_eq!(
        join(&mut b, 3, existing(limits.groups as u64)),
        MadStatus::OK
    );
    assert_eq!(usage(&b, alice), (limits.groups, 0, 0, 7));

    // Her first connection closes: the groups only it held go, and with
    // them the port's membership at the master once the leaves are out.
    b.core.handle_local_closed(b.now, 1);
    b.advance(std::time::Duration::from_secs(30));
    assert_eq!(usage(&b, alice).0, 1, "the group connection 2 holds");
    assert_eq!(
        b.master.member_state(existing(5), gid(MY_LID)),
        JoinState::NONE
    );
    assert_eq!(join(&mut b, 2, existing(5)), MadStatus::OK, "room again");
}

#[test]
fn creating_groups_has_its_own_limit_and_roots_are_higher() {
    let limits = RegistrationLimits::default();
    let mut b = with_groups(4);
    b.core.handle_local_opened(1, ALICE);
    b.core.handle_local_opened(9, ROOT);
    let created: Vec<MadStatus> = (0..limits.created_groups as u64 + 3)
        .map(|i| join(&mut b, 1, new_group(i)))
        .collect();
    assert!(
        created[..limits.created_groups]
            .iter()
            .all(|s| *s == MadStatus::OK)
    );
    assert!(
        created[limits.created_groups..]
            .iter()
            .all(|s| *s == MadStatus::ERR_NO_RESOURCES),
        "{created:?}"
    );
    assert!(
        !b.master
            .groups
            .contains_key(&new_group(limits.created_groups as u64)),
        "the refused join created nothing at the master"
    );
    // Joining groups that exist is still allowed.
    for i in 0..4 {
        assert_eq!(join(&mut b, 1, existing(i)), MadStatus::OK);
    }
    let alice = Owner::User(ALICE.uid);
    assert_eq!(
        usage(&b, alice),
        (limits.created_groups + 4, limits.created_groups, 0, 3)
    );
    assert_eq!(b.core.counters().refused_group_creations, 3);

    // Root creates sixteen times as many.
    let roots = limits.created_groups * PRIVILEGED_FACTOR;
    for i in 0..roots as u64 {
        assert_eq!(join(&mut b, 9, new_group(1000 + i)), MadStatus::OK, "{i}");
    }
    assert_eq!(
        join(&mut b, 9, new_group(5000)),
        MadStatus::ERR_NO_RESOURCES
    );

    // A group the master names (MGID 0) is a creation too.
    b.core.handle_local_opened(2, BOB);
    for _ in 0..limits.created_groups {
        assert_eq!(join(&mut b, 2, Gid::ZERO), MadStatus::OK);
    }
    assert_eq!(join(&mut b, 2, Gid::ZERO), MadStatus::ERR_NO_RESOURCES);
    assert_eq!(
        usage(&b, Owner::User(BOB.uid)),
        (limits.created_groups, limits.created_groups, 0, 1)
    );

    // Closing gives everything back; the master holds none of it.
    for conn in [1, 2, 9] {
        b.core.handle_local_closed(b.now, conn);
    }
    b.advance(std::time::Duration::from_secs(120));
    assert!(b.core.registrants().iter().all(|r| r.groups == 0));
    assert_eq!(b.core.counters().groups, 0);
    let ours: Vec<&Gid> = b
        .master
        .groups
        .iter()
        .filter(|(_, (_, members))| members.contains_key(&gid(MY_LID)))
        .map(|(mgid, _)| mgid)
        .collect();
    assert!(ours.is_empty(), "{ours:?}");
}

#[test]
fn a_users_subscriptions_past_its_limit_are_refused_and_all_go_at_close() {
    let limits = RegistrationLimits::default();
    let mut b = Bench::started();
    let own = b.master.subscriptions.clone();
    b.core.handle_local_opened(1, ALICE);
    b.core.handle_local_opened(2, ALICE);
    let statuses: Vec<MadStatus> = (0..limits.subscriptions as u16 + 10)
        .map(|t| subscribe(&mut b, 1, 1000 + t))
        .collect();
    assert!(
        statuses[..limits.subscriptions]
            .iter()
            .all(|s| *s == MadStatus::OK)
    );
    assert!(
        statuses[limits.subscriptions..]
            .iter()
            .all(|s| *s == MadStatus::ERR_NO_RESOURCES)
    );
    // The same filter from her other connection costs nothing more.
    assert_eq!(subscribe(&mut b, 2, 1000), MadStatus::OK);
    let alice = Owner::User(ALICE.uid);
    assert_eq!(usage(&b, alice), (0, 0, limits.subscriptions, 10));
    assert_eq!(b.core.counters().refused_subscriptions, 10);

    for conn in [1, 2] {
        b.core.handle_local_closed(b.now, conn);
    }
    b.advance(std::time::Duration::from_secs(60));
    assert_eq!(usage(&b, alice), (0, 0, 0, 10), "the refusals stay counted");
    assert_eq!(b.master.subscriptions, own, "only local-sa's own are left");
}

#[test]
fn a_ports_mad_subscriptions_count_against_that_port() {
    let limits = RegistrationLimits {
        subscriptions: 2,
        ..RegistrationLimits::default()
    };
    let config = crate::AgentConfig {
        limits,
        ..crate::AgentConfig::default()
    };
    let mut b = Bench::new(
        super::fake_master::FakeMaster::new(super::bench::MASTER_LID, super::bench::HOSTS),
        config,
    );
    b.advance(b.core.config.pace.min_window);
    let from = client(5);
    let set = |tid: u64, trap: u16| {
        let ii = InformInfoRepr::generic_subscription(TrapNumber(trap), true, 1, 19);
        padded(
            &SaMadBuilder::request(
                mad_codec::Method::SET,
                tid,
                mad_codec::AttributeId::INFORM_INFO,
            )
            .record(&ii.to_wire())
            .into_bytes(),
        )
    };
    let mut statuses = Vec::new();
    for (tid, trap) in [(1, 66), (2, 67), (3, 68)] {
        b.deliver(from, &set(tid, trap));
        b.pump();
        b.advance(std::time::Duration::from_millis(100));
        statuses.extend(b.take_sent(5).iter().map(|m| status(m)));
    }
    assert_eq!(
        statuses,
        [MadStatus::OK, MadStatus::OK, MadStatus::ERR_NO_RESOURCES]
    );
    let port = Owner::Port(gid(5));
    assert_eq!(usage(&b, port), (0, 0, 2, 1));
}

#[test]
fn joins_sent_together_cannot_create_more_than_the_limit() {
    let limits = RegistrationLimits::default();
    let mut b = with_groups(4);
    b.core.handle_local_opened(1, ALICE);
    // Thirty joins of new groups and four of existing ones, all asked
    // before the master has answered any of them.
    let wanted: Vec<Gid> = (0..30).map(new_group).chain((0..4).map(existing)).collect();
    for (i, mgid) in wanted.iter().enumerate() {
        let mut r = McMemberRecord::new_zeroed();
        r.set_mgid(*mgid);
        r.set_qkey(0x1234);
        r.set_pkey(0xFFFF);
        r.set_join_state(JoinState::FULL_MEMBER);
        let join = Request::Join {
            mask: mc::CREATE,
            record: r,
        };
        b.core.handle_local(b.now, 1, i as u32, join);
    }
    b.pump();
    b.advance(std::time::Duration::from_secs(5));
    let replies: Vec<(u32, MadStatus)> = std::iter::from_fn(|| b.core.poll_local())
        .map(|r| (r.request, r.status))
        .collect();
    assert_eq!(replies.len(), wanted.len());
    let ok = |range: std::ops::Range<u32>| {
        replies
            .iter()
            .filter(|(id, s)| range.contains(id) && *s == MadStatus::OK)
            .count()
    };
    assert_eq!(ok(0..30), limits.created_groups, "{replies:?}");
    assert_eq!(ok(30..34), 4, "joins of groups that exist: {replies:?}");
    let created = b
        .master
        .groups
        .keys()
        .filter(|g| (0..30).map(new_group).any(|n| n == **g))
        .count();
    assert_eq!(created, limits.created_groups);
    assert_eq!(
        usage(&b, Owner::User(ALICE.uid)),
        (limits.created_groups + 4, limits.created_groups, 0, 14)
    );
}
