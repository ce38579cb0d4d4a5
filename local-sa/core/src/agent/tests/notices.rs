//! Reports from the master: acknowledged at once, and the store follows
//! ports going out of (trap 65) and into (trap 64) service.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, Method, TrapDetails};

use super::bench::{Bench, MY_LID};
use super::fake_master::{gid, guid, path};

#[test]
fn trap_65_drops_every_path_of_the_port_and_is_acknowledged() {
    let mut b = Bench::started();
    b.master
        .report(TrapDetails::GidOutOfService { gid: gid(5) });
    b.pump();
    assert_eq!(b.master.report_resps.len(), 1, "the Report was answered");
    let store = b.core.store();
    assert!(store.get(MY_LID, 5).is_none());
    assert!(store.port(guid(5)).is_none());
    assert_eq!(store.len(), usize::from(super::bench::HOSTS) - 1);
    assert_eq!(b.core.counters().notices, 1);
}

#[test]
fn trap_64_fetches_the_paths_to_the_port_that_came_back() {
    let mut b = Bench::started();
    b.master.paths.push(path(MY_LID, 20));
    b.master.report(TrapDetails::GidInService { gid: gid(20) });
    b.pump();
    assert_eq!(b.master.report_resps.len(), 1);
    let ask = b.master.requests.last().unwrap();
    assert_eq!(
        (ask.attribute, ask.method, ask.mask),
        (
            AttributeId::PATH_RECORD,
            Method::GET_TABLE,
            pr::SGID | pr::DGID
        )
    );
    assert_eq!(
        (ask.template.sgid(), ask.template.dgid()),
        (gid(MY_LID), gid(20))
    );
    assert!(b.core.store().get(MY_LID, 20).is_some());
}

/// Trap 64 for one port, several times while the first fetch is out (a
/// master that repeats its Report, or a port that flaps): one request.
#[test]
fn repeated_trap_64s_for_one_port_make_one_request() {
    let mut b = Bench::started();
    b.master.paths.push(path(MY_LID, 20));
    b.master.answering = false;
    let before = b.master.requests.len();
    for _ in 0..5 {
        b.master.report(TrapDetails::GidInService { gid: gid(20) });
        b.pump();
    }
    let asked = |b: &Bench| {
        b.master.requests[before..]
            .iter()
            .filter(|s| s.attribute == AttributeId::PATH_RECORD)
            .count()
    };
    assert_eq!(asked(&b), 1, "one request while the first is out");
    b.master.answering = true;
    b.advance(std::time::Duration::from_secs(5));
    assert!(b.core.store().get(MY_LID, 20).is_some());
    assert_eq!(
        asked(&b),
        2,
        "the one request, resent once after its time-out"
    );
}

#[test]
fn other_notices_are_acknowledged_and_change_nothing() {
    let mut b = Bench::started();
    let before = b.core.store().len();
    b.master
        .report(TrapDetails::McGroupCreated { mgid: gid(1) });
    b.pump();
    assert_eq!(b.master.report_resps.len(), 1);
    assert_eq!(b.core.store().len(), before);
}

#[test]
fn a_report_from_anyone_but_the_master_changes_nothing() {
    let mut b = Bench::started();
    let before = b.core.store().len();
    b.master
        .report(TrapDetails::GidOutOfService { gid: gid(5) });
    let (forged, _) = b.master.poll_transmit().unwrap();
    let answers = b.ask(super::bench::client(30), &forged);
    assert_eq!(answers.len(), 1, "acknowledged all the same");
    assert_eq!(b.core.store().len(), before);
    assert_eq!(
        (b.core.counters().notices, b.core.counters().denied),
        (0, 1)
    );
}
