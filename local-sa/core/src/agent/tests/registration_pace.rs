//! Registration traffic under abuse: a connection that joined many groups
//! closes, and the leaves reach the master at this port's pace with a
//! bounded number out at once, while the agent keeps answering everything
//! else at once.

use std::time::Duration;

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, JoinState, MadStatus, McMemberRecord, Method};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID};
use super::fake_master::{FakeMaster, gid};
use crate::agent::AgentConfig;
use crate::pacing::{MasterPace, REGISTRATION_BURST};
use crate::quota::LocalUser;
use crate::request::{LocalBody, Request};

fn group(n: u64) -> Gid {
    Gid::new(0xff12_401b_ffff_0000, 0x1_0000 | n)
}

fn join(n: u64) -> Request {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(group(n));
    r.set_qkey(0x0B1B);
    r.set_pkey(0xFFFF);
    r.set_join_state(JoinState::FULL_MEMBER);
    Request::Join {
        mask: mc::CREATE,
        record: r,
    }
}

fn deletes(b: &Bench) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::MC_MEMBER_RECORD && s.method == Method::DELETE)
        .count()
}

/// An agent whose port's share of the fabric's registrations is 10 a
/// second: 120 a second over the fake fabric's 12 ports.
fn paced() -> Bench {
    let config = AgentConfig {
        pace: MasterPace {
            registrations_per_second: 120,
            ..MasterPace::default()
        },
        ..AgentConfig::default()
    };
    Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config)
}

/// Connection 1, root's, joins `n` groups, one request at a time as a
/// client that waits for each answer; time passes as the pace needs.
fn join_many(b: &mut Bench, n: u64) {
    let root = LocalUser {
        uid: 0,
        privileged: true,
    };
    b.core.handle_local_opened(1, root);
    for i in 0..n {
        b.core.handle_local(b.now, 1, i as u32, join(i));
        b.pump();
        let mut reply = b.core.poll_local();
        while reply.is_none() {
            b.advance(Duration::from_millis(10));
            reply = b.core.poll_local();
        }
        assert_eq!(reply.unwrap().status, MadStatus::OK, "join {i}");
    }
    assert_eq!(b.core.counters().groups, n);
}

#[test]
fn leaves_after_a_close_go_at_the_pace_with_a_bounded_number_out() {
    let mut b = paced();
    join_many(&mut b, 200);
    // Long enough for the bucket to fill again.
    b.advance(Duration::from_secs(10));

    // The master stops answering; the connection closes.
    b.master.answering = false;
    let before = deletes(&b);
    b.core.handle_local_closed(b.now, 1);
    b.pump();
    let out = b.core.config.pace.registrations_in_flight;
    assert_eq!(deletes(&b) - before, out, "only so many out at once");
    assert_eq!(b.core.counters().registrations_in_flight, out as u64);
    assert_eq!(b.core.counters().registrations_waiting, 200 - out as u64);

    // The agent answers everything else at once meanwhile.
    b.core.handle_local(b.now, 2, 1, Request::Hello);
    assert!(matches!(
        b.core.poll_local().map(|r| r.body),
        Some(LocalBody::Hello(_))
    ));

    // The master answers again: after the burst, ten a second.
    b.master.answering = true;
    let resumed = b.now;
    b.advance(Duration::from_secs(5));
    let sent = deletes(&b) - before;
    assert!(
        sent > out && sent <= REGISTRATION_BURST as usize + 50 + out,
        "{sent} Deletes in 5 s"
    );
    b.advance(Duration::from_secs(60));
    assert_eq!(b.core.counters().groups, 0, "every group left");
    assert!(b.master.groups.is_empty(), "the master holds none of them");
    assert_eq!(
        b.master.member_state(group(0), gid(MY_LID)),
        JoinState::NONE
    );
    assert!(b.now > resumed);
}

#[test]
fn a_joins_answer_waits_for_its_turn_and_comes() {
    let mut b = paced();
    // Past the burst (each join of a new group asks whether the port is
    // in it and whether it exists, then sends the Set), joins wait for
    // the pace; every one is answered.
    let start = b.now;
    join_many(&mut b, 40);
    let took = b.now - start;
    // 120 requests, 32 at once, 88 more at 10 a second.
    assert!(
        took >= Duration::from_secs(8) && took <= Duration::from_secs(10),
        "{took:?}"
    );
}
