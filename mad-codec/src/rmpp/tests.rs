//! The sender and the receiver against each other, through a channel that
//! loses, duplicates and reorders MADs, on a virtual clock.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zerocopy::{FromZeros, IntoBytes};

use super::*;
use crate::codes::{AttributeId, Method, MgmtClass};
use crate::header::{
    MAD_LEN, MadBuf, MadHeader, RmppFlags, RmppHeader, RmppStatus, RmppType, SaHeader, SaMadHeader,
};
use crate::{ComponentMask, SaMad};

/// A small deterministic generator (xorshift64*), so every run is
/// reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn percent(&mut self, p: u32) -> bool {
        (self.next() % 100) < u64::from(p)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug)]
struct Impairments {
    loss: u32,
    duplicate: u32,
    reorder: u32,
    /// Bytes of each MAD from this offset on arrive as garbage (what the
    /// simulator's umad2sim does from offset 224).
    garble_from: usize,
}

const CLEAN: Impairments = Impairments {
    loss: 0,
    duplicate: 0,
    reorder: 0,
    garble_from: MAD_LEN,
};

/// One direction of the fabric.
struct Channel {
    queue: VecDeque<MadBuf>,
    imp: Impairments,
}

impl Channel {
    fn new(imp: Impairments) -> Self {
        Self {
            queue: VecDeque::new(),
            imp,
        }
    }

    fn send(&mut self, rng: &mut Rng, mut mad: MadBuf) {
        if rng.percent(self.imp.loss) {
            return;
        }
        for b in mad.iter_mut().skip(self.imp.garble_from) {
            *b = rng.next() as u8;
        }
        let copies = if rng.percent(self.imp.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if !self.queue.is_empty() && rng.percent(self.imp.reorder) {
                let at = rng.below(self.queue.len());
                self.queue.insert(at, mad);
            } else {
                self.queue.push_back(mad);
            }
        }
    }
}

fn response_header() -> SaMadHeader {
    SaMadHeader {
        mad: MadHeader::new(
            MgmtClass::SUBN_ADM,
            2,
            Method::GET_TABLE_RESP,
            0x1234_5678,
            AttributeId::PATH_RECORD,
            0,
        ),
        rmpp: RmppHeader::new_zeroed(),
        sa: SaHeader::new(0, 8, ComponentMask::NONE),
    }
}

fn payload(len: usize, seed: u64) -> Bytes {
    let mut rng = Rng::new(seed ^ 0xABCD);
    (0..len)
        .map(|_| rng.next() as u8)
        .collect::<Vec<_>>()
        .into()
}

#[derive(Debug)]
struct Outcome {
    sender: TransferState,
    receiver: TransferState,
    message: Option<Bytes>,
    elapsed: Duration,
}

const MAX_STEPS: usize = 2_000_000;

/// Runs one transfer to its end. Panics if it does not end (a hang) or if
/// the receiver ever holds more than it may.
fn run(data: &Bytes, config: RmppConfig, imp: Impairments, seed: u64) -> Outcome {
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();
    let mut now = t0;
    let mut sender = Sender::new(response_header(), data.clone(), config, now).unwrap();
    let mut receiver = Receiver::new(config, now);
    let mut receiver_done = false;
    let mut to_receiver = Channel::new(imp);
    let mut to_sender = Channel::new(imp);
    let mut message = None;
    let bound = config.max_data_len + (config.window as usize + 1) * SEGMENT_DATA_LEN;

    for _ in 0..MAX_STEPS {
        while let Some(mad) = sender.poll_transmit(now) {
            to_receiver.send(&mut rng, mad);
        }
        while let Some(mad) = receiver.poll_transmit() {
            to_sender.send(&mut rng, mad);
        }
        if let Some(m) = receiver.take_message() {
            message = Some(m);
        }
        assert!(
            receiver.buffered_len() <= bound,
            "receiver holds {} bytes",
            receiver.buffered_len()
        );

        // Deliver in a random interleaving of the two directions.
        let order = if rng.percent(50) {
            [true, false]
        } else {
            [false, true]
        };
        let delivered = order.into_iter().any(|towards_receiver| {
            if towards_receiver {
                deliver_to_receiver(&mut to_receiver, &mut receiver, now)
            } else {
                deliver_to_sender(&mut to_sender, &mut sender, now)
            }
        });
        if delivered {
            continue;
        }

        // Nothing in flight: jump to the next timer.
        let rx_timer = if receiver_done {
            None
        } else {
            receiver.poll_timeout()
        };
        let next = [sender.poll_timeout(), rx_timer]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next else {
            return Outcome {
                sender: sender.state(),
                receiver: receiver.state(),
                message,
                elapsed: now - t0,
            };
        };
        now = now.max(next);
        sender.handle_timeout(now);
        if !receiver_done && receiver.handle_timeout(now) {
            receiver_done = true;
        }
    }
    panic!("transfer did not end within {MAX_STEPS} steps (seed {seed}, {imp:?})");
}

fn deliver_to_receiver(ch: &mut Channel, r: &mut Receiver, now: Instant) -> bool {
    ch.queue
        .pop_front()
        .map(|m| r.handle_segment(now, &m))
        .is_some()
}

fn deliver_to_sender(ch: &mut Channel, s: &mut Sender, now: Instant) -> bool {
    ch.queue
        .pop_front()
        .map(|m| s.handle_control(now, &m))
        .is_some()
}

/// Checks the invariants every run must satisfy, whatever the channel did.
fn check(data: &Bytes, config: RmppConfig, o: &Outcome) {
    if o.receiver == TransferState::Complete {
        let msg = o
            .message
            .as_ref()
            .expect("a complete receiver yields its message");
        let mad = SaMad::parse(msg).unwrap();
        assert_eq!(mad.data(), &data[..], "reassembled data differs");
        assert_eq!(mad.mad().method(), Method::GET_TABLE_RESP);
        assert_eq!(mad.sa().attribute_offset(), 8);
    } else {
        assert!(o.message.is_none());
    }
    if o.sender == TransferState::Complete {
        assert_eq!(
            o.receiver,
            TransferState::Complete,
            "sender done, receiver not: {o:?}"
        );
    }
    match o.sender {
        TransferState::Complete => {}
        TransferState::Aborted {
            status,
            by_peer: false,
        } => assert_eq!(status, RmppStatus::TMR),
        TransferState::Aborted {
            status,
            by_peer: true,
        } => assert_eq!(status, RmppStatus::T2L),
        TransferState::Active => panic!("sender still active: {o:?}"),
    }
    match o.receiver {
        TransferState::Complete => {}
        TransferState::Aborted { status, .. } => {
            assert!(
                status == RmppStatus::T2L || status == RmppStatus::TMR,
                "{o:?}"
            )
        }
        TransferState::Active => assert!(!o.sender.eq(&TransferState::Complete)),
    }
    // Bounded in virtual time too: the receiver gives up after its total
    // time limit, the sender after its retries.
    let limit = config.max_duration + config.linger + config.ack_timeout * (config.max_retries + 2);
    assert!(o.elapsed <= limit, "took {:?}", o.elapsed);
}

const SIZES: [usize; 8] = [0, 1, 64, 199, 200, 201, 4000, 64_000];

#[test]
fn clean_channel_always_delivers_exactly() {
    let config = RmppConfig::default();
    for (i, &len) in SIZES.iter().enumerate() {
        let data = payload(len, i as u64);
        let o = run(&data, config, CLEAN, i as u64);
        check(&data, config, &o);
        assert_eq!(o.sender, TransferState::Complete, "len {len}");
        assert_eq!(o.receiver, TransferState::Complete, "len {len}");
    }
}

#[test]
fn lossy_reordering_duplicating_channel_ends_exactly_or_aborts() {
    let config = RmppConfig {
        max_retries: 12,
        ..RmppConfig::default()
    };
    let channels = [
        Impairments {
            loss: 5,
            duplicate: 5,
            reorder: 10,
            garble_from: MAD_LEN,
        },
        Impairments {
            loss: 20,
            duplicate: 10,
            reorder: 30,
            garble_from: MAD_LEN,
        },
        Impairments {
            loss: 0,
            duplicate: 50,
            reorder: 50,
            garble_from: MAD_LEN,
        },
    ];
    let mut completed = 0;
    let mut runs = 0;
    for imp in channels {
        for seed in 0..24u64 {
            let len = SIZES[seed as usize % SIZES.len()];
            let data = payload(len, seed);
            let o = run(&data, config, imp, seed);
            check(&data, config, &o);
            runs += 1;
            completed += usize::from(o.receiver == TransferState::Complete);
        }
    }
    // With 12 retries per window these impairments are survivable: every
    // run must deliver, not just end.
    assert_eq!(completed, runs);
}

#[test]
fn hopeless_channel_aborts_with_tmr_instead_of_hanging() {
    let config = RmppConfig::default();
    let data = payload(4000, 1);
    let imp = Impairments {
        loss: 100,
        duplicate: 0,
        reorder: 0,
        garble_from: MAD_LEN,
    };
    let o = run(&data, config, imp, 7);
    check(&data, config, &o);
    assert_eq!(
        o.sender,
        TransferState::Aborted {
            status: RmppStatus::TMR,
            by_peer: false
        }
    );
    assert_eq!(
        o.receiver,
        TransferState::Aborted {
            status: RmppStatus::T2L,
            by_peer: false
        }
    );
}

#[test]
fn heavy_loss_either_delivers_or_aborts_cleanly() {
    let config = RmppConfig::default();
    let imp = Impairments {
        loss: 60,
        duplicate: 20,
        reorder: 40,
        garble_from: MAD_LEN,
    };
    for seed in 0..32u64 {
        let data = payload(SIZES[seed as usize % SIZES.len()], seed);
        let o = run(&data, config, imp, seed);
        check(&data, config, &o);
    }
}

#[test]
fn small_window_moves_window_by_window() {
    // 320 segments two at a time; duplicates and reordering (which push
    // segments outside the window) cost retransmissions, not correctness.
    let config = RmppConfig {
        window: 2,
        ..RmppConfig::default()
    };
    let data = payload(64_000, 3);
    let o = run(
        &data,
        config,
        Impairments {
            loss: 0,
            duplicate: 20,
            reorder: 40,
            garble_from: MAD_LEN,
        },
        3,
    );
    check(&data, config, &o);
    assert_eq!(o.receiver, TransferState::Complete);
    assert_eq!(o.sender, TransferState::Complete);
}

/// A 64,000-byte transfer under `config` but with two-segment windows,
/// through 10 % loss (and duplicates and reordering), checked.
fn run_slow_windows_under_loss(config: RmppConfig) -> Outcome {
    let config = RmppConfig {
        window: 2,
        ..config
    };
    let data = payload(64_000, 3);
    let o = run(
        &data,
        config,
        Impairments {
            loss: 10,
            duplicate: 10,
            reorder: 20,
            garble_from: MAD_LEN,
        },
        3,
    );
    check(&data, config, &o);
    o
}

#[test]
fn slow_windows_under_loss_hit_the_total_time_limit() {
    // The same transfer with 10% loss needs more ACK time-outs than a 40 s
    // total limit allows: the receiver must give up with T2L, not hang.
    let o = run_slow_windows_under_loss(RmppConfig {
        max_duration: Duration::from_secs(40),
        ..RmppConfig::default()
    });
    assert_eq!(
        o.receiver,
        TransferState::Aborted {
            status: RmppStatus::T2L,
            by_peer: false
        }
    );
}

#[test]
fn slow_windows_under_loss_complete_while_they_move() {
    // The same transfer under the default limits: it never goes 40 s
    // without progress, so it completes, however long it takes in all.
    let o = run_slow_windows_under_loss(RmppConfig::default());
    assert_eq!(o.receiver, TransferState::Complete, "{o:?}");
    assert!(o.elapsed > Duration::from_secs(40), "took {:?}", o.elapsed);
}

// ---- Exact protocol steps ----------------------------------------------

fn now0() -> Instant {
    Instant::now()
}

fn rmpp_of(mad: &MadBuf) -> RmppHeader {
    SaMadHeader::parse(mad).unwrap().0.rmpp
}

fn method_of(mad: &MadBuf) -> Method {
    SaMadHeader::parse(mad).unwrap().0.mad.method()
}

#[test]
fn first_segment_then_wait_for_ack_then_window() {
    let t = now0();
    let data = payload(1000, 5); // 5 segments
    let mut s = Sender::new(response_header(), data, RmppConfig::default(), t).unwrap();
    let first = s.poll_transmit(t).unwrap();
    let h = rmpp_of(&first);
    assert_eq!(h.rmpp_type(), RmppType::DATA);
    assert_eq!(h.flags(), RmppFlags::ACTIVE | RmppFlags::FIRST);
    assert_eq!(h.segment_number(), 1);
    assert_eq!(h.payload_length(), 1000 + 5 * 20);
    assert!(
        s.poll_transmit(t).is_none(),
        "window of one until the first ACK"
    );

    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(t, &first);
    let ack = r.poll_transmit().unwrap();
    let a = rmpp_of(&ack);
    assert_eq!(a.rmpp_type(), RmppType::ACK);
    assert_eq!((a.segment_number(), a.new_window_last()), (1, 65));
    assert_eq!(
        method_of(&ack),
        Method::GET_TABLE,
        "ACKs of a response carry the request method"
    );

    s.handle_control(t, &ack);
    let rest: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t)).collect();
    assert_eq!(rest.len(), 4);
    let last = rmpp_of(&rest[3]);
    assert_eq!(last.flags(), RmppFlags::ACTIVE | RmppFlags::LAST);
    assert_eq!(last.payload_length(), 20 + 200);
    assert_eq!(rmpp_of(&rest[1]).payload_length(), 0);
    for seg in &rest {
        r.handle_segment(t, seg);
    }
    assert_eq!(r.state(), TransferState::Complete);
    let final_ack = r.poll_transmit().unwrap();
    assert_eq!(rmpp_of(&final_ack).segment_number(), 5);
    s.handle_control(t, &final_ack);
    assert_eq!(s.state(), TransferState::Complete);
    assert_eq!(s.poll_timeout(), None);
}

fn ack(seg: u32, new_window: u32) -> MadBuf {
    let mut h = response_header();
    h.mad.set_method(Method::GET_TABLE);
    h.rmpp = RmppHeader::new(
        RmppType::ACK,
        RmppFlags::ACTIVE,
        RmppStatus::NORMAL,
        seg,
        new_window,
    );
    let mut mad = MadBuf::new_zeroed();
    mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
    mad
}

fn started_sender(len: usize) -> (Sender, Instant) {
    let t = now0();
    let mut s = Sender::new(response_header(), payload(len, 9), RmppConfig::default(), t).unwrap();
    let _ = s.poll_transmit(t).unwrap();
    (s, t)
}

fn expect_abort(s: &mut Sender, t: Instant, status: RmppStatus) {
    assert_eq!(
        s.state(),
        TransferState::Aborted {
            status,
            by_peer: false
        }
    );
    let abort = s.poll_transmit(t).expect("an ABORT goes out");
    let h = rmpp_of(&abort);
    assert_eq!((h.rmpp_type(), h.status()), (RmppType::ABORT, status));
    assert_eq!(
        method_of(&abort),
        Method::GET_TABLE_RESP,
        "ABORT flows like the data"
    );
    assert!(s.poll_transmit(t).is_none());
}

#[test]
fn sender_checks_acks() {
    let (mut s, t) = started_sender(1000);
    s.handle_control(t, &ack(3, 2));
    expect_abort(&mut s, t, RmppStatus::W2S);

    let (mut s, t) = started_sender(1000);
    s.handle_control(t, &ack(2, 10)); // window was 1
    expect_abort(&mut s, t, RmppStatus::S2B);

    let (mut s, t) = started_sender(1000);
    let mut bad = ack(1, 5);
    bad[27] = 5; // non-zero status in an ACK
    s.handle_control(t, &bad);
    expect_abort(&mut s, t, RmppStatus::ILLEGAL_STATUS);

    let (mut s, t) = started_sender(1000);
    let mut bad = ack(1, 5);
    bad[24] = 2; // RMPPVersion 2
    s.handle_control(t, &bad);
    expect_abort(&mut s, t, RmppStatus::UNSUPPORTED_VERSION);

    let (mut s, t) = started_sender(1000);
    let mut bad = ack(1, 5);
    bad[25] = 9; // unknown RMPPType
    s.handle_control(t, &bad);
    expect_abort(&mut s, t, RmppStatus::BAD_TYPE);
}

#[test]
fn sender_ignores_old_acks_and_stops_on_resx() {
    let (mut s, t) = started_sender(1000);
    s.handle_control(t, &ack(1, 3));
    assert_eq!(std::iter::from_fn(|| s.poll_transmit(t)).count(), 2);
    s.handle_control(t, &ack(1, 2)); // older window: ignored
    assert_eq!(s.state(), TransferState::Active);

    let mut stop = ack(0, 0);
    stop[25] = RmppType::STOP.0;
    stop[27] = RmppStatus::RESX.0;
    s.handle_control(t, &stop);
    assert_eq!(
        s.state(),
        TransferState::Aborted {
            status: RmppStatus::RESX,
            by_peer: true
        }
    );
    assert!(
        s.poll_transmit(t).is_none(),
        "a ResX STOP ends the send quietly"
    );
}

#[test]
fn sender_resends_from_last_ack_then_gives_up() {
    let config = RmppConfig {
        max_retries: 2,
        ..RmppConfig::default()
    };
    let t = now0();
    let mut s = Sender::new(response_header(), payload(1000, 1), config, t).unwrap();
    let _ = s.poll_transmit(t);
    s.handle_control(t, &ack(1, 3));
    let sent: Vec<u32> = std::iter::from_fn(|| s.poll_transmit(t))
        .map(|m| rmpp_of(&m).segment_number())
        .collect();
    assert_eq!(sent, [2, 3]);
    for round in 0..2 {
        let t2 = s.poll_timeout().unwrap();
        s.handle_timeout(t2);
        let resent: Vec<u32> = std::iter::from_fn(|| s.poll_transmit(t2))
            .map(|m| rmpp_of(&m).segment_number())
            .collect();
        assert_eq!(resent, [2, 3], "round {round}");
    }
    let t3 = s.poll_timeout().unwrap();
    s.handle_timeout(t3);
    expect_abort(&mut s, t3, RmppStatus::TMR);
}

fn data_segment(seg: u32, flags: RmppFlags, paylen: u32) -> MadBuf {
    let mut h = response_header();
    h.rmpp = RmppHeader::new(RmppType::DATA, flags, RmppStatus::NORMAL, seg, paylen);
    let mut mad = MadBuf::new_zeroed();
    mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
    mad
}

fn expect_receiver_end(r: &mut Receiver, rmpp_type: RmppType, status: RmppStatus) {
    assert_eq!(
        r.state(),
        TransferState::Aborted {
            status,
            by_peer: false
        }
    );
    let mad = r.poll_transmit().expect("the receiver answers");
    let h = rmpp_of(&mad);
    assert_eq!((h.rmpp_type(), h.status()), (rmpp_type, status));
    assert_eq!(method_of(&mad), Method::GET_TABLE);
    assert_eq!(r.buffered_len(), 0, "nothing kept after an abort");
}

#[test]
fn receiver_checks_first_flags() {
    let t = now0();
    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(t, &data_segment(1, RmppFlags::ACTIVE, 220));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::INCONSISTENT_FIRST);

    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(
        t,
        &data_segment(1, RmppFlags::ACTIVE | RmppFlags::FIRST, 660),
    );
    let _ = r.poll_transmit();
    r.handle_segment(t, &data_segment(2, RmppFlags::ACTIVE | RmppFlags::FIRST, 0));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::INCONSISTENT_FIRST);
}

#[test]
fn receiver_checks_last_payload_length() {
    let t = now0();
    let first = RmppFlags::ACTIVE | RmppFlags::FIRST;
    let last = RmppFlags::ACTIVE | RmppFlags::LAST;
    // PayloadLength beyond one segment's 220 bytes.
    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(t, &data_segment(1, first, 440));
    let _ = r.poll_transmit(); // the ACK of segment 1
    r.handle_segment(t, &data_segment(2, last, 221));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::INCONSISTENT_LAST);
    // Last PayloadLength disagrees with the first's announcement.
    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(t, &data_segment(1, first, 440));
    let _ = r.poll_transmit();
    r.handle_segment(t, &data_segment(2, last, 100));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::INCONSISTENT_LAST);
}

#[test]
fn receiver_stops_transfers_larger_than_allowed() {
    let t = now0();
    let config = RmppConfig {
        max_data_len: 1000,
        ..RmppConfig::default()
    };
    let mut r = Receiver::new(config, t);
    let first = RmppFlags::ACTIVE | RmppFlags::FIRST;
    r.handle_segment(t, &data_segment(1, first, 5000 + 25 * 20));
    expect_receiver_end(&mut r, RmppType::STOP, RmppStatus::RESX);

    // Unannounced (PayloadLength 0): stopped once the data passes the cap.
    let mut r = Receiver::new(config, t);
    r.handle_segment(t, &data_segment(1, first, 0));
    for seg in 2..10 {
        r.handle_segment(t, &data_segment(seg, RmppFlags::ACTIVE, 0));
        if r.state() != TransferState::Active {
            break;
        }
    }
    expect_receiver_end(&mut r, RmppType::STOP, RmppStatus::RESX);
}

#[test]
fn receiver_holds_memory_for_what_arrived_not_for_what_was_announced() {
    let t = now0();
    let config = RmppConfig::default();
    let mut r = Receiver::new(config, t);
    // Announces the largest transfer allowed, then sends one segment.
    let announced = config.max_data_len as u32 / 200 * 220;
    r.handle_segment(
        t,
        &data_segment(1, RmppFlags::ACTIVE | RmppFlags::FIRST, announced),
    );
    assert_eq!(r.state(), TransferState::Active);
    assert!(
        r.memory() < 4096,
        "{} bytes held for one segment",
        r.memory()
    );
}

#[test]
fn receiver_stopped_for_resources_sends_stop_and_drops_its_data() {
    let t = now0();
    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(
        t,
        &data_segment(1, RmppFlags::ACTIVE | RmppFlags::FIRST, 440),
    );
    let _ = r.poll_transmit(); // the ACK of segment 1
    r.stop_for_resources();
    assert_eq!(r.memory(), 0);
    expect_receiver_end(&mut r, RmppType::STOP, RmppStatus::RESX);
    // Once ended, nothing more is sent.
    r.stop_for_resources();
    assert!(r.poll_transmit().is_none());
}

#[test]
fn refusal_answers_only_a_first_data_segment() {
    let first = data_segment(1, RmppFlags::ACTIVE | RmppFlags::FIRST, 440);
    let stop = Receiver::refusal(&first).expect("a first segment is refused");
    let (h, _) = SaMadHeader::parse(&stop).unwrap();
    assert_eq!(h.rmpp.rmpp_type(), RmppType::STOP);
    assert_eq!(h.rmpp.status(), RmppStatus::RESX);
    let (asked, _) = SaMadHeader::parse(&first).unwrap();
    assert_eq!(h.mad.transaction_id_low(), asked.mad.transaction_id_low());
    assert_eq!(h.mad.method(), asked.mad.method().toggle_response());
    assert!(Receiver::refusal(&data_segment(2, RmppFlags::ACTIVE, 0)).is_none());
    assert!(Receiver::refusal(&first[..20]).is_none());
}

#[test]
fn receiver_times_out_with_t2l_and_reacks_after_completion() {
    let t = now0();
    let config = RmppConfig::default();
    let mut r = Receiver::new(config, t);
    r.handle_segment(
        t,
        &data_segment(1, RmppFlags::ACTIVE | RmppFlags::FIRST, 440),
    );
    let _ = r.poll_transmit();
    let deadline = r.poll_timeout().unwrap();
    assert_eq!(deadline - t, config.total_timeout);
    assert!(r.handle_timeout(deadline));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::T2L);

    let mut r = Receiver::new(config, t);
    let single = data_segment(
        1,
        RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST,
        84,
    );
    r.handle_segment(t, &single);
    assert_eq!(r.state(), TransferState::Complete);
    assert_eq!(r.take_message().unwrap().len(), SaMadHeader::LEN + 64);
    assert!(r.take_message().is_none());
    let _ = r.poll_transmit();
    r.handle_segment(t, &single); // the sender lost our final ACK
    let again = r.poll_transmit().unwrap();
    assert_eq!(rmpp_of(&again).segment_number(), 1);
    assert!(!r.handle_timeout(t + Duration::from_secs(1)));
    assert!(r.handle_timeout(t + config.linger));
}

#[test]
fn a_moving_transfer_outlives_the_time_without_progress_but_not_the_total() {
    let t = now0();
    let config = RmppConfig {
        window: 1000,
        ..RmppConfig::default()
    };
    let mut r = Receiver::new(config, t);
    // A segment every 30 s: never 40 s without progress.
    let first = RmppFlags::ACTIVE | RmppFlags::FIRST;
    r.handle_segment(t, &data_segment(1, first, 0));
    let step = Duration::from_secs(30);
    let mut now = t;
    let mut seg = 2;
    while now + step < t + config.max_duration {
        now += step;
        assert!(!r.handle_timeout(now), "cut at {:?}", now - t);
        r.handle_segment(now, &data_segment(seg, RmppFlags::ACTIVE, 0));
        seg += 1;
    }
    assert_eq!(r.state(), TransferState::Active);
    // The total limit ends it however it moves.
    let end = r.poll_timeout().unwrap();
    assert_eq!(end - t, config.max_duration);
    assert!(r.handle_timeout(end));
    expect_receiver_end(&mut r, RmppType::ABORT, RmppStatus::T2L);
}

#[test]
fn receiver_keeps_early_segments_within_the_window() {
    let t = now0();
    let data = payload(1000, 11);
    let mut s = Sender::new(response_header(), data.clone(), RmppConfig::default(), t).unwrap();
    let mut r = Receiver::new(RmppConfig::default(), t);
    r.handle_segment(t, &s.poll_transmit(t).unwrap());
    s.handle_control(t, &r.poll_transmit().unwrap());
    let mut segs: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t)).collect();
    segs.reverse(); // 5, 4, 3, 2
    for seg in &segs {
        r.handle_segment(t, seg);
    }
    assert_eq!(r.state(), TransferState::Complete);
    let msg = r.take_message().unwrap();
    assert_eq!(&msg[SaMadHeader::LEN..], &data[..]);
}

#[test]
fn short_segments_cross_a_transport_that_garbles_the_end_of_every_mad() {
    // umad2sim hands over only the first 224 bytes of each MAD intact.
    let cut = Impairments {
        garble_from: 224,
        ..CLEAN
    };
    let data = payload(20_000, 7);
    let short = RmppConfig {
        segment_data_len: 168,
        ..RmppConfig::default()
    };
    let o = run(&data, short, cut, 1);
    check(&data, short, &o);
    assert_eq!(
        o.receiver,
        TransferState::Complete,
        "168-byte segments arrive whole"
    );
    assert_eq!(
        Sender::new(response_header(), data.clone(), short, Instant::now())
            .unwrap()
            .segment_count(),
        120
    );
    // At the IBA's 200 bytes the same transport corrupts the payload.
    let o = run(&data, RmppConfig::default(), cut, 1);
    let whole = o
        .message
        .as_ref()
        .map(|m| SaMad::parse(m).unwrap().data() == &data[..]);
    assert_ne!(whole, Some(true));
}

#[test]
fn segment_sizes_outside_the_mad_are_taken_as_the_ibas() {
    for odd in [0, 201, usize::MAX] {
        let c = RmppConfig {
            segment_data_len: odd,
            ..RmppConfig::default()
        };
        assert_eq!(c.segment_data(), 200);
        assert_eq!(c.payload_length(1, 400), payload_length(1, 400));
    }
    let c = RmppConfig {
        segment_data_len: 168,
        ..RmppConfig::default()
    };
    assert_eq!(
        (
            c.segment_count(336),
            c.payload_length(1, 336),
            c.payload_length(2, 336)
        ),
        (2, Some(376), Some(188))
    );
    assert_eq!(c.single_segment(&response_header(), &[0; 169]), None);
}
