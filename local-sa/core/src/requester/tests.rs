//! The requester against a scripted SA on a virtual clock: matching,
//! retries, undelivered requests, RMPP both ways, cut answers.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{AttributeId, MAD_LEN, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};

use super::*;

/// The SA's address (the requester never looks inside it).
const SA: u16 = 7;

type Out = VecDeque<Transmit<u16>>;

fn requester() -> Requester<u16, &'static str> {
    Requester::new(RequesterConfig::default(), 0x10)
}

fn get(dlid: u16) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_dlid(dlid);
    let mut b = SaMadBuilder::request(Method::GET, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(pr::DLID);
    b.into_bytes()
}

/// The SA's one-MAD answer to `request`, with `records` PathRecords.
fn answer(request: &[u8], records: u16) -> Bytes {
    let (h, _) = SaMadHeader::parse(request).unwrap();
    let mut h = *h;
    h.mad.set_method(h.mad.method().response());
    // The transport puts its agent ID in the upper TID bits.
    h.mad
        .set_transaction_id(0xAB_0000_0000 | u64::from(h.mad.transaction_id_low()));
    h.sa.set_attribute_offset(8);
    let mut mad = BytesMut::from(h.as_bytes());
    for d in 0..records {
        let mut r = PathRecord::new_zeroed();
        r.set_dlid(d + 1);
        mad.extend_from_slice(r.as_bytes());
    }
    mad.freeze()
}

fn done(h: Handled<&'static str>) -> Completion<&'static str> {
    match h {
        Handled::Done(c) => c,
        other => panic!("not done: {other:?}"),
    }
}

#[test]
fn our_own_request_handed_back_is_not_its_answer() {
    // A request to this very port comes back to this agent (under the
    // simulator, to the one process serving the port): same TID, but a
    // request, not an answer.
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    r.send(now, SA, "probe", &get(4), &mut out);
    let sent = out.pop_front().unwrap();
    assert!(matches!(
        r.handle(now, &SA, 0, &sent.mad, None, &mut out),
        Handled::NotOurs
    ));
    let c = done(r.handle(now, &SA, 0, &answer(&sent.mad, 1), None, &mut out));
    assert_eq!(c.token, "probe", "the answer still ends it");
}

#[test]
fn an_answer_is_matched_on_the_low_transaction_id_bits() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    let tid = r.send(now, SA, "path", &get(4), &mut out);
    let sent = out.pop_front().unwrap();
    assert_eq!(
        (sent.dest, sent.mad.len(), sent.timeout_ms),
        (SA, MAD_LEN, 1000)
    );
    let m = SaMad::parse(&sent.mad).unwrap();
    assert_eq!(m.mad().transaction_id(), u64::from(tid));
    assert!(matches!(
        r.handle(now, &SA, 0, &answer(&get(4), 0), None, &mut out),
        Handled::NotOurs
    ));
    let c = done(r.handle(now, &SA, 0, &answer(&sent.mad, 1), None, &mut out));
    assert_eq!((c.token, &c.request), ("path", &sent.mad));
    let a = c.outcome.unwrap();
    assert_eq!(
        (a.status(), a.segments(), a.is_cut()),
        (MadStatus::OK, 1, false)
    );
    assert_eq!(a.records::<PathRecord>().count(), 1);
    assert_eq!(r.in_flight(), 0);
    assert!(out.is_empty());
}

#[test]
fn an_unanswered_request_is_sent_again_and_then_fails() {
    let (mut r, mut out, t0) = (requester(), Out::new(), Instant::now());
    r.send(t0, SA, "path", &get(4), &mut out);
    let first = out.pop_front().unwrap().mad;
    for _ in 0..3 {
        let now = r.poll_timeout().unwrap();
        assert!(r.handle_timeout(now, &mut out).is_empty());
        assert_eq!(
            out.pop_front().unwrap().mad,
            first,
            "the same request again"
        );
    }
    let now = r.poll_timeout().unwrap();
    assert_eq!(now - t0, Duration::from_secs(4));
    let failed = r.handle_timeout(now, &mut out);
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].outcome.as_ref().unwrap_err(),
        &Failure::Timeout {
            attempts: 4,
            per_attempt: Duration::from_secs(1),
            sm_key: 0,
        }
    );
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn a_keyed_request_left_unanswered_names_its_key_and_opensms_rule() {
    let (mut r, mut out, mut now) = (requester(), Out::new(), Instant::now());
    let mut keyed = BytesMut::from(&get(4)[..]);
    SaMadHeader::parse_mut(&mut keyed)
        .unwrap()
        .0
        .sa
        .set_sm_key(0x5eed);
    r.send(now, SA, "keyed", &keyed, &mut out);
    r.send(now, SA, "plain", &get(5), &mut out);
    let mut failed = Vec::new();
    while let Some(t) = r.poll_timeout() {
        now = t;
        failed.extend(r.handle_timeout(now, &mut out));
    }
    let told = |token| {
        let c = failed.iter().find(|c| c.token == token).unwrap();
        c.outcome.as_ref().unwrap_err().to_string()
    };
    let keyed = told("keyed");
    assert!(keyed.contains("SM_Key 0x5eed"), "{keyed}");
    assert!(keyed.contains(OPENSM_KEY_RULE), "{keyed}");
    assert_eq!(told("plain"), "no answer after 4 attempts of 1s each");
}

#[test]
fn an_undelivered_request_goes_again_at_once_and_reports_the_status() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    r.send(now, SA, "path", &get(4), &mut out);
    let sent = out.pop_front().unwrap().mad;
    for _ in 0..3 {
        assert!(matches!(
            r.handle(now, &SA, 110, &sent, None, &mut out),
            Handled::Taken
        ));
        assert_eq!(out.pop_front().unwrap().mad, sent, "sent again at once");
    }
    let c = done(r.handle(now, &SA, 110, &sent, None, &mut out));
    assert_eq!(
        c.outcome.unwrap_err(),
        Failure::Undeliverable { status: 110 }
    );
}

/// The segments of an RMPP answer of `records` PathRecords to `request`,
/// as the SA's sender cuts them, and that sender.
fn rmpp_answer(request: &[u8], records: u16, now: Instant) -> Sender {
    let whole = answer(request, records);
    let (h, data) = SaMadHeader::parse(&whole).unwrap();
    Sender::new(*h, Bytes::copy_from_slice(data), RmppConfig::default(), now).unwrap()
}

#[test]
fn an_rmpp_answer_is_reassembled_and_acknowledged_and_each_segment_buys_time() {
    let (mut r, mut out, t0) = (requester(), Out::new(), Instant::now());
    r.send(t0, SA, "table", &get(0), &mut out);
    let request = out.pop_front().unwrap().mad;
    let mut sa = rmpp_answer(&request, 40, t0);
    let mut now = t0;
    let mut completion = None;
    let mut segments = 0;
    while completion.is_none() {
        // Each segment comes most of a time-out after the last.
        now += Duration::from_millis(900);
        assert!(r.handle_timeout(now, &mut out).is_empty(), "still alive");
        let Some(seg) = sa.poll_transmit(now) else {
            panic!("the SA has nothing to send")
        };
        segments += 1;
        match r.handle(now, &SA, 0, &seg, None, &mut out) {
            Handled::Done(c) => completion = Some(c),
            Handled::Taken => {}
            Handled::NotOurs => panic!("a segment of our answer"),
        }
        while let Some(ack) = out.pop_front() {
            assert_eq!(ack.timeout_ms, 0);
            sa.handle_control(now, &ack.mad);
        }
    }
    let a = completion.unwrap().outcome.unwrap();
    assert_eq!(a.segments(), segments);
    assert!(segments > 10, "{segments} segments");
    assert_eq!(a.records::<PathRecord>().count(), 40);
    assert_eq!(sa.state(), TransferState::Complete, "every segment ACKed");
}

#[test]
fn a_stalled_rmpp_answer_is_waited_for_not_asked_again_then_aborted() {
    let (mut r, mut out, t0) = (requester(), Out::new(), Instant::now());
    r.send(t0, SA, "table", &get(0), &mut out);
    let request = out.pop_front().unwrap().mad;
    let mut sa = rmpp_answer(&request, 40, t0);
    let first = sa.poll_transmit(t0).unwrap();
    assert!(matches!(
        r.handle(t0, &SA, 0, &first, None, &mut out),
        Handled::Taken
    ));
    while let Some(ack) = out.pop_front() {
        sa.handle_control(t0, &ack.mad);
    }
    // The SA goes quiet for three attempts' time: nothing is asked again
    // (a second request would start a second transfer beside the first).
    for n in 1..=3u32 {
        let now = t0 + Duration::from_millis(1000 * u64::from(n) + 1);
        assert!(r.handle_timeout(now, &mut out).is_empty());
        assert!(out.is_empty(), "asked again after {n} s: {out:?}");
    }
    // A late segment is still taken, and buys another attempt's time.
    let now = t0 + Duration::from_millis(3500);
    let late = sa.poll_transmit(now).unwrap();
    assert!(matches!(
        r.handle(now, &SA, 0, &late, None, &mut out),
        Handled::Taken
    ));
    out.clear();
    // Then silence past the last attempt: the transfer is aborted at the
    // SA, and the request fails as unanswered.
    let now = now + Duration::from_millis(1001);
    let ended = r.handle_timeout(now, &mut out);
    assert_eq!(ended.len(), 1);
    assert!(matches!(ended[0].outcome, Err(Failure::Timeout { .. })));
    let abort = out.pop_front().expect("an ABORT to the SA");
    assert_eq!(abort.dest, SA);
    let (h, _) = SaMadHeader::parse(&abort.mad).unwrap();
    assert_eq!(h.rmpp.rmpp_type(), RmppType::ABORT);
    assert_eq!(h.rmpp.status(), RmppStatus::T2L);
}

#[test]
fn an_answer_aborted_by_the_sa_fails_the_request() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    r.send(now, SA, "table", &get(0), &mut out);
    let request = out.pop_front().unwrap().mad;
    let mut sa = rmpp_answer(&request, 40, now);
    let first = sa.poll_transmit(now).unwrap();
    assert!(matches!(
        r.handle(now, &SA, 0, &first, None, &mut out),
        Handled::Taken
    ));
    let (h, _) = SaMadHeader::parse(&first).unwrap();
    let mut abort = *h;
    abort.rmpp = RmppHeader::new(
        RmppType::ABORT,
        RmppFlags::ACTIVE,
        RmppStatus::UNSPECIFIED,
        0,
        0,
    );
    let c = done(r.handle(now, &SA, 0, abort.as_bytes(), None, &mut out));
    assert!(matches!(
        c.outcome,
        Err(Failure::Rmpp { by_peer: true, .. })
    ));
}

#[test]
fn an_rmpp_request_is_sent_segment_by_segment_and_its_answer_taken() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    let mut header = SaMadBuilder::request(Method::SET, 0, AttributeId::PATH_RECORD)
        .into_bytes()
        .to_vec();
    header.truncate(SaMadHeader::LEN);
    let (h, _) = SaMadHeader::parse(&header).unwrap();
    let data = Bytes::from(vec![0x5A; 64 * 30]);
    let tid = r
        .send_rmpp(now, SA, "load", *h, data.clone(), &mut out)
        .unwrap();
    let mut sa = Receiver::new(RmppConfig::default(), now);
    for _ in 0..100 {
        while let Some(seg) = out.pop_front() {
            sa.handle_segment(now, &seg.mad);
        }
        let Some(ack) = sa.poll_transmit() else { break };
        assert!(matches!(
            r.handle(now, &SA, 0, &ack, None, &mut out),
            Handled::Taken
        ));
    }
    let whole = sa.take_message().expect("the SA has the whole load");
    assert_eq!(&whole[SaMadHeader::LEN..], &data[..]);
    assert_eq!(
        SaMad::parse(&whole).unwrap().mad().transaction_id_low(),
        tid
    );
    // The answer: one MAD.
    let mut resp =
        SaMadBuilder::request(Method::GET_RESP, u64::from(tid), AttributeId::PATH_RECORD);
    resp.header_mut().mad.set_attribute_modifier(30);
    let c = done(r.handle(now, &SA, 0, &resp.into_bytes(), None, &mut out));
    let a = c.outcome.unwrap();
    assert_eq!(a.header().mad.attribute_modifier(), 30);
}

#[test]
fn a_load_whose_answer_is_lost_repeats_its_last_segment() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    let header = SaMadBuilder::request(Method::SET, 0, AttributeId::PATH_RECORD).into_bytes();
    let (h, _) = SaMadHeader::parse(&header).unwrap();
    let data = Bytes::from(vec![0x5A; 64 * 30]);
    let tid = r.send_rmpp(now, SA, "load", *h, data, &mut out).unwrap();
    let mut sa = Receiver::new(RmppConfig::default(), now);
    let mut last = None;
    for _ in 0..100 {
        while let Some(seg) = out.pop_front() {
            last = Some(seg.mad.clone());
            sa.handle_segment(now, &seg.mad);
        }
        let Some(ack) = sa.poll_transmit() else { break };
        let _ = r.handle(now, &SA, 0, &ack, None, &mut out);
    }
    assert_eq!(sa.state(), TransferState::Complete);
    let segments = 64 * 30 / RmppConfig::default().segment_data() as u32 + 1;
    assert_eq!(r.send_progress(tid), Some((segments, segments)));
    // Every segment acknowledged, the answer lost: after the time-out the
    // last segment goes again, once per retry.
    let later = r.poll_timeout().unwrap();
    assert!(r.handle_timeout(later, &mut out).is_empty());
    let resent = out.pop_front().expect("the last segment again");
    assert_eq!(Some(resent.mad), last);
    // The answer comes this time.
    let mut resp =
        SaMadBuilder::request(Method::GET_RESP, u64::from(tid), AttributeId::PATH_RECORD);
    resp.header_mut().mad.set_attribute_modifier(30);
    let c = done(r.handle(later, &SA, 0, &resp.into_bytes(), None, &mut out));
    assert!(c.outcome.is_ok());
}

#[test]
fn a_cut_answer_offers_only_the_records_wholly_within_its_real_bytes() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    r.send(now, SA, "table", &get(0), &mut out);
    let request = out.pop_front().unwrap().mad;
    let mut cut = answer(&request, 3).to_vec();
    cut.resize(MAD_LEN, 0xA5);
    // 224 real bytes: 168 of data, two whole records.
    let c = done(r.handle(now, &SA, 0, &cut, Some(224), &mut out));
    let a = c.outcome.unwrap();
    assert!(a.is_cut());
    assert_eq!(a.records::<PathRecord>().count(), 2);
    // An error answer framed the same way lost nothing: it is not cut.
    r.send(now, SA, "table", &get(1), &mut out);
    let request = out.pop_front().unwrap().mad;
    let mut error = BytesMut::from(&answer(&request, 0)[..]);
    SaMadHeader::parse_mut(&mut error)
        .unwrap()
        .0
        .mad
        .set_status(MadStatus::ERR_NO_RECORDS);
    error.resize(MAD_LEN, 0xA5);
    let c = done(r.handle(now, &SA, 0, &error, Some(224), &mut out));
    let a = c.outcome.unwrap();
    assert_eq!((a.status(), a.is_cut()), (MadStatus::ERR_NO_RECORDS, false));
}

#[test]
fn withdrawn_requests_end_or_vanish() {
    let (mut r, mut out, now) = (requester(), Out::new(), Instant::now());
    r.send(now, SA, "keep", &get(1), &mut out);
    r.send(now, SA, "drop", &get(2), &mut out);
    assert!(r.any_pending(|t| *t == "drop"));
    r.forget(|t| *t == "drop");
    assert!(!r.any_pending(|t| *t == "drop"));
    let ended = r.cancel_all();
    assert_eq!(ended.len(), 1);
    assert_eq!(
        (ended[0].token, ended[0].outcome.as_ref().unwrap_err()),
        ("keep", &Failure::Cancelled)
    );
    assert_eq!(r.in_flight(), 0);
}
