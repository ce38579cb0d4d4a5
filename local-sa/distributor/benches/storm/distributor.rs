//! The distributor next to the master: the shipped fill machine
//! ([`local_sa_distributor::fill::Distribution`], what `lsaquery
//! --distribute` runs), its sends made by the core's requester (what
//! lsaquery's client runs) on the virtual fabric. It pushes each of its
//! nodes the names tables (NAMES_TABLE) and then its own paths
//! (REPLACE_SOURCES), each a Set with the SM_Key over RMPP, `window`
//! nodes at a time; a node whose transfer fails is tried again after the
//! others. Where its nodes' paths come from is its [`Source`]:
//!
//! * a dump (`--from`: computing them costs the master SA nothing here),
//!   each node's records built at its turn;
//! * the master: a GetTable of each node's paths (SGID) over RMPP before
//!   the node's push, `lsaquery --distribute` without `--compute`;
//! * computed (`lsaquery --distribute --compute`): first the fabric's
//!   description from the master, read by the shipped
//!   [`DescriptionRead`] (a GetTable of each record type, whose size the
//!   model master charges for the model's fabric), then the shipped
//!   [`SampleCheck`] of [`SAMPLE`] pairs spread over the nodes and more
//!   until every node is a source and a destination, compared with the
//!   model's records ([`crate::check`]), `MASTER_WINDOW` queries at a
//!   time; then the pushes, as from a dump. The model master builds no
//!   fabric the path engine could read, so the computed tables are the
//!   dump's records; computing them is not on the fill's critical path (the
//!   engine computes some 25 M paths a second a core, the port sends some
//!   750 k records a second), so it takes no virtual time.
//!
//! Before the fill it asks the master for the names tables, as lsaquery
//! does (the adapters' NodeRecords and the local-sa directory; computed,
//! the directory only: the description's NodeRecords hold the adapters).
//! The model master charges a record per host for them but builds none,
//! so the names pushed are the empty tables (one zeroed record, no
//! host's): the nodes take the load as their names and skip the fetch,
//! which is what the master's load depends on.
//!
//! Given a ServiceID (on a master that applies QoS), the machine also
//! fetches each node's table at that ServiceID on its partition (a
//! GetTable of SGID, P_Key and ServiceID over RMPP) and pushes it last as
//! a QoS table (QOS_TABLES), as `lsaquery --distribute --service-id`
//! does.
//!
//! With several distributors each takes a share of the nodes (`shard`
//! of `shards`, by LID) and reads what it needs from the master itself.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;
use local_sa_core::Address;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::path_query::QosKey;
use local_sa_core::requester::Completion;
use local_sa_distributor::batch::Batch;
use local_sa_distributor::computed::description::DescriptionRead;
use local_sa_distributor::computed::sample_check::{End, SampleCheck};
use local_sa_distributor::fill::Distribution;
use local_sa_distributor::fill::names::{NamesLoad, NamesTables};
use local_sa_distributor::fill::partitions::NodePartitions;
use local_sa_distributor::fill::ports::FabricPort;
use local_sa_distributor::fill::qos::QosPlan;
use local_sa_distributor::fill::tally::Tally;
use local_sa_distributor::sends::Sends as _;
use local_sa_distributor::sent_tables::SentTables;
use mad_codec::zerocopy::FromZeros as _;
use mad_codec::{AttributeId, Method, NodeRecord, SaMadBuilder, ServiceRecord};

use crate::check::ModelPaths;
use crate::fixture::{gid, record as path};
use crate::requests::{MASTER_WINDOW, Requests, SM_KEY, fill_setup};

/// Where a distributor's nodes' paths come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Dump,
    Master,
    Computed,
}

/// Pairs a computing distributor checks against the master
/// (`--check-sample`'s default).
pub(crate) const SAMPLE: u16 = 1000;

/// What a distributor fills: nodes `1..=hosts`, from `source`, with
/// their tables at `service_id` too if given, under `lease` if a watch
/// follows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FillOf {
    pub(crate) hosts: u16,
    pub(crate) source: Source,
    pub(crate) service_id: Option<u64>,
    pub(crate) lease: Option<LeaseTerms>,
}

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// A query of the batch before the fill, by its id in the batch.
    Before(u64),
    /// One of the fill machine's sends, by its id.
    Fill(u64),
}

/// The distributor at `lid`.
pub(crate) struct Distributor {
    pub(crate) lid: u16,
    master: Address,
    hosts: u16,
    /// What it asks the master before the fill, the step under way
    /// first, and the batch of that step's queries out.
    steps: VecDeque<Step>,
    batch: Option<Batch>,
    fill: Distribution,
    requests: Requests<Ask>,
    /// Queries before the fill that ran out of attempts.
    unanswered_before: u64,
    /// Pairs its check found the master's records of unlike the model's.
    differed: usize,
}

impl Distributor {
    /// A distributor of the nodes of share `shard` (0-based) of `shards`
    /// of what `of` says, `window` nodes at a time.
    pub(crate) fn new(
        lid: u16,
        master: u16,
        window: usize,
        (shard, shards): (u16, u16),
        of: FillOf,
    ) -> Self {
        let FillOf {
            hosts,
            source,
            service_id,
            lease,
        } = of;
        let master_at = Address::gsi(master, 0);
        let nodes: Vec<FabricPort> = (1..=hosts)
            .filter(|n| n % shards.max(1) == shard)
            .map(|lid| FabricPort { lid, gid: gid(lid) })
            .collect();
        let setup = fill_setup(master_at, hosts, window, lease);
        let names = NamesTables {
            nodes: NamesLoad::of::<NodeRecord>(SM_KEY, &[]),
            directory: NamesLoad::of::<ServiceRecord>(SM_KEY, &[]),
        };
        let mut fill = Distribution::new(setup, nodes, Tally::default(), Some(names));
        if source != Source::Master {
            fill = fill.tables_by(move |gid| {
                let node = (gid.guid() & 0xFFFF) as u16;
                SentTables {
                    default: (1..=hosts).map(|d| path(node, d)).collect(),
                    partitions: Vec::new(),
                }
            });
        }
        if let Some(id) = service_id {
            // A master that applies QoS, whose P_Key tables were not read:
            // each node's partition is its default table's.
            let partitions = NodePartitions::new(&[], true);
            let key = QosKey {
                service_id: Some(id),
                ..QosKey::default()
            };
            fill = fill
                .with_qos(QosPlan::new(&[key], Some(&partitions), false))
                .with_partitions(Some(partitions));
        }
        let mut names = vec![AttributeId::SERVICE_RECORD];
        let mut steps = VecDeque::new();
        if source == Source::Computed {
            steps.push_back(Step::Read(DescriptionRead::new(SM_KEY, lid.max(master))));
            steps.push_back(Step::Check(sample(hosts)));
        } else {
            names.insert(0, AttributeId::NODE_RECORD);
        }
        steps.push_back(Step::Names(Some(
            names.into_iter().map(names_query).collect(),
        )));
        Self {
            lid,
            master: master_at,
            hosts,
            steps,
            batch: None,
            fill,
            requests: Requests::new(),
            unanswered_before: 0,
            differed: 0,
        }
    }

    /// Transfers tried again, and queries before the fill that went
    /// unanswered.
    pub(crate) fn retries(&self) -> u64 {
        self.fill.tally().retried + self.unanswered_before
    }

    /// Pairs its check found the master's records of unlike the model's.
    pub(crate) fn differed(&self) -> usize {
        self.differed
    }

    /// What is due at `now`: time-outs, then what the machine has to
    /// send; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        for c in self.requests.timeouts(now) {
            self.ended(now, c);
        }
        self.send(now);
        self.requests.drain()
    }

    /// Whether every node has everything.
    pub(crate) fn is_done(&self) -> bool {
        self.steps.is_empty() && self.fill.is_done()
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        self.requests.next_event()
    }

    /// A MAD from the master or a node: an answer, or an RMPP segment or
    /// control MAD of one of its transfers.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Vec<(Address, Bytes)> {
        if let Some(c) = self.requests.receive(now, from, mad) {
            self.ended(now, c);
        }
        self.poll(now)
    }

    /// A request ended: the batch before the fill or the fill machine
    /// is told.
    fn ended(&mut self, now: Instant, c: Completion<Ask>) {
        match c.token {
            Ask::Before(id) => {
                if let Some(batch) = &mut self.batch {
                    batch.handle_end(now, id, c.outcome);
                }
            }
            Ask::Fill(id) => self.fill.handle_end(id, c.outcome),
        }
    }

    /// Moves the steps on: once the batch out has ended, its step takes
    /// the ends and gives its next batch; a step with none left is over,
    /// and the next one starts.
    fn step(&mut self) {
        if self.batch.as_ref().is_some_and(|b| !b.is_done()) {
            return;
        }
        let mut ends = self.batch.take().map(Batch::finish);
        let paths = ModelPaths {
            hosts: self.hosts,
            moved: None,
        };
        while let Some(step) = self.steps.front_mut() {
            if let Some(ends) = ends.take() {
                self.unanswered_before += step.handle_batch(&paths, ends);
            }
            let Some(queries) = step.poll_batch(&paths) else {
                if let Some(Step::Check(check)) = self.steps.pop_front() {
                    let (found, _) = check.finish();
                    self.differed += found.mismatches.len() + found.uncomputable.len();
                }
                continue;
            };
            let queries = queries.into_iter().map(|q| (self.master, q)).collect();
            self.batch = Some(Batch::new(queries, MASTER_WINDOW));
            return;
        }
    }

    /// Asks the master what the steps before the fill ask, [`MASTER_WINDOW`]
    /// queries at a time; once they are over, makes the fill's sends.
    fn send(&mut self, now: Instant) {
        self.step();
        match &mut self.batch {
            Some(batch) => self.requests.sends(now, batch, Ask::Before),
            None => self.requests.sends(now, &mut self.fill, Ask::Fill),
        }
    }
}

/// What a distributor asks the master before its fill, in lsaquery's
/// order: computing, the description's read and the check of the sample
/// (the shipped machines); then the names tables.
enum Step {
    Read(DescriptionRead),
    Check(SampleCheck),
    /// The names tables' queries, until asked.
    Names(Option<Vec<Bytes>>),
}

impl Step {
    fn poll_batch(&mut self, paths: &ModelPaths<'_>) -> Option<Vec<Bytes>> {
        match self {
            Self::Read(read) => read.poll_batch(),
            Self::Check(check) => check.poll_batch(paths),
            Self::Names(queries) => queries.take(),
        }
    }

    /// Takes the batch's ends; returns how many went unanswered, as far
    /// as it matters: lsaquery falls back on the master's tables when
    /// its read fails, stops when its check does, and goes without names
    /// when their queries fail. The model master answers in the end, so
    /// none of that is modelled; it is counted.
    fn handle_batch(&mut self, paths: &ModelPaths<'_>, ends: Vec<End>) -> u64 {
        match self {
            Self::Read(read) => u64::from(read.handle_batch(ends).is_err()),
            Self::Check(check) => u64::from(check.handle_batch(paths, ends).is_err()),
            Self::Names(_) => ends.iter().filter(|e| e.is_err()).count() as u64,
        }
    }
}

/// A names table's GetTable, as lsaquery asks it: the channel adapters'
/// NodeRecords, or the directory's ServiceRecords.
fn names_query(attribute: AttributeId) -> Bytes {
    if attribute != AttributeId::NODE_RECORD {
        return SaMadBuilder::request(Method::GET_TABLE, 0, attribute).into_bytes();
    }
    let mut adapters = NodeRecord::new_zeroed();
    adapters.set_node_type(mad_codec::codes::NodeType::CA);
    let mut b =
        SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::NODE_RECORD).record(&adapters);
    b.header_mut()
        .sa
        .set_component_mask(mad_codec::attr::node_record::mask::NODE_TYPE);
    b.into_bytes()
}

/// The check a computing distributor makes against the master before
/// its pushes: pairs spread over the nodes, and more until every node is
/// a source and a destination.
fn sample(hosts: u16) -> SampleCheck {
    let pairs = (SAMPLE + 1).min(hosts.saturating_mul(hosts.min(SAMPLE)));
    let drawn = (0..pairs)
        .map(|i| (i % hosts + 1, (i * 7 + i / hosts) % hosts + 1))
        .collect();
    crate::check::sample_check(hosts, drawn)
}
