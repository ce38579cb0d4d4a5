//! The outlook: what tells a driver that shares the core with its umad
//! reader thread whether a MAD the reader handed in left it work. A query
//! answered from the cache must leave nothing but the answer to send (else
//! every answer wakes the driver); anything that leaves a timer, a local
//! reply or readiness to act on must show (else the driver sleeps through
//! it).

use mad_codec::Method;
use mad_codec::attr::path_record::mask as pr;

use super::bench::{Bench, MY_LID, client, local_get, pr_request};
use super::fake_master::gid;

#[test]
fn a_query_answered_from_the_cache_leaves_the_outlook_as_it_was() {
    let mut b = Bench::started();
    let before = b.core.outlook();
    let req = pr_request(Method::GET, 7, pr::SGID | pr::DGID, |t| {
        t.set_sgid(gid(MY_LID));
        t.set_dgid(gid(5));
    });
    b.deliver(client(30), &req);
    assert_eq!(b.core.outlook(), before);
    let answer = b.core.poll_transmit().expect("the answer, to send");
    assert_eq!(answer.dest.lid, 30);
}

#[test]
fn a_query_passed_to_the_master_and_its_answer_each_change_the_outlook() {
    let mut b = Bench::started();
    b.master.answering = false;
    let before = b.core.outlook();
    // Not this port's path: the master is asked, and a retry timer runs.
    let req = pr_request(Method::GET, 8, pr::SLID | pr::DLID, |t| {
        t.set_slid(3);
        t.set_dlid(4);
    });
    b.deliver(client(30), &req);
    let waiting = b.core.outlook();
    assert_ne!(waiting.timeout, before.timeout, "a time-out to wait for");
    assert!(!waiting.idle, "a query in flight");
    b.pump();
    b.master.answering = true;
    b.advance(crate::config::AgentConfig::default().upstream_timeout);
    assert_eq!(b.take_sent(30).len(), 1, "answered from the master");
    assert!(b.core.outlook().idle);
}

#[test]
fn a_reply_for_a_local_program_shows_until_it_is_taken() {
    let mut b = Bench::started();
    b.core.handle_local(b.now, 1, 1, local_get(3, 4));
    b.pump();
    assert!(b.core.outlook().local_replies, "the master's answer waits");
    let _ = b.core.poll_local();
    assert!(!b.core.outlook().local_replies);
}
