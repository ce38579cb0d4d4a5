//! The netlink decoder fed any datagram: it never panics, and what it
//! decodes as a kernel request re-encodes to a message that decodes the
//! same; every reply built for a decoded request decodes as the kernel
//! would read it.

use mad_codec::PathRecord;
use mad_codec::zerocopy::FromBytes;

use crate::netlink::wire::{self, Body};

/// One datagram.
pub fn netlink(data: &[u8]) {
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
                    .unwrap_or_else(|| PathRecord::read_from_bytes(&[0; 64]).unwrap());
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
