//! Codec benchmarks: one PathRecord MAD decoded and validated, one emitted,
//! a 1000-record payload walked, and a 1000-record RMPP transfer segmented
//! and reassembled. Run with `cargo bench -p mad-codec --bench codec`.
#![allow(missing_docs)]

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use divan::{Bencher, black_box, counter::BytesCount};
use mad_codec::{
    AttributeId, Gid, MAD_LEN, Method, Mtu, PathRecord, PathRecordRepr, Rate, SaMad, SaMadBuilder,
    SaRecord, Selector,
    header::SaMadHeader,
    records::put_records,
    rmpp::{Receiver, RmppConfig, Sender, TransferState},
};

fn main() {
    divan::main();
}

fn path(i: u64) -> PathRecord {
    PathRecordRepr {
        dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + i),
        sgid: Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0001),
        dlid: (i % 0xBFFF) as u16 + 1,
        slid: 1,
        reversible: true,
        pkey: 0xFFFF,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::MTU_2048,
        rate_selector: Selector::Exactly,
        rate: Rate::GBPS_100,
        packet_life_selector: Selector::Exactly,
        packet_life: 18,
        ..PathRecordRepr::default()
    }
    .to_wire()
}

fn get_resp_mad() -> Bytes {
    SaMadBuilder::request(Method::GET_RESP, 0x1234, AttributeId::PATH_RECORD)
        .record(&path(7))
        .into_bytes()
}

/// Decode and validate one PathRecord GetResp MAD, reading the fields a
/// client looks at.
#[divan::bench]
fn decode_path_record_mad(bencher: Bencher<'_, '_>) {
    let mut mad = [0u8; MAD_LEN];
    let bytes = get_resp_mad();
    mad[..bytes.len()].copy_from_slice(&bytes);
    bencher.bench(|| {
        let m = SaMad::parse_checked(black_box(&mad[..])).unwrap();
        let r = m.record::<PathRecord>().unwrap();
        (
            m.mad().status(),
            r.dlid(),
            r.sgid(),
            r.mtu(),
            r.rate(),
            r.sl(),
            r.pkey(),
        )
    });
}

/// Emit one PathRecord GetResp MAD into a 256-byte buffer.
#[divan::bench]
fn emit_path_record_mad(bencher: Bencher<'_, '_>) {
    let record = path(7);
    let header = *SaMad::parse(&get_resp_mad()).unwrap().header();
    bencher.bench(|| {
        let mut out = [0u8; MAD_LEN];
        let (h, data) = SaMadHeader::parse_mut(&mut out).unwrap();
        *h = black_box(header);
        data[..PathRecord::LEN].copy_from_slice(zerocopy::IntoBytes::as_bytes(black_box(&record)));
        out
    });
}

fn payload(n: u64) -> Bytes {
    let records: Vec<PathRecord> = (0..n).map(path).collect();
    let mut out = BytesMut::new();
    put_records(&mut out, &records);
    out.freeze()
}

/// Walk 1000 PathRecords of a GetTableResp payload, reading each DLID.
#[divan::bench]
fn iterate_1000_records(bencher: Bencher<'_, '_>) {
    let data = payload(1000);
    bencher.counter(BytesCount::new(data.len())).bench(|| {
        let records = mad_codec::Records::<PathRecord>::new(black_box(&data), 8).unwrap();
        records.map(|r| u64::from(r.dlid())).sum::<u64>()
    });
}

/// Segment a 1000-record transfer and reassemble it, ACKs included, over a
/// perfect in-memory channel.
#[divan::bench]
fn rmpp_transfer_1000_records(bencher: Bencher<'_, '_>) {
    let data = payload(1000);
    let header = *SaMad::parse(&get_resp_mad()).unwrap().header();
    let config = RmppConfig::default();
    bencher.counter(BytesCount::new(data.len())).bench(|| {
        let now = Instant::now();
        let mut s = Sender::new(header, data.clone(), config, now).unwrap();
        let mut r = Receiver::new(config, now);
        loop {
            let mut moved = false;
            while let Some(seg) = s.poll_transmit(now) {
                r.handle_segment(now, &seg);
                moved = true;
            }
            while let Some(ack) = r.poll_transmit() {
                s.handle_control(now, &ack);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        assert_eq!(s.state(), TransferState::Complete);
        r.take_message().unwrap()
    });
}
