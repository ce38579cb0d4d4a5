//! PathRecord loads and deletes (docs/wire-contract.md): stored and
//! answered back exactly with the SM_Key, refused without it, and nothing
//! changed by a refused or malformed one.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::rmpp::{RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};

use super::bench::{
    Bench, HOSTS, MASTER_LID, MY_LID, client, padded, path_records, pr_request, status,
};
use super::fake_master::{FakeMaster, gid, path};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::load_flags::{KNOWN_ABSENT, REPLACE_SOURCES};

/// Where loads come from.
pub(super) const LOADER: u16 = 50;

/// The SM_Key the agent is configured with.
pub(super) const KEY: u64 = 0x5eed;

/// The agent with [`KEY`] configured, started.
pub(super) fn keyed() -> Bench {
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    };
    let b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    assert!(b.core.is_ready());
    b
}

/// Paths from LIDs 100.. to LIDs 1..=50: `sources` × 50 records.
pub(super) fn table(sources: u16) -> Vec<PathRecord> {
    (100..100 + sources)
        .flat_map(|s| (1..=50).map(move |d| path(s, d)))
        .collect()
}

pub(super) fn load_header(method: Method, tid: u64, sm_key: u64, modifier: u32) -> SaMadHeader {
    let mut b = SaMadBuilder::request(method, tid, AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(sm_key);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(modifier);
    *h
}

/// Sends `records` from the loader as an RMPP transfer and returns the
/// agent's answer (GetResp or DeleteResp) once the transfer ends.
pub(super) fn push(b: &mut Bench, header: SaMadHeader, records: &[PathRecord]) -> Bytes {
    push_from(b, LOADER, header, records)
}

/// [`push`] from a loader at `lid`.
pub(super) fn push_from(
    b: &mut Bench,
    lid: u16,
    header: SaMadHeader,
    records: &[PathRecord],
) -> Bytes {
    let data: Vec<u8> = records
        .iter()
        .flat_map(|r| r.as_bytes().iter().copied())
        .collect();
    push_bytes(b, lid, header, Bytes::from(data))
}

/// Sends `data` under `header` from a loader at `lid` as an RMPP
/// transfer and returns the agent's one answer once the transfer ends.
pub(super) fn push_bytes(b: &mut Bench, lid: u16, header: SaMadHeader, data: Bytes) -> Bytes {
    let mut sender = Sender::new(header, data, RmppConfig::default(), b.now).unwrap();
    let mut answers = VecDeque::new();
    for _ in 0..100_000 {
        while let Some(seg) = sender.poll_transmit(b.now) {
            b.deliver(client(lid), &seg);
        }
        b.pump();
        for m in b.take_sent(lid) {
            let (h, _) = SaMadHeader::parse(&m).unwrap();
            if h.rmpp.is_active() {
                sender.handle_control(b.now, &m);
            } else {
                answers.push_back(m);
            }
        }
        if sender.state() != TransferState::Active || !answers.is_empty() {
            break;
        }
    }
    assert_eq!(answers.len(), 1, "one answer to the load");
    answers.pop_front().unwrap()
}

/// A PathRecord Get for the pair (SLID, DLID).
fn pair_get(slid: u16, dlid: u16) -> Bytes {
    pr_request(
        Method::GET,
        0x70 + u64::from(dlid),
        pr::SLID | pr::DLID,
        |t| {
            t.set_slid(slid);
            t.set_dlid(dlid);
        },
    )
}

pub(super) fn modifier(mad: &[u8]) -> u32 {
    SaMad::parse(mad).unwrap().mad().attribute_modifier()
}

#[test]
fn a_settable_of_thousands_is_stored_and_answered_back_exactly() {
    let mut b = keyed();
    let sm_key = KEY;
    let records = table(40); // 2000 records, 128,000 bytes, 640 segments
    let answer = push(
        &mut b,
        load_header(Method::SET, 1, sm_key, REPLACE_SOURCES),
        &records,
    );
    let m = SaMad::parse(&answer).unwrap();
    assert_eq!(
        (m.mad().method(), m.mad().status()),
        (Method::GET_RESP, MadStatus::OK)
    );
    assert_eq!(
        modifier(&answer),
        2000,
        "AttributeModifier counts what was stored"
    );
    assert_eq!(b.core.store().len(), usize::from(HOSTS) + 2000);
    let before = b.master.requests.len();
    // Each loaded source is complete: its table is answered here, exactly.
    for s in [100, 117, 139] {
        let req = pr_request(Method::GET_TABLE, u64::from(s), pr::SGID, |t| {
            t.set_sgid(gid(s))
        });
        let got = b.query(client(30), &req);
        let expected: Vec<PathRecord> = records.iter().filter(|r| r.slid() == s).copied().collect();
        assert_eq!(path_records(&got), expected);
    }
    assert_eq!(
        b.master.requests.len(),
        before,
        "answered without the master"
    );
    let c = b.core.counters();
    assert_eq!((c.loaded, c.transfers_active), (2000, 0));
    // The finished receiver stays only to re-ACK a lost final ACK.
    b.advance(RmppConfig::default().linger);
    assert_eq!(b.core.transfers.held(), 0);
}

#[test]
fn a_replacing_load_drops_what_the_source_had_before() {
    let mut b = keyed();
    let key = KEY;
    push(
        &mut b,
        load_header(Method::SET, 1, key, REPLACE_SOURCES),
        &table(2),
    );
    let fewer: Vec<PathRecord> = table(2).into_iter().filter(|r| r.dlid() <= 10).collect();
    let answer = push(
        &mut b,
        load_header(Method::SET, 2, key, REPLACE_SOURCES),
        &fewer,
    );
    assert_eq!(modifier(&answer), 20);
    assert_eq!(b.core.store().from_lid(100).count(), 10);
    assert!(b.core.store().get(100, 11).is_none());
    // Without the bit, a load only adds and replaces.
    push(&mut b, load_header(Method::SET, 3, key, 0), &table(1)[40..]);
    assert_eq!(b.core.store().from_lid(100).count(), 20);
}

#[test]
fn a_load_without_the_sm_key_is_denied_at_its_first_segment_and_changes_nothing() {
    let mut b = keyed();
    let before = b.core.store().len();
    let answer = push(
        &mut b,
        load_header(Method::SET, 1, 0xBAD, REPLACE_SOURCES),
        &table(10),
    );
    assert_eq!(status(&answer), MadStatus::ERR_REQ_DENIED);
    assert_eq!(modifier(&answer), 0);
    assert_eq!(b.core.store().len(), before);
    // A one-MAD Set and a Delete without it fare no better.
    let one = SaMadBuilder::new(load_header(Method::SET, 2, 0, 0))
        .record(&path(100, 1))
        .into_bytes();
    assert_eq!(
        status(&b.ask(client(LOADER), &padded(&one))[0]),
        MadStatus::ERR_REQ_DENIED
    );
    let mut del = load_header(Method::DELETE, 3, 7, 0);
    del.sa.set_component_mask(pr::SLID);
    let del = SaMadBuilder::new(del).record(&path(MY_LID, 1)).into_bytes();
    assert_eq!(
        status(&b.ask(client(LOADER), &padded(&del))[0]),
        MadStatus::ERR_REQ_DENIED
    );
    assert_eq!(b.core.store().len(), before);
    let c = b.core.counters();
    assert_eq!(
        (c.denied, c.loaded, c.deleted, c.transfers_active),
        (3, 0, 0, 0)
    );
}

#[test]
fn delete_removes_exactly_the_records_it_names() {
    let mut b = keyed();
    let key = KEY;
    push(&mut b, load_header(Method::SET, 1, key, 0), &table(4));
    let total = b.core.store().len();
    // N exact records (mask 0): their (SLID, DLID) pairs go.
    let named = [path(100, 1), path(101, 2), path(102, 3), path(103, 999)];
    let answer = push(&mut b, load_header(Method::DELETE, 2, key, 0), &named);
    let m = SaMad::parse(&answer).unwrap();
    assert_eq!(
        (m.mad().method(), m.mad().status()),
        (Method::DELETE_RESP, MadStatus::OK)
    );
    assert_eq!(modifier(&answer), 3, "the pair nobody had is not counted");
    assert_eq!(b.core.store().len(), total - 3);
    assert!(b.core.store().get(100, 1).is_none() && b.core.store().get(100, 2).is_some());
    // A template: every record to DLID 7, whatever its source.
    let mut h = load_header(Method::DELETE, 3, key, 0);
    h.sa.set_component_mask(pr::DLID);
    let template = SaMadBuilder::new(h)
        .record(&{
            // Only the selected field counts: the LIDs of a template may be 0.
            let mut t = PathRecord::new_zeroed();
            t.set_dlid(7);
            t
        })
        .into_bytes();
    let answer = b.ask(client(LOADER), &padded(&template));
    assert_eq!(modifier(&answer[0]), 5, "4 loaded sources and this port");
    assert_eq!(b.core.store().to_lid(7).count(), 0);
    assert_eq!(b.core.store().len(), total - 8);
    assert_eq!(b.core.counters().deleted, 8);
}

#[test]
fn malformed_loads_are_invalid_and_change_nothing() {
    let mut b = keyed();
    let key = KEY;
    let before = b.core.store().len();
    let mut bad = table(1);
    bad[30].set_dlid(0);
    let answer = push(&mut b, load_header(Method::SET, 1, key, 0), &bad);
    assert_eq!(status(&answer), MadStatus::ERR_REQ_INVALID);
    assert_eq!(
        b.core.store().len(),
        before,
        "one bad record spoils the whole load"
    );
    // A template delete carries exactly one record.
    let mut h = load_header(Method::DELETE, 2, key, 0);
    h.sa.set_component_mask(pr::DLID);
    let answer = push(&mut b, h, &table(1)[..5]);
    assert_eq!(status(&answer), MadStatus::ERR_REQ_INVALID);
    // An AttributeOffset that is not a PathRecord's.
    let mut h = load_header(Method::SET, 3, key, 0);
    h.sa.set_attribute_offset(3);
    let answer = push(&mut b, h, &table(1));
    assert_eq!(status(&answer), MadStatus::ERR_REQ_INVALID);
    assert_eq!(b.core.store().len(), before);
    assert_eq!(b.core.counters().errors, 3);
}

#[test]
fn a_delete_makes_what_it_removed_unknown_never_absent() {
    let mut b = keyed();
    let key = KEY;
    // This port is complete (its refresh), and a whole-table load makes
    // source 100 complete too: a Get for a pair either lacks is NO_RECORDS
    // from the cache.
    push(
        &mut b,
        load_header(Method::SET, 1, key, REPLACE_SOURCES),
        &table(1),
    );
    assert_eq!(
        status(&b.query(client(30), &pair_get(100, 60))),
        MadStatus::ERR_NO_RECORDS
    );
    let asked = b.master.requests.len();
    // Delete everything in the default partition: every record of both.
    let mut h = load_header(Method::DELETE, 2, key, 0);
    h.sa.set_component_mask(pr::PKEY);
    let template = SaMadBuilder::new(h)
        .record(&{
            let mut t = PathRecord::new_zeroed();
            t.set_pkey(0xFFFF);
            t
        })
        .into_bytes();
    b.ask(client(LOADER), &padded(&template));
    assert_eq!(b.core.store().len(), 0);
    // What the cache lost is unknown now: the master answers, with its
    // own record.
    let answer = b.query(client(30), &pair_get(MY_LID, 5));
    assert_eq!(path_records(&answer), [path(MY_LID, 5)]);
    assert!(b.master.requests.len() > asked, "asked the master");
    assert!(
        !b.core.is_ready(),
        "this port's table is incomplete until its refresh"
    );
    // Source 100 too: the master, not the cache, says whether it has a
    // path (this fake master knows no LID 100).
    let asked = b.master.requests.len();
    let answer = b.query(client(30), &pair_get(100, 5));
    assert_eq!(status(&answer), MadStatus::ERR_NO_RECORDS);
    assert_eq!(b.master.requests.len(), asked + 1, "asked the master");
    // The next refresh makes this port complete again.
    b.advance(AgentConfig::default().refresh_interval);
    assert!(b.core.is_ready());
    assert_eq!(
        status(&b.query(client(30), &pair_get(MY_LID, 5))),
        MadStatus::OK
    );
}

#[test]
fn a_delete_of_pairs_gone_at_the_master_keeps_the_sources_complete() {
    let mut b = keyed();
    push(
        &mut b,
        load_header(Method::SET, 1, KEY, REPLACE_SOURCES),
        &table(1),
    );
    // A distributor's delta after a reroute: (100, 7) and this port's
    // (MY_LID, 5) are gone at the master.
    let answer = push(
        &mut b,
        load_header(Method::DELETE, 2, KEY, KNOWN_ABSENT),
        &[path(100, 7), path(MY_LID, 5)],
    );
    assert_eq!(modifier(&answer), 2, "both removed");
    let asked = b.master.requests.len();
    // Known absent: the cache says so itself, and answers the rest.
    assert_eq!(
        status(&b.query(client(30), &pair_get(100, 7))),
        MadStatus::ERR_NO_RECORDS
    );
    assert_eq!(
        status(&b.query(client(30), &pair_get(MY_LID, 5))),
        MadStatus::ERR_NO_RECORDS
    );
    assert_eq!(
        path_records(&b.query(client(30), &pair_get(100, 8))),
        [path(100, 8)]
    );
    assert_eq!(b.master.requests.len(), asked, "the master was not asked");
    assert!(b.core.is_ready(), "this port's table is still complete");
}

#[test]
fn without_a_configured_key_every_load_is_denied() {
    let mut b = Bench::started();
    let before = b.core.store().len();
    for key in [0, 1, KEY] {
        let answer = push(
            &mut b,
            load_header(Method::SET, u64::from(key as u8), key, 0),
            &table(1),
        );
        assert_eq!(
            SaMad::parse(&answer).unwrap().mad().status(),
            MadStatus::ERR_REQ_DENIED,
            "SM_Key {key:#x}, OpenSM's default 1 included"
        );
    }
    assert_eq!(b.core.store().len(), before, "nothing stored");
    assert_eq!(b.core.counters().denied, 3);
    assert!(!format!("{:?}", AgentConfig::default()).contains("5eed"));
    let keyed = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    };
    let shown = format!("{keyed:?}");
    assert!(
        !shown.contains("5eed") && !shown.contains("24301"),
        "the key never prints: {shown}"
    );
}

/// [`KEY`] configured, waiting 30 s at start for a load of its paths.
pub(super) fn waiting_for_a_load() -> AgentConfig {
    AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        load_wait: Duration::from_secs(30),
        ..AgentConfig::default()
    }
}

/// Where a distributor next to the master fills every node: with
/// `load_wait`, the agent waits for the load of its own paths instead of
/// asking the master for its table; the load stands for the refresh (the
/// agent is ready, registers, and the next refresh from the master waits
/// a whole interval).
#[test]
fn a_load_of_this_ports_paths_stands_for_its_refresh() {
    let config = waiting_for_a_load();
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    assert!(!b.core.is_ready());
    b.advance(Duration::from_secs(10));
    assert!(
        b.master.requests.is_empty(),
        "nothing asked of the master yet"
    );
    let mine: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    let answer = push(
        &mut b,
        load_header(Method::SET, 9, KEY, REPLACE_SOURCES),
        &mine,
    );
    assert_eq!(status(&answer), MadStatus::OK);
    assert!(b.core.is_ready(), "its own paths are complete");
    assert_eq!(b.core.counters().refreshes_loaded, 1);
    b.advance(config.pace.min_window);
    assert_eq!(
        b.master.count(AttributeId::PATH_RECORD),
        0,
        "no table asked for"
    );
    assert_eq!(b.master.subscriptions.len(), 3, "registered after the load");
    // The refresh from the master comes a whole interval later at the
    // earliest (at the port's phase from three quarters of it).
    b.advance(config.refresh_interval * 3 / 4 - Duration::from_secs(1));
    assert_eq!(b.master.count(AttributeId::PATH_RECORD), 0);
    b.advance(config.refresh_interval / 2 + Duration::from_secs(1));
    assert_eq!(b.master.count(AttributeId::PATH_RECORD), 1);
    // A load of other ports' paths is no refresh of this one's.
    let others = push(
        &mut b,
        load_header(Method::SET, 10, KEY, REPLACE_SOURCES),
        &table(2),
    );
    assert_eq!(status(&others), MadStatus::OK);
    assert_eq!(b.core.counters().refreshes_loaded, 1);
}

/// No load by `load_wait`: the agent asks the master itself.
#[test]
fn without_a_load_by_the_wait_the_master_is_asked() {
    let config = waiting_for_a_load();
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    b.advance(Duration::from_secs(29));
    assert!(b.master.requests.is_empty());
    // By the wait and the port's phase of a quarter of it.
    b.advance(Duration::from_secs(1) + config.load_wait / 4);
    assert!(b.core.is_ready());
    assert_eq!(b.master.count(AttributeId::PATH_RECORD), 1);
    assert_eq!(b.core.counters().refreshes_loaded, 0);
}
