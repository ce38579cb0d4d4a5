//! Lease renewals: every interval each node gets one `Set(PathRecord)`
//! with LEASE and RENEW_ONLY (docs/wire-contract.md), so that nodes whose
//! tables did not change keep deferring their own refreshes. A node that
//! does not answer is no longer known to hold its tables (it may have
//! restarted or missed a push); one that refuses takes no lease (an older
//! local-sa) and refreshes on its own.

use bytes::Bytes;
use mad_codec::{Gid, MadStatus};
use umad::Address;

use local_sa_distributor::watch::{Renewed, renewal};

use crate::compute::ask::each_to;
use crate::session::Session;
use crate::stop::Stop;

/// Renews the lease of every node of `nodes` (GID, LID) for `seconds`,
/// at most `window` at once.
pub(super) async fn renew(
    session: &mut Session,
    nodes: &[(Gid, u16)],
    seconds: u16,
    window: usize,
) -> Result<Renewed, Stop> {
    let mad = renewal(session.sm_key, seconds);
    let sm_sl = session.port.sm_sl;
    let requests: Vec<(Address, Bytes)> = nodes
        .iter()
        .map(|(_, lid)| (Address::gsi(*lid, sm_sl), mad.clone()))
        .collect();
    let ends = each_to(session, window, &requests).await?;
    let mut renewed = Renewed::default();
    for ((gid, _), end) in nodes.iter().zip(ends) {
        match end {
            Ok(a) if a.status() == MadStatus::OK => renewed.taken.push(*gid),
            Ok(a) => renewed.refused.push((*gid, a.status())),
            Err(_) => renewed.unanswered.push(*gid),
        }
    }
    Ok(renewed)
}
