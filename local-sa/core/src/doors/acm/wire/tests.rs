use mad_codec::zerocopy::FromZeros;

use super::*;

/// A RESOLVE request as libacm builds it (host-order header).
fn resolve_request(entries: &[Entry], tid: u64) -> Vec<u8> {
    let len = HEADER_LEN + entries.len() * ENTRY_LEN;
    let mut out = BytesMut::new();
    Header {
        version: VERSION,
        opcode: Opcode::RESOLVE.0,
        status: Status::SUCCESS,
        data: [0; 3],
        length: len as u16,
        tid: tid.to_ne_bytes(),
    }
    .emit(&mut out);
    for e in entries {
        e.emit(&mut out);
    }
    out.to_vec()
}

#[test]
fn resolve_lengths_are_host_order_and_the_others_network_order() {
    let mut path = PathRecord::new_zeroed();
    path.set_dlid(7);
    let req = resolve_request(&[Entry::path(flags::QUERY_SA, &path)], 9);
    assert_eq!(&req[6..8], &(88u16).to_ne_bytes());
    assert_eq!(message_len(req[..16].try_into().unwrap()), Ok(88));
    let m = decode(&req).unwrap();
    assert_eq!(m.entries.len(), 1);
    assert_eq!(m.entries[0].flags, flags::QUERY_SA);
    assert_eq!(m.entries[0].path_record().unwrap().dlid(), 7);

    let mut perf = [0u8; 16];
    perf[0] = VERSION;
    perf[1] = Opcode::PERF_QUERY.0;
    perf[6..8].copy_from_slice(&16u16.to_be_bytes());
    assert_eq!(message_len(&perf), Ok(16));
    let reply = perf_reply(&Header::parse(&perf), Status::SUCCESS, &[1, 2, 3]);
    assert_eq!(reply.len(), 16 + 24);
    assert_eq!(&reply[6..8], &40u16.to_be_bytes());
    assert_eq!(
        (reply[1], reply[3]),
        (Opcode::PERF_QUERY.0 | Opcode::ACK, 3)
    );
    assert_eq!(&reply[16..24], &1u64.to_be_bytes());
}

#[test]
fn lengths_that_cannot_frame_close_the_connection() {
    let mut h = [0u8; 16];
    h[1] = Opcode::EP_QUERY.0;
    h[6..8].copy_from_slice(&15u16.to_be_bytes());
    assert_eq!(message_len(&h), Err(FrameError::TooShort(15)));
    // Nine entries: one more than a message may carry.
    let nine = (HEADER_LEN + 9 * ENTRY_LEN) as u16;
    h[6..8].copy_from_slice(&nine.to_be_bytes());
    assert_eq!(message_len(&h), Err(FrameError::TooLong(nine)));
}

#[test]
fn malformed_messages_are_named() {
    let mut req = resolve_request(&[], 1);
    req[0] = 2;
    assert_eq!(decode(&req), Err(DecodeError::Version(2)));
    req[0] = VERSION;
    req[1] = 0x07;
    assert_eq!(decode(&req), Err(DecodeError::Opcode(Opcode(7))));
    req[1] = Opcode::RESOLVE.0 | Opcode::ACK;
    assert_eq!(decode(&req), Err(DecodeError::Ack));
    let mut ragged = resolve_request(&[], 1);
    ragged.extend_from_slice(&[0; 10]);
    ragged[6..8].copy_from_slice(&26u16.to_ne_bytes());
    assert_eq!(decode(&ragged), Err(DecodeError::Ragged(26)));
    assert!(decode(&[1, 2]).is_err(), "shorter than a header");
}

#[test]
fn addresses_round_trip_and_bad_names_are_refused() {
    let cases = [
        HostAddress::Name("H4_1".into()),
        HostAddress::Ip("10.1.2.3".parse().unwrap()),
        HostAddress::Ip("fd00::5".parse().unwrap()),
        HostAddress::Gid("fe80::2:c903:8:e7b1".parse().unwrap()),
        HostAddress::Lid(0x1234),
    ];
    for a in cases {
        let e = Entry::for_address(flags::DEST, &a);
        let mut out = BytesMut::new();
        e.emit(&mut out);
        assert_eq!(out.len(), ENTRY_LEN);
        assert_eq!(Entry::parse(&out).unwrap().address(), Ok(a));
    }
    let mut unterminated = Entry::for_address(flags::DEST, &HostAddress::Name("x".into()));
    unterminated.info = [b'a'; ADDRESS_LEN];
    assert_eq!(unterminated.address(), Err(AddressError::Unterminated));
    unterminated.info = [0; ADDRESS_LEN];
    assert_eq!(unterminated.address(), Err(AddressError::Empty));
    unterminated.kind = AddressType(0x99);
    assert_eq!(
        unterminated.address(),
        Err(AddressError::Type(AddressType(0x99)))
    );
}

#[test]
fn replies_echo_the_tid_and_set_ack() {
    let req = resolve_request(&[], 0xDEAD_BEEF);
    let header = Header::parse(req[..16].try_into().unwrap());
    let reply = resolve_reply(&header, Status::EDESTADDR, &[]);
    assert_eq!(reply.len(), HEADER_LEN);
    assert_eq!(reply[1], Opcode::RESOLVE.0 | Opcode::ACK);
    assert_eq!(Status(reply[2]), Status::EDESTADDR);
    assert_eq!(&reply[8..16], &0xDEAD_BEEFu64.to_ne_bytes());
}

#[test]
fn endpoint_records_have_ibacms_layout() {
    let mut h = [0u8; 16];
    h[0] = VERSION;
    h[1] = Opcode::EP_QUERY.0;
    h[3] = 1;
    h[6..8].copy_from_slice(&16u16.to_be_bytes());
    let ep = EndpointRecord {
        dev_guid: 0x0002_c903_0000_0001,
        port_num: 1,
        phys_port_cnt: 2,
        pkey: 0xFFFF,
        provider: "local-sa".into(),
        addresses: vec!["H4_1".into(), "10.0.0.4".into()],
    };
    let r = endpoint_reply(&Header::parse(&h), Some(&ep));
    assert_eq!(r.len(), 16 + 80 + 2 * 64);
    assert_eq!(u16::from_be_bytes([r[6], r[7]]) as usize, r.len());
    assert_eq!(&r[16..24], &ep.dev_guid.to_be_bytes());
    assert_eq!((r[24], r[25]), (1, 2));
    assert_eq!(&r[28..30], &0xFFFFu16.to_be_bytes());
    assert_eq!(&r[30..32], &2u16.to_be_bytes());
    assert_eq!(&r[32..40], b"local-sa");
    assert_eq!(&r[96..100], b"H4_1");
    assert_eq!(r[100], 0);
    let none = endpoint_reply(&Header::parse(&h), None);
    assert_eq!((none.len(), Status(none[2])), (16, Status::EINVAL));
}
