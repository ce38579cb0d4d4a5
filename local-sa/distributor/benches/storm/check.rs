//! The pairs a check asks the master, as `Fabric::sample` draws them on
//! the model's fabric of hosts `1..=hosts` (one table): those drawn, then
//! every host a source and a destination — each host no drawn pair
//! leaves to one no drawn pair reaches, the rest in turn — so that a
//! check sees every port whatever its size.

use std::collections::BTreeSet;

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros as _;
use mad_codec::{AttributeId, Method, PathRecord, SaMadBuilder};

use crate::fixture::gid;

/// `drawn` and the pairs that make every host of `1..=hosts` a source
/// and a destination.
pub(crate) fn seeing_every_port(hosts: u16, drawn: Vec<(u16, u16)>) -> Vec<(u16, u16)> {
    let sources: BTreeSet<u16> = drawn.iter().map(|p| p.0).collect();
    let reached: BTreeSet<u16> = drawn.iter().map(|p| p.1).collect();
    let unsourced: Vec<u16> = (1..=hosts).filter(|h| !sources.contains(h)).collect();
    let unreached: Vec<u16> = (1..=hosts).filter(|h| !reached.contains(h)).collect();
    let mut pairs = drawn;
    for k in 0..unsourced.len().max(unreached.len()) {
        let turn = (k % usize::from(hosts.max(1))) as u16 + 1;
        let a = unsourced.get(k).copied().unwrap_or(turn);
        let b = unreached.get(k).copied().unwrap_or(turn);
        pairs.push((a, b));
    }
    pairs
}

/// A Get of the path from host `s` to host `d`, as the check asks it.
pub(crate) fn pair_query(s: u16, d: u16) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_sgid(gid(s));
    t.set_dgid(gid(d));
    let mut b = SaMadBuilder::request(Method::GET, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(pr::SGID | pr::DGID);
    b.into_bytes()
}
