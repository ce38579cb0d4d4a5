//! The description read again (`--watch`): whether it changed, and if it
//! did, the fabric built again with what was learnt of the master before
//! (its partitions' SLs, its PacketLifeTime), so that an event costs the
//! master description records, not paths. Only a partition new since
//! then is probed; the check is the watch's, on the pairs that changed
//! and every endport.
//!
//! After a sweep of the master (and whenever the description changed:
//! the master swept), OpenSM's own files are read again too, as OpenSM
//! reads them at every heavy sweep: a policy or partitions file edited,
//! or an option OpenSM takes while it runs, is a change like a reroute,
//! and what it was is said.

use std::sync::Arc;
use std::time::Instant;

use local_sa_core::path_engine::PairCheck;
use local_sa_distributor::computed::opensm_input::{self, OpenSmInput};
use umad::Address;

use local_sa_distributor::computed::{Checked, Prepared, Served};

use super::check;
use super::configure::configure;
use super::description;
use crate::session::Session;
use crate::stop::Stop;

/// What a second read found.
pub(crate) enum Reread {
    /// The same records as before, and the same configuration of
    /// OpenSM's; reading them cost the master this.
    Unchanged(Served),
    /// Something changed: the fabric as it is now (not yet checked), and
    /// what changed in OpenSM's files, a line each.
    Changed(Box<Prepared>, Vec<String>),
}

/// Reads the description from `master` again and compares it with
/// `previous`'s; with `files_too` (after a sweep of the master), OpenSM's
/// files are read again as well.
pub(crate) async fn reread(
    session: &mut Session,
    master: Address,
    window: usize,
    (previous, files_too): (&Prepared, bool),
) -> Result<Reread, Stop> {
    let started = Instant::now();
    let read = description::read(session, master, window).await?;
    let same = read.records == previous.records && read.qos == previous.qos;
    let (opensm, changes) = match &previous.opensm {
        Some(input) if files_too || !same => files_again(input),
        _ => (previous.opensm.clone(), Vec::new()),
    };
    if same && changes.is_empty() {
        return Ok(Reread::Unchanged(read.served));
    }
    let mut fabric = read.build().map_err(description::not_together)?;
    let read_time = started.elapsed();
    let started = Instant::now();
    let mut sample = Served::default();
    let (unfit, policy_dropped, unknown_sls) = if opensm.is_some() {
        // OpenSM's own files say it again for the fabric as it is now.
        let configured = configure(
            session,
            (master, window),
            opensm.as_ref(),
            (&mut fabric, &read.records, read.qos),
            &mut sample,
        )
        .await?;
        (
            configured.unfit,
            configured.policy_dropped,
            configured.unknown_sls,
        )
    } else {
        fabric.set_subnet_timeout(previous.fabric.subnet_timeout());
        let new_partitions: Vec<u16> = fabric
            .partitions()
            .into_iter()
            .filter(|p| previous.fabric.partition_sl(*p).is_none())
            .collect();
        for p in previous.fabric.partitions() {
            if let Some(sl) = previous.fabric.partition_sl(p) {
                fabric.set_partition_sl(p, sl);
            }
        }
        let mut unknown_sls = Vec::new();
        if !new_partitions.is_empty() {
            let timeout = fabric.subnet_timeout();
            let learnt =
                check::learn_partition_sls(session, master, window, &mut fabric, &mut sample)
                    .await?;
            // Only the new partitions' verdicts are news; the
            // PacketLifeTime stays what the first read learnt.
            fabric.set_subnet_timeout(timeout);
            unknown_sls = learnt
                .into_iter()
                .filter(|(p, _)| new_partitions.contains(p))
                .collect();
        }
        (None, None, unknown_sls)
    };
    // What the checks before found stays found — a table the master gave
    // because the engine could not prove it is not computed now for want
    // of a sampled pair in it — unless OpenSM's files changed: the check
    // says anew what differs.
    let checked = if changes.is_empty() {
        Checked {
            mismatches: previous.checked.mismatches.clone(),
            uncomputable: previous.checked.uncomputable.clone(),
            drawn: previous.checked.drawn.clone(),
            ..Checked::default()
        }
    } else {
        Checked::default()
    };
    Ok(Reread::Changed(
        Box::new(Prepared {
            fabric,
            opensm,
            opensm_unfit: unfit,
            policy_dropped,
            asked_keys: previous.asked_keys.clone(),
            qos: read.qos,
            adapters: read.adapters(),
            pkey_tables: read.records.pkeys.clone(),
            records: read.records,
            description: read.served,
            cut: read.cut,
            unknown_sls,
            sample,
            checked,
            read_time,
            check_time: started.elapsed(),
        }),
        changes,
    ))
}

/// OpenSM's files read again: the configuration OpenSM takes now, and
/// what changed. A file that cannot be read, or asks for what the engine
/// does not follow, keeps the configuration as it was (the check says
/// whether the master agrees), and is said.
fn files_again(input: &Arc<OpenSmInput>) -> (Option<Arc<OpenSmInput>>, Vec<String>) {
    match input.reread() {
        Ok(opensm_input::Reread::Same) => (Some(input.clone()), Vec::new()),
        Ok(opensm_input::Reread::Changed(now, changes)) => {
            for c in &changes {
                tracing::info!("OpenSM's configuration changed: {c}");
            }
            (Some(Arc::from(now)), changes)
        }
        Err(e) => {
            tracing::warn!(
                "OpenSM's files read again: {}; the configuration read before stands (the check \
                 says whether the master agrees)",
                e.message()
            );
            (Some(input.clone()), Vec::new())
        }
    }
}

/// Checks `pairs` of `prepared`'s fabric against the master's answers,
/// adding what it finds to `prepared`'s check; returns how many pairs
/// differed (or could not be computed).
pub(crate) async fn check_pairs(
    session: &mut Session,
    master: Address,
    window: usize,
    prepared: &mut Prepared,
    pairs: &[PairCheck],
) -> Result<usize, Stop> {
    let started = Instant::now();
    let found = check::check(
        session,
        master,
        window,
        &prepared.fabric,
        pairs,
        &mut prepared.sample,
    )
    .await?;
    prepared.check_time += started.elapsed();
    let differed = found.mismatches.len() + found.uncomputable.len();
    prepared.checked.add(found);
    Ok(differed)
}
