//! Which endpoint asks (a source named any way, the kernel's route, the
//! rail on the destination's subnet), alternate paths (another LID of the
//! destination, another port of this node), and pairs without a
//! reversible path.

use super::*;

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
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
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
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
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
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
    let (id, _, _) = asked(sent(&mut s, 9, &resolve(&[dest])));
    let step = answered(
        &mut s,
        &answer(9, id, MadStatus::OK, Some(&record(5)), false),
    );
    assert!(matches!(step, Some(Output::Send { bytes: _, .. })));
    // A LID names one path.
    let mut s = service_with_lmc();
    let dest = Entry::for_address(flags::DEST, &HostAddress::Lid(10));
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
fn resolved_from(s: &mut AcmService, source: HostAddress) -> Result<Gid, Status> {
    let entries = [
        Entry::for_address(flags::SOURCE, &source),
        Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into())),
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
    assert_eq!(
        resolved_from(&mut s, HostAddress::Name("H4_1".into())),
        Ok(own)
    );
    assert_eq!(
        resolved_from(&mut s, HostAddress::Ip("10.0.0.4".parse().unwrap())),
        Ok(own)
    );
    // Another host's name and address (the hosts file maps them to port 5).
    assert_eq!(
        resolved_from(&mut s, HostAddress::Name("H5_1".into())),
        Err(Status::ESRCADDR)
    );
    assert_eq!(
        resolved_from(&mut s, HostAddress::Ip("10.0.0.5".parse().unwrap())),
        Err(Status::ESRCADDR)
    );
    // This port's NodeDescription, learned from the master.
    let mut learned = Names::new();
    learned.insert(
        HostAddress::Name("node4".into()),
        own,
        NameSource::NodeDescription,
    );
    s.set_learned_names(Arc::new(learned));
    assert_eq!(
        resolved_from(&mut s, HostAddress::Name("node4".into())),
        Ok(own)
    );
    // An IPoIB address appears on the 0x8001 interface, then goes.
    let ipoib = HostAddress::Ip("192.0.2.7".parse().unwrap());
    assert_eq!(resolved_from(&mut s, ipoib.clone()), Err(Status::ESRCADDR));
    let before: Vec<Vec<HostAddress>> = s.endpoints().iter().map(|e| e.addresses.clone()).collect();
    let mut with = before.clone();
    with[1].push(ipoib.clone());
    s.set_owned_addresses(&with);
    let entries = [
        Entry::for_address(flags::SOURCE, &ipoib),
        Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into())),
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
    addresses: Vec<HostAddress>,
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
        let address = crate::names::hosts::parse_address(name).unwrap();
        names.insert(address, gid, NameSource::HostsFile);
    }
    AcmService::new(
        AcmConfig { max_pending: 8 },
        vec![
            ep(
                0,
                port(4),
                0xFFFF,
                vec![HostAddress::Ip("10.0.0.4".parse().unwrap())],
            ),
            ep(1, second, 0xFFFF, vec![]),
            ep(
                1,
                second,
                0x8002,
                vec![HostAddress::Ip("10.2.0.4".parse().unwrap())],
            ),
        ],
        names,
    )
}

/// What a RESOLVE to `dest` without a source asks: the agent, SGID and
/// P_Key; and the source it echoes.
fn chosen_for(s: &mut AcmService, dest: HostAddress) -> (usize, Gid, u16, Option<HostAddress>) {
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
    assert_eq!(chosen_for(&mut s, HostAddress::Ip(dest)).0, 1);
    // The kernel routes 10.2.0.9 out of ib1.8002 (source 10.2.0.4).
    s.set_source_route(Box::new(Routes(vec![(dest, "10.2.0.4".parse().unwrap())])));
    assert_eq!(
        chosen_for(&mut s, HostAddress::Ip(dest)),
        (
            1,
            rail2,
            0x8002,
            Some(HostAddress::Ip("10.2.0.4".parse().unwrap()))
        )
    );
    // A route through an interface that is not InfiniBand (eth0): the
    // usual choice.
    let other: IpAddr = "192.168.1.1".parse().unwrap();
    s.set_source_route(Box::new(Routes(vec![(
        other,
        "192.168.1.4".parse().unwrap(),
    )])));
    assert_eq!(chosen_for(&mut s, HostAddress::Ip(other)).0, 0);
    // A GID, or a name mapped to one, on the second subnet: rail 2.
    let far = Gid::new(0xFEC0_0000_0000_0002, 9);
    assert_eq!(chosen_for(&mut s, HostAddress::Gid(far)).1, rail2);
    assert_eq!(chosen_for(&mut s, HostAddress::Name("far".into())).1, rail2);
    // A port that is down is not chosen: the first active one is.
    let mut down = port(0);
    down.gid = Gid::new(PREFIX, 4);
    s.handle_port_change(0, down);
    assert_eq!(
        chosen_for(&mut s, HostAddress::Gid(Gid::new(PREFIX, 5))).0,
        1
    );
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
        HostAddress::Name("H5_1".into()),
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
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
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
    let by_lid = Entry::for_address(flags::DEST, &HostAddress::Lid(5));
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
    let dest = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
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
    let mut quick = Entry::for_address(flags::DEST, &HostAddress::Name("H5_1".into()));
    quick.flags |= flags::NODELAY;
    let (id, _, _) = asked(sent(&mut s, 6, &resolve(&[quick])));
    let step = answered(
        &mut s,
        &answer(6, id, MadStatus::ERR_NO_RECORDS, None, false),
    )
    .unwrap();
    assert_eq!(status_of(&step), Status::ENODATA);
}
