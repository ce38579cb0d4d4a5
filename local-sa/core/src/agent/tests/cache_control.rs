//! The administrators' requests: a refresh now, a flush, a dump.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method};

use super::bench::{Bench, HOSTS, MY_LID, client, path_records, pr_request, status};
use super::fake_master::path;
use crate::agent::AgentConfig;
use crate::request::{DUMP_PAGE, dump_from_after};
use crate::request::{LocalBody, LocalReply, Request};

/// Bulk tables of this port's paths the master was asked for.
fn bulk_requests(b: &Bench) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| {
            s.attribute == AttributeId::PATH_RECORD
                && s.method == Method::GET_TABLE
                && s.template.dlid() == 0
        })
        .count()
}

fn replies(b: &mut Bench) -> Vec<LocalReply> {
    std::iter::from_fn(|| b.core.poll_local()).collect()
}

fn change(r: &LocalReply) -> (MadStatus, u64, u64) {
    match r.body {
        LocalBody::CacheChange { before, after } => (r.status, before, after),
        ref other => panic!("not a cache change: {other:?}"),
    }
}

#[test]
fn a_refresh_asked_for_is_answered_when_the_new_table_is_in() {
    let mut b = Bench::started();
    let held = b.core.store().len() as u64;
    assert_eq!(held, u64::from(HOSTS));
    let bulks = bulk_requests(&b);
    // The master lost a host meanwhile; the refresh shows it.
    b.master.paths.retain(|p| p.dlid() != 9);
    b.core.handle_local(b.now, 7, 1, Request::Refresh);
    // The request for the table is out, not yet at the master.
    assert!(replies(&mut b).is_empty(), "answered when the table is in");
    // A second asker joins the refresh running.
    b.core.handle_local(b.now, 8, 1, Request::Refresh);
    b.pump();
    assert_eq!(bulk_requests(&b), bulks + 1, "one table for both");
    let got = replies(&mut b);
    assert_eq!(got.len(), 2);
    for r in &got {
        assert_eq!(change(r), (MadStatus::OK, held, held - 1));
    }
    assert_eq!((got[0].conn, got[1].conn), (7, 8));
}

#[test]
fn a_refresh_the_master_leaves_unanswered_ends_busy() {
    let mut b = Bench::started();
    let held = b.core.store().len() as u64;
    b.master.answering = false;
    b.core.handle_local(b.now, 7, 1, Request::Refresh);
    let config = AgentConfig::default();
    for _ in 0..=config.upstream_retries {
        // Each attempt waits up to half as long again (the port's phase).
        b.advance(config.table_timeout * 3 / 2);
    }
    let got = replies(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(
        change(&got[0]),
        (MadStatus::BUSY, held, held),
        "the cache kept"
    );
}

#[test]
fn a_closed_connection_waits_for_no_refresh() {
    let mut b = Bench::started();
    b.master.answering = false;
    b.core.handle_local(b.now, 7, 1, Request::Refresh);
    b.core.handle_local_closed(b.now, 7);
    b.master.answering = true;
    b.advance(AgentConfig::default().upstream_timeout);
    assert!(replies(&mut b).is_empty());
}

#[test]
fn after_a_flush_queries_go_to_the_master_until_the_next_refresh() {
    let mut b = Bench::started();
    let held = b.core.store().len() as u64;
    let get = pr_request(Method::GET, 5, pr::SLID | pr::DLID, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(4);
    });
    let before = b.master.count(AttributeId::PATH_RECORD);
    assert_eq!(status(&b.query(client(30), &get)), MadStatus::OK);
    assert_eq!(b.master.count(AttributeId::PATH_RECORD), before, "cached");

    b.core.handle_local(b.now, 7, 1, Request::Flush);
    let got = replies(&mut b);
    assert_eq!(change(&got[0]), (MadStatus::OK, held, 0));
    assert!(b.core.store().is_empty());
    let answer = b.query(client(30), &get);
    assert_eq!(path_records(&answer), [path(MY_LID, 4)]);
    assert_eq!(
        b.master.count(AttributeId::PATH_RECORD),
        before + 1,
        "forwarded"
    );

    b.core.handle_local(b.now, 7, 2, Request::Refresh);
    b.pump();
    assert_eq!(change(&replies(&mut b)[0]), (MadStatus::OK, 0, held));
}

#[test]
fn a_dump_pages_through_every_record_once_in_order() {
    let mut b = Bench::started();
    let mut all: Vec<_> = b.core.store().iter().copied().collect();
    all.sort_unstable_by_key(|r| (r.slid(), r.dlid()));
    let mut seen = Vec::new();
    let mut from = 0;
    for id in 1.. {
        b.core.handle_local(
            b.now,
            7,
            id,
            Request::Dump {
                from,
                max: 5,
                partition: None,
            },
        );
        let r = replies(&mut b).remove(0);
        assert_eq!(r.status, MadStatus::OK);
        let page: Vec<_> = r.body.path_records().collect();
        seen.extend(page.iter().copied());
        match page.last() {
            Some(last) if page.len() == 5 => {
                from = dump_from_after(last).expect("not the last pair");
            }
            _ => break,
        }
    }
    assert_eq!(seen, all);
    // A page is at most one frame, whatever is asked.
    b.core.handle_local(
        b.now,
        7,
        99,
        Request::Dump {
            from: 0,
            max: u32::MAX,
            partition: None,
        },
    );
    let r = replies(&mut b).remove(0);
    assert!(r.body.path_records().count() <= DUMP_PAGE as usize);
}
