//! The memberships machine alone: its effects for joins, leaves, answers,
//! lease ends and a new master, with the master's answers scripted.

use std::time::{Duration, Instant};

use mad_codec::{Mtu, Selector};

use super::*;

const MGID: Gid = Gid::new(0xff12_601b_ffff_0000, 0x42);
const PORT: Gid = Gid::new(Gid::DEFAULT_PREFIX, 0x77);
const F: JoinState = JoinState::FULL_MEMBER;
const N: JoinState = JoinState::NON_MEMBER;

type Machine = Memberships<u8, &'static str>;

fn machine() -> Machine {
    let config = MembershipConfig {
        member_lease: Duration::from_secs(60),
        retry_backoff: Duration::from_secs(5),
    };
    Memberships::new(config, PORT)
}

fn record(bits: JoinState) -> McMemberRecord {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(MGID);
    r.set_port_gid(PORT);
    r.set_qkey(0x1234);
    r.set_join_state(bits);
    r
}

fn change(
    join: bool,
    member: u8,
    bits: JoinState,
    asker: &'static str,
) -> Change<u8, &'static str> {
    Change {
        join,
        member,
        renews: false,
        asker,
        mask: mc::JOIN | mc::CREATE,
        record: record(bits),
        may_create: true,
    }
}

/// The one Send among `effects`: its op, method and JoinState.
fn sent(effects: &[Effect<u8, &'static str>]) -> (OpId, Method, JoinState) {
    let sends: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send {
                op, method, record, ..
            } => Some((*op, *method, record.join_state())),
            Effect::Answer { .. } | Effect::LeaseEnded { .. } | Effect::Event { .. } => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "{effects:?}");
    sends[0]
}

fn answers(effects: &[Effect<u8, &'static str>]) -> Vec<(&'static str, JoinAnswer)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Answer { asker, answer } => Some((*asker, answer.clone())),
            Effect::Send { .. } | Effect::LeaseEnded { .. } | Effect::Event { .. } => None,
        })
        .collect()
}

/// `c` is asked; a question whether the port is in the group (before the
/// machine's first join of it) is answered "no", and so is the question
/// whether the group exists (before a join that would create it).
fn ask(
    m: &mut Machine,
    now: Instant,
    c: Change<u8, &'static str>,
) -> Vec<Effect<u8, &'static str>> {
    let mut out = Vec::new();
    m.request(now, c, &mut out);
    probe_answered(m, now, out, MadStatus::ERR_NO_RECORDS)
}

/// While `out` holds a question whether the port is in a group, or
/// whether a group exists, the master answers it with `status`; the
/// effects that follow replace it.
fn probe_answered(
    m: &mut Machine,
    now: Instant,
    mut out: Vec<Effect<u8, &'static str>>,
    status: MadStatus,
) -> Vec<Effect<u8, &'static str>> {
    let probe = |e: &Effect<u8, &'static str>| {
        matches!(e, Effect::Send { method, mask, .. }
            if *method == Method::GET && (*mask == mc::MGID | mc::PORT_GID || *mask == mc::MGID))
    };
    while let Some(i) = out.iter().position(probe) {
        let Effect::Send {
            op, record, mask, ..
        } = out.remove(i)
        else {
            unreachable!()
        };
        let expected = if mask == mc::MGID { Gid::ZERO } else { PORT };
        assert_eq!(record.port_gid(), expected);
        let record = (status == MadStatus::OK).then_some(record);
        m.answered(now, op, Some((status, record)), &mut out);
    }
    out
}

/// `member` joins with `bits`, and the master accepts, holding `held`.
fn joined(m: &mut Machine, now: Instant, member: u8, bits: JoinState, held: JoinState) {
    let out = ask(m, now, change(true, member, bits, "j"));
    let (op, method, _) = sent(&out);
    assert_eq!(method, Method::SET);
    accept(m, now, op, held);
}

/// The master accepts op `op`, holding `held` for the port.
fn accept(
    m: &mut Machine,
    now: Instant,
    op: OpId,
    held: JoinState,
) -> Vec<Effect<u8, &'static str>> {
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::OK, Some(record(held)))), &mut out);
    out
}

#[test]
fn the_second_member_with_held_bits_joins_without_the_master() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, F));
    let out = accept(&mut m, now, op, F);
    assert!(matches!(
        answers(&out)[..],
        [(
            "a",
            JoinAnswer::Master {
                status: MadStatus::OK,
                record: Some(_)
            }
        )]
    ));
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 2, F, "b")));
    match &answers(&out)[..] {
        [("b", JoinAnswer::Joined(r))] => assert_eq!(r.join_state(), F),
        other => panic!("{other:?}"),
    }
    assert_eq!((m.counts().joins_local, m.counts().joins_upstream), (1, 1));
    assert_eq!((m.groups(), m.members()), (1, 2));
}

#[test]
fn a_leave_deletes_only_the_bits_nobody_else_holds() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F | N, F | N);
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 2, N, "b")));
    assert!(matches!(answers(&out)[..], [("b", JoinAnswer::Joined(_))]));
    // Member 1 leaves Non: member 2 still holds it, so no Delete.
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(false, 1, N, "c")));
    match &answers(&out)[..] {
        [("c", JoinAnswer::Left(r))] => {
            assert_eq!(r.join_state(), F | N, "still held for the port");
            assert_eq!(r.mtu_selector(), Selector::Exactly, "shaped as OpenSM's");
        }
        other => panic!("{other:?}"),
    }
    // Member 1 leaves Full: nobody holds it, so it alone is deleted.
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(false, 1, F, "d")));
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
    let out = accept(&mut m, now, op, N);
    match &answers(&out)[..] {
        [("d", JoinAnswer::Left(r))] => assert_eq!(r.join_state(), N),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.held(MGID).map(|(_, s)| s), Some(N));
    assert_eq!(m.member_bits(MGID, &2), N);
}

#[test]
fn requests_wait_while_the_master_is_asked_and_then_take_their_turn() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, ..) = sent(&out);
    let mut queued = Vec::new();
    queued.extend(ask(&mut m, now, change(true, 2, F, "b")));
    assert!(queued.is_empty(), "b waits for a's answer");
    let out = accept(&mut m, now, op, F);
    let got = answers(&out);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(matches!(got[1], ("b", JoinAnswer::Joined(_))));
}

#[test]
fn refusals_are_ones_opensm_would_give() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    let mut no_join = change(true, 1, F, "a");
    no_join.mask = mc::QKEY | mc::PKEY;
    out.extend(ask(&mut m, now, no_join));
    let mut other_port = change(true, 1, F, "b");
    other_port
        .record
        .set_port_gid(Gid::new(Gid::DEFAULT_PREFIX, 0x99));
    out.extend(ask(&mut m, now, other_port));
    out.extend(ask(&mut m, now, change(false, 1, F, "c")));
    assert_eq!(
        answers(&out),
        [
            (
                "a",
                JoinAnswer::Refused(MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS)
            ),
            ("b", JoinAnswer::Refused(MadStatus::ERR_REQ_INVALID)),
            ("c", JoinAnswer::Refused(MadStatus::ERR_REQ_INVALID)),
        ]
    );
    assert_eq!(m.groups(), 0, "nothing kept");
}

#[test]
fn the_masters_refusal_or_silence_goes_back_to_the_member() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, ..) = sent(&out);
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::ERR_REQ_INVALID, None)), &mut out);
    assert_eq!(
        answers(&out),
        [(
            "a",
            JoinAnswer::Master {
                status: MadStatus::ERR_REQ_INVALID,
                record: None
            }
        )]
    );
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "b")));
    let (op, ..) = sent(&out);
    let mut out = Vec::new();
    m.answered(now, op, None, &mut out);
    assert!(matches!(
        answers(&out)[..],
        [(
            "b",
            JoinAnswer::Master {
                status: MadStatus::BUSY,
                ..
            }
        )]
    ));
    assert_eq!((m.groups(), m.members()), (0, 0));
}

#[test]
fn a_member_that_goes_while_its_join_is_out_keeps_nothing() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, ..) = sent(&out);
    let mut out = Vec::new();
    m.remove_member(now, 1, &mut out);
    assert!(out.is_empty(), "nothing to do until the master answers");
    let out = accept(&mut m, now, op, F);
    // Nobody is answered, and the bits the master took are given back.
    assert!(answers(&out).is_empty());
    let (_, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
}

#[test]
fn a_renewing_member_that_does_not_renew_is_left_for_it() {
    let (mut m, t0) = (machine(), Instant::now());
    let mut out = Vec::new();
    let mut c = change(true, 1, F, "a");
    c.renews = true;
    out.extend(ask(&mut m, t0, c));
    let (op, ..) = sent(&out);
    accept(&mut m, t0, op, F);
    let end = m.poll_timeout().expect("a lease");
    assert_eq!(end - t0, Duration::from_secs(60));
    let mut out = Vec::new();
    m.handle_timeout(end, &mut out);
    assert_eq!(out[0], Effect::LeaseEnded { member: 1 });
    let (_, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
    assert_eq!(m.counts().leases_ended, 1);
}

/// The one request among `effects`: its op, method, mask and JoinState.
fn request_of(effects: &[Effect<u8, &'static str>]) -> (OpId, Method, ComponentMask, JoinState) {
    let (op, method, _) = sent(effects);
    let mask = effects
        .iter()
        .find_map(|e| match e {
            Effect::Send { mask, .. } => Some(*mask),
            _ => None,
        })
        .unwrap();
    let bits = sent(effects).2;
    (op, method, mask, bits)
}

/// The timer fires at its time; what the machine sends then.
fn retry(
    m: &mut Machine,
    after: Instant,
    wait: Duration,
) -> (OpId, Method, ComponentMask, JoinState) {
    let at = m.poll_timeout().expect("a retry");
    assert_eq!(at - after, wait);
    let mut out = Vec::new();
    m.handle_timeout(at, &mut out);
    request_of(&out)
}

#[test]
fn an_unanswered_leave_asks_whether_anything_is_left_and_converges() {
    let (mut m, t0) = (machine(), Instant::now());
    joined(&mut m, t0, 1, F, F);
    let mut out = Vec::new();
    out.extend(ask(&mut m, t0, change(false, 1, F, "b")));
    let (op, ..) = sent(&out);
    let mut out = Vec::new();
    m.answered(t0, op, None, &mut out);
    assert!(matches!(answers(&out)[..], [("b", JoinAnswer::Left(_))]));

    // After the backoff: is the port still in the group? Yes: the Delete.
    let (op, method, mask, _) = retry(&mut m, t0, Duration::from_secs(5));
    assert_eq!((method, mask), (Method::GET, mc::MGID | mc::PORT_GID));
    let t1 = t0 + Duration::from_secs(5);
    let mut out = Vec::new();
    m.answered(t1, op, Some((MadStatus::OK, Some(record(F)))), &mut out);
    let (op, method, _, bits) = request_of(&out);
    assert_eq!(
        (method, bits),
        (Method::DELETE, F),
        "the master is brought in line"
    );

    // Unanswered again: twice as long; then the master says the port is
    // not in the group any more: forgotten, nothing more to try.
    let mut out = Vec::new();
    m.answered(t1, op, None, &mut out);
    let (op, method, ..) = retry(&mut m, t1, Duration::from_secs(10));
    assert_eq!(method, Method::GET);
    let mut out = Vec::new();
    m.answered(t1, op, Some((MadStatus::ERR_NO_RECORDS, None)), &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(m.groups(), 0);
    assert_eq!(m.counts().groups_gone_at_master, 1);
    assert_eq!(m.poll_timeout(), None);
    assert!(m.possibly_held().is_empty());
}

#[test]
fn a_leave_the_master_never_answers_is_given_up_and_left_for_the_next_agent() {
    let (mut m, t0) = (machine(), Instant::now());
    joined(&mut m, t0, 1, F, F);
    let mut out = Vec::new();
    m.remove_member(t0, 1, &mut out);
    let (mut op, ..) = sent(&out);
    let mut now = t0;
    let mut waits = Vec::new();
    for _ in 0..MAX_LEAVE_TRIES {
        let mut out = Vec::new();
        m.answered(now, op, None, &mut out);
        let Some(at) = m.poll_timeout() else { break };
        waits.push((at - now).as_secs());
        now = at;
        let mut out = Vec::new();
        m.handle_timeout(now, &mut out);
        op = sent(&out).0;
    }
    assert_eq!(
        waits,
        [5, 10, 20, 40, 80, 160, 300],
        "doubling, held at 5 min"
    );
    assert_eq!(m.groups(), 0, "given up here");
    assert_eq!(m.counts().leaves_given_up, 1);
    assert_eq!(
        m.possibly_held(),
        vec![(MGID, F)],
        "listed for the next agent on the port"
    );
}

#[test]
fn bits_joined_again_at_a_new_master_are_deleted_at_shutdown_though_a_leave_was_given_up() {
    let (mut m, t0) = (machine(), Instant::now());
    joined(&mut m, t0, 1, F, F);
    joined(&mut m, t0, 2, N, F | N);
    // Member 1 goes; the master never answers its Delete of Full.
    let mut out = Vec::new();
    m.remove_member(t0, 1, &mut out);
    let (mut op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
    let mut now = t0;
    for _ in 0..MAX_LEAVE_TRIES {
        let mut out = Vec::new();
        m.answered(now, op, None, &mut out);
        let Some(at) = m.poll_timeout() else { break };
        now = at;
        let mut out = Vec::new();
        m.handle_timeout(now, &mut out);
        op = sent(&out).0;
    }
    assert_eq!(m.counts().leaves_given_up, 1);
    assert_eq!(m.poll_timeout(), None, "given up");
    // A new master holds nothing: member 2's Non is joined again there.
    let mut out = Vec::new();
    m.rejoin_all(&mut out);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, N));
    assert!(accept(&mut m, now, op, N).is_empty());
    // What was given up at the old master says nothing of the new one:
    // the Non this agent added there is deleted at shutdown.
    let mut out = Vec::new();
    m.leave_all(now, &mut out);
    let (_, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, N));
}

#[test]
fn a_new_master_gets_every_group_back_with_the_members_bits() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F, F);
    joined(&mut m, now, 2, N, F | N);
    let mut out = Vec::new();
    m.rejoin_all(&mut out);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, F | N));
    assert!(
        out.iter()
            .all(|e| !matches!(e, Effect::Send { mask, .. } if !mask.contains(mc::CREATE))),
        "a re-join can create the group again"
    );
    assert!(accept(&mut m, now, op, F | N).is_empty());
}

#[test]
fn a_group_busy_when_the_master_changes_joins_again_after() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 2, N, N);
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, ..) = sent(&out);
    let mut out = Vec::new();
    m.rejoin_all(&mut out);
    assert!(out.is_empty(), "the group's join is out");
    // The join is lost; the new master holds nothing for the port.
    let mut out = Vec::new();
    m.answered(now, op, None, &mut out);
    let (_, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, N), "member 2's bits again");
    assert!(matches!(
        answers(&out)[..],
        [(
            "a",
            JoinAnswer::Master {
                status: MadStatus::BUSY,
                ..
            }
        )]
    ));
}

#[test]
fn a_failed_rejoin_leaves_what_the_master_held() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 2, N, N);
    // Member 3's join is accepted, but the master's answer shows it
    // holding Non alone: Full is joined again for it.
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 3, F, "a")));
    let (op, ..) = sent(&out);
    let out = accept(&mut m, now, op, N);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, F | N));
    // That re-join is lost: the master still holds Non, which shutdown
    // must delete.
    let mut out = Vec::new();
    m.answered(now, op, None, &mut out);
    assert!(out.is_empty());
    let mut out = Vec::new();
    m.leave_all(now, &mut out);
    let (_, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, N));
}

#[test]
fn shutdown_leaves_every_group_once() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F, F);
    let mut out = Vec::new();
    m.leave_all(now, &mut out);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
    let mut out = Vec::new();
    m.answered(now, op, None, &mut out);
    assert!(out.is_empty(), "no retries once shutting down");
    assert_eq!(m.poll_timeout(), None);
    assert_eq!(m.groups(), 0);
    assert_eq!(
        m.possibly_held(),
        [(MGID, F)],
        "what the master may still hold stays listed for the next agent"
    );
}

#[test]
fn a_leave_that_finds_the_master_lost_the_group_joins_the_rest_again() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F, F);
    joined(&mut m, now, 2, N, F | N);
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(false, 2, N, "b")));
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, N));
    // Meanwhile the master restarted: it holds nothing and refuses.
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::ERR_REQ_INVALID, None)), &mut out);
    match &answers(&out)[..] {
        [("b", JoinAnswer::Left(r))] => assert_eq!(r.join_state(), JoinState::NONE),
        other => panic!("{other:?}"),
    }
    let (op, method, bits) = sent(&out);
    assert_eq!(
        (method, bits),
        (Method::SET, F),
        "member 1's bits are joined again"
    );
    assert!(m.group_records().is_empty(), "nothing held meanwhile");
    accept(&mut m, now, op, F);
    assert_eq!(m.held(MGID).map(|(_, s)| s), Some(F));
}

#[test]
fn shutdown_also_leaves_a_group_whose_delete_went_unanswered() {
    let (mut m, t0) = (machine(), Instant::now());
    joined(&mut m, t0, 1, F, F);
    let mut out = Vec::new();
    m.remove_member(t0, 1, &mut out);
    let (op, method, _) = sent(&out);
    assert_eq!(method, Method::DELETE);
    let mut out = Vec::new();
    m.answered(t0, op, None, &mut out);
    assert!(out.is_empty(), "tried again only after the backoff");
    assert_eq!(m.groups(), 1, "the master may still hold the bits");
    let mut out = Vec::new();
    m.leave_all(t0, &mut out);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F), "one last try at once");
    let mut out = Vec::new();
    m.answered(t0, op, None, &mut out);
    assert_eq!(m.groups(), 0, "nothing is kept after shutdown");
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn shutdown_also_ends_joins_still_out_or_waiting() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 1, F, "a")));
    let (op, ..) = sent(&out);
    let mut waiting = Vec::new();
    waiting.extend(ask(&mut m, now, change(true, 2, N, "b")));
    assert!(waiting.is_empty(), "b waits for a's join");
    let mut out = Vec::new();
    m.leave_all(now, &mut out);
    assert!(out.is_empty(), "nothing to send while a's join is out");
    // The master accepts a's join after all: its bits go at once, and b
    // never joins.
    let out = accept(&mut m, now, op, F);
    assert!(answers(&out).is_empty(), "{out:?}");
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F));
    assert!(accept(&mut m, now, op, JoinState::NONE).is_empty());
    assert_eq!((m.groups(), m.members()), (0, 0));
    let mut out = Vec::new();
    out.extend(ask(&mut m, now, change(true, 3, F, "c")));
    assert_eq!(
        answers(&out),
        [("c", JoinAnswer::Refused(MadStatus::BUSY))],
        "no new joins once shutting down"
    );
}

#[test]
fn given_fields_must_equal_the_groups() {
    let mut g = McMemberRecord::new_zeroed();
    g.set_qkey(0x1234);
    g.set_pkey(0xFFFF);
    g.set_mtu_selector(Selector::Exactly);
    g.set_mtu(Mtu::MTU_2048);
    g.set_mlid(0xC001);
    let mut r = McMemberRecord::new_zeroed();
    assert!(compatible(&g, mc::JOIN, &r), "nothing given");
    r.set_qkey(0x1234);
    assert!(compatible(&g, mc::JOIN | mc::QKEY, &r));
    r.set_qkey(0x9);
    assert!(!compatible(&g, mc::JOIN | mc::QKEY, &r));
    let mut r = McMemberRecord::new_zeroed();
    r.set_pkey(0x7FFF);
    assert!(
        compatible(&g, mc::JOIN | mc::PKEY, &r),
        "the same partition, limited"
    );
    r.set_mtu_selector(Selector::Exactly);
    r.set_mtu(Mtu::MTU_2048);
    assert!(compatible(&g, mc::JOIN | mc::MTU_SELECTOR | mc::MTU, &r));
    r.set_mtu_selector(Selector::LessThan);
    assert!(
        !compatible(&g, mc::JOIN | mc::MTU_SELECTOR | mc::MTU, &r),
        "the master decides"
    );
}

/// The Events among `effects`, as (member, event).
fn events(effects: &[Effect<u8, &'static str>]) -> Vec<(u8, GroupEvent)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Event { member, event } => Some((*member, *event)),
            _ => None,
        })
        .collect()
}

#[test]
fn bits_another_agent_held_before_the_first_join_are_never_deleted() {
    let (mut m, now) = (machine(), Instant::now());
    // The kernel holds the port in the group already: the master says the
    // port is a member, without saying with which bits.
    let mut out = Vec::new();
    m.request(now, change(true, 1, F, "a"), &mut out);
    let out = probe_answered(&mut m, now, out, MadStatus::OK);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, F));
    accept(&mut m, now, op, F);
    // The member leaves: Full may be the kernel's, so nothing is deleted,
    // and nothing of the group is kept here.
    let out = ask(&mut m, now, change(false, 1, F, "b"));
    assert!(matches!(answers(&out)[..], [("b", JoinAnswer::Left(_))]));
    assert!(
        out.iter().all(|e| !matches!(e, Effect::Send { .. })),
        "{out:?}"
    );
    assert_eq!(m.groups(), 0);
    assert!(m.possibly_held().is_empty());
}

#[test]
fn bits_the_master_shows_that_nobody_here_asked_for_stay() {
    let (mut m, now) = (machine(), Instant::now());
    // The port was not in the group; the join of Full comes back holding
    // SendOnlyNon too, which another agent added meanwhile.
    let son = JoinState::SEND_ONLY_NON_MEMBER;
    joined(&mut m, now, 1, F, F | son);
    assert_eq!(m.possibly_held(), [(MGID, F)]);
    let out = ask(&mut m, now, change(false, 1, F, "b"));
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::DELETE, F), "only this agent's bit");
    let out = accept(&mut m, now, op, son);
    match &answers(&out)[..] {
        [("b", JoinAnswer::Left(r))] => {
            assert_eq!(r.join_state(), son, "the port keeps the other bit")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.groups(), 0, "nothing of ours is left to track");
}

#[test]
fn a_deleted_group_is_joined_again_and_its_members_hear_both_times() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F, F);
    joined(&mut m, now, 2, N, F | N);
    let mut out = Vec::new();
    m.group_deleted(now, MGID, &mut out);
    let mut lost = events(&out);
    lost.sort_by_key(|(member, _)| *member);
    assert_eq!(
        lost,
        [(1, GroupEvent::Lost(MGID)), (2, GroupEvent::Lost(MGID))]
    );
    // Member 1 is a full member: joining again creates the group, with a
    // new MLID.
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, F | N));
    let mut back = record(F | N);
    back.set_mlid(0xC00A);
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::OK, Some(back))), &mut out);
    let news = events(&out);
    assert_eq!(news.len(), 2, "{out:?}");
    assert!(
        news.iter()
            .all(|(_, e)| matches!(e, GroupEvent::Recreated(r) if r.mlid() == 0xC00A))
    );
    assert_eq!(
        m.held(MGID).map(|(r, s)| (r.mlid(), s)),
        Some((0xC00A, F | N))
    );
}

#[test]
fn a_deleted_group_without_a_full_member_here_waits_for_trap_66() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 2, N, N);
    let mut out = Vec::new();
    m.group_deleted(now, MGID, &mut out);
    assert_eq!(events(&out), [(2, GroupEvent::Lost(MGID))]);
    let (op, method, _) = sent(&out);
    assert_eq!(method, Method::SET);
    // A non-member cannot create the group: the master refuses.
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::ERR_REQ_INVALID, None)), &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(m.poll_timeout(), None, "no polling: trap 66 says when");
    let mut out = Vec::new();
    m.group_created(now, MGID, &mut out);
    let (op, method, bits) = sent(&out);
    assert_eq!((method, bits), (Method::SET, N));
    let out = accept(&mut m, now, op, N);
    assert!(matches!(events(&out)[..], [(2, GroupEvent::Recreated(_))]));
}

#[test]
fn a_new_master_that_moves_a_group_tells_its_members() {
    let (mut m, now) = (machine(), Instant::now());
    joined(&mut m, now, 1, F, F);
    let mut out = Vec::new();
    m.rejoin_all(&mut out);
    let (op, ..) = sent(&out);
    // Same MLID: nothing to tell.
    assert!(events(&accept(&mut m, now, op, F)).is_empty());
    let mut out = Vec::new();
    m.rejoin_all(&mut out);
    let (op, ..) = sent(&out);
    let mut moved = record(F);
    moved.set_mlid(0xC0FF);
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::OK, Some(moved))), &mut out);
    assert!(matches!(events(&out)[..], [(1, GroupEvent::Recreated(r))] if r.mlid() == 0xC0FF));
}

#[test]
fn what_a_previous_agent_left_is_deleted_unless_a_member_holds_it() {
    let (mut m, now) = (machine(), Instant::now());
    let other = Gid::new(0xff12_601b_ffff_0000, 0x43);
    joined(&mut m, now, 1, F, F);
    let mut out = Vec::new();
    m.adopt(now, MGID, F | N, &mut out);
    m.adopt(now, other, F, &mut out);
    let mut deletes: Vec<(Gid, JoinState)> = out
        .iter()
        .filter_map(|e| match e {
            Effect::Send { method, record, .. } if *method == Method::DELETE => {
                Some((record.mgid(), record.join_state()))
            }
            _ => None,
        })
        .collect();
    deletes.sort_by_key(|(g, _)| *g);
    assert_eq!(deletes, [(MGID, N), (other, F)], "member 1 keeps Full");
}

#[test]
fn bits_being_joined_count_as_possibly_held() {
    let (mut m, now) = (machine(), Instant::now());
    let out = ask(&mut m, now, change(true, 1, F, "a"));
    let (op, ..) = sent(&out);
    assert_eq!(m.possibly_held(), [(MGID, F)], "asked, not yet answered");
    let mut out = Vec::new();
    m.answered(now, op, Some((MadStatus::ERR_REQ_INVALID, None)), &mut out);
    assert!(m.possibly_held().is_empty());
}

#[test]
fn requests_piling_up_behind_a_busy_group_are_bounded() {
    let (mut m, now) = (machine(), Instant::now());
    let mut out = Vec::new();
    m.request(now, change(true, 1, F, "first"), &mut out);
    assert_eq!(
        sent(&out).1,
        Method::GET,
        "the group is busy with its probe"
    );
    let mut out = Vec::new();
    for _ in 0..MAX_WAITING_PER_GROUP + 10 {
        m.request(now, change(true, 2, N, "more"), &mut out);
    }
    let busy = answers(&out);
    assert_eq!(busy.len(), 10, "past the bound, answered at once");
    assert!(
        busy.iter()
            .all(|(_, a)| *a == JoinAnswer::Refused(MadStatus::BUSY))
    );
}
