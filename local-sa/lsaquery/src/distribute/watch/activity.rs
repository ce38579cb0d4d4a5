//! One poll of the master SM's activity: its SMInfoRecord's ActCount
//! (`local_sa_core::master_activity`), asked of the port's SM as it is
//! now. The watch polls between events; a standby polls to learn the
//! light sweeps before it takes over.

use local_sa_core::master_activity;

use crate::session::Session;
use crate::stop::Stop;

/// The master's LID and its ActCount, or `None` if it did not answer
/// with one.
pub(super) async fn act_count(session: &mut Session) -> Result<Option<(u16, u32)>, Stop> {
    let sm = session.dest;
    let c = session
        .client
        .request(sm, &master_activity::request(sm.lid))
        .await?;
    let count = c.outcome.ok().as_ref().and_then(master_activity::act_count);
    Ok(count.map(|n| (sm.lid, n)))
}
