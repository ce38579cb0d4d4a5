use std::net::IpAddr;

use bytes::BytesMut;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, ComponentMask, Gid};

use super::*;
use crate::config::test_port as port;
use crate::doors::acm::wire::{AddressType, ENTRY_LEN, HEADER_LEN};
use crate::naming::NameSource;
use crate::request::LocalBody;
use crate::request::RequestKind;
use mad_codec::records::SaRecord;

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
        Address::Name("H5_1".into()),
        Gid::new(PREFIX, 5),
        NameSource::HostsFile,
    );
    names.insert(
        Address::Ip("10.0.0.5".parse().unwrap()),
        Gid::new(PREFIX, 5),
        NameSource::HostsFile,
    );
    AcmService::new(
        AcmConfig { max_pending: 2 },
        vec![
            ep(
                0xFFFF,
                vec![
                    Address::Name("H4_1".into()),
                    Address::Ip("10.0.0.4".parse().unwrap()),
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
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
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
    assert_eq!(source.address(), Ok(Address::Name("H4_1".into())));
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
            Address::Name(name.into()),
            Gid::new(PREFIX, guid),
            NameSource::Directory,
        );
    }
    s.set_learned_names(Arc::new(learned));
    for (name, guid) in [("H5_1", 5), ("H7_1", 7)] {
        let dest = Entry::for_address(flags::DEST, &Address::Name(name.into()));
        let (_, q, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
        assert_eq!(q.template.dgid(), Gid::new(PREFIX, guid), "{name}");
    }
    let dest = Entry::for_address(flags::DEST, &Address::Name("H8_1".into()));
    assert_eq!(
        status_of(&sent(&mut s, 10, &resolve(&[dest]))),
        Status::EDESTADDR
    );
}

#[test]
fn this_nodes_own_name_and_address_resolve_before_anything_is_learned() {
    let mut s = service();
    for own in [
        Address::Name("H4_1".into()),
        Address::Ip("10.0.0.4".parse().unwrap()),
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
        &Address::Gid(Gid::new(PREFIX, 5)),
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
    let unknown = Entry::for_address(flags::DEST, &Address::Name("nobody".into()));
    assert_eq!(
        status_of(&sent(&mut s, 1, &resolve(&[unknown]))),
        Status::EDESTADDR
    );
    let stranger = Entry::for_address(flags::SOURCE, &Address::Gid(Gid::new(PREFIX, 99)));
    let dest = Entry::for_address(flags::DEST, &Address::Lid(5));
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
    let dest = Entry::for_address(flags::DEST, &Address::Lid(5));
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
    let dest = Entry::for_address(flags::DEST, &Address::Lid(5));
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
    let by_name = Entry::for_address(flags::SOURCE, &Address::Name("H4_1".into()));
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

/// The record from the port at LID `slid` (GUID 4) to LID `dlid` of the
/// port with GUID 5.
fn record_between(slid: u16, dlid: u16) -> PathRecord {
    let mut r = record(5);
    r.set_slid(slid);
    r.set_dlid(dlid);
    r
}

/// `service()` on a subnet with LMC 1: every port has two LIDs.
fn service_with_lmc() -> AcmService {
    let mut s = service();
    for ep in &mut s.endpoints {
        ep.port.lmc = 1;
    }
    s
}

#[test]
fn with_lmc_a_resolve_by_name_carries_an_alternate_path() {
    let mut s = service_with_lmc();
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
    let primary = record_between(4, 10);
    let step = answered(&mut s, &answer(9, id, MadStatus::OK, Some(&primary), false)).unwrap();
    // The known paths between the two ports, from what the agent holds.
    let (id, q, lookup) = asked(step);
    assert_eq!(lookup, Lookup::KnownOnly);
    assert_eq!(q.method, Method::GET_TABLE);
    assert_eq!(q.mask, pr::SGID | pr::DGID | pr::PKEY | pr::REVERSIBLE);
    assert_eq!(
        (q.template.sgid(), q.template.dgid()),
        (Gid::new(PREFIX, 4), primary.dgid())
    );
    let known = [
        primary,
        record_between(5, 10),
        record_between(4, 11),
        record_between(5, 11),
    ];
    let mut data = BytesMut::new();
    for r in &known {
        data.extend_from_slice(r.as_bytes());
    }
    let mut table = answer(9, id, MadStatus::OK, None, false);
    table.body = LocalBody::Records {
        attribute: AttributeId::PATH_RECORD,
        stride: PathRecord::LEN,
        data: data.freeze(),
    };
    let reply = replied(answered(&mut s, &table).unwrap());
    assert_eq!(reply.len(), HEADER_LEN + 3 * ENTRY_LEN);
    let first = Entry::parse(&reply[16..88]).unwrap();
    let second = Entry::parse(&reply[88..160]).unwrap();
    assert_eq!(
        first.flags,
        path_flags::GMP | path_flags::PRIMARY | path_flags::BIDIRECTIONAL
    );
    assert_eq!(first.path_record(), Some(primary));
    assert_eq!(
        second.flags,
        path_flags::GMP | path_flags::ALTERNATE | path_flags::BIDIRECTIONAL
    );
    assert_eq!(
        second.path_record(),
        Some(record_between(5, 11)),
        "another DLID (another route), from another SLID"
    );
    assert_eq!(
        Entry::parse(&reply[160..232]).unwrap().flags,
        flags::SOURCE,
        "the source ibacm echoes comes after the paths"
    );
    let c = s.counters();
    assert_eq!(
        (
            c[counter::RESOLVE],
            c[counter::ROUTE_CACHE],
            c[counter::ERROR]
        ),
        (1, 1, 0)
    );
    assert_eq!(s.pending(), 0);
}

#[test]
fn without_a_known_alternate_the_primary_alone_is_the_answer() {
    let mut s = service_with_lmc();
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
    let primary = record_between(4, 10);
    let (id2, _, _) =
        asked(answered(&mut s, &answer(9, id, MadStatus::OK, Some(&primary), true)).unwrap());
    let reply = replied(
        answered(
            &mut s,
            &answer(9, id2, MadStatus::ERR_NO_RECORDS, None, false),
        )
        .unwrap(),
    );
    assert_eq!(Status(reply[2]), Status::SUCCESS);
    assert_eq!(
        reply.len(),
        HEADER_LEN + 2 * ENTRY_LEN,
        "primary and source"
    );
    assert_eq!(
        Entry::parse(&reply[16..88]).unwrap().path_record(),
        Some(primary)
    );
    assert_eq!(s.counters()[counter::ROUTE_QUERY], 1);
}

#[test]
fn a_lid_or_lmc_zero_asks_for_no_alternate() {
    // LMC 0: the reply comes with the primary at once.
    let mut s = service();
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
    let step = answered(
        &mut s,
        &answer(9, id, MadStatus::OK, Some(&record(5)), false),
    );
    assert!(matches!(step, Some(Output::Send { bytes: _, .. })));
    // A LID names one path.
    let mut s = service_with_lmc();
    let dest = Entry::for_address(flags::DEST, &Address::Lid(10));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
    let step = answered(
        &mut s,
        &answer(9, id, MadStatus::OK, Some(&record(5)), false),
    );
    assert!(matches!(step, Some(Output::Send { bytes: _, .. })));
}

#[test]
fn the_alternate_ends_at_another_dlid() {
    let p = record_between(4, 10);
    assert_eq!(pick_alternate(&p, &[p, record_between(5, 10)]), None);
    assert_eq!(
        pick_alternate(&p, &[p, record_between(4, 11)]),
        Some(record_between(4, 11))
    );
    assert_eq!(
        pick_alternate(&p, &[record_between(4, 11), record_between(5, 11)]),
        Some(record_between(5, 11)),
        "another SLID too, when there is one"
    );
    assert_eq!(pick_alternate(&p, &[]), None);
}

/// The SGID of the Get a RESOLVE from `source` to H5_1 asks, or the
/// status it is refused with.
fn resolved_from(s: &mut AcmService, source: Address) -> Result<Gid, Status> {
    let entries = [
        Entry::for_address(flags::SOURCE, &source),
        Entry::for_address(flags::DEST, &Address::Name("H5_1".into())),
    ];
    let step = sent(s, 3, &resolve(&entries));
    // The client goes, so that its pending question does not count.
    closed(s, 3);
    match step {
        step @ Output::Send { bytes: _, .. } => Err(status_of(&step)),
        step => Ok(asked(step).1.template.sgid()),
    }
}

#[test]
fn a_source_is_any_name_or_address_of_this_node_and_nothing_else() {
    let mut s = service();
    let own = Gid::new(PREFIX, 4);
    // Owned by the endpoint.
    assert_eq!(resolved_from(&mut s, Address::Name("H4_1".into())), Ok(own));
    assert_eq!(
        resolved_from(&mut s, Address::Ip("10.0.0.4".parse().unwrap())),
        Ok(own)
    );
    // Another host's name and address (the hosts file maps them to port 5).
    assert_eq!(
        resolved_from(&mut s, Address::Name("H5_1".into())),
        Err(Status::ESRCADDR)
    );
    assert_eq!(
        resolved_from(&mut s, Address::Ip("10.0.0.5".parse().unwrap())),
        Err(Status::ESRCADDR)
    );
    // This port's NodeDescription, learned from the master.
    let mut learned = Names::new();
    learned.insert(
        Address::Name("node4".into()),
        own,
        NameSource::NodeDescription,
    );
    s.set_learned_names(Arc::new(learned));
    assert_eq!(
        resolved_from(&mut s, Address::Name("node4".into())),
        Ok(own)
    );
    // An IPoIB address appears on the 0x8001 interface, then goes.
    let ipoib = Address::Ip("192.0.2.7".parse().unwrap());
    assert_eq!(resolved_from(&mut s, ipoib.clone()), Err(Status::ESRCADDR));
    let before: Vec<Vec<Address>> = s.endpoints().iter().map(|e| e.addresses.clone()).collect();
    let mut with = before.clone();
    with[1].push(ipoib.clone());
    s.set_owned_addresses(&with);
    let entries = [
        Entry::for_address(flags::SOURCE, &ipoib),
        Entry::for_address(flags::DEST, &Address::Name("H5_1".into())),
    ];
    let (_, q, _) = asked(sent(&mut s, 3, &resolve(&entries)));
    assert_eq!(q.template.pkey(), 0x8001, "the address's partition");
    s.set_owned_addresses(&before);
    assert_eq!(resolved_from(&mut s, ipoib), Err(Status::ESRCADDR));
    // Endpoints are fixed: a list for another set is refused whole.
    s.set_owned_addresses(&[vec![]]);
    assert_eq!(s.endpoints()[0].addresses.len(), 2);
}

/// The kernel's routes, as a table: destination → source.
#[derive(Debug)]
struct Routes(Vec<(IpAddr, IpAddr)>);

impl SourceRoute for Routes {
    fn source_for(&self, destination: IpAddr) -> Option<IpAddr> {
        self.0
            .iter()
            .find(|(d, _)| *d == destination)
            .map(|(_, s)| *s)
    }
}

/// Endpoint of agent `agent` (port `agent + 1` of a two-port adapter).
fn two_port_endpoint(
    agent: usize,
    port: PortIdentity,
    pkey: u16,
    addresses: Vec<Address>,
) -> Endpoint {
    Endpoint {
        agent,
        port,
        dev_guid: 0x44,
        port_num: agent as u8 + 1,
        phys_port_cnt: 2,
        pkey,
        addresses,
    }
}

/// A node with a port on each of two subnets (rails): port 1 (LID 4) on
/// the default prefix with 10.0.0.4, port 2 (LID 14) on prefix 0xfec0…2
/// with 10.2.0.4 on its P_Key 0x8002 interface.
fn two_rails() -> AcmService {
    let rail2 = Gid::new(0xFEC0_0000_0000_0002, 14);
    let ep = two_port_endpoint;
    let mut second = port(14);
    second.gid = rail2;
    let mut names = Names::new();
    for (name, gid) in [
        ("far", Gid::new(0xFEC0_0000_0000_0002, 9)),
        ("10.2.0.9", Gid::new(0xFEC0_0000_0000_0002, 9)),
        ("192.168.1.1", Gid::new(PREFIX, 5)),
    ] {
        let address = crate::naming::parse_address(name).unwrap();
        names.insert(address, gid, NameSource::HostsFile);
    }
    AcmService::new(
        AcmConfig { max_pending: 8 },
        vec![
            ep(
                0,
                port(4),
                0xFFFF,
                vec![Address::Ip("10.0.0.4".parse().unwrap())],
            ),
            ep(1, second, 0xFFFF, vec![]),
            ep(
                1,
                second,
                0x8002,
                vec![Address::Ip("10.2.0.4".parse().unwrap())],
            ),
        ],
        names,
    )
}

/// What a RESOLVE to `dest` without a source asks: the agent, SGID and
/// P_Key; and the source it echoes.
fn chosen_for(s: &mut AcmService, dest: Address) -> (usize, Gid, u16, Option<Address>) {
    let conn = 40;
    let step = sent(s, conn, &resolve(&[Entry::for_address(flags::DEST, &dest)]));
    let Output::Ask {
        conn: _,
        agent,
        id,
        request: Request::PathQuery { query, .. },
    } = step
    else {
        panic!("expected a path query for {dest}, got {step:?}");
    };
    let mut r = record(9);
    r.set_sgid(query.template.sgid());
    let reply = match answered(s, &answer(conn, id, MadStatus::OK, Some(&r), true)) {
        // The other rail is asked for an alternate: it knows none.
        Some(Output::Ask { conn: _, id, .. }) => {
            answered(s, &answer(conn, id, MadStatus::OK, None, false))
                .map(replied)
                .unwrap()
        }
        other => other.map(replied).unwrap(),
    };
    let echo = (reply.len() > HEADER_LEN + ENTRY_LEN)
        .then(|| Entry::parse(&reply[88..160]).unwrap().address().unwrap());
    (agent, query.template.sgid(), query.template.pkey(), echo)
}

#[test]
fn without_a_source_the_kernels_route_and_the_subnet_choose_the_rail() {
    let mut s = two_rails();
    let rail2 = Gid::new(0xFEC0_0000_0000_0002, 14);
    // Without routes, an IP the hosts file maps to a GID on the second
    // subnet goes from there.
    let dest: IpAddr = "10.2.0.9".parse().unwrap();
    assert_eq!(chosen_for(&mut s, Address::Ip(dest)).0, 1);
    // The kernel routes 10.2.0.9 out of ib1.8002 (source 10.2.0.4).
    s.set_source_route(Box::new(Routes(vec![(dest, "10.2.0.4".parse().unwrap())])));
    assert_eq!(
        chosen_for(&mut s, Address::Ip(dest)),
        (
            1,
            rail2,
            0x8002,
            Some(Address::Ip("10.2.0.4".parse().unwrap()))
        )
    );
    // A route through an interface that is not InfiniBand (eth0): the
    // usual choice.
    let other: IpAddr = "192.168.1.1".parse().unwrap();
    s.set_source_route(Box::new(Routes(vec![(
        other,
        "192.168.1.4".parse().unwrap(),
    )])));
    assert_eq!(chosen_for(&mut s, Address::Ip(other)).0, 0);
    // A GID, or a name mapped to one, on the second subnet: rail 2.
    let far = Gid::new(0xFEC0_0000_0000_0002, 9);
    assert_eq!(chosen_for(&mut s, Address::Gid(far)).1, rail2);
    assert_eq!(chosen_for(&mut s, Address::Name("far".into())).1, rail2);
    // A port that is down is not chosen: the first active one is.
    let mut down = port(0);
    down.gid = Gid::new(PREFIX, 4);
    s.handle_port_change(0, down);
    assert_eq!(chosen_for(&mut s, Address::Gid(Gid::new(PREFIX, 5))).0, 1);
}

/// A node with two ports on one subnet: port 1 (LID 4), port 2 (LID 14).
fn two_ports() -> AcmService {
    let second = {
        let mut p = port(14);
        p.gid = Gid::new(PREFIX, 14);
        p
    };
    let ep = |agent, port, pkey| two_port_endpoint(agent, port, pkey, vec![]);
    let mut names = Names::new();
    names.insert(
        Address::Name("H5_1".into()),
        Gid::new(PREFIX, 5),
        NameSource::HostsFile,
    );
    AcmService::new(
        AcmConfig { max_pending: 8 },
        vec![ep(0, port(4), 0xFFFF), ep(1, second, 0xFFFF)],
        names,
    )
}

#[test]
fn on_a_two_port_node_the_alternate_goes_through_the_other_port() {
    let mut s = two_ports();
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 7, &resolve(&[dest])));
    // The primary is in: the door asks port 2's agent what it holds.
    let step = answered(
        &mut s,
        &answer(7, id, MadStatus::OK, Some(&record(5)), true),
    )
    .unwrap();
    let Output::Ask {
        conn: _,
        agent: 1,
        id,
        request: Request::PathQuery { query, lookup },
    } = step
    else {
        panic!("expected a question to port 2's agent, got {step:?}");
    };
    assert_eq!(lookup, Lookup::KnownOnly, "never the master");
    assert_eq!(query.template.sgid(), Gid::new(PREFIX, 14));
    assert_eq!(query.template.dgid(), Gid::new(PREFIX, 5));
    let mut from_port_2 = record(5);
    from_port_2.set_sgid(Gid::new(PREFIX, 14));
    from_port_2.set_slid(14);
    let reply = answered(
        &mut s,
        &answer(7, id, MadStatus::OK, Some(&from_port_2), false),
    )
    .map(replied)
    .unwrap();
    let primary = Entry::parse(&reply[16..88]).unwrap();
    let alternate = Entry::parse(&reply[88..160]).unwrap();
    assert_eq!(primary.path_record(), Some(record(5)));
    assert_eq!(
        alternate.flags,
        path_flags::GMP | path_flags::ALTERNATE | path_flags::BIDIRECTIONAL
    );
    assert_eq!(alternate.path_record(), Some(from_port_2));
    assert_eq!(s.pending(), 0);

    // Port 2 holds nothing for it: the primary alone.
    let (id, _, _) = asked(sent(&mut s, 8, &resolve(&[dest])));
    let Some(Output::Ask {
        conn: _, id: alt, ..
    }) = answered(
        &mut s,
        &answer(8, id, MadStatus::OK, Some(&record(5)), true),
    )
    else {
        panic!("expected the alternate's question");
    };
    let reply = answered(&mut s, &answer(8, alt, MadStatus::OK, None, false))
        .map(replied)
        .unwrap();
    assert_eq!(reply.len(), HEADER_LEN + ENTRY_LEN, "one path");

    // A LID names one path of one port: no alternate is looked for.
    let by_lid = Entry::for_address(flags::DEST, &Address::Lid(5));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[by_lid])));
    assert!(matches!(
        answered(
            &mut s,
            &answer(9, id, MadStatus::OK, Some(&record(5)), true)
        ),
        Some(Output::Send { bytes: _, .. })
    ));
}

#[test]
fn a_pair_without_a_reversible_path_gets_the_way_out_and_the_way_back() {
    let mut s = service();
    let dest = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 4, &resolve(&[dest])));
    // The master has no reversible path between them.
    let (id, q, lookup) = asked(
        answered(
            &mut s,
            &answer(4, id, MadStatus::ERR_NO_RECORDS, None, true),
        )
        .unwrap(),
    );
    assert_eq!(lookup, Lookup::Anywhere);
    assert_eq!(
        (q.method, q.template.dgid()),
        (Method::GET, Gid::new(PREFIX, 5))
    );
    assert_eq!(q.mask & pr::REVERSIBLE, ComponentMask(0), "one way");
    let mut out = record(5);
    out.set_reversible(false);
    let (id, q, _) =
        asked(answered(&mut s, &answer(4, id, MadStatus::OK, Some(&out), true)).unwrap());
    // The way back: from the destination to this port.
    assert_eq!(
        (
            q.template.sgid(),
            q.template.dgid(),
            q.template.slid(),
            q.template.dlid()
        ),
        (Gid::new(PREFIX, 5), Gid::new(PREFIX, 4), 5, 4)
    );
    let mut back = record(4);
    back.set_sgid(Gid::new(PREFIX, 5));
    back.set_dgid(Gid::new(PREFIX, 4));
    back.set_slid(5);
    back.set_reversible(false);
    let reply = answered(&mut s, &answer(4, id, MadStatus::OK, Some(&back), true))
        .map(replied)
        .unwrap();
    assert_eq!(Status(reply[2]), Status::SUCCESS);
    let first = Entry::parse(&reply[16..88]).unwrap();
    let second = Entry::parse(&reply[88..160]).unwrap();
    assert_eq!(first.flags, path_flags::PRIMARY | path_flags::OUTBOUND);
    assert_eq!(first.path_record(), Some(out));
    assert_eq!(second.flags, path_flags::PRIMARY | path_flags::INBOUND);
    assert_eq!(second.path_record(), Some(back));
    assert_eq!(s.pending(), 0);

    // No way out either: ENODATA, as before.
    let (id, _, _) = asked(sent(&mut s, 5, &resolve(&[dest])));
    let (id, _, _) = asked(
        answered(
            &mut s,
            &answer(5, id, MadStatus::ERR_NO_RECORDS, None, true),
        )
        .unwrap(),
    );
    let step = answered(
        &mut s,
        &answer(5, id, MadStatus::ERR_NO_RECORDS, None, true),
    )
    .unwrap();
    assert_eq!(status_of(&step), Status::ENODATA);

    // NODELAY answers from the cache only: no second question.
    let mut quick = Entry::for_address(flags::DEST, &Address::Name("H5_1".into()));
    quick.flags |= flags::NODELAY;
    let (id, _, _) = asked(sent(&mut s, 6, &resolve(&[quick])));
    let step = answered(
        &mut s,
        &answer(6, id, MadStatus::ERR_NO_RECORDS, None, false),
    )
    .unwrap();
    assert_eq!(status_of(&step), Status::ENODATA);
}
