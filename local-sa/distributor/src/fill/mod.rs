//! A distribution without I/O: which node's tables to fetch (or
//! compute, or take from a dump), what to push each node and in which
//! order, the windows, the retries, and what each node ends with. The
//! driver (`distribute::run`) sends what [`Distribution::poll_send`]
//! gives and tells it each end; the tests drive it with a fake master and
//! fake nodes.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::path_engine::{Fabric, Table};
use local_sa_core::path_query::QosKey;
use local_sa_core::requester::{Answer, Attempts, Failure as RequestFailure};
use mad_codec::address::Address;
use mad_codec::header::SaMadHeader;
use mad_codec::{Gid, MadStatus, PathRecord};

pub mod delta;
pub mod names;
pub mod outcome;
pub mod partitions;
pub mod ports;
pub mod qos;
pub mod tally;
#[cfg(test)]
mod tests;

use self::delta::{NodeTable, Push};
use self::names::NamesTables;
use self::partitions::NodePartitions;
use self::ports::{FabricPort, table_request};

use self::outcome::{NodeOutcome, NodeReport};
use self::tally::Tally;
use crate::computed::{Prepared, compute_tables, keys};
use crate::sends::{Send, Sends};
use crate::sent_tables::SentTables;

/// A node being filled.
struct Node {
    at: FabricPort,
    /// Its records at the master (or in `--from`), once fetched.
    table: Option<Vec<PathRecord>>,
    /// The table being fetched beside the default one: a partition's
    /// (only its P_Key) or one at a QoS key; `None` while the default one
    /// is, and once every table is in.
    fetching: Option<QosKey>,
    /// Its other tables fetched so far, in order (those of partitions
    /// even when empty: the master has no paths from it there).
    other_tables: Vec<(QosKey, Vec<PathRecord>)>,
    /// Its records in the `--delta` snapshot.
    old: Option<SentTables>,
    /// It holds the tables computed from the previous fabric (`--watch`).
    holds_previous: bool,
    /// Records fetched so far, and queries still to come back.
    fetched: Vec<PathRecord>,
    outstanding: usize,
    /// Names tables still to send (2: both; they go first).
    names_left: u8,
    /// Loads and deletes still to send.
    pushes: VecDeque<Push>,
    /// Bumped when an attempt fails: answers to an earlier one are stale.
    attempt: u32,
    failure: Option<String>,
    outcome: NodeOutcome,
}

/// What a request in flight is for.
#[derive(Debug, Clone, Copy)]
enum Flight {
    /// A whole table, or one destination's paths.
    Fetch {
        node: usize,
        attempt: u32,
        dlid: Option<u16>,
    },
    /// A load or delete (`names`: of a names table).
    Push {
        node: usize,
        attempt: u32,
        names: bool,
    },
}

/// A distribution, without I/O: it says what to send ([`Send`], by
/// [`Distribution::poll_send`]) and is told how each send ended
/// ([`Distribution::handle_end`]); the driver moves the MADs.
pub struct Distribution {
    master: Address,
    /// The SL of the nodes' SA (the port's SM SL).
    sm_sl: u8,
    /// The nodes' SM_Key, sent with every load.
    sm_key: u64,
    window: usize,
    master_window: usize,
    attempts: u32,
    table_attempts: Attempts,
    /// Every destination LID, for per-destination fetches.
    dlids: Vec<u16>,
    /// The lease every table push carries (`--watch`), if any.
    lease: Option<LeaseTerms>,
    /// Whether each node's holdings are kept for the summary's snapshot.
    keep_holdings: bool,
    nodes: Vec<Node>,
    /// Nodes waiting for their (next) turn.
    queue: VecDeque<usize>,
    /// Master queries waiting for room: a node and a destination LID (none:
    /// the whole table).
    asks: VecDeque<(usize, u32, Option<u16>)>,
    /// What is in flight, by the id its send was given.
    flights: HashMap<u64, Flight>,
    /// Sends the driver has yet to make.
    outbox: VecDeque<(u64, Send)>,
    next_id: u64,
    at_master: usize,
    busy: usize,
    tally: Tally,
    /// The names tables every node is sent, if the master gave them.
    names: Option<NamesTables>,
    /// Where each node's tables come from at its turn when not from the
    /// master or computed (a `--from` dump).
    dump: Option<Dump>,
    /// What each node holds, asked at its first turn: it gets only the
    /// differences from it (none: not known, it gets its tables whole).
    held: Option<Box<dyn FnMut(Gid) -> Option<SentTables>>>,
    /// Which partition tables each node keeps, if the master told.
    partitions: Option<NodePartitions>,
    /// Which tables at QoS keys each node gets.
    qos: qos::QosPlan,
    /// The fabric's description and its check, if the tables are
    /// computed (`--compute`).
    computing: Option<Prepared>,
    /// The fabric the nodes marked with [`Distribution::holding_previous`]
    /// were last filled from: their tables computed from it are what
    /// they hold, and they get only the differences (`--watch`).
    previous: Option<Fabric>,
}

/// Each node's tables, by its GID, asked once at its first turn.
type Dump = Box<dyn FnMut(Gid) -> SentTables>;

/// How a distribution is set up.
pub struct Setup {
    /// The master SA, which the tables are asked of.
    pub master: Address,
    /// The SL of the nodes' SA (the port's SM SL).
    pub sm_sl: u8,
    /// The nodes' SM_Key, sent with every load.
    pub sm_key: u64,
    /// Nodes filled at once; queries at the master at once.
    pub window: usize,
    /// Queries in flight at the master at once.
    pub master_window: usize,
    /// Attempts per node; of each whole table at the master.
    pub attempts: u32,
    /// Each whole table's attempts at the master.
    pub table_attempts: Attempts,
    /// Every destination LID, for per-destination fetches.
    pub dlids: Vec<u16>,
    /// The lease every table push carries (`load_flags::LEASE`): the
    /// nodes do not refresh on their own while it runs.
    pub lease: Option<LeaseTerms>,
    /// Keep what each node holds, for a snapshot.
    pub keep_holdings: bool,
}

impl Distribution {
    /// A distribution to the nodes `found`.
    pub fn new(
        setup: Setup,
        found: Vec<FabricPort>,
        tally: Tally,
        names: Option<NamesTables>,
    ) -> Self {
        let nodes: Vec<Node> = found
            .into_iter()
            .map(|at| Node {
                at,
                table: None,
                fetching: None,
                other_tables: Vec::new(),
                old: None,
                holds_previous: false,
                fetched: Vec::new(),
                outstanding: 0,
                names_left: 0,
                pushes: VecDeque::new(),
                attempt: 0,
                failure: None,
                outcome: NodeOutcome::default(),
            })
            .collect();
        let queue = (0..nodes.len()).collect();
        Self {
            master: setup.master,
            sm_sl: setup.sm_sl,
            sm_key: setup.sm_key,
            window: setup.window.max(1),
            master_window: setup.master_window.max(1),
            attempts: setup.attempts.max(1),
            table_attempts: setup.table_attempts,
            dlids: setup.dlids,
            lease: setup.lease,
            keep_holdings: setup.keep_holdings,
            nodes,
            queue,
            asks: VecDeque::new(),
            flights: HashMap::new(),
            outbox: VecDeque::new(),
            next_id: 0,
            at_master: 0,
            busy: 0,
            tally,
            names,
            dump: None,
            held: None,
            partitions: None,
            qos: qos::QosPlan::default(),
            computing: None,
            previous: None,
        }
    }

    /// Which partition tables each node keeps, if the master told.
    pub fn with_partitions(mut self, partitions: Option<NodePartitions>) -> Self {
        self.partitions = partitions;
        self
    }

    /// Which tables at QoS keys each node gets.
    pub fn with_qos(mut self, plan: qos::QosPlan) -> Self {
        self.qos = plan;
        self
    }

    /// The tables are computed from `prepared`'s fabric where its check
    /// proved them (`--compute`).
    pub fn with_computed(mut self, prepared: Option<Prepared>) -> Self {
        self.computing = prepared;
        self
    }

    /// The nodes at `gids` hold the tables computed from `previous`: they
    /// get only what changed from them (`--watch`).
    pub fn holding_previous(mut self, previous: Fabric, gids: &BTreeSet<Gid>) -> Self {
        self.previous = Some(previous);
        for n in &mut self.nodes {
            n.holds_previous = gids.contains(&n.at.gid);
        }
        self
    }

    /// The fabric the tables were computed from, given back.
    pub fn take_computed(&mut self) -> Option<Prepared> {
        self.computing.take()
    }

    /// Takes each node's tables from `dump` (a `--from` dump, its
    /// partition tables if it is a snapshot): nothing is asked of the
    /// master. Each node's records are handed over at its turn and let go
    /// once it is filled.
    pub fn tables_from(self, dump: SentTables) -> Self {
        let mut by_source = group_by_source(&dump.default);
        let mut partitions = group_by_source(&dump.partitions);
        self.tables_by(move |gid| SentTables {
            default: by_source.remove(&gid).unwrap_or_default(),
            partitions: partitions.remove(&gid).unwrap_or_default(),
        })
    }

    /// Takes each node's tables from `dump`, asked for the node's at its
    /// first turn (a source that builds them as they are needed holds no
    /// more than the nodes in flight).
    pub fn tables_by(mut self, dump: impl FnMut(Gid) -> SentTables + 'static) -> Self {
        self.dump = Some(Box::new(dump));
        self
    }

    /// Each node's tables as it holds them, asked for the node's at its
    /// first turn: it gets only the differences (as with
    /// [`Distribution::old_tables`], without holding every node's at
    /// once); a node whose holding is not known (`None`) gets its tables
    /// whole.
    pub fn holding_by(mut self, held: impl FnMut(Gid) -> Option<SentTables> + 'static) -> Self {
        self.held = Some(Box::new(held));
        self
    }

    /// Each node's records in the `--delta` snapshot.
    pub fn old_tables(&mut self, old: &SentTables) {
        let mut default = group_by_source(&old.default);
        let mut partitions = group_by_source(&old.partitions);
        for n in &mut self.nodes {
            n.old = Some(SentTables {
                default: default.remove(&n.at.gid).unwrap_or_default(),
                partitions: partitions.remove(&n.at.gid).unwrap_or_default(),
            });
        }
    }

    /// The next thing to send, with the id its end is to be told by;
    /// `None` when nothing is to be sent until an end comes.
    pub fn poll_send(&mut self) -> Option<(u64, Send)> {
        self.start_nodes();
        self.start_asks();
        self.outbox.pop_front()
    }

    /// Whether everything is over: every node filled or failed for good.
    /// (Every busy node has something in flight once its turn has started,
    /// so nothing in flight and no node waiting for its turn means nothing
    /// left to do — before the first [`Self::poll_send`] too.)
    pub fn is_done(&self) -> bool {
        self.flights.is_empty() && self.outbox.is_empty() && self.queue.is_empty()
    }

    /// How send `id` ended: its answer, or why none came.
    pub fn handle_end(&mut self, id: u64, outcome: Result<Answer, RequestFailure>) {
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        match flight {
            Flight::Fetch {
                node,
                attempt,
                dlid,
            } => {
                self.at_master -= 1;
                if self.nodes[node].attempt == attempt {
                    self.fetched(node, dlid, outcome);
                }
            }
            Flight::Push {
                node,
                attempt,
                names,
            } => {
                if self.nodes[node].attempt == attempt {
                    if names {
                        self.names_pushed(node, outcome);
                    } else {
                        self.pushed(node, outcome);
                    }
                }
            }
        }
    }

    /// Send `id` (a transfer) could not be made at all, because of `why`.
    pub fn handle_unsendable(&mut self, id: u64, why: &str) {
        if let Some(Flight::Push { node, attempt, .. }) = self.flights.remove(&id)
            && self.nodes[node].attempt == attempt
        {
            self.failed(node, format!("cannot send: {why}"), false);
        }
    }

    /// Queues `send`; its id.
    fn send(&mut self, send: Send) -> u64 {
        self.next_id += 1;
        self.outbox.push_back((self.next_id, send));
        self.next_id
    }

    /// Starts queued nodes while fewer than `window` are busy; the tables
    /// of those that are computed are computed together, on every core.
    fn start_nodes(&mut self) {
        let mut to_compute = Vec::new();
        while self.busy < self.window {
            let Some(i) = self.queue.pop_front() else {
                break;
            };
            self.busy += 1;
            let attempt = self.nodes[i].attempt;
            if let Some(held) = &mut self.held
                && self.nodes[i].old.is_none()
            {
                let n = &mut self.nodes[i];
                n.old = held(n.at.gid);
            }
            if let Some(dump) = &mut self.dump
                && self.nodes[i].table.is_none()
            {
                let n = &mut self.nodes[i];
                let tables = dump(n.at.gid);
                n.table = Some(tables.default);
                n.other_tables = by_partition(&tables.partitions);
            }
            if self.nodes[i].table.is_some() {
                // From a dump, or its tables fetched or computed before a
                // failed push: what is still missing (tables at QoS keys
                // the dump cannot hold) comes from the master.
                match self.next_table(i) {
                    Some(key) => {
                        self.nodes[i].fetching = Some(key);
                        self.fetch_table(i, attempt);
                    }
                    None => self.begin_pushes(i),
                }
                continue;
            }
            let n = &mut self.nodes[i];
            n.fetching = None;
            n.other_tables.clear();
            if self.computing.is_some() {
                to_compute.push(i);
            } else {
                self.fetch_table(i, attempt);
            }
        }
        if !to_compute.is_empty() {
            self.compute(&to_compute);
        }
    }

    /// Computes the tables of nodes `batch` that the check proved; the
    /// others come from the master; then each node goes on with the
    /// tables it still needs from the master (QoS keys), or its pushes.
    fn compute(&mut self, batch: &[usize]) {
        let Some(c) = &self.computing else { return };
        let endports: Vec<_> = batch
            .iter()
            .filter_map(|i| c.fabric.endport(self.nodes[*i].at.gid.guid()))
            .collect();
        // Tables at keys only where the nodes are sent them.
        let at_keys = if self.qos.sends() { c.at_keys() } else { &[] };
        let mut computed = compute_tables(&c.fabric, &endports, c.qos, at_keys, true)
            .into_iter()
            .peekable();
        // Each node's computed tables that the check proved: its default
        // table (none: it is fetched), its partitions' and those at keys,
        // each under the key its QoS cache keeps it.
        let proved: Vec<(usize, Option<ProvedTables>)> = batch
            .iter()
            .map(|&i| {
                let t = computed.next_if(|t| t.guid == self.nodes[i].at.gid.guid());
                let tables = t
                    .filter(|_| c.trusted(Table::Default).is_ok())
                    .and_then(|t| {
                        let partitions = t
                            .partitions
                            .into_iter()
                            .map(|(p, r)| (Table::partition(p), r))
                            .chain(t.at_keys)
                            .filter(|(table, _)| c.trusted(*table).is_ok())
                            .filter_map(|(table, r)| Some((keys::key_of(table), r.ok()?)))
                            .collect();
                        Some((t.default.ok()?, partitions))
                    });
                (i, tables)
            })
            .collect();
        self.old_from_previous(batch);
        for (i, tables) in proved {
            let attempt = self.nodes[i].attempt;
            let Some((default, partitions)) = tables else {
                self.fetch_table(i, attempt);
                continue;
            };
            let tally = self.tally.computed.get_or_insert_default();
            tally.tables += 1 + partitions.len() as u64;
            tally.records +=
                (default.len() + partitions.iter().map(|(_, r)| r.len()).sum::<usize>()) as u64;
            let n = &mut self.nodes[i];
            n.other_tables.extend(partitions);
            n.table = Some(default);
            match self.next_table(i) {
                Some(key) => {
                    tally_from_master(&mut self.tally);
                    self.nodes[i].fetching = Some(key);
                    self.fetch_table(i, attempt);
                }
                None => self.begin_pushes(i),
            }
        }
    }

    /// What the nodes of `batch` that hold the previous fabric's tables
    /// hold: those tables, computed again (the previous fabric is kept,
    /// not every node's tables). Partitions the check does not prove now
    /// come from the master, whole.
    fn old_from_previous(&mut self, batch: &[usize]) {
        let (Some(previous), Some(c)) = (&self.previous, &self.computing) else {
            return;
        };
        let holding: Vec<usize> = batch
            .iter()
            .copied()
            .filter(|i| self.nodes[*i].holds_previous)
            .collect();
        let endports: Vec<_> = holding
            .iter()
            .filter_map(|i| previous.endport(self.nodes[*i].at.gid.guid()))
            .collect();
        let mut computed = compute_tables(previous, &endports, c.qos, &[], true)
            .into_iter()
            .peekable();
        for i in holding {
            let guid = self.nodes[i].at.gid.guid();
            let Some(t) = computed.next_if(|t| t.guid == guid) else {
                continue;
            };
            let partitions = t
                .partitions
                .into_iter()
                .filter(|(p, _)| c.trusted(Table::partition(*p)).is_ok())
                .filter_map(|(_, r)| r.ok())
                .flatten()
                .collect();
            self.nodes[i].old = Some(SentTables {
                default: t.default.unwrap_or_default(),
                partitions,
            });
        }
    }

    /// Asks the master for node `i`'s table being fetched: whole, or one
    /// destination at a time once answers are known to come cut.
    fn fetch_table(&mut self, i: usize, attempt: u32) {
        let n = &mut self.nodes[i];
        n.fetched.clear();
        if self.tally.cut {
            n.outstanding = self.dlids.len();
            self.asks
                .extend(self.dlids.iter().map(|d| (i, attempt, Some(*d))));
        } else {
            n.outstanding = 1;
            self.asks.push_back((i, attempt, None));
        }
    }

    /// Sends waiting master queries while fewer than `master_window` are
    /// in flight.
    fn start_asks(&mut self) {
        while self.at_master < self.master_window {
            let Some((i, attempt, dlid)) = self.asks.pop_front() else {
                return;
            };
            if self.nodes[i].attempt != attempt {
                continue;
            }
            let n = &self.nodes[i];
            let request = table_request(n.at.gid, dlid, n.fetching);
            let attempts = match dlid {
                None => {
                    self.tally.tables += 1;
                    Some(self.table_attempts)
                }
                Some(_) => {
                    self.tally.per_destination += 1;
                    None
                }
            };
            let id = self.send(Send::Query {
                dest: self.master,
                request,
                attempts,
            });
            self.at_master += 1;
            self.flights.insert(
                id,
                Flight::Fetch {
                    node: i,
                    attempt,
                    dlid,
                },
            );
        }
    }

    /// An answer (or none) to one of node `i`'s master queries.
    fn fetched(&mut self, i: usize, dlid: Option<u16>, outcome: Result<Answer, RequestFailure>) {
        let whole_table = dlid.is_none();
        let answer = match outcome {
            Ok(a) => a,
            Err(e) => return self.failed(i, format!("the master: {e}"), true),
        };
        let status = answer.status();
        let beside_default = self.nodes[i].fetching.is_some();
        if status == MadStatus::ERR_NO_RECORDS && (!whole_table || beside_default) {
            // No path to that destination (or in that partition, at that
            // key).
        } else if status != MadStatus::OK {
            return self.failed(
                i,
                format!(
                    "the master answered {:#06x} ({})",
                    status.0,
                    status.describe()
                ),
                status.is_busy(),
            );
        } else if whole_table && answer.is_cut() {
            // The transport cuts multi-MAD answers: ask per destination,
            // for this node and every later one.
            self.tally.cut = true;
            let attempt = self.nodes[i].attempt;
            self.nodes[i].outstanding = self.dlids.len() + 1;
            self.asks
                .extend(self.dlids.iter().map(|d| (i, attempt, Some(*d))));
        } else {
            let before = self.nodes[i].fetched.len();
            self.nodes[i]
                .fetched
                .extend(answer.records::<PathRecord>().copied());
            self.tally.path_records += (self.nodes[i].fetched.len() - before) as u64;
        }
        let n = &mut self.nodes[i];
        n.outstanding -= 1;
        if n.outstanding > 0 {
            return;
        }
        let records = std::mem::take(&mut n.fetched);
        match n.fetching {
            None if records.is_empty() => {
                return self.failed(i, "the master has no PathRecords from it".into(), false);
            }
            None => n.table = Some(records),
            // Kept even without paths from the node: a delta deletes
            // what the snapshot says it held there.
            Some(key) => n.other_tables.push((key, records)),
        }
        match self.next_table(i) {
            Some(p) => {
                let attempt = self.nodes[i].attempt;
                self.nodes[i].fetching = Some(p);
                self.fetch_table(i, attempt);
            }
            None => self.begin_pushes(i),
        }
    }

    /// The table of node `i` to fetch next, if any: its partition tables,
    /// then its tables at QoS keys, each unless it holds it already.
    fn next_table(&self, i: usize) -> Option<QosKey> {
        let n = &self.nodes[i];
        let partitions = self.partitions.as_ref()?;
        let default = n.table.as_deref().unwrap_or_default();
        let pkeys = partitions.pkeys_of(n.at.lid, default);
        let mut tables = partitions
            .tables_of(n.at.lid, default)
            .into_iter()
            .map(QosKey::partition)
            .chain(self.qos.keys_of(&pkeys));
        // The first it does not hold yet (computed, or fetched already).
        tables.find(|t| !n.other_tables.iter().any(|(held, _)| held == t))
    }

    /// Node `i`'s table is known: works out what to send it, and starts.
    fn begin_pushes(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        let table = n.table.clone().unwrap_or_default();
        if table.is_empty() {
            return self.failed(i, "its port has no PathRecords in --from".into(), false);
        }
        // Every table is in: a failure from here on sends them again,
        // without fetching them again.
        n.fetching = None;
        // Partition tables first: the default table's load stands for the
        // node's refresh, after which it fetches the tables it misses.
        // Tables at QoS keys last: every path load empties the QoS cache.
        let (partitions, at_keys): (Vec<_>, Vec<_>) = n
            .other_tables
            .iter()
            .partition(|(k, _)| qos::is_partition(k));
        let partitions: Vec<(u16, Vec<PathRecord>)> = partitions
            .into_iter()
            .filter_map(|(k, records)| Some((k.pkey?, records.clone())))
            .collect();
        let old = n.old.as_ref();
        n.pushes = delta::partition_pushes(old.map(|o| &o.partitions[..]), &partitions)
            .into_iter()
            .chain(delta::pushes(old.map(|o| &o.default[..]), table))
            .chain(
                at_keys
                    .into_iter()
                    .filter(|(_, records)| !records.is_empty())
                    .map(|(k, records)| qos::push(k, records)),
            )
            .collect();
        n.outcome.unchanged = !n.pushes.iter().any(Push::changes_a_table);
        n.names_left = if self.names.is_some() { 2 } else { 0 };
        self.push_next(i);
    }

    /// Sends node `i`'s next names table, load or delete; done when none
    /// is left.
    fn push_next(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        let dest = Address::gsi(n.at.lid, self.sm_sl);
        if let Some(tables) = &self.names
            && n.names_left > 0
        {
            let table = if n.names_left == 2 {
                &tables.nodes
            } else {
                &tables.directory
            };
            let (header, data) = (table.header, table.data.clone());
            return self.start_transfer(i, dest, header, data, true);
        }
        let Some(push) = n.pushes.front() else {
            n.outcome.done = true;
            if !self.keep_holdings {
                // Its tables are not needed again: at 10,000 nodes they
                // are most of the distributor's memory.
                n.table = None;
                n.other_tables = Vec::new();
                n.old = None;
            }
            self.busy -= 1;
            return;
        };
        let (method, mask, mut modifier) = push.request();
        if let (Some(terms), true) = (self.lease, push.changes_a_table()) {
            modifier = terms.modifier(modifier);
        }
        let (header, data) =
            delta::load_request(self.sm_key, method, mask, modifier, push.records());
        self.tally.transfers += 1;
        self.start_transfer(i, dest, header, data, false);
    }

    /// Starts one of node `i`'s transfers (`names`: of a names table)
    /// and keeps track of it.
    fn start_transfer(
        &mut self,
        i: usize,
        dest: Address,
        header: SaMadHeader,
        data: Bytes,
        names: bool,
    ) {
        let id = self.send(Send::Transfer { dest, header, data });
        let attempt = self.nodes[i].attempt;
        self.flights.insert(
            id,
            Flight::Push {
                node: i,
                attempt,
                names,
            },
        );
    }

    /// The end of node `i`'s current load or delete.
    fn pushed(&mut self, i: usize, outcome: Result<Answer, RequestFailure>) {
        let answer = match outcome {
            Ok(a) => a,
            Err(e) => return self.failed(i, e.to_string(), true),
        };
        let status = answer.status();
        let n = &mut self.nodes[i];
        let at_key = matches!(n.pushes.front(), Some(Push::AtKey { .. }));
        if at_key
            && matches!(
                status,
                MadStatus::ERR_REQ_INVALID | MadStatus::METHOD_ATTR_UNSUPPORTED
            )
        {
            // A local-sa older than QOS_TABLES (it takes the key record for
            // a path with LID 0): its paths are in; it asks its QoS
            // entries itself.
            n.pushes.retain(|p| !matches!(p, Push::AtKey { .. }));
            n.outcome.qos_refused = true;
            return self.push_next(i);
        }
        if status != MadStatus::OK {
            return self.failed(
                i,
                format!("answered {:#06x} ({})", status.0, status.describe()),
                status.is_busy(),
            );
        }
        let count = u64::from(answer.header().mad.attribute_modifier());
        let o = &mut n.outcome;
        match n.pushes.pop_front() {
            Some(Push::Whole(NodeTable::Default, _) | Push::Changed(NodeTable::Default, _)) => {
                o.stored += count;
            }
            Some(Push::Vanished(NodeTable::Default, _)) => o.deleted += count,
            Some(Push::Whole(NodeTable::Partitions, _)) => {
                o.partition_tables += 1;
                o.partition_stored += count;
            }
            Some(Push::Changed(NodeTable::Partitions, _)) => o.partition_stored += count,
            Some(Push::Vanished(NodeTable::Partitions, _)) => o.partition_deleted += count,
            Some(Push::AtKey { .. }) => {
                o.qos_tables += 1;
                o.qos_stored += count;
            }
            None => {}
        }
        self.push_next(i);
    }

    /// The end of node `i`'s current names table. A local-sa that does
    /// not take names loads (older than the names contract: 0x000C) gets
    /// its paths all the same, and fetches its names itself.
    fn names_pushed(&mut self, i: usize, outcome: Result<Answer, RequestFailure>) {
        let answer = match outcome {
            Ok(a) => a,
            Err(e) => return self.failed(i, e.to_string(), true),
        };
        let status = answer.status();
        let n = &mut self.nodes[i];
        if status == MadStatus::METHOD_ATTR_UNSUPPORTED {
            n.names_left = 0;
            n.outcome.names_refused = true;
        } else if status == MadStatus::OK {
            n.names_left -= 1;
            self.tally.names_pushed += 1;
        } else {
            return self.failed(
                i,
                format!(
                    "answered {:#06x} ({}) to its names table",
                    status.0,
                    status.describe()
                ),
                status.is_busy(),
            );
        }
        self.push_next(i);
    }

    /// Node `i`'s attempt failed: it goes to the back of the queue if it
    /// has attempts left and trying again could help, else it is done.
    fn failed(&mut self, i: usize, why: String, worth_retrying: bool) {
        self.busy -= 1;
        let n = &mut self.nodes[i];
        if n.fetching.take().is_some() && self.dump.is_none() {
            // A partition table (or one at a key) failed: the tables
            // fetched so far are not all of the node's; the next attempt
            // fetches them all again (a dump's stay: it gave them whole).
            n.table = None;
        }
        n.attempt += 1;
        n.outstanding = 0;
        n.pushes.clear();
        // What the failed attempt got counts for nothing; whether the node
        // takes names loads stays known.
        n.outcome = NodeOutcome {
            names_refused: n.outcome.names_refused,
            ..NodeOutcome::default()
        };
        if worth_retrying && n.attempt < self.attempts {
            self.tally.retried += 1;
            self.queue.push_back(i);
        } else {
            n.failure = Some(why);
        }
    }

    /// What it has counted so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Nodes done (filled or failed for good), of all.
    pub fn progress(&self) -> (u64, u64) {
        let done = self
            .nodes
            .iter()
            .filter(|n| n.outcome.done || n.failure.is_some())
            .count();
        (done as u64, self.nodes.len() as u64)
    }

    /// What happened to each node, and what was asked.
    pub fn finish(self) -> (Vec<NodeReport>, Tally) {
        let keep = self.keep_holdings;
        let reports = self
            .nodes
            .into_iter()
            .map(|mut n| NodeReport {
                lid: n.at.lid,
                gid: n.at.gid,
                outcome: n.outcome,
                failure: n.failure.take(),
                holds: if keep {
                    n.holds()
                } else {
                    SentTables::default()
                },
            })
            .collect();
        (reports, self.tally)
    }
}

impl Node {
    /// What the node holds once the run is over, as far as the
    /// distributor knows: the tables this run gave it, beside the
    /// snapshot's records of partitions this run did not fetch; or, if it
    /// was not filled, what the snapshot said.
    fn holds(self) -> SentTables {
        let old = self.old.unwrap_or_default();
        if !self.outcome.done {
            return old;
        }
        let mut fetched = BTreeSet::new();
        let mut partitions = Vec::new();
        for (key, records) in self.other_tables {
            if let (true, Some(p)) = (qos::is_partition(&key), key.pkey) {
                fetched.insert(p);
                partitions.extend(records);
            }
        }
        partitions.extend(delta::untouched_partitions(&old.partitions, &fetched));
        SentTables {
            default: self.table.unwrap_or_default(),
            partitions,
        }
    }
}

/// A node's computed tables the check proved: its default table, and its
/// partitions' and those at keys (each with the key its QoS cache keeps
/// it under).
type ProvedTables = (Vec<PathRecord>, Vec<(QosKey, Vec<PathRecord>)>);

/// One more node gets tables from the master beside its computed ones.
fn tally_from_master(tally: &mut Tally) {
    tally.computed.get_or_insert_default().from_master += 1;
}

/// Records by source port.
fn group_by_source(records: &[PathRecord]) -> BTreeMap<Gid, Vec<PathRecord>> {
    let mut by: BTreeMap<_, Vec<PathRecord>> = BTreeMap::new();
    for r in records {
        by.entry(r.sgid()).or_default().push(*r);
    }
    by
}

/// A node's partition tables' records (a dump's), one table per
/// partition, in order.
fn by_partition(records: &[PathRecord]) -> Vec<(QosKey, Vec<PathRecord>)> {
    delta::by_partition(records)
        .into_iter()
        .map(|(p, records)| (QosKey::partition(p), records))
        .collect()
}

/// The fill has no clock: the time of an end is the driver's.
impl Sends for Distribution {
    fn poll_send(&mut self) -> Option<(u64, Send)> {
        Self::poll_send(self)
    }

    fn handle_end(&mut self, _now: Instant, id: u64, outcome: Result<Answer, RequestFailure>) {
        Self::handle_end(self, id, outcome)
    }

    fn handle_unsendable(&mut self, _now: Instant, id: u64, why: &str) {
        Self::handle_unsendable(self, id, why)
    }
}
