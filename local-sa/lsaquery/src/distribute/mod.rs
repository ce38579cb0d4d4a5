//! `--distribute`: fill every local-sa on the fabric with its PathRecords,
//! from next to the master SA.
//!
//! 1. Endpoints: the source ports of `--from FILE`, or the destinations of
//!    this port's paths at the master; narrowed to `--targets` if given.
//! 2. Which of them run local-sa: an SA ClassPortInfo Get to each (the
//!    master's own LID is left out).
//! 3. The names tables (NodeRecords of channel adapters, the local-sa
//!    directory's ServiceRecords), once from the master ([`names`]).
//! 4. Which partition tables each node keeps: its P_Keys from the master's
//!    P_KeyTableRecords (OpenSM answers them for its SA key, `--smkey`)
//!    and whether the master applies QoS ([`partitions`]).
//! 5. For each, `--window` nodes at a time: the names tables (a Set with
//!    NAMES_TABLE each, so that the node need not fetch them), then its
//!    tables — one GetTable (SGID = the node's) at the master, then one
//!    per partition table (SGID and the P_Key), or per destination LID
//!    when the transport cuts multi-MAD answers, at most `--master-window`
//!    queries in flight in all; or its records in `--from FILE` — then a
//!    Set over RMPP with REPLACE_SOURCES and PARTITION_TABLES for each
//!    partition's, then one with REPLACE_SOURCES for the default table
//!    (the node's whole table, which stands for its own refresh), all
//!    carrying `--smkey`.
//! 6. On a master that applies QoS, given `--service-id` or `--qos-class`:
//!    each node's table at each of them on each of its P_Keys (SGID, the
//!    P_Key and the ServiceID or QoS class: rdma_cm's and the kernel's
//!    keys), fetched after its partition tables and sent last, each a Set
//!    with QOS_TABLES for the node's QoS cache ([`qos`]); the default
//!    table's load would empty that cache.
//!
//! With `--delta OLD` (a `--snapshot` of an earlier run, which keeps the
//! default and partition tables' records apart) a node gets only what
//! changed: a Set of the records new or changed and a Delete with
//! KNOWN_ABSENT of the pairs gone (docs/wire-contract.md), for its
//! default table and, with PARTITION_TABLES, for its partition tables; a
//! table OLD holds nothing of goes whole. Tables at QoS keys go whole
//! every time (the node's QoS cache is emptied by its own refreshes). A
//! node that fails is tried again after the others; the summary names
//! every node that still failed.

mod endpoints;
mod names;
mod partitions;
mod summary;
pub(crate) mod watch;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::path_query::QosKey;
use local_sa_core::requester::Attempts;

use local_sa_distributor::fill::ports::{Endpoints, FabricPort};
use local_sa_distributor::fill::tally::{Computed, Tally};
use local_sa_distributor::fill::{Distribution, Setup};
pub(crate) use local_sa_distributor::shard::Shard;

use self::summary::FillSummary;
use crate::carrier::Carrier;
use crate::progress::ProgressBar;
use crate::session::Session;
use crate::stop::Stop;
use local_sa_distributor::sent_tables::SentTables;

/// What `--distribute` was asked to do.
pub(crate) struct DistributeOptions {
    /// Compute the tables from the fabric's description (`--compute`).
    pub(crate) compute: Option<crate::compute::ComputeOptions>,
    /// Exit rather than take from the master tables meant to be computed
    /// (`--no-fallback`).
    pub(crate) no_fallback: bool,
    /// This distributor's share of the nodes, if it has one.
    pub(crate) shard: Option<Shard>,
    /// Only these LIDs (each a port's lowest LID).
    pub(crate) targets: Option<Vec<u16>>,
    /// Records from this dump rather than from the master.
    pub(crate) from: Option<PathBuf>,
    /// Send only the differences from this snapshot.
    pub(crate) delta: Option<PathBuf>,
    /// Write what each node now holds here.
    pub(crate) snapshot: Option<PathBuf>,
    /// Nodes fetched or pushed to at once.
    pub(crate) window: usize,
    /// Queries in flight at the master at once.
    pub(crate) master_window: usize,
    /// Attempts per node.
    pub(crate) attempts: u32,
    /// Each whole table's attempts at the master (the master may take
    /// long over one).
    pub(crate) table_attempts: Attempts,
    /// Wait per attempt of the probe that tells whether a port runs
    /// local-sa.
    pub(crate) probe_timeout: Duration,
    /// The ServiceIDs and QoS classes whose tables each node gets on each
    /// of its P_Keys (their `pkey` is `None` here).
    pub(crate) qos_keys: Vec<QosKey>,
}

/// Runs a distribution and prints its summary.
pub(crate) async fn run(session: &mut Session, options: &DistributeOptions) -> Result<(), Stop> {
    let computing = match &options.compute {
        None => Computing::NotAsked,
        Some(c) => match crate::compute::prepare(session, session.dest, c).await {
            Ok(prepared) => Computing::Ready(Box::new(prepared)),
            Err(e) => Computing::Failed(e.message),
        },
    };
    let filled = fill(session, options, None, computing).await?;
    filled.summary.print(session.json)?;
    filled.summary.exit()
}

/// What became of `--compute`'s preparation before a fill.
pub(super) enum Computing {
    /// Not asked for: the tables come from the master (or `--from`).
    NotAsked,
    /// The description read and the sample checked.
    Ready(Box<local_sa_distributor::computed::Prepared>),
    /// It could not be done, for this reason.
    Failed(String),
}

/// The fill's decision on tables that were meant to be computed and are
/// not, or not proven: taken from the master and said so with what that
/// costs, or with `--no-fallback` refused before anything is sent.
fn fall_back(options: &DistributeOptions, why: &str, what: &str) -> Result<(), Stop> {
    if options.no_fallback {
        return Err(Stop::new(
            5,
            format!("{what} ({why}); --no-fallback: nothing sent, nothing taken from the master"),
        ));
    }
    eprintln!(
        "lsaquery: {what} ({why}); they come from the master instead, one GetTable per node and table \
         (the summary says what the master served; --no-fallback refuses this)"
    );
    Ok(())
}

/// What a distribution leaves behind: its summary, and for a watch what
/// it was computed from and whom it reached.
struct Filled {
    summary: FillSummary,
    /// The fabric read and checked, if the tables were computed.
    computing: Option<local_sa_distributor::computed::Prepared>,
    /// Every endpoint of the fabric (the master's own LID included).
    endpoints: Vec<FabricPort>,
    /// The local-sa nodes found.
    nodes: Vec<FabricPort>,
}

/// Runs a distribution whose table pushes carry `lease` (`--watch`), and
/// writes its snapshot if asked.
async fn fill(
    session: &mut Session,
    options: &DistributeOptions,
    lease: Option<LeaseTerms>,
    computing: Computing,
) -> Result<Filled, Stop> {
    let started = Instant::now();
    let master = session.dest;
    let mut tally = Tally {
        shard: options.shard,
        ..Tally::default()
    };
    let read = |file: &Option<PathBuf>| -> Result<Option<SentTables>, Stop> {
        Ok(file
            .as_deref()
            .map(crate::load::read_dump)
            .transpose()?
            .map(SentTables::from))
    };
    let from_file = read(&options.from)?;
    let old = read(&options.delta)?;
    let computing = match computing {
        Computing::NotAsked => None,
        Computing::Ready(prepared) => {
            if let Some(why) = prepared.unproven() {
                fall_back(
                    options,
                    &why.to_string(),
                    "the check did not prove every computed table",
                )?;
            }
            Some(*prepared)
        }
        Computing::Failed(why) => {
            fall_back(options, &why, "the tables are not computed")?;
            tally.computed = Some(Computed::not_used(why));
            None
        }
    };
    let fabric = match (&from_file, &computing) {
        (Some(held), _) => Endpoints::from_sources(&held.default),
        (None, Some(c)) => Endpoints::from_endports(c.fabric.endports()),
        (None, None) => {
            let own =
                endpoints::own_paths(session, master, options.master_window, &mut tally).await?;
            Endpoints::from_destinations(&own)
        }
    };
    let candidates = candidates(&fabric.endpoints, master.lid, options);
    if let Some(t) = &options.targets
        && let Some(unknown) = t.iter().find(|l| !candidates.iter().any(|e| e.lid == **l))
    {
        return Err(Stop::new(
            2,
            format!(
                "--targets: LID {unknown} is no port's lowest LID {} (or it is the master's)",
                if from_file.is_some() {
                    "among the sources of --from"
                } else {
                    "among the master's paths from this port"
                }
            ),
        ));
    }
    let nodes = endpoints::running_an_sa(
        session,
        &candidates,
        options.master_window,
        options.probe_timeout,
    )
    .await?;
    let probed = candidates.len();
    let names = if nodes.is_empty() {
        None
    } else {
        // Asked port by port when the answers come cut: every port of
        // the fabric, which for a dump is every destination (its sources
        // are only the nodes).
        let ports = match &from_file {
            Some(held) => Endpoints::from_destinations(&held.default).endpoints,
            None => fabric.endpoints.clone(),
        };
        // Computed, the description holds the adapters' NodeRecords.
        let adapters = computing.as_ref().map(|c| c.adapters.clone());
        names::fetch(
            session,
            master,
            &ports,
            adapters,
            options.master_window,
            &mut tally,
        )
        .await
        .inspect_err(|e| {
            eprintln!(
                "lsaquery: the names tables are not distributed: {}",
                e.message
            )
        })
        .ok()
    };
    if let Some(n) = &names {
        tally.names = Some((n.nodes.records, n.directory.records));
    }
    // With a dump, the partition tables are its own (a snapshot's
    // section), never the master's; computed, they are the description's.
    let partitions = if nodes.is_empty() || from_file.is_some() {
        None
    } else if let Some(c) = &computing {
        Some(local_sa_distributor::fill::partitions::NodePartitions::new(
            &c.pkey_tables,
            c.qos,
        ))
    } else {
        partitions::fetch(session, master, &nodes, options.master_window, &mut tally)
            .await
            .inspect_err(|e| {
                eprintln!(
                    "lsaquery: the partition tables are not distributed (the nodes fetch their own): {}",
                    e.message
                )
            })
            .ok()
    };
    tally.partitions_known =
        partitions.is_some() || from_file.as_ref().is_some_and(|f| !f.partitions.is_empty());
    let qos = local_sa_distributor::fill::qos::QosPlan::new(
        &options.qos_keys,
        partitions.as_ref(),
        from_file.is_some(),
    );
    tally.qos = qos.outlook();
    if let Some(c) = &computing {
        let mut computed = Computed::used(c);
        if let (true, Some(why)) = (qos.sends(), c.keys_not_computed_because()) {
            fall_back(
                options,
                why,
                "the tables at ServiceIDs and QoS classes are not computed",
            )?;
            computed.from_master_because = Some(why.to_owned());
        }
        computed.from_master_because =
            (c.unproven().as_ref().map(ToString::to_string)).or(computed.from_master_because);
        tally.computed = Some(computed);
    }
    let setup = Setup {
        master,
        sm_sl: session.port.sm_sl,
        sm_key: session.sm_key,
        window: options.window,
        master_window: options.master_window,
        attempts: options.attempts,
        table_attempts: options.table_attempts,
        dlids: fabric.dlids.clone(),
        lease,
        keep_holdings: options.snapshot.is_some(),
    };
    let found = nodes.clone();
    let mut run = Distribution::new(setup, nodes, tally, names)
        .with_partitions(partitions)
        .with_qos(qos)
        .with_computed(computing);
    if let Some(held) = from_file {
        run = run.tables_from(held);
    }
    if let Some(held) = &old {
        run.old_tables(held);
    }
    drive(session, &mut run).await?;
    let computing = run.take_computed();
    let summary = FillSummary::new(run.finish(), probed, started.elapsed(), master.lid);
    if let Some(path) = &options.snapshot {
        crate::snapshot::write(path, &summary.snapshot)?;
    }
    Ok(Filled {
        summary,
        computing,
        endpoints: fabric.endpoints,
        nodes: found,
    })
}

/// The ports of `endpoints` a fill may reach: not the master's, among
/// `--targets` if given, in this shard if sharded.
fn candidates(
    endpoints: &[FabricPort],
    master_lid: u16,
    options: &DistributeOptions,
) -> Vec<FabricPort> {
    endpoints
        .iter()
        .filter(|e| e.lid != master_lid)
        .filter(|e| options.targets.as_ref().is_none_or(|t| t.contains(&e.lid)))
        .filter(|e| options.shard.is_none_or(|s| s.owns(e.gid.guid())))
        .copied()
        .collect()
}

/// Sends what `run` asks for and tells it how each send ended, until it
/// is over; a progress bar on a terminal.
async fn drive(session: &mut Session, run: &mut Distribution) -> Result<(), Stop> {
    let mut bar = ProgressBar::on_terminal(run.progress().1 > 1);
    let mut carrier = Carrier::default();
    loop {
        carrier.send(session, run);
        let (done, all) = run.progress();
        bar.show(done, all, "local-sa nodes filled");
        if run.is_done() {
            bar.finish();
            return Ok(());
        }
        carrier.next_end(session, run).await?;
    }
}
