//! What a storm's check runs: the shipped [`SampleCheck`] — its probe of
//! whether answers come whole, its GetTable per pair, its second ask of a
//! pair that differed — over pairs drawn as `Fabric::sample` draws them
//! on the model's fabric of hosts `1..=hosts` (one table), compared with
//! the model's records ([`ModelPaths`]) as lsaquery compares the
//! engine's.
//!
//! The pairs: those drawn, then every host a source and a destination —
//! each host no drawn pair leaves to one no drawn pair reaches, the rest
//! in turn — so that a check sees every port whatever its size.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use local_sa_core::path_engine::{PairCheck, Table};
use local_sa_distributor::computed::sample_check::{ComputedPaths, SampleCheck};
use mad_codec::{Gid, PathRecord};

use crate::fixture::{gid, record as path};
use crate::master::rerouted_record;

/// A check of `drawn` and of the pairs that make every host of
/// `1..=hosts` a source and a destination.
pub(crate) fn sample_check(hosts: u16, drawn: Vec<(u16, u16)>) -> SampleCheck {
    let pairs = seeing_every_port(hosts, drawn)
        .into_iter()
        .map(|(s, d)| PairCheck {
            source: gid(s).guid(),
            dest: gid(d).guid(),
            table: Table::Default,
        })
        .collect();
    SampleCheck::new(pairs)
}

/// `drawn` and the pairs that make every host of `1..=hosts` a source
/// and a destination.
fn seeing_every_port(hosts: u16, drawn: Vec<(u16, u16)>) -> Vec<(u16, u16)> {
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

/// The records the model's engine computes: each pair's fixture record,
/// or its rerouted record where a reroute moved the pair (`moved`, the
/// destinations by source) in the fabric computed.
pub(crate) struct ModelPaths<'m> {
    pub(crate) hosts: u16,
    pub(crate) moved: Option<&'m BTreeMap<u16, BTreeSet<u16>>>,
}

/// A GUID none of the model's hosts has.
#[derive(Debug)]
pub(crate) struct NoSuchHost(u64);

impl std::fmt::Display for NoSuchHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no host has GUID {:#018x}", self.0)
    }
}

impl ModelPaths<'_> {
    /// The host whose port GUID is `guid`.
    fn host(&self, guid: u64) -> Result<u16, NoSuchHost> {
        let lid = (guid & 0xFFFF) as u16;
        let ours = (1..=self.hosts).contains(&lid) && gid(lid).guid() == guid;
        ours.then_some(lid).ok_or(NoSuchHost(guid))
    }
}

impl ComputedPaths for ModelPaths<'_> {
    type Error = NoSuchHost;

    fn gid(&self, guid: u64) -> Gid {
        self.host(guid).map_or(Gid::new(0, guid), gid)
    }

    fn lids(&self, guid: u64) -> Range<u16> {
        self.host(guid).map_or(0..0, |lid| lid..lid + 1)
    }

    fn pair(
        &self,
        source: u64,
        dest: u64,
        _table: Table,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), NoSuchHost> {
        let (s, d) = (self.host(source)?, self.host(dest)?);
        let moved = self
            .moved
            .and_then(|m| m.get(&s))
            .is_some_and(|dests| dests.contains(&d));
        out.push(if moved {
            rerouted_record(s, d)
        } else {
            path(s, d)
        });
        Ok(())
    }
}
