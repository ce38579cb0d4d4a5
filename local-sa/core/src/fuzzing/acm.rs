//! The ibacm door fed a client's byte stream: messages framed as the
//! daemon frames them, each answered at once or by a made-up agent reply
//! (any status, any record, sometimes never, sometimes after the
//! connection closed; a primary path may be followed by the door's lookup
//! of an alternate). Checks what a client relies on: every reply is a
//! well-formed message whose length field tells its length, with the ACK
//! bit and the request's TID; every request is answered at most once; and
//! nothing waits once its connection is gone.

use bytes::Bytes;
use mad_codec::{AttributeId, Gid, MadStatus};

use crate::config::PortIdentity;
use crate::doors::acm::wire::{self, Header, Opcode};
use crate::doors::acm::{AcmConfig, AcmService, Endpoint};
use crate::doors::{Door, Input, Output};
use crate::names::hosts::{HostAddress, NameSource, Names};
use crate::request::{LocalBody, LocalReply};

fn service() -> AcmService {
    let port = PortIdentity {
        lid: 4,
        lmc: 1,
        gid: Gid::new(Gid::DEFAULT_PREFIX, 4),
        sm_lid: 1,
        sm_sl: 0,
    };
    let ep = |pkey, addresses| Endpoint {
        agent: 0,
        port,
        dev_guid: 4,
        port_num: 1,
        phys_port_cnt: 1,
        pkey,
        addresses,
    };
    let mut names = Names::new();
    names.insert(
        HostAddress::Name("h5".into()),
        Gid::new(Gid::DEFAULT_PREFIX, 5),
        NameSource::HostsFile,
    );
    AcmService::new(
        AcmConfig { max_pending: 3 },
        vec![
            ep(0xFFFF, vec![HostAddress::Name("h4".into())]),
            ep(0x8002, vec![HostAddress::Ip("10.0.0.4".parse().unwrap())]),
        ],
        names,
    )
}

fn check_reply(request: &Header, reply: &[u8]) {
    let head: &[u8; wire::HEADER_LEN] = reply.first_chunk().expect("a reply is at least a header");
    let h = Header::parse(head);
    assert_eq!(usize::from(h.length), reply.len(), "length field lies");
    assert_eq!(h.version, wire::VERSION);
    assert_ne!(h.opcode & Opcode::ACK, 0, "reply without ACK");
    assert_eq!(h.tid, request.tid, "TID not echoed");
}

/// What the door asks after one input: at most one thing.
fn one_output(s: &mut AcmService) -> Option<Output> {
    let output = s.poll_output();
    assert!(
        s.poll_output().is_none(),
        "more than one output for one input"
    );
    output
}

/// The harness.
pub fn acm(data: &[u8]) {
    let now = std::time::Instant::now();
    let mut s = service();
    let mut rest = data;
    let mut waiting: Vec<(u64, u32, Header)> = Vec::new();
    while let Some((&control, tail)) = rest.split_first() {
        rest = tail;
        let conn = u64::from(control % 3);
        match control >> 5 {
            // A made-up answer to the oldest waiting request.
            0 if !waiting.is_empty() => {
                let (c, id, header) = waiting.remove(0);
                let status = [
                    MadStatus::OK,
                    MadStatus::ERR_NO_RECORDS,
                    MadStatus::BUSY,
                    MadStatus::ERR_REQ_INVALID,
                ][usize::from(control >> 3 & 3)];
                // Up to three records: an alternate lookup's answer holds
                // several.
                let n = rest.len().min(64 * usize::from(control & 3));
                let (record, tail) = rest.split_at(n);
                rest = tail;
                let reply = LocalReply {
                    conn: c,
                    request: id,
                    answers: None,
                    status,
                    from_master: control & 4 != 0,
                    body: LocalBody::Records {
                        attribute: AttributeId::PATH_RECORD,
                        stride: 64,
                        data: Bytes::copy_from_slice(record),
                    },
                };
                s.handle_reply(now, &reply);
                match one_output(&mut s) {
                    Some(Output::Send { bytes, .. }) => check_reply(&header, &bytes),
                    // The primary is in; the door looks for an alternate.
                    Some(Output::Ask { id, .. }) => waiting.push((c, id, header)),
                    Some(other) => panic!("unexpected {other:?}"),
                    None => {}
                }
                s.handle_reply(now, &reply);
                assert!(s.poll_output().is_none(), "answered twice");
            }
            1 => {
                s.handle_input(now, Input::Closed { conn });
                waiting.retain(|(c, ..)| *c != conn);
            }
            _ => {
                let Some(head) = rest.first_chunk::<{ wire::HEADER_LEN }>() else {
                    return;
                };
                let Ok(len) = wire::message_len(head) else {
                    // The daemon closes such a connection.
                    s.handle_input(now, Input::Closed { conn });
                    waiting.retain(|(c, ..)| *c != conn);
                    rest = &rest[wire::HEADER_LEN..];
                    continue;
                };
                let Some((message, tail)) = rest.split_at_checked(len) else {
                    return;
                };
                rest = tail;
                let header = Header::parse(head);
                s.handle_input(
                    now,
                    Input::Message {
                        conn,
                        bytes: message,
                    },
                );
                match one_output(&mut s) {
                    Some(Output::Send { bytes, .. }) => check_reply(&header, &bytes),
                    Some(Output::Ask { id, .. }) => waiting.push((conn, id, header)),
                    other => panic!("a message must be answered or asked: {other:?}"),
                }
            }
        }
        assert_eq!(s.pending(), waiting.len(), "requests lost or left behind");
    }
}
