//! Lease renewals: every `--watch-renew` each node gets one `Set(PathRecord)`
//! with LEASE and RENEW_ONLY (docs/wire-contract.md), so that nodes whose
//! tables did not change keep deferring their own refreshes. A node that
//! does not answer is no longer known to hold its tables (it may have
//! restarted or missed a push); one that refuses takes no lease (an older
//! local-sa) and refreshes on its own; one that names another owner
//! fences this watch off (another took over).

use bytes::Bytes;
use local_sa_core::load_flags::LeaseTerms;
use mad_codec::Gid;
use umad::Address;

use local_sa_distributor::watch::{LeaseAnswer, Renewed, renewal};

use crate::compute::ask::each_to;
use crate::session::Session;
use crate::stop::Stop;

/// Renews the lease of every node of `nodes` (GID, LID) on `terms`, at
/// most `window` at once; `forget_qos`: the master swept since the last.
pub(super) async fn renew(
    session: &mut Session,
    nodes: &[(Gid, u16)],
    (terms, forget_qos): (LeaseTerms, bool),
    window: usize,
) -> Result<Renewed, Stop> {
    let mad = renewal(session.sm_key, terms, forget_qos);
    let sm_sl = session.port.sm_sl;
    let requests: Vec<(Address, Bytes)> = nodes
        .iter()
        .map(|(_, lid)| (Address::gsi(*lid, sm_sl), mad.clone()))
        .collect();
    let ends = each_to(session, window, &requests).await?;
    let mut renewed = Renewed::default();
    for ((gid, _), end) in nodes.iter().zip(ends) {
        renewed.add(*gid, LeaseAnswer::of(end.as_ref().ok()));
    }
    Ok(renewed)
}

/// Renews (or claims) the lease of the node at `lid` alone: how it
/// answered.
pub(super) async fn claim(
    session: &mut Session,
    lid: u16,
    terms: LeaseTerms,
) -> Result<LeaseAnswer, Stop> {
    let request = (
        Address::gsi(lid, session.port.sm_sl),
        renewal(session.sm_key, terms, false),
    );
    let ends = each_to(session, 1, std::slice::from_ref(&request)).await?;
    Ok(LeaseAnswer::of(ends.first().and_then(|e| e.as_ref().ok())))
}
