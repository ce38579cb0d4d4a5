//! What a peer can make the agent hold through RMPP is bounded: loads it
//! starts and never finishes, loads larger than the memory allowed, table
//! answers it never acknowledges. Over a limit the agent refuses with STOP
//! (ResX) or ERR_NO_RESOURCES, counts the refusal, and serves everyone
//! else as before.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};
use mad_codec::rmpp::{RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{MAD_LEN, MadStatus, Method};

use super::bench::{Bench, HOSTS, MASTER_LID, client, path_records, pr_request, status};
use super::fake_master::{FakeMaster, gid};
use super::loads::{KEY, LOADER, keyed, load_header, push, push_from, table};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::load_flags::REPLACE_SOURCES;
use crate::transfers::TransferLimits;

/// The first segment of a load announcing `records` PathRecords, from
/// `from` under `tid`: what a peer sends to start a transfer it need never
/// finish.
fn first_segment(tid: u64, records: u32) -> Vec<u8> {
    let mut h = load_header(Method::SET, tid, KEY, REPLACE_SOURCES);
    let data = records * 64;
    let segments = data.div_ceil(200);
    let flags = RmppFlags::ACTIVE | RmppFlags::FIRST;
    h.rmpp = RmppHeader::new(
        RmppType::DATA,
        flags,
        RmppStatus::NORMAL,
        1,
        data + 20 * segments,
    );
    let mut mad = vec![0u8; MAD_LEN];
    mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
    mad
}

/// The RMPP type and status of a control MAD.
fn control(mad: &[u8]) -> (RmppType, RmppStatus) {
    let (h, _) = SaMadHeader::parse(mad).unwrap();
    (h.rmpp.rmpp_type(), h.rmpp.status())
}

#[test]
fn ten_thousand_half_loads_from_one_peer_hold_eight_and_time_out() {
    let mut b = keyed();
    let limits = TransferLimits::default();
    let mut stops = 0;
    for tid in 1..=10_000u64 {
        // Each announces a million records (64 MB) and sends one segment.
        for m in b.ask(client(LOADER), &first_segment(tid, 1_000_000)) {
            if control(&m) == (RmppType::STOP, RmppStatus::RESX) {
                stops += 1;
            }
        }
    }
    assert_eq!(stops, 10_000 - limits.receiving_per_source);
    let c = b.core.counters();
    assert_eq!(c.rmpp_refused_per_peer, 9_992);
    assert_eq!(c.transfers_active, 8);
    assert!(
        b.core.transfers.held_bytes() < 8 * 4096,
        "{} bytes held for 8 one-segment transfers",
        b.core.transfers.held_bytes()
    );

    // Another node's load and any query are served meanwhile.
    const OTHER: u16 = 60;
    let mut other = load_header(Method::SET, 1, KEY, REPLACE_SOURCES);
    other.mad.set_transaction_id(7);
    let answer = push_from(&mut b, OTHER, other, &table(2));
    assert_eq!(status(&answer), MadStatus::OK);
    let get = pr_request(Method::GET, 9, pr::SGID | pr::DGID, |t| {
        t.set_sgid(gid(100));
        t.set_dgid(gid(7));
    });
    assert_eq!(path_records(&b.query(client(30), &get)).len(), 1);

    // The half-finished ones end at the IBA's total time-out, with ABORT.
    b.take_sent(LOADER);
    b.advance(RmppConfig::default().total_timeout);
    let aborts = b
        .take_sent(LOADER)
        .iter()
        .filter(|m| control(m) == (RmppType::ABORT, RmppStatus::T2L))
        .count();
    assert_eq!(aborts, 8);
    assert_eq!(b.core.counters().transfers_active, 0);
    assert_eq!(b.core.transfers.held_bytes(), 0);
}

#[test]
fn loads_from_many_peers_stop_at_the_total_limit() {
    let mut b = keyed();
    let limits = TransferLimits::default();
    let mut refused = 0;
    for lid in 1000..1100u16 {
        for m in b.ask(client(lid), &first_segment(1, 1000)) {
            if control(&m) == (RmppType::STOP, RmppStatus::RESX) {
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 100 - limits.receiving);
    let c = b.core.counters();
    assert_eq!((c.rmpp_refused_busy, c.transfers_active), (36, 64));
}

#[test]
fn a_load_past_the_memory_limit_is_stopped_and_changes_nothing() {
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        transfer_limits: TransferLimits {
            receive_bytes: 50_000,
            ..TransferLimits::default()
        },
        ..AgentConfig::default()
    };
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    let before = b.core.store().len();
    let records = table(20); // 1000 records, 64,000 bytes
    let data: Vec<u8> = records.iter().flat_map(|r| r.as_bytes().to_vec()).collect();
    let header = load_header(Method::SET, 1, KEY, REPLACE_SOURCES);
    let mut sender = Sender::new(header, data.into(), RmppConfig::default(), b.now).unwrap();
    for _ in 0..1000 {
        while let Some(seg) = sender.poll_transmit(b.now) {
            b.deliver(client(LOADER), &seg);
        }
        b.pump();
        for m in b.take_sent(LOADER) {
            sender.handle_control(b.now, &m);
        }
        if sender.state() != TransferState::Active {
            break;
        }
    }
    assert_eq!(
        sender.state(),
        TransferState::Aborted {
            status: RmppStatus::RESX,
            by_peer: true
        },
        "the loader is told to stop"
    );
    let c = b.core.counters();
    assert_eq!((c.rmpp_refused_memory, c.loaded), (1, 0));
    assert_eq!(b.core.store().len(), before);
    assert_eq!(b.core.transfers.held_bytes(), 0);
    // A load that fits is taken.
    let mut small = load_header(Method::SET, 2, KEY, REPLACE_SOURCES);
    small.mad.set_transaction_id(2);
    assert_eq!(status(&push(&mut b, small, &table(5))), MadStatus::OK);
}

#[test]
fn unacknowledged_table_answers_stop_at_the_per_peer_limit() {
    let mut b = keyed();
    let limits = TransferLimits::default();
    const ASKER: u16 = 70;
    let mut no_resources = 0;
    for tid in 1..=100u64 {
        // All paths from the agent's port: four segments, never ACKed.
        let req = pr_request(Method::GET_TABLE, tid, pr::SGID, |t| {
            t.set_sgid(gid(super::bench::MY_LID))
        });
        for m in b.ask(client(ASKER), &req) {
            if status(&m) == MadStatus::ERR_NO_RESOURCES {
                no_resources += 1;
            }
        }
    }
    assert_eq!(no_resources, 100 - limits.sending_per_peer);
    assert_eq!(b.core.counters().rmpp_refused_per_peer, 36);
    // Someone else still gets the table, whole.
    let req = pr_request(Method::GET_TABLE, 1, pr::SGID, |t| {
        t.set_sgid(gid(super::bench::MY_LID))
    });
    assert_eq!(
        path_records(&b.query(client(71), &req)).len(),
        usize::from(HOSTS)
    );
    // Unacknowledged answers end after their retries and free their room.
    b.advance(Duration::from_secs(60));
    assert_eq!(b.core.counters().transfers_active, 0);
    assert_eq!(b.core.transfers.held_bytes(), 0);
}

#[test]
fn a_lost_load_answer_is_sent_again_for_a_repeated_last_segment() {
    let mut b = keyed();
    let records = table(2);
    let data: Vec<u8> = records.iter().flat_map(|r| r.as_bytes().to_vec()).collect();
    let header = load_header(Method::SET, 1, KEY, REPLACE_SOURCES);
    let mut sender = Sender::new(header, data.into(), RmppConfig::default(), b.now).unwrap();
    let mut last = None;
    let mut answers = Vec::new();
    for _ in 0..1000 {
        while let Some(seg) = sender.poll_transmit(b.now) {
            let (h, _) = SaMadHeader::parse(&seg).unwrap();
            if h.rmpp.flags().contains(RmppFlags::LAST) {
                last = Some(seg);
            }
            b.deliver(client(LOADER), &seg);
        }
        b.pump();
        for m in b.take_sent(LOADER) {
            let (h, _) = SaMadHeader::parse(&m).unwrap();
            if h.rmpp.is_active() {
                sender.handle_control(b.now, &m);
            } else {
                answers.push(m);
            }
        }
        if sender.state() != TransferState::Active {
            break;
        }
    }
    assert_eq!(sender.state(), TransferState::Complete);
    assert_eq!(answers.len(), 1);
    // That answer is lost; the loader repeats its last segment.
    b.deliver(client(LOADER), &last.unwrap());
    b.pump();
    let again: Vec<_> = b
        .take_sent(LOADER)
        .into_iter()
        .filter(|m| !SaMadHeader::parse(m).unwrap().0.rmpp.is_active())
        .collect();
    assert_eq!(again, answers, "the same answer again");
    assert_eq!(b.core.counters().loaded, 100, "stored once");
}

#[test]
fn a_loader_loading_in_a_loop_is_not_refused_by_its_own_finished_loads() {
    // Each finished load lingers to re-ACK a lost final ACK; twenty in a
    // row from one LID pass the per-peer limit of eight lingering ones.
    let mut b = keyed();
    let limits = TransferLimits::default();
    for tid in 1..=(limits.receiving_per_source as u64 * 2 + 4) {
        let header = load_header(Method::SET, tid, KEY, REPLACE_SOURCES);
        let answer = push(&mut b, header, &table(2));
        assert_eq!(status(&answer), MadStatus::OK, "load {tid}");
    }
    assert_eq!(b.core.counters().rmpp_refused_per_peer, 0);
    assert!(b.core.transfers.held() <= limits.receiving_per_source);
}
