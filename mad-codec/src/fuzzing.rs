//! Fuzz harnesses. Each `fuzz/fuzz_targets/*.rs` is a one-line call into
//! this module, and `tests/fuzz_corpus.rs` replays the committed corpus and
//! past crashes through the same functions on stable Rust.
//!
//! A harness panics only when the crate breaks its contract (a parse that
//! panics, a round trip that changes a value, memory beyond a bound).

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zerocopy::{FromZeros, IntoBytes};

use crate::attr::{
    ClassPortInfoRepr, InformInfoRepr, McMemberRecordRepr, NoticeRepr, PathRecordRepr,
};
use crate::header::{RmppFlags, RmppHeader, RmppStatus, RmppType};
use crate::records::{Records, SaRecord, put_records};
use crate::rmpp::{Receiver, RmppConfig, SEGMENT_DATA_LEN, Sender, TransferState};
use crate::{
    AttributeId, ClassPortInfo, GuidInfoRecord, InformInfo, InformInfoRecord, LftRecord,
    LinkRecord, MadBuf, McMemberRecord, MftRecord, NodeRecord, Notice, PathRecord, PkeyTableRecord,
    PortInfoRecord, SaMad, SaMadBuilder, SaMadHeader, ServiceRecord, Sl2VlTableRecord,
    SmInfoRecord, SwitchInfoRecord, VlArbTableRecord,
};

/// Parses `data` as one SA MAD and calls every accessor of its headers and
/// of the record its AttributeID names (and of every record it may hold).
pub fn parse_mad(data: &[u8]) {
    let Ok(mad) = SaMad::parse(data) else { return };
    let _ = SaMad::parse_checked(data);
    let _ = format!("{:?}", mad.header());
    let h = mad.mad();
    let _ = (
        h.transaction_id_low(),
        h.status().invalid_field(),
        h.method().response(),
    );
    let _ = (
        mad.rmpp().flags(),
        mad.rmpp().resp_time(),
        mad.rmpp().status().is_abort_status(),
    );
    match mad.mad().attribute_id() {
        AttributeId::CLASS_PORT_INFO => touch::<ClassPortInfo>(&mad),
        AttributeId::NOTICE => {
            touch::<Notice>(&mad);
            if let Ok(n) = mad.record::<Notice>() {
                let _ = NoticeRepr::parse(n).details().trap_number();
            }
        }
        AttributeId::INFORM_INFO => touch::<InformInfo>(&mad),
        AttributeId::NODE_RECORD => touch::<NodeRecord>(&mad),
        AttributeId::SERVICE_RECORD => touch::<ServiceRecord>(&mad),
        AttributeId::PATH_RECORD => touch::<PathRecord>(&mad),
        AttributeId::MC_MEMBER_RECORD => touch::<McMemberRecord>(&mad),
        AttributeId::INFORM_INFO_RECORD => touch::<InformInfoRecord>(&mad),
        AttributeId::PORT_INFO_RECORD => {
            touch::<PortInfoRecord>(&mad);
            if let Ok(r) = mad.record::<PortInfoRecord>() {
                // Every bit position and width a dump may ask, and past
                // the end.
                for offset in (0..520).step_by(7) {
                    let _ = r.port_info_field(offset, offset % 70);
                }
                let _ = (r.base_lid(), r.master_sm_lid(), r.capability_mask());
            }
        }
        AttributeId::SL_TO_VL_MAPPING_TABLE_RECORD => {
            touch::<Sl2VlTableRecord>(&mad);
            if let Ok(r) = mad.record::<Sl2VlTableRecord>() {
                assert!(r.vls().iter().all(|vl| *vl < 16));
            }
        }
        AttributeId::SWITCH_INFO_RECORD => touch::<SwitchInfoRecord>(&mad),
        AttributeId::LINEAR_FORWARDING_TABLE_RECORD => touch::<LftRecord>(&mad),
        AttributeId::MULTICAST_FORWARDING_TABLE_RECORD => {
            touch::<MftRecord>(&mad);
            if let Ok(r) = mad.record::<MftRecord>() {
                assert!(r.position() < 16 && r.block() < 512);
                let _ = r.port_masks();
            }
        }
        AttributeId::SM_INFO_RECORD => {
            touch::<SmInfoRecord>(&mad);
            if let Ok(r) = mad.record::<SmInfoRecord>() {
                assert!(r.priority() < 16 && r.state() < 16);
            }
        }
        AttributeId::LINK_RECORD => touch::<LinkRecord>(&mad),
        AttributeId::GUID_INFO_RECORD => {
            touch::<GuidInfoRecord>(&mad);
            if let Ok(r) = mad.record::<GuidInfoRecord>() {
                let _ = r.guids();
            }
        }
        AttributeId::PKEY_TABLE_RECORD => {
            touch::<PkeyTableRecord>(&mad);
            if let Ok(r) = mad.record::<PkeyTableRecord>() {
                let _ = r.pkeys();
            }
        }
        AttributeId::VL_ARBITRATION_TABLE_RECORD => {
            touch::<VlArbTableRecord>(&mad);
            if let Ok(r) = mad.record::<VlArbTableRecord>() {
                assert!(r.entries().iter().all(|(vl, _)| *vl < 16));
            }
        }
        _ => {}
    }
}

/// Formats (and so reads every field of) the first record and every record
/// at AttributeOffset spacing.
fn touch<T: SaRecord + core::fmt::Debug>(mad: &SaMad<'_>) {
    if let Ok(r) = mad.record::<T>() {
        let _ = format!("{r:?}");
    }
    if let Ok(records) = mad.records::<T>() {
        let n = records.len();
        assert_eq!(records.clone().count(), n);
        for r in records {
            let _ = format!("{r:?}");
        }
    }
}

/// Parse → emit → parse must give the same values, for the headers and for
/// every attribute with an owned representation.
pub fn round_trip(data: &[u8]) {
    let Ok(mad) = SaMad::parse(data) else { return };
    let rebuilt = SaMadBuilder::new(*mad.header())
        .data(mad.data())
        .into_bytes();
    assert_eq!(&rebuilt[..], data, "headers and data re-emit byte for byte");

    let body = mad.data();
    repr_round_trip::<PathRecord, _>(body, PathRecordRepr::parse, |r| r.to_wire());
    repr_round_trip::<McMemberRecord, _>(body, McMemberRecordRepr::parse, |r| r.to_wire());
    repr_round_trip::<InformInfo, _>(body, InformInfoRepr::parse, |r| r.to_wire());
    repr_round_trip::<ClassPortInfo, _>(body, ClassPortInfoRepr::parse, |r| r.to_wire());
    repr_round_trip::<Notice, _>(body, NoticeRepr::parse, |r| r.to_wire());
}

fn repr_round_trip<T, R>(body: &[u8], parse: fn(&T) -> R, emit: fn(&R) -> T)
where
    T: SaRecord,
    R: PartialEq + core::fmt::Debug,
{
    let Ok(wire) = T::parse(body) else { return };
    let repr = parse(wire);
    let again = parse(&emit(&repr));
    assert_eq!(again, repr);
}

/// Walks `data[3..]` as records of the attribute chosen by `data[0]` at the
/// AttributeOffset in `data[1..3]`, then re-emits them at the standard
/// stride and walks that.
pub fn walk_records(data: &[u8]) {
    let [kind, hi, lo, payload @ ..] = data else {
        return;
    };
    let offset = u16::from_be_bytes([*hi, *lo]);
    match kind % 16 {
        0 => walk::<PathRecord>(payload, offset),
        1 => walk::<McMemberRecord>(payload, offset),
        2 => walk::<NodeRecord>(payload, offset),
        3 => walk::<ServiceRecord>(payload, offset),
        4 => walk::<InformInfoRecord>(payload, offset),
        5 => walk::<InformInfo>(payload, offset),
        6 => walk::<PortInfoRecord>(payload, offset),
        7 => walk::<Sl2VlTableRecord>(payload, offset),
        8 => walk::<SwitchInfoRecord>(payload, offset),
        9 => walk::<LftRecord>(payload, offset),
        10 => walk::<MftRecord>(payload, offset),
        11 => walk::<SmInfoRecord>(payload, offset),
        12 => walk::<LinkRecord>(payload, offset),
        13 => walk::<GuidInfoRecord>(payload, offset),
        14 => walk::<PkeyTableRecord>(payload, offset),
        _ => walk::<VlArbTableRecord>(payload, offset),
    }
}

fn walk<T: SaRecord + PartialEq + core::fmt::Debug>(payload: &[u8], offset: u16) {
    let Ok(records) = Records::<T>::new(payload, offset) else {
        assert!(usize::from(offset) * 8 < T::LEN);
        return;
    };
    let n = records.len();
    let stride = records.stride();
    assert_eq!(records.clone().count(), n);
    assert!(records.remainder().len() < stride.max(1) || n == 0);
    for (i, r) in records.clone().enumerate() {
        assert_eq!(records.get(i), Some(r));
        assert_eq!(r.as_bytes(), &payload[i * stride..i * stride + T::LEN]);
    }
    assert_eq!(records.get(n), None);
    let mut out = BytesMut::new();
    put_records(&mut out, records.clone());
    assert_eq!(out.len(), n * T::STRIDE);
    let again = Records::<T>::with_standard_stride(&out);
    assert!(again.eq(records));
}

/// RMPP reassembly. With `data[0]` even, `data[1..]` is sent by a
/// [`Sender`] to a [`Receiver`] over a perfect channel and must arrive
/// exactly. With it odd, the rest is an arbitrary sequence of segments,
/// control MADs and clock jumps fed to a receiver and a sender; neither may
/// panic, hold more than its bound, or flood the wire.
pub fn rmpp_reassembly(data: &[u8]) {
    match data.split_first() {
        Some((mode, payload)) if mode % 2 == 0 => perfect_transfer(payload),
        Some((_, script)) => arbitrary_segments(script),
        None => {}
    }
}

fn perfect_transfer(payload: &[u8]) {
    let now = Instant::now();
    let config = RmppConfig {
        window: 3,
        ..RmppConfig::default()
    };
    let mut header = SaMadHeader::new_zeroed();
    header.mad.set_method(crate::Method::GET_TABLE_RESP);
    let Ok(mut s) = Sender::new(header, Bytes::copy_from_slice(payload), config, now) else {
        return;
    };
    let mut r = Receiver::new(config, now);
    for _ in 0..(4 * s.segment_count() + 8) {
        let mut moved = false;
        while let Some(m) = s.poll_transmit(now) {
            r.handle_segment(now, &m);
            moved = true;
        }
        while let Some(m) = r.poll_transmit() {
            s.handle_control(now, &m);
            moved = true;
        }
        if !moved {
            break;
        }
    }
    assert_eq!(s.state(), TransferState::Complete);
    let msg = r.take_message().expect("a perfect channel delivers");
    assert_eq!(&msg[SaMadHeader::LEN..], payload);
}

/// Bytes per scripted step: kind, flags, segment, type, version, status,
/// PayloadLength (2), fill byte, clock jump.
const STEP_LEN: usize = 10;

fn arbitrary_segments(script: &[u8]) {
    let t0 = Instant::now();
    let mut now = t0;
    let config = RmppConfig {
        window: 4,
        max_data_len: 4096,
        max_retries: 2,
        ..RmppConfig::default()
    };
    let bound = config.max_data_len + (config.window as usize + 1) * SEGMENT_DATA_LEN;
    let mut receiver = Receiver::new(config, now);
    let mut sender = Sender::new(
        SaMadHeader::new_zeroed(),
        Bytes::from_static(&[7; 1000]),
        config,
        now,
    )
    .expect("1000 bytes fit");
    for step in script.chunks(STEP_LEN) {
        let [
            kind,
            flags,
            seg,
            ty,
            version,
            status,
            pl_hi,
            pl_lo,
            fill,
            jump,
        ] = *step
        else {
            break;
        };
        let mut header = SaMadHeader::new_zeroed();
        header.rmpp = RmppHeader::new(
            RmppType(ty % 6),
            RmppFlags(flags & 0x7),
            RmppStatus(status),
            u32::from(seg),
            u32::from(u16::from_be_bytes([pl_hi, pl_lo])),
        );
        header.rmpp.set_version(version % 3);
        let mut mad = MadBuf::new_zeroed();
        mad[..SaMadHeader::LEN].copy_from_slice(header.as_bytes());
        mad[SaMadHeader::LEN..].fill(fill);
        let len = if kind & 0x80 != 0 {
            usize::from(kind & 0x7F) + SaMadHeader::LEN
        } else {
            mad.len()
        };
        let mad = &mad[..len.min(mad.len())];
        if kind & 1 == 0 {
            receiver.handle_segment(now, mad);
        } else {
            sender.handle_control(now, mad);
        }
        now += Duration::from_millis(u64::from(jump) * 250);
        let _ = receiver.handle_timeout(now);
        sender.handle_timeout(now);
        assert!(receiver.buffered_len() <= bound);
        // Each step can provoke at most an ACK or an ABORT from the
        // receiver, and at most a window's worth of segments from the sender.
        assert!(std::iter::from_fn(|| receiver.poll_transmit()).count() <= 2);
        let limit = config.window as usize + 2;
        assert!(
            std::iter::from_fn(|| sender.poll_transmit(now))
                .take(limit + 8)
                .count()
                <= limit
        );
        if let Some(msg) = receiver.take_message() {
            assert!(msg.len() <= SaMadHeader::LEN + config.max_data_len);
        }
    }
}
