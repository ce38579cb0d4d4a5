//! The ibacm door over two ports of one node (two agents, each with its
//! own cache and master requests) and two P_Keys of one of them, against
//! the fake master: each RESOLVE goes to the agent of the endpoint its
//! source names — by GID, LID, address or P_Key — and comes back with
//! that port's path.

use bytes::Bytes;
use mad_codec::zerocopy::FromBytes;
use mad_codec::{Gid, PathRecord};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID};
use super::fake_master::{FakeMaster, gid, path};
use crate::doors::acm::wire::{self, Entry, Opcode, Status, flags};
use crate::doors::acm::{AcmConfig, AcmService, Endpoint};
use crate::doors::{Door, Input, Output};
use crate::names::hosts::{HostAddress, Names};

/// The node's second port.
const OTHER_LID: u16 = 3;

/// Port 1 (LID 2, agent 0) with P_Keys 0xFFFF and 0x8001, port 2 (LID 3,
/// agent 1) with 0xFFFF and the address 10.0.0.3.
fn node() -> (AcmService, [Bench; 2]) {
    let ports = [
        Bench::for_port(FakeMaster::new(MASTER_LID, HOSTS), MY_LID),
        Bench::for_port(FakeMaster::new(MASTER_LID, HOSTS), OTHER_LID),
    ];
    let ep = |agent: usize, port_num: u8, pkey: u16, addresses: Vec<HostAddress>| Endpoint {
        agent,
        port: ports[agent].core.port(),
        dev_guid: 0xD0D0,
        port_num,
        phys_port_cnt: 2,
        pkey,
        addresses,
    };
    let door = AcmService::new(
        AcmConfig::default(),
        vec![
            ep(0, 1, 0xFFFF, vec![]),
            ep(0, 1, 0x8001, vec![]),
            ep(
                1,
                2,
                0xFFFF,
                vec![HostAddress::Ip("10.0.0.3".parse().unwrap())],
            ),
        ],
        Names::new(),
    );
    (door, ports)
}

fn message(opcode: Opcode, data: [u8; 3], entries: &[Entry]) -> Vec<u8> {
    wire::request(opcode, data, entries, 7).to_vec()
}

/// Sends `msg` through the door and, if it asks agents, those agents;
/// returns the reply and which agent answered the primary path (the
/// first asked: an alternate comes from the other port's).
fn resolve(door: &mut AcmService, ports: &mut [Bench; 2], msg: &[u8]) -> (Bytes, Option<usize>) {
    let now = ports[0].now;
    door.handle_input(
        now,
        Input::Message {
            conn: 1,
            bytes: msg,
        },
    );
    let mut agent_used = None;
    loop {
        match door.poll_output().expect("the door answers or asks") {
            Output::Send { bytes, .. } => return (bytes, agent_used),
            Output::Ask {
                agent, id, request, ..
            } => {
                agent_used.get_or_insert(agent);
                let b = &mut ports[agent];
                b.core.handle_local(b.now, 1, id, request);
                b.pump();
                let reply = b.core.poll_local().expect("the agent answers");
                door.handle_reply(now, &reply);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn path_of(reply: &[u8]) -> PathRecord {
    assert_eq!(Status(reply[2]), Status::SUCCESS, "{reply:?}");
    let e = Entry::parse(&reply[16..88]).unwrap();
    e.path_record().expect("a PATH entry")
}

fn source(address: &HostAddress) -> Entry {
    Entry::for_address(flags::SOURCE, address)
}

fn dest(address: &HostAddress) -> Entry {
    Entry::for_address(flags::DEST, address)
}

#[test]
fn each_resolve_goes_to_the_agent_of_the_source_it_names() {
    let (mut door, mut ports) = node();
    let to = HostAddress::Gid(gid(7));
    for (from, agent, slid) in [
        (None, 0, MY_LID),
        (Some(HostAddress::Gid(gid(MY_LID))), 0, MY_LID),
        (Some(HostAddress::Gid(gid(OTHER_LID))), 1, OTHER_LID),
        (Some(HostAddress::Lid(OTHER_LID)), 1, OTHER_LID),
        (
            Some(HostAddress::Ip("10.0.0.3".parse().unwrap())),
            1,
            OTHER_LID,
        ),
    ] {
        let mut entries = vec![dest(&to)];
        entries.extend(from.as_ref().map(source));
        let (reply, used) = resolve(
            &mut door,
            &mut ports,
            &message(Opcode::RESOLVE, [0; 3], &entries),
        );
        assert_eq!(used, Some(agent), "from {from:?}");
        assert_eq!(path_of(&reply), path(slid, 7), "from {from:?}");
    }
    // Each port's agent answered from its own cache: no master queries
    // for paths beyond each one's start-up refresh.
    for b in &ports {
        assert_eq!(b.core.counters().misses, 0);
        assert!(b.core.counters().hits >= 1);
    }
    // A source that is not one of this node's endpoints.
    let (reply, used) = resolve(
        &mut door,
        &mut ports,
        &message(
            Opcode::RESOLVE,
            [0; 3],
            &[dest(&to), source(&HostAddress::Gid(gid(9)))],
        ),
    );
    assert_eq!((Status(reply[2]), used), (Status::ESRCADDR, None));
}

#[test]
fn a_resolve_by_gid_carries_an_alternate_from_the_other_ports_cache() {
    let (mut door, mut ports) = node();
    let (reply, used) = resolve(
        &mut door,
        &mut ports,
        &message(Opcode::RESOLVE, [0; 3], &[dest(&HostAddress::Gid(gid(7)))]),
    );
    assert_eq!(used, Some(0), "the primary from port 1");
    let primary = Entry::parse(&reply[16..88]).unwrap();
    let alternate = Entry::parse(&reply[88..160]).unwrap();
    assert_eq!(primary.path_record(), Some(path(MY_LID, 7)));
    assert_eq!(
        alternate.flags,
        crate::path_flags::GMP | crate::path_flags::ALTERNATE | crate::path_flags::BIDIRECTIONAL
    );
    // Port 2's own path, as its agent holds it from its master: no
    // master query was made for the alternate.
    assert_eq!(alternate.path_record(), Some(path(OTHER_LID, 7)));
    assert_eq!(ports[1].core.counters().misses, 0);
}

#[test]
fn a_path_template_picks_the_endpoint_by_sgid_slid_and_pkey() {
    let (mut door, mut ports) = node();
    let template = |sgid: Gid, slid: u16, pkey: u16| {
        let mut t = PathRecord::read_from_bytes(&[0u8; 64]).unwrap();
        t.set_sgid(sgid);
        t.set_slid(slid);
        t.set_dgid(gid(9));
        t.set_pkey(pkey);
        Entry::path(flags::DEST, &t)
    };
    let msg = |e| message(Opcode::RESOLVE, [0; 3], &[e]);
    let (reply, used) = resolve(&mut door, &mut ports, &msg(template(gid(OTHER_LID), 0, 0)));
    assert_eq!((path_of(&reply), used), (path(OTHER_LID, 9), Some(1)));
    let (reply, used) = resolve(&mut door, &mut ports, &msg(template(Gid::ZERO, MY_LID, 0)));
    assert_eq!((path_of(&reply), used), (path(MY_LID, 9), Some(0)));
    // P_Key 0x8001 is port 1's second endpoint: a partition its table (of
    // 0xFFFF paths) does not answer, so the pair is asked of the master.
    let misses = ports[0].core.counters().misses;
    let (_, used) = resolve(
        &mut door,
        &mut ports,
        &msg(template(gid(MY_LID), 0, 0x8001)),
    );
    assert_eq!(used, Some(0));
    assert_eq!(ports[0].core.counters().misses, misses + 1);
    let asked = ports[0].master.requests.last().unwrap();
    assert_eq!(asked.template.pkey(), 0x8001);
    // No endpoint of port 2 is in partition 0x8001.
    let (reply, used) = resolve(
        &mut door,
        &mut ports,
        &msg(template(gid(OTHER_LID), 0, 0x8001)),
    );
    assert_eq!((Status(reply[2]), used), (Status::ESRCADDR, None));
}

#[test]
fn ep_query_enumerates_every_port_and_pkey() {
    let (mut door, mut ports) = node();
    let mut seen = Vec::new();
    for index in 1..=4u8 {
        let (reply, _) = resolve(
            &mut door,
            &mut ports,
            &message(Opcode::EP_QUERY, [index, 0, 0], &[]),
        );
        if Status(reply[2]) != Status::SUCCESS {
            break;
        }
        // acm_ep_config_data, network order: dev_guid, port_num, ...,
        // pkey at byte 12.
        let ep = &reply[16..];
        seen.push((ep[8], u16::from_be_bytes([ep[12], ep[13]])));
    }
    assert_eq!(seen, [(1, 0xFFFF), (1, 0x8001), (2, 0xFFFF)]);
}

#[test]
fn an_endpoint_on_another_partition_asks_each_pair_once() {
    let (mut door, mut ports) = node();
    // The master has partition 0x8001, on SL 3.
    ports[0].master.partitions.insert(0x0001, 3);
    let to = |dlid: u16| {
        let mut t = PathRecord::read_from_bytes(&[0u8; 64]).unwrap();
        t.set_sgid(gid(MY_LID));
        t.set_dgid(gid(dlid));
        t.set_pkey(0x8001);
        message(Opcode::RESOLVE, [0; 3], &[Entry::path(flags::DEST, &t)])
    };
    let asked = |ports: &[Bench; 2]| ports[0].master.count(mad_codec::AttributeId::PATH_RECORD);
    let before = asked(&ports);
    for _ in 0..3 {
        let (reply, used) = resolve(&mut door, &mut ports, &to(9));
        let p = path_of(&reply);
        assert_eq!((p.pkey(), p.sl(), p.dlid(), used), (0x8001, 3, 9, Some(0)));
    }
    assert_eq!(asked(&ports), before + 1, "the pair asked once");
    resolve(&mut door, &mut ports, &to(10));
    assert_eq!(asked(&ports), before + 2, "another pair, once more");
    assert_eq!(ports[0].core.counters().qos_cache_hits, 2);
}
