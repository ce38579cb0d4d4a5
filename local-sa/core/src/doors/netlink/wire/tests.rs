use mad_codec::zerocopy::FromZeros;

use super::*;

fn gid(last: u8) -> Gid {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[15] = last;
    Gid(g)
}

fn kernel_resolve() -> Resolve {
    Resolve {
        device: "mlx5_0".into(),
        port: 1,
        path_use: PathUse::GMP,
        service_id: Some(0x1_0000_0000_0106),
        dgid: Some(gid(9)),
        sgid: Some(gid(2)),
        tclass: Some(0),
        pkey: Some(0xffff),
        qos_class: None,
    }
}

fn only(datagram: &[u8]) -> (Option<Header>, Result<Message, WireError>) {
    let mut all = messages(datagram);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[test]
fn a_kernel_resolve_decodes_to_what_it_asked() {
    let bytes = resolve_request(77, &kernel_resolve());
    // 16 + 68 + service ID (12) + two GIDs (20 each) + TClass (8) + P_Key (8).
    assert_eq!(bytes.len(), 16 + 68 + 12 + 20 + 20 + 8 + 8);
    assert_eq!(u16::from_ne_bytes([bytes[4], bytes[5]]), 0x1000);
    let (header, message) = only(&bytes);
    let message = message.unwrap();
    assert_eq!(header.unwrap().seq, 77);
    assert_eq!(message.body, Body::Resolve(kernel_resolve()));
}

#[test]
fn an_ip_resolve_decodes_for_both_families() {
    for address in ["10.1.2.3", "fd00::17"] {
        let r = IpResolve {
            ifindex: 5,
            address: address.parse().unwrap(),
        };
        let (_, message) = only(&ip_resolve_request(3, &r));
        assert_eq!(message.unwrap().body, Body::IpResolve(r));
    }
}

#[test]
fn replies_carry_the_requests_sequence_and_type_and_the_kernels_flags() {
    let request = Header::parse(&resolve_request(41, &kernel_resolve())).unwrap();
    let mut record = PathRecord::new_zeroed();
    record.set_dgid(gid(9));
    record.set_slid(2);
    let reply = resolve_reply(&request, PathUse::GMP, &[record]);
    let h = Header::parse(&reply).unwrap();
    assert_eq!((h.seq, h.kind, h.flags), (41, 0x1000, 0));
    assert_eq!(h.len as usize, reply.len());
    assert_eq!(reply.len(), 16 + 4 + 72);
    // The attribute type carries no flags: the kernel compares it whole.
    assert_eq!(u16::from_ne_bytes([reply[18], reply[19]]), 1);
    let got = reply_records(&reply);
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].0,
        path_flags::PRIMARY | path_flags::GMP | path_flags::BIDIRECTIONAL
    );
    assert_eq!(got[0].1.as_bytes(), record.as_bytes());
    assert_eq!(
        PathUse::UNIDIRECTIONAL.record_flags(),
        path_flags::PRIMARY | path_flags::OUTBOUND
    );

    let err = error_reply(&request);
    let h = Header::parse(&err).unwrap();
    assert_eq!((h.len, h.seq, h.flags, h.kind), (16, 41, F_ERR, 0x1000));

    let ip = Header::parse(&ip_resolve_request(
        9,
        &IpResolve {
            ifindex: 1,
            address: "10.0.0.1".parse().unwrap(),
        },
    ))
    .unwrap();
    let reply = ip_resolve_reply(&ip, gid(4));
    let h = Header::parse(&reply).unwrap();
    assert_eq!((h.len, h.seq, h.kind), (36, 9, 0x1002));
    assert_eq!(&reply[20..36], &gid(4).0);
}

#[test]
fn set_timeout_carries_milliseconds() {
    let bytes = set_timeout(1, 0, 4500);
    let (_, message) = only(&bytes);
    let message = message.unwrap();
    assert_eq!(message.header.kind, 0x1001);
    assert_eq!(message.header.flags, F_REQUEST);
    assert_eq!(message.body, Body::SetTimeout(Some(4500)));
}

#[test]
fn several_messages_in_one_datagram_are_each_decoded() {
    let mut datagram = resolve_request(1, &kernel_resolve()).to_vec();
    datagram.extend_from_slice(&resolve_request(2, &kernel_resolve()));
    let all = messages(&datagram);
    let seqs: Vec<u32> = all.iter().map(|(h, _)| h.unwrap().seq).collect();
    assert_eq!(seqs, [1, 2]);
    assert!(all.iter().all(|(_, m)| m.is_ok()));
}

#[test]
fn the_kernels_error_messages_are_recognised() {
    let mut b = BytesMut::new();
    Header {
        len: 36,
        kind: 2,
        flags: 0,
        seq: 5,
        pid: 0,
    }
    .emit(&mut b);
    b.put_i32_ne(-1); // -EPERM
    b.put_bytes(0, 16);
    let (_, message) = only(&b);
    assert_eq!(message.unwrap().body, Body::KernelError { errno: 1 });
}

/// Every malformed message is refused with a reason, and its header (for
/// an error reply) whenever there is one.
#[test]
fn malformed_messages_are_refused_with_a_reason() {
    let good = resolve_request(8, &kernel_resolve()).to_vec();
    let set_u16 =
        |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_ne_bytes());
    let set_u32 =
        |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    let first_attr = HEADER_LEN + RESOLVE_HEADER_LEN;

    let mut cases: Vec<(&str, Vec<u8>, WireError)> = Vec::new();
    cases.push(("cut header", good[..10].to_vec(), WireError::Length(10)));
    let mut b = good.clone();
    set_u32(&mut b, 0, 4000);
    cases.push(("length past the datagram", b, WireError::Length(4000)));
    let mut b = good.clone();
    set_u32(&mut b, 0, 8);
    cases.push(("length under the header", b, WireError::Length(8)));
    let mut b = good.clone();
    set_u16(&mut b, 4, 0x0800); // another client (IWCM)
    cases.push(("another client", b, WireError::NotLocalService(0x0800)));
    let mut b = good.clone();
    set_u16(&mut b, 4, 0x1007);
    cases.push(("unknown operation", b, WireError::Operation(Operation(7))));
    let mut b = good.clone();
    set_u16(&mut b, 6, 0);
    cases.push(("not a request", b, WireError::NotRequest));
    let mut b = good[..HEADER_LEN + 40].to_vec();
    set_u32(&mut b, 0, (HEADER_LEN + 40) as u32);
    cases.push(("cut family header", b, WireError::FamilyHeader));
    let mut b = good.clone();
    b[HEADER_LEN..HEADER_LEN + DEVICE_NAME_LEN].fill(b'x');
    cases.push(("unterminated device name", b, WireError::DeviceName));
    let mut b = good.clone();
    b[HEADER_LEN + DEVICE_NAME_LEN + 1] = 9;
    cases.push(("unknown path use", b, WireError::PathUse(PathUse(9))));
    let mut b = good.clone();
    set_u16(&mut b, first_attr, 2);
    cases.push((
        "attribute shorter than its header",
        b,
        WireError::AttrLength(2),
    ));
    let mut b = good.clone();
    set_u16(&mut b, first_attr, 300);
    cases.push(("attribute past the message", b, WireError::AttrLength(300)));
    let mut b = good.clone();
    set_u16(&mut b, first_attr, 8); // a service ID of 4 bytes
    set_u16(&mut b, first_attr + 8, 12);
    set_u16(&mut b, first_attr + 10, AttrType::SERVICE_ID.0);
    cases.push((
        "value of the wrong size",
        b,
        WireError::AttrSize(AttrType::SERVICE_ID, 4),
    ));
    let mut b = good.clone();
    set_u16(&mut b, first_attr + 2, 0x30 | RDMA_NLA_F_MANDATORY);
    cases.push((
        "unknown mandatory attribute",
        b,
        WireError::Mandatory(0x30 | RDMA_NLA_F_MANDATORY),
    ));
    let ip = ip_resolve_request(
        4,
        &IpResolve {
            ifindex: 1,
            address: "10.0.0.1".parse().unwrap(),
        },
    );
    let mut b = ip[..HEADER_LEN + IP_RESOLVE_HEADER_LEN].to_vec();
    let n = b.len() as u32;
    set_u32(&mut b, 0, n);
    cases.push(("IP_RESOLVE without an address", b, WireError::NoAddress));

    for (what, bytes, want) in cases {
        let (header, got) = only(&bytes);
        assert_eq!(got, Err(want), "{what}");
        assert_eq!(header.is_some(), bytes.len() >= HEADER_LEN, "{what}");
        assert!(!want.to_string().is_empty());
    }
}

#[test]
fn an_unknown_optional_attribute_is_skipped() {
    let mut b = resolve_request(8, &kernel_resolve()).to_vec();
    let first_attr = HEADER_LEN + RESOLVE_HEADER_LEN;
    b[first_attr + 2..first_attr + 4].copy_from_slice(&0x30u16.to_ne_bytes());
    let (_, message) = only(&b);
    let Body::Resolve(r) = message.unwrap().body else {
        panic!("not a resolve")
    };
    assert_eq!(
        r.service_id, None,
        "the service ID's slot held the unknown one"
    );
    assert_eq!(r.dgid, Some(gid(9)));
}

#[test]
fn no_input_panics() {
    // Every prefix and every single-byte corruption of a good message.
    let good = resolve_request(8, &kernel_resolve()).to_vec();
    for n in 0..=good.len() {
        let _ = messages(&good[..n]);
    }
    for i in 0..good.len() {
        for v in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut b = good.clone();
            b[i] = v;
            let _ = messages(&b);
        }
    }
}
