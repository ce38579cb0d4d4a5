//! Which ports there are and which of them run local-sa: the sources of a
//! dump, or the destinations of this port's paths at the master; then an
//! SA ClassPortInfo probe to each.

use bytes::Bytes;
use local_sa_core::lid_walk::{DEFAULT_WALK_GAP, LidWalk};
use mad_codec::{MadStatus, PathRecord};
use umad::Address;

use local_sa_distributor::fill::ports::{
    FabricPort, sa_probe, sa_probe_attempts, table_request, those_running_an_sa,
};
use local_sa_distributor::fill::tally::Tally;

use crate::compute::ask::each_to_with;
use crate::session::Session;
use crate::stop::Stop;

/// This port's paths at the master: one GetTable, or, when its answer
/// comes back cut (a transport without RMPP, such as ibsim), one per
/// destination LID, walking upward as local-sa's own refresh does
/// ([`LidWalk`]).
pub(super) async fn own_paths(
    session: &mut Session,
    master: Address,
    window: usize,
    tally: &mut Tally,
) -> Result<Vec<PathRecord>, Stop> {
    let gid = session.port.gid;
    tally.tables += 1;
    let answer = session.exchange(&table_request(gid, None, None)).await?;
    session.ok(&answer)?;
    if !answer.is_cut() {
        return Ok(answer.records::<PathRecord>().copied().collect());
    }
    tally.cut = true;
    let mut walk = LidWalk::new(session.port.lid.max(master.lid), DEFAULT_WALK_GAP);
    let mut records = Vec::new();
    loop {
        while let Some(lid) = walk.next_lid(window) {
            session
                .client
                .start(master, &table_request(gid, Some(lid), None));
            tally.per_destination += 1;
        }
        if walk.is_done() {
            return Ok(records);
        }
        let c = session.client.next_completion().await?;
        let answer = session.answer(c)?;
        let mut highest = None;
        if answer.status() == MadStatus::OK {
            for r in answer.records::<PathRecord>() {
                highest = highest.max(Some(r.dlid()));
                records.push(*r);
            }
        }
        // The answer's own DLID says which LID it was about.
        walk.answered(highest.unwrap_or(0), highest.is_some());
    }
}

/// The endpoints among `candidates` that answer an SA ClassPortInfo Get
/// ([`sa_probe`]): those running local-sa (or another SA). Each probe gets
/// two attempts of `timeout`.
pub(super) async fn running_an_sa(
    session: &mut Session,
    candidates: &[FabricPort],
    window: usize,
    timeout: std::time::Duration,
) -> Result<Vec<FabricPort>, Stop> {
    let request = sa_probe();
    let requests: Vec<(Address, Bytes)> = candidates
        .iter()
        .map(|e| (Address::gsi(e.lid, session.port.sm_sl), request.clone()))
        .collect();
    let attempts = sa_probe_attempts(timeout);
    let ends = each_to_with(session, window, &requests, attempts).await?;
    Ok(those_running_an_sa(candidates.iter().copied(), ends))
}
