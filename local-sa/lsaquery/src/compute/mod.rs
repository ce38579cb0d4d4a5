//! `--compute`: every node's PathRecord tables computed from the fabric's
//! description instead of asked of the master, checked before use.
//!
//! 1. The description, from the master: NodeRecords, PortInfoRecords,
//!    LinkRecords, LFTRecords, P_KeyTableRecords (its SA key needed),
//!    GUIDInfoRecords, and SL2VL tables on a master with QoS — a cost in
//!    records proportional to the fabric, not to N².
//! 2. The fabric built from it by the core's path engine, refused whole if
//!    it does not hold together (the error names the record).
//! 3. What the master does not publish: from OpenSM's files, or asked —
//!    each partition's SL, from one path in it. Steps 1 to 3 are the
//!    distributor's
//!    [`fabric_read`](local_sa_distributor::computed::fabric_read), carried
//!    out by [`fabric`].
//! 4. The sample ([`check`]): pairs spread over every node and switch pair, and over
//!    each partition, whose computed records must equal the master's own
//!    answers byte for byte; a difference names the field, and why such a
//!    field can differ ([`report`]).
//!
//! On a master with QoS, the tables at the `--service-id`s and
//! `--qos-class`es asked are computed only with OpenSM's policy
//! (`--opensm-config`, [`opensm_input`]); the sample then draws from each
//! key's tables and names every port group of the policy ([`keys`]).
//!
//! Alone, `--compute` reports (and writes the computed tables with
//! `--snapshot`); with `--distribute` the tables that passed go to the
//! nodes instead of being fetched from the master.

pub(crate) mod ask;
mod check;
pub(crate) mod fabric;
mod report;

use local_sa_distributor::computed::Prepared;
use local_sa_distributor::computed::fabric_read::{FabricRead, FabricReadEnd};
use local_sa_distributor::computed::{compute_tables, explain, tables};

use std::path::PathBuf;
use std::time::Instant;

use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::PairCheck;
use umad::Address;

use self::report::ComputeReport;
use crate::session::Session;
use crate::stop::Stop;

/// What `--compute` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct ComputeOptions {
    /// Pairs to check against the master (`None`: every pair).
    pub(crate) sample: Option<usize>,
    /// Seed of the sample's choice.
    pub(crate) seed: u64,
    /// Queries in flight at the master at once.
    pub(crate) master_window: usize,
    /// Alone: write the computed tables here.
    pub(crate) snapshot: Option<PathBuf>,
    /// OpenSM's configuration, if given (`--opensm-config`).
    pub(crate) opensm:
        Option<std::sync::Arc<local_sa_distributor::computed::opensm_input::OpenSmInput>>,
    /// The ServiceIDs and QoS classes whose tables are sent: computed and
    /// checked too when the master applies QoS and its policy is known.
    pub(crate) at_keys: Vec<QueryKeys>,
}

/// Reads the fabric from `master` (its description, and what OpenSM's
/// files or the partitions' probes tell) and checks the sample. A
/// description that does not hold together fails with exit status 5.
pub(crate) async fn prepare(
    session: &mut Session,
    master: Address,
    options: &ComputeOptions,
) -> Result<Prepared, Stop> {
    let read = FabricRead::first(
        Instant::now(),
        (session.sm_key, session.port.lid.max(master.lid), master.lid),
        options.opensm.clone(),
        options.at_keys.clone(),
    );
    let mut prepared = match fabric::read(session, master, options.master_window, read).await? {
        FabricReadEnd::Read(prepared, _) => *prepared,
        FabricReadEnd::Unchanged(_) => {
            return Err(Stop::new(
                3,
                "a first read of the fabric had nothing to compare with",
            ));
        }
    };
    let started = Instant::now();
    let count = options.sample.unwrap_or(usize::MAX);
    let pairs: Vec<PairCheck> = prepared
        .fabric
        .sample(count, options.seed, prepared.at_keys());
    prepared.checked = check::check(
        session,
        master,
        options.master_window,
        &prepared.fabric,
        &pairs,
        &mut prepared.sample,
    )
    .await?;
    prepared.check_time += started.elapsed();
    for m in prepared.checked.mismatches.iter().take(10) {
        tracing::warn!(
            "computed PathRecords differ from the master's: {}",
            explain::describe(m)
        );
    }
    Ok(prepared)
}

/// `--compute` alone: computes every node's tables, checks the sample and
/// reports; exit status 0 if every sampled record equals the master's, 1
/// if one differs, 5 if the description was unusable.
pub(crate) async fn run(session: &mut Session, options: &ComputeOptions) -> Result<(), Stop> {
    let master = session.dest;
    let prepared = prepare(session, master, options).await?;
    let started = Instant::now();
    let fabric = &prepared.fabric;
    let endports: Vec<_> = fabric.endports().iter().collect();
    let keep = options.snapshot.is_some();
    let computed = compute_tables(fabric, &endports, prepared.qos, prepared.at_keys(), keep);
    let compute_time = started.elapsed();
    let report = ComputeReport::new(&prepared, &computed, compute_time);
    if let Some(path) = &options.snapshot {
        let held = tables::held(&computed);
        crate::snapshot::write(path, &held)?;
    }
    report.print(session.json, master.lid)?;
    if prepared.checked.mismatches.is_empty() && prepared.checked.uncomputable.is_empty() {
        Ok(())
    } else {
        Err(Stop::new(
            1,
            "computed PathRecords differ from the master's (see above)",
        ))
    }
}
