//! Queries the cache cannot answer: one upstream query however many ask,
//! the answer to all of them, and the answer kept for a while.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MadStatus, Method, SaMad};

use super::bench::{Bench, client, local_get, pr_request, status};
use super::fake_master::path;
use crate::agent::AgentConfig;

/// A Get for the path 3 → `dlid`: not from this port, so not cached.
fn elsewhere(tid: u64, dlid: u16) -> bytes::Bytes {
    pr_request(Method::GET, tid, pr::SLID | pr::DLID, |t| {
        t.set_slid(3);
        t.set_dlid(dlid);
    })
}

fn upstream_queries_for(b: &Bench, dlid: u16) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| {
            s.attribute == AttributeId::PATH_RECORD
                && s.template.slid() == 3
                && s.template.dlid() == dlid
        })
        .count()
}

#[test]
fn identical_misses_share_one_upstream_query_and_all_get_the_answer() {
    let mut b = Bench::started();
    b.master.answering = false; // hold the answer back while the askers pile up
    for lid in 30..35 {
        b.deliver(client(lid), &elsewhere(u64::from(lid), 4));
    }
    b.pump();
    assert_eq!(upstream_queries_for(&b, 4), 1, "five askers, one query");
    assert_eq!(b.core.counters().queries_waiting, 1);
    // The master answers the retry.
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    for lid in 30..35 {
        let got = b.take_sent(lid);
        assert_eq!(got.len(), 1, "asker {lid} answered once");
        let m = SaMad::parse(&got[0]).unwrap();
        assert_eq!(m.mad().status(), MadStatus::OK);
        assert_eq!(m.mad().transaction_id(), u64::from(lid), "with its own TID");
        assert_eq!(m.data(), path(3, 4).as_bytes());
    }
    let c = b.core.counters();
    assert_eq!((c.misses, c.coalesced, c.queries_waiting), (5, 4, 0));
}

#[test]
fn a_forwarded_answer_is_reused_until_it_expires() {
    let mut b = Bench::started();
    let first = b.ask(client(30), &elsewhere(1, 4));
    assert_eq!(status(&first[0]), MadStatus::OK);
    b.advance(AgentConfig::default().answer_ttl - Duration::from_secs(1));
    let again = b.ask(client(31), &elsewhere(2, 4));
    let m = SaMad::parse(&again[0]).unwrap();
    assert_eq!(
        (m.mad().status(), m.mad().transaction_id()),
        (MadStatus::OK, 2)
    );
    assert_eq!(m.data(), path(3, 4).as_bytes());
    assert_eq!(
        upstream_queries_for(&b, 4),
        1,
        "answered from the kept answer"
    );
    assert_eq!(b.core.counters().answer_cache_hits, 1);
    b.advance(Duration::from_secs(2));
    b.ask(client(31), &elsewhere(3, 4));
    assert_eq!(
        upstream_queries_for(&b, 4),
        2,
        "asked again once it expired"
    );
}

#[test]
fn no_such_record_is_remembered_only_briefly() {
    let mut b = Bench::started();
    let config = AgentConfig::default();
    assert_eq!(
        status(&b.ask(client(30), &elsewhere(1, 500))[0]),
        MadStatus::ERR_NO_RECORDS
    );
    b.advance(config.negative_ttl - Duration::from_millis(1));
    assert_eq!(
        status(&b.ask(client(30), &elsewhere(2, 500))[0]),
        MadStatus::ERR_NO_RECORDS
    );
    assert_eq!(upstream_queries_for(&b, 500), 1);
    b.advance(Duration::from_millis(2));
    b.ask(client(30), &elsewhere(3, 500));
    assert_eq!(upstream_queries_for(&b, 500), 2);
}

#[test]
fn a_fabric_change_forgets_kept_answers() {
    let mut b = Bench::started();
    b.ask(client(30), &elsewhere(1, 4));
    b.master.report(mad_codec::TrapDetails::GidOutOfService {
        gid: super::fake_master::gid(8),
    });
    b.pump();
    b.ask(client(30), &elsewhere(2, 4));
    assert_eq!(
        upstream_queries_for(&b, 4),
        2,
        "a trap makes kept answers stale"
    );
}

#[test]
fn a_cut_table_from_the_master_is_passed_on_as_it_came_and_not_kept() {
    let mut master =
        super::fake_master::FakeMaster::new(super::bench::MASTER_LID, super::bench::HOSTS);
    master.delivery = super::fake_master::Delivery::Cut;
    let mut b = Bench::new(master, AgentConfig::default());
    let table = |tid| pr_request(Method::GET_TABLE, tid, pr::SLID, |t| t.set_slid(3));
    let got = b.ask(client(30), &table(0x77));
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].len(),
        mad_codec::MAD_LEN,
        "the whole cut MAD, not a re-framed part of it"
    );
    let m = SaMad::parse(&got[0]).unwrap();
    assert_eq!(
        (m.mad().transaction_id(), m.mad().status()),
        (0x77, MadStatus::OK)
    );
    assert!(m.rmpp().is_active() && m.rmpp().rmpp_type() == mad_codec::header::RmppType::NONE);
    assert_eq!(&m.data()[..64], path(3, 1).as_bytes());
    b.ask(client(30), &table(0x78));
    let upstream = b
        .master
        .requests
        .iter()
        .filter(|s| s.mask == pr::SLID && s.template.slid() == 3)
        .count();
    assert_eq!(upstream, 2, "a cut answer is not reused");
}

#[test]
fn a_client_resending_while_it_waits_gets_one_answer() {
    let mut b = Bench::started();
    b.master.answering = false;
    for _ in 0..3 {
        b.deliver(client(30), &elsewhere(0x42, 4));
    }
    b.pump();
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    assert_eq!(b.take_sent(30).len(), 1);
    assert_eq!(
        upstream_queries_for(&b, 4),
        2,
        "the first attempt and the agent's own retry"
    );
}

#[test]
fn local_connections_get_cached_and_forwarded_paths() {
    use crate::request::LocalBody;
    let mut b = Bench::started();
    let ask = local_get;
    b.core
        .handle_local(b.now, 1, 1, ask(super::bench::MY_LID, 4));
    let hit = b.core.poll_local().expect("answered at once");
    let LocalBody::Records { data, .. } = hit.body else {
        panic!("records")
    };
    assert_eq!(&data[..], path(super::bench::MY_LID, 4).as_bytes());
    b.core.handle_local(b.now, 1, 2, ask(3, 4));
    b.pump();
    let miss = b.core.poll_local().expect("answered from the master");
    assert_eq!((miss.request, miss.status), (2, MadStatus::OK));
    assert_eq!(upstream_queries_for(&b, 4), 1);
    // A connection that closes while it waits gets nothing later.
    b.master.answering = false;
    b.core.handle_local(b.now, 1, 3, ask(3, 5));
    b.pump();
    b.core.handle_local_closed(b.now, 1);
    b.advance(AgentConfig::default().upstream_timeout * 5);
    assert!(b.core.poll_local().is_none());
}

#[test]
fn a_cut_table_never_reaches_a_local_connection_as_if_it_were_whole() {
    use crate::request::{LocalBody, Lookup, PathQuery, Request};
    use mad_codec::zerocopy::FromZeros;
    let mut master =
        super::fake_master::FakeMaster::new(super::bench::MASTER_LID, super::bench::HOSTS);
    master.delivery = super::fake_master::Delivery::Cut;
    let mut b = Bench::new(master, AgentConfig::default());
    let mut template = mad_codec::PathRecord::new_zeroed();
    template.set_slid(3);
    let table = Request::PathQuery {
        query: PathQuery {
            method: Method::GET_TABLE,
            mask: pr::SLID,
            template,
        },
        lookup: Lookup::Anywhere,
    };
    b.core.handle_local(b.now, 1, 5, table);
    b.pump();
    let reply = b.core.poll_local().expect("an answer");
    assert_eq!(
        (reply.request, reply.status, reply.body),
        (5, MadStatus::ERR_NO_RESOURCES, LocalBody::Empty),
        "the master's table arrived cut: no partial table passed off as whole"
    );
    // A port asking the same gets the master's answer as it came.
    let got = b.ask(
        client(30),
        &pr_request(Method::GET_TABLE, 0x79, pr::SLID, |t| t.set_slid(3)),
    );
    assert_eq!(got.len(), 1);
    assert_eq!(SaMad::parse(&got[0]).unwrap().mad().status(), MadStatus::OK);
}

#[test]
fn an_error_answer_framed_like_a_table_still_reaches_a_local_connection() {
    let mut master =
        super::fake_master::FakeMaster::new(super::bench::MASTER_LID, super::bench::HOSTS);
    master.delivery = super::fake_master::Delivery::Cut;
    master.rmpp_errors = true;
    let mut b = Bench::new(master, AgentConfig::default());
    b.core
        .handle_local(b.now, 1, 6, local_get(super::bench::MY_LID, 999));
    b.pump();
    let reply = b.core.poll_local().expect("an answer");
    assert_eq!(
        (reply.request, reply.status),
        (6, MadStatus::ERR_NO_RECORDS),
        "the master's status, not a made-up shortage"
    );
}

#[test]
fn distinct_misses_past_what_the_master_gets_through_are_answered_busy() {
    let mut b = Bench::started();
    b.master.answering = false;
    let before = b.master.requests.len();
    // Five thousand distinct misses from one port, all at once.
    let asker = client(30);
    for i in 0..5000u16 {
        b.deliver(asker, &elsewhere(u64::from(i), 1000 + i));
    }
    b.pump();
    assert_eq!(b.master.requests.len() - before, 64, "64 out at once");
    let c = b.core.counters();
    assert_eq!(c.queries_queued, 4096, "the rest wait, up to 4,096");
    let refused = b.take_sent(30);
    assert_eq!(refused.len(), 5000 - 64 - 4096, "past that, BUSY at once");
    assert!(refused.iter().all(|m| status(m) == MadStatus::BUSY));
    assert_eq!(c.upstream_refused, refused.len() as u64);

    // The master stays silent: the waiting ones are answered BUSY once
    // their askers would have given up, not later.
    b.advance(AgentConfig::default().upstream_timeout * 4);
    let busy = b.take_sent(30);
    assert_eq!(busy.len(), 64 + 4096);
    assert!(busy.iter().all(|m| status(m) == MadStatus::BUSY));
    assert_eq!(b.core.counters().queries_queued, 0);

    // The master answers again: a query goes at once.
    b.master.answering = true;
    let got = b.ask(client(31), &elsewhere(1, 4));
    assert_eq!(got.len(), 1);
    assert_eq!(status(&got[0]), MadStatus::OK);
}
