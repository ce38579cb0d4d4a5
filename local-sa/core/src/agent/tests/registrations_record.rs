//! What an agent that ended without withdrawing anything leaves at the
//! master, and its successor on the port removing it: the canary's finite
//! lease, and the registrations record.

use std::time::Duration;

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{AttributeId, Gid, InformInfoRepr, JoinState, McMemberRecord, Method, TrapNumber};

use super::bench::{Bench, MY_LID};
use super::fake_master::gid;
use crate::agent::AgentConfig;
use crate::agent::registration_proxy::canary::{SERVICE_ID, canary_lease};
use crate::registrations_record::Registrations;
use crate::request::Request;

const MGID: Gid = Gid::new(0xff12_601b_ffff_0000, 0x5);

/// Canary registrations (ServiceRecord Sets of its ServiceID) so far.
fn canary_sets(b: &Bench) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::SERVICE_RECORD && s.method == Method::SET)
        .filter(|s| s.template.as_bytes()[..8] == SERVICE_ID.to_be_bytes())
        .count()
}

#[test]
fn the_canary_has_a_finite_lease_that_the_agent_renews() {
    let mut b = Bench::started();
    let config = AgentConfig::default();
    let lease = canary_lease(config.audit_interval);
    let held = b.master.services.get(&(SERVICE_ID, gid(MY_LID))).copied();
    assert_eq!(
        held.map(|r| u64::from(r.service_lease())),
        Some(lease.as_secs()),
        "a lease the master expires"
    );
    assert_eq!(canary_sets(&b), 1);
    b.advance(lease / 2 - Duration::from_secs(1));
    assert_eq!(canary_sets(&b), 1, "not renewed before half the lease");
    b.advance(config.audit_interval * 2);
    assert_eq!(
        canary_sets(&b),
        2,
        "renewed by the first audit after half the lease"
    );
}

/// The traps the master holds subscriptions to.
fn held_traps(b: &Bench) -> Vec<u16> {
    b.master.subscriptions.iter().map(|(t, _)| *t).collect()
}

/// Subscribes local connection `conn` to `trap` and joins it to MGID.
fn register(b: &mut Bench, conn: u64, trap: u16) {
    let ii = InformInfoRepr::generic_subscription(TrapNumber(trap), true, 0, 0).to_wire();
    b.core.handle_local(b.now, conn, 1, Request::Inform(ii));
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(MGID);
    r.set_join_state(JoinState::FULL_MEMBER);
    b.core.handle_local(
        b.now,
        conn,
        2,
        Request::Join {
            mask: mc::CREATE,
            record: r,
        },
    );
    b.pump();
    while b.core.poll_local().is_some() {}
}

#[test]
fn a_successor_removes_what_its_killed_predecessor_left() {
    // The first agent: a consumer subscribed to trap 128 and joined a
    // group; then the agent is killed, withdrawing nothing.
    let mut first = Bench::started();
    register(&mut first, 1, 128);
    let record = first.core.registrations();
    assert_eq!(record.port_gid, gid(MY_LID));
    assert_eq!(
        record.groups,
        [(MGID, JoinState::FULL_MEMBER)],
        "{record:?}"
    );
    let traps: Vec<u16> = record
        .subscriptions
        .iter()
        .map(|f| f.trap_or_device)
        .collect();
    assert!(traps.contains(&128) && traps.contains(&64), "{traps:?}");
    let text = record.to_text();
    let master = first.master;

    // Its successor reads the record back and adopts it.
    let mut second = Bench::new(master, AgentConfig::default());
    let before = second.core.registrations_generation();
    second
        .core
        .adopt(second.now, &Registrations::parse(&text).unwrap());
    second.pump();
    assert_ne!(second.core.registrations_generation(), before);
    let held = held_traps(&second);
    assert_eq!(held, [64, 65, 128], "only the agent's own traps are left");
    assert_eq!(
        second.master.member_state(MGID, gid(MY_LID)),
        JoinState::NONE,
        "the membership is gone"
    );
    assert!(second.core.registrations().groups.is_empty());
}

#[test]
fn what_a_new_consumer_holds_by_then_stays() {
    let mut first = Bench::started();
    register(&mut first, 1, 128);
    let record = first.core.registrations();
    let mut second = Bench::new(first.master, AgentConfig::default());
    // A consumer is back before the record is adopted.
    register(&mut second, 7, 128);
    second.core.adopt(second.now, &record);
    second.pump();
    let held = held_traps(&second);
    assert!(held.contains(&128), "{held:?}");
    assert_eq!(
        second.master.member_state(MGID, gid(MY_LID)),
        JoinState::FULL_MEMBER
    );
}

#[test]
fn a_record_of_another_port_is_left_alone() {
    let mut first = Bench::started();
    register(&mut first, 1, 128);
    let mut record = first.core.registrations();
    record.port_gid = gid(MY_LID + 1);
    let mut second = Bench::new(first.master, AgentConfig::default());
    second.core.adopt(second.now, &record);
    second.pump();
    let held = held_traps(&second);
    assert!(held.contains(&128), "{held:?}");
}

/// Connection 1 joins (or leaves) `mgid` as a full member; the master
/// answers.
fn join_or_leave(b: &mut Bench, join: bool, mgid: Gid) {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_join_state(JoinState::FULL_MEMBER);
    let request = if join {
        Request::Join {
            mask: mc::CREATE,
            record: r,
        }
    } else {
        Request::Leave {
            mask: mc::CREATE,
            record: r,
        }
    };
    b.core.handle_local(b.now, 1, 2, request);
}

#[test]
fn the_record_is_due_before_what_may_add_goes_out_and_may_wait_after_a_removal() {
    let mut b = Bench::started();
    // The record as the daemon last wrote it.
    let written = b.core.registrations_generation();

    // A join: before it goes out the record is out of date by an addition.
    join_or_leave(&mut b, true, MGID);
    assert!(b.core.registrations_grown() > written, "a join may add");
    b.pump();
    while b.core.poll_local().is_some() {}
    assert_eq!(
        b.core.registrations().groups,
        [(MGID, JoinState::FULL_MEMBER)]
    );
    assert!(
        b.core.registrations_grown() < b.core.registrations_generation(),
        "the answer to a join of a named group adds nothing the request did not"
    );
    let written = b.core.registrations_generation();

    // A leave and an unsubscription only take away: the record, listing
    // more than the master holds, may wait.
    join_or_leave(&mut b, false, MGID);
    b.pump();
    while b.core.poll_local().is_some() {}
    assert!(b.core.registrations().groups.is_empty());
    assert!(b.core.registrations_generation() > written, "changed");
    assert!(b.core.registrations_grown() <= written, "nothing added");
    // (Trap 144: one the agent does not subscribe to itself.)
    let inform = |b: &mut Bench, subscribe: bool| {
        let ii = InformInfoRepr::generic_subscription(TrapNumber(144), subscribe, 0, 0).to_wire();
        b.core.handle_local(b.now, 1, 3, Request::Inform(ii));
        b.pump();
        while b.core.poll_local().is_some() {}
    };
    let written = b.core.registrations_generation();
    inform(&mut b, true);
    assert!(
        b.core.registrations_grown() > written,
        "a subscription may add"
    );
    let written = b.core.registrations_generation();
    inform(&mut b, false);
    assert!(b.core.registrations_generation() > written);
    assert!(
        b.core.registrations_grown() <= written,
        "an unsubscription adds nothing"
    );

    // A join that asks the master to assign the group: its answer names a
    // group the record must list, so the answer is an addition too.
    join_or_leave(&mut b, true, Gid::ZERO);
    b.pump();
    while b.core.poll_local().is_some() {}
    let groups = b.core.registrations().groups;
    assert!(
        groups.len() == 1 && groups[0].0 != Gid::ZERO,
        "the group the master assigned: {groups:?}"
    );
    assert_eq!(
        b.core.registrations_grown(),
        b.core.registrations_generation(),
        "the answer naming the group added it"
    );
}
