use std::net::IpAddr;

use bytes::BytesMut;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, ComponentMask, Gid};

use super::*;
use crate::config::test_port as port;
use crate::doors::acm::wire::{AddressType, ENTRY_LEN, HEADER_LEN};
use crate::names::hosts::NameSource;
use crate::request::LocalBody;
use crate::request::RequestKind;
use mad_codec::records::SaRecord;

mod routes;

const PREFIX: u64 = Gid::DEFAULT_PREFIX;

/// One port (LID 4) with two P_Keys, and a hosts table naming H5_1.
fn service() -> AcmService {
    let ep = |pkey, addresses| Endpoint {
        agent: 0,
        port: port(4),
        dev_guid: 0x44,
        port_num: 1,
        phys_port_cnt: 1,
        pkey,
        addresses,
    };
    let mut names = Names::new();
    names.insert(
        HostAddress::Name("H5_1".into()),
        Gid::new(PREFIX, 5),
        NameSource::HostsFile,
    );
    names.insert(
        HostAddress::Ip("10.0.0.5".parse().unwrap()),
        Gid::new(PREFIX, 5),
        NameSource::HostsFile,
    );
    AcmService::new(
        AcmConfig { max_pending: 2 },
        vec![
            ep(
                0xFFFF,
                vec![
                    HostAddress::Name("H4_1".into()),
                    HostAddress::Ip("10.0.0.4".parse().unwrap()),
                ],
            ),
            ep(0x8001, vec![]),
        ],
        names,
    )
}

fn message(opcode: Opcode, data: [u8; 3], entries: &[Entry]) -> Vec<u8> {
    wire::request(opcode, data, entries, 77).to_vec()
}

fn resolve(entries: &[Entry]) -> Vec<u8> {
    message(Opcode::RESOLVE, [0; 3], entries)
}

fn asked(step: Output) -> (u32, PathQuery, Lookup) {
    match step {
        Output::Ask {
            conn: _,
            agent: 0,
            id,
            request: Request::PathQuery { query, lookup },
        } => (id, query, lookup),
        other => panic!("expected a path query, got {other:?}"),
    }
}

/// The reply a step carries (the door asked nothing more).
fn replied(step: Output) -> Bytes {
    match step {
        Output::Send { bytes: b, .. } => b,
        other => panic!("expected a reply, got {other:?}"),
    }
}

fn status_of(step: &Output) -> Status {
    match step {
        Output::Send { bytes: b, .. } => Status(b[2]),
        other => panic!("expected a reply, got {other:?}"),
    }
}

/// The door's one output for what it was just given, if any.
fn only_output(s: &mut AcmService) -> Option<Output> {
    let output = s.poll_output();
    assert_eq!(s.poll_output(), None, "one output per input");
    output
}

/// What the door does with message `bytes` from `conn`, through the
/// [`Door`] trait: its reply, or its question for an agent.
fn sent(s: &mut AcmService, conn: ConnId, bytes: &[u8]) -> Output {
    s.handle_input(Instant::now(), Input::Message { conn, bytes });
    only_output(s).expect("a message is answered or asked")
}

/// What the door does with an agent's `reply`, through the [`Door`] trait.
fn answered(s: &mut AcmService, reply: &LocalReply) -> Option<Output> {
    s.handle_reply(Instant::now(), reply);
    only_output(s)
}

/// Connection `conn` closed.
fn closed(s: &mut AcmService, conn: ConnId) {
    s.handle_input(Instant::now(), Input::Closed { conn });
}

fn answer(
    conn: ConnId,
    id: u32,
    status: MadStatus,
    record: Option<&PathRecord>,
    from_master: bool,
) -> LocalReply {
    LocalReply {
        conn,
        request: id,
        answers: Some(RequestKind::PathQuery),
        status,
        from_master,
        body: LocalBody::Records {
            attribute: AttributeId::PATH_RECORD,
            stride: PathRecord::LEN,
            data: Bytes::copy_from_slice(record.map_or(&[][..], |r| r.as_bytes())),
        },
    }
}

fn record(dlid: u16) -> PathRecord {
    let mut r = PathRecord::new_zeroed();
    r.set_dgid(Gid::new(PREFIX, u64::from(dlid)));
    r.set_sgid(Gid::new(PREFIX, 4));
    r.set_dlid(dlid);
    r.set_slid(4);
    r.set_pkey(0xFFFF);
    r.set_reversible(true);
    r
}

#[test]
fn a_name_resolves_from_the_default_endpoint_like_acmp() {
    let mut s = service();
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
    let (id, q, lookup) = asked(sent(&mut s, 9, &resolve(&[dest])));
    assert_eq!(lookup, Lookup::Anywhere);
    assert_eq!(q.method, Method::GET);
    assert_eq!(q.template.dgid(), Gid::new(PREFIX, 5));
    assert_eq!(
        (q.template.sgid(), q.template.slid()),
        (Gid::new(PREFIX, 4), 4)
    );
    assert_eq!(q.template.pkey(), 0xFFFF);
    assert_eq!(
        q.mask,
        pr::DGID | pr::SGID | pr::SLID | pr::PKEY | pr::REVERSIBLE
    );
    let reply = answered(
        &mut s,
        &answer(9, id, MadStatus::OK, Some(&record(5)), true),
    )
    .map(replied)
    .unwrap();
    // The path, then the source ibacm chose (the endpoint's name).
    assert_eq!(reply.len(), HEADER_LEN + 2 * ENTRY_LEN);
    let m = Header::parse(reply[..16].try_into().unwrap());
    assert_eq!(
        (m.status, m.length as usize),
        (Status::SUCCESS, reply.len())
    );
    let path = Entry::parse(&reply[16..88]).unwrap();
    assert_eq!(
        path.flags,
        path_flags::GMP | path_flags::PRIMARY | path_flags::BIDIRECTIONAL
    );
    assert_eq!(path.path_record(), Some(record(5)));
    let source = Entry::parse(&reply[88..160]).unwrap();
    assert_eq!(source.flags, flags::SOURCE);
    assert_eq!(source.address(), Ok(HostAddress::Name("H4_1".into())));
    let c = s.counters();
    assert_eq!(
        (
            c[counter::RESOLVE],
            c[counter::ADDR_CACHE],
            c[counter::ROUTE_QUERY]
        ),
        (1, 1, 1)
    );
    assert_eq!(s.pending(), 0);
}

#[test]
fn names_learned_from_the_master_resolve_and_the_files_win() {
    let mut s = service();
    let mut learned = Names::new();
    // The master's directory says H5_1 is port 6: the hosts file says 5.
    for (name, guid) in [("H5_1", 6), ("H7_1", 7)] {
        learned.insert(
            HostAddress::Name(name.into()),
            Gid::new(PREFIX, guid),
            NameSource::Directory,
        );
    }
    s.set_learned_names(Arc::new(learned));
    for (name, guid) in [("H5_1", 5), ("H7_1", 7)] {
        let dest = Entry::for_address(flags::DEST, &HostAddress::Name(name.into()));
        let (_, q, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
        assert_eq!(q.template.dgid(), Gid::new(PREFIX, guid), "{name}");
    }
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H8_1".into()));
    assert_eq!(
        status_of(&sent(&mut s, 10, &resolve(&[dest]))),
        Status::EDESTADDR
    );
}

#[test]
fn this_nodes_own_name_and_address_resolve_before_anything_is_learned() {
    let mut s = service();
    for own in [
        HostAddress::Name("H4_1".into()),
        HostAddress::Ip("10.0.0.4".parse().unwrap()),
    ] {
        let dest = Entry::for_address(flags::DEST, &own);
        let (_, q, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
        assert_eq!(q.template.dgid(), Gid::new(PREFIX, 4), "{own:?}");
    }
}

#[test]
fn a_path_template_selects_like_an_sa_get() {
    let mut s = service();
    let mut t = PathRecord::new_zeroed();
    t.set_dlid(5);
    t.set_reversible(true);
    t.set_numb_path(1);
    let (id, q, _) = asked(sent(&mut s, 1, &resolve(&[Entry::path(0, &t)])));
    assert_eq!(q.template.dlid(), 5);
    assert_eq!(
        q.mask,
        pr::DLID | pr::SGID | pr::SLID | pr::PKEY | pr::REVERSIBLE
    );
    let reply = answered(
        &mut s,
        &answer(1, id, MadStatus::OK, Some(&record(5)), false),
    )
    .map(replied)
    .unwrap();
    assert_eq!(
        reply.len(),
        HEADER_LEN + ENTRY_LEN,
        "no source entry for a path"
    );
    assert_eq!(s.counters()[counter::ROUTE_CACHE], 1);
}

#[test]
fn query_sa_sends_the_template_as_it_is_and_echoes_the_request() {
    let mut s = service();
    let r = record(5);
    let req = resolve(&[Entry::path(flags::QUERY_SA, &r)]);
    let (id, q, lookup) = asked(sent(&mut s, 1, &req));
    assert_eq!(lookup, Lookup::Master);
    assert_eq!(q.template, r);
    assert_eq!(q.mask, path_mask(&r));
    let mut better = r;
    better.set_sl(3);
    let reply = answered(&mut s, &answer(1, id, MadStatus::OK, Some(&better), true))
        .map(replied)
        .unwrap();
    assert_eq!(reply.len(), req.len());
    let e = Entry::parse(&reply[16..]).unwrap();
    assert_eq!(e.flags, flags::QUERY_SA, "the request's entry, echoed");
    assert_eq!(e.path_record(), Some(better));
}

#[test]
fn nodelay_asks_the_cache_only() {
    let mut s = service();
    let dest = Entry::for_address(
        flags::DEST | flags::NODELAY,
        &HostAddress::Gid(Gid::new(PREFIX, 5)),
    );
    let (id, _, lookup) = asked(sent(&mut s, 1, &resolve(&[dest])));
    assert_eq!(lookup, Lookup::CacheOnly);
    let reply = answered(
        &mut s,
        &answer(1, id, MadStatus::ERR_NO_RECORDS, None, false),
    )
    .map(replied)
    .unwrap();
    assert_eq!(
        (reply.len(), Status(reply[2])),
        (HEADER_LEN, Status::ENODATA)
    );
    assert_eq!(s.counters()[counter::NODATA], 1);
}

#[test]
fn errors_map_to_acm_statuses_and_never_leave_a_client_waiting() {
    let mut s = service();
    let unknown = Entry::for_address(flags::DEST, &HostAddress::Name("nobody".into()));
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[unknown]))),
        Status::EDESTADDR
    );
    let stranger = Entry::for_address(flags::SOURCE, &HostAddress::Gid(Gid::new(PREFIX, 99)));
    let dest = Entry::for_address(flags::DEST, &HostAddress::Lid(5));
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[stranger, dest]))),
        Status::ESRCADDR
    );
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[dest, dest]))),
        Status::EDESTADDR,
        "two destinations"
    );
    let mut bad_type = dest;
    bad_type.kind = AddressType(0x0F);
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[bad_type]))),
        Status::EDESTTYPE
    );
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[]))),
        Status::EDESTTYPE
    );
    let no_dest = PathRecord::new_zeroed();
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[Entry::path(0, &no_dest)]))),
        Status::EDESTADDR
    );
    let mut other_partition = record(5);
    other_partition.set_pkey(0x0002);
    assert_eq!(
        status_of(&sent(
            &mut s,
            1,
            &resolve(&[Entry::path(0, &other_partition)])
        )),
        Status::ESRCADDR
    );
    // The master did not answer; it answered with an error.
    let (id, _, _) = asked(sent(&mut s, 1, &resolve(&[dest])));
    let r = answered(&mut s, &answer(1, id, MadStatus::BUSY, None, true))
        .map(replied)
        .unwrap();
    assert_eq!(Status(r[2]), Status::ETIMEDOUT);
    let (id, _, _) = asked(sent(&mut s, 1, &resolve(&[dest])));
    let r = answered(
        &mut s,
        &answer(1, id, MadStatus::ERR_REQ_INVALID, None, true),
    )
    .map(replied)
    .unwrap();
    assert_eq!(Status(r[2]), Status::EINVAL);
    let mut bad = resolve(&[dest]);
    bad[0] = 9;
    assert_eq!(status_of(&sent(&mut s, 1, &bad)), Status::EINVAL);
    assert_eq!(s.door_counters().malformed, 1);
}

#[test]
fn a_connection_may_not_pile_up_requests_and_its_close_forgets_them() {
    let mut s = service();
    let dest = Entry::for_address(flags::DEST, &HostAddress::Lid(5));
    let (a, _, _) = asked(sent(&mut s, 1, &resolve(&[dest])));
    asked(sent(&mut s, 1, &resolve(&[dest])));
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[dest]))),
        Status::ENOMEM
    );
    assert_eq!(s.door_counters().refused_pending, 1);
    asked(sent(&mut s, 2, &resolve(&[dest])));
    closed(&mut s, 1);
    assert_eq!(s.pending(), 1);
    assert!(
        answered(
            &mut s,
            &answer(1, a, MadStatus::OK, Some(&record(5)), false)
        )
        .is_none()
    );
    asked(sent(&mut s, 1, &resolve(&[dest])));
}

#[test]
fn perf_and_endpoint_queries_follow_ibacm() {
    let mut s = service();
    let dest = Entry::for_address(flags::DEST, &HostAddress::Lid(5));
    let (id, _, _) = asked(sent(&mut s, 1, &resolve(&[dest])));
    answered(
        &mut s,
        &answer(1, id, MadStatus::OK, Some(&record(5)), false),
    );
    let counters = |b: &[u8]| -> Vec<u64> {
        b[16..]
            .chunks(8)
            .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
            .collect()
    };
    let mut perf = message(Opcode::PERF_QUERY, [0; 3], &[]);
    perf[6..8].copy_from_slice(&16u16.to_be_bytes());
    let Output::Send { bytes: all, .. } = sent(&mut s, 1, &perf) else {
        panic!()
    };
    assert_eq!(counters(&all), vec![0, 1, 0, 0, 0, 0, 1]);
    perf[4] = 2; // endpoint 2: nothing happened there
    let Output::Send { bytes: two, .. } = sent(&mut s, 1, &perf) else {
        panic!()
    };
    assert_eq!(counters(&two), vec![0; 7]);
    perf[4] = 3;
    assert_eq!(status_of(&sent(&mut s, 1, &perf)), Status::ESRCADDR);
    let by_name = Entry::for_address(flags::SOURCE, &HostAddress::Name("H4_1".into()));
    let mut perf = message(Opcode::PERF_QUERY, [0; 3], &[by_name]);
    perf[6..8].copy_from_slice(&88u16.to_be_bytes());
    let Output::Send { bytes: one, .. } = sent(&mut s, 1, &perf) else {
        panic!()
    };
    assert_eq!(counters(&one)[counter::RESOLVE], 1);

    let mut ep = message(Opcode::EP_QUERY, [2, 1, 0], &[]);
    ep[6..8].copy_from_slice(&16u16.to_be_bytes());
    let Output::Send { bytes: r, .. } = sent(&mut s, 1, &ep) else {
        panic!()
    };
    assert_eq!(Status(r[2]), Status::SUCCESS);
    assert_eq!(
        &r[28..30],
        &0x8001u16.to_be_bytes(),
        "endpoint 2 is P_Key 8001"
    );
    ep[3] = 3;
    assert_eq!(status_of(&sent(&mut s, 1, &ep)), Status::EINVAL);
    ep[3] = 1;
    ep[4] = 2; // port 2 has no endpoints
    assert_eq!(status_of(&sent(&mut s, 1, &ep)), Status::EINVAL);
}
