//! The netlink decoder fed any datagram: it never panics, and what it
//! decodes as a kernel request re-encodes to a message that decodes the
//! same; every reply built for a decoded request decodes as the kernel
//! would read it. Then the door itself takes the datagram: every reply it
//! sends is one the kernel can read, each counted once, and nothing is
//! left waiting after its deadline.

use std::time::{Duration, Instant};

use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{AttributeId, Gid, MadStatus, PathRecord};

use crate::config::PortIdentity;
use crate::doors::netlink::wire::{self, Body};
use crate::doors::netlink::{KernelPort, NetlinkConfig, NetlinkService};
use crate::doors::{DatagramSender, Door, Input, Output};
use crate::names::hosts::Names;
use crate::request::{LocalBody, LocalReply, RequestKind};

/// One datagram.
pub fn netlink(data: &[u8]) {
    decoder(data);
    door(data);
}

/// The door fed `data`, its agent answering every other question with a
/// record and leaving the rest to the deadline.
fn door(data: &[u8]) {
    const CONN: u64 = 1 << 40;
    let port = PortIdentity {
        lid: 4,
        lmc: 0,
        gid: Gid::new(Gid::DEFAULT_PREFIX, 4),
        sm_lid: 1,
        sm_sl: 0,
    };
    let ports = vec![KernelPort {
        agent: 0,
        device: "ibsim0".into(),
        port_num: 1,
        port,
    }];
    let mut door = NetlinkService::new(NetlinkConfig::default(), CONN, ports, Names::new());
    let now = Instant::now();
    let mut replies = Vec::new();
    let sent = |output| match output {
        Output::Send { conn: CONN, bytes } => bytes,
        other => panic!("not a reply to the kernel: {other:?}"),
    };
    door.handle_input(
        now,
        Input::Datagram {
            from: DatagramSender::Kernel,
            bytes: data,
        },
    );
    let outputs: Vec<Output> = std::iter::from_fn(|| door.poll_output()).collect();
    for (n, output) in outputs.into_iter().enumerate() {
        match output {
            Output::Ask { id, .. } if n % 2 == 0 => {
                let record = PathRecord::new_zeroed();
                let reply = LocalReply {
                    conn: CONN,
                    request: id,
                    answers: Some(RequestKind::PathQuery),
                    status: MadStatus::OK,
                    from_master: false,
                    body: LocalBody::Records {
                        attribute: AttributeId::PATH_RECORD,
                        stride: 64,
                        data: record.as_bytes().to_vec().into(),
                    },
                };
                door.handle_reply(now, &reply);
                replies.extend(door.poll_output().map(sent));
                door.handle_reply(now, &reply);
                assert_eq!(door.poll_output(), None, "one reply per RESOLVE");
            }
            Output::Ask { .. } => {}
            other => replies.push(sent(other)),
        }
    }
    // What the agent left unanswered gets ERR at its deadline.
    let due = door.poll_timeout();
    door.handle_timeout(now + Duration::from_secs(3600));
    let late: Vec<_> = std::iter::from_fn(|| door.poll_output())
        .map(sent)
        .collect();
    assert_eq!(due.is_some(), !late.is_empty());
    assert_eq!(door.pending(), 0);
    replies.extend(late);
    for r in &replies {
        let h = wire::Header::parse(r).expect("a reply the kernel can read");
        assert_eq!(h.len as usize, r.len());
    }
    let c = door.counters();
    assert_eq!(c.answered + c.failed, replies.len() as u64);
}

fn decoder(data: &[u8]) {
    for (header, message) in wire::messages(data) {
        let Ok(message) = message else {
            if let Some(h) = header {
                let err = wire::error_reply(&h);
                assert_eq!(wire::Header::parse(&err).map(|e| e.seq), Some(h.seq));
            }
            continue;
        };
        let seq = message.header.seq;
        match &message.body {
            Body::Resolve(r) => {
                let again = wire::messages(&wire::resolve_request(seq, r));
                assert!(
                    matches!(&again[..], [(_, Ok(m))] if m.body == message.body),
                    "{r:?} does not survive a round trip: {again:?}"
                );
                let record = data
                    .get(..64)
                    .and_then(|b| PathRecord::read_from_bytes(b).ok())
                    .unwrap_or_else(PathRecord::new_zeroed);
                let reply = wire::resolve_reply(&message.header, r.path_use, &[record]);
                let read = wire::reply_records(&reply);
                assert_eq!(read.len(), 1);
                assert_eq!(read[0].0, r.path_use.record_flags());
            }
            Body::IpResolve(r) => {
                let again = wire::messages(&wire::ip_resolve_request(seq, r));
                assert!(
                    matches!(&again[..], [(_, Ok(m))] if m.body == message.body),
                    "{r:?} does not survive a round trip"
                );
            }
            Body::SetTimeout(_) | Body::KernelError { .. } => {}
        }
    }
}
