//! The description read again (`--watch`): whether it changed, and if it
//! did, the fabric built again with what was learnt of the master before
//! (its partitions' SLs, its PacketLifeTime), so that an event costs the
//! master description records, not paths. Only a partition new since
//! then is probed; the check is the watch's, on the pairs that changed.

use std::time::Instant;

use local_sa_core::path_engine::PairCheck;
use umad::Address;

use local_sa_distributor::computed::{Checked, Prepared, Served};

use super::check;
use super::description;
use crate::session::Session;
use crate::stop::Stop;

/// What a second read found.
pub(crate) enum Reread {
    /// The same records as before; reading them cost the master this.
    Unchanged(Served),
    /// Something changed: the fabric as it is now (not yet checked).
    Changed(Box<Prepared>),
}

/// Reads the description from `master` again and compares it with
/// `previous`'s.
pub(crate) async fn reread(
    session: &mut Session,
    master: Address,
    window: usize,
    previous: &Prepared,
) -> Result<Reread, Stop> {
    let started = Instant::now();
    let read = description::read(session, master, window).await?;
    if read.records == previous.records && read.qos == previous.qos {
        return Ok(Reread::Unchanged(read.served));
    }
    let mut fabric = read.build().map_err(|why| Stop::new(5, why))?;
    let read_time = started.elapsed();
    let started = Instant::now();
    let mut sample = Served::default();
    let mut unknown_sls = Vec::new();
    if let Some(input) = &previous.opensm {
        // OpenSM's own files say it again for the fabric as it is now.
        input.apply(&mut fabric, &read.records, read.qos, master.lid)?;
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
    }
    Ok(Reread::Changed(Box::new(Prepared {
        fabric,
        opensm: previous.opensm.clone(),
        asked_keys: previous.asked_keys.clone(),
        qos: read.qos,
        adapters: read.adapters(),
        pkey_tables: read.records.pkeys.clone(),
        records: read.records,
        description: read.served,
        cut: read.cut,
        unknown_sls,
        sample,
        // What the checks before found stays found: a table the master
        // gave because the engine could not prove it is not computed now
        // for want of a sampled pair in it.
        checked: Checked {
            mismatches: previous.checked.mismatches.clone(),
            uncomputable: previous.checked.uncomputable.clone(),
            drawn: previous.checked.drawn.clone(),
            ..Checked::default()
        },
        read_time,
        check_time: started.elapsed(),
    })))
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
