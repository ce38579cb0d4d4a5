//! This port's own directory record at the master: registered with the
//! agent's other registrations, renewed at every refresh (its lease is
//! three refresh intervals, so that a node that died without withdrawing
//! it drops out), and withdrawn at shutdown. The names' state says which
//! request follows; the agent sends it.

use std::time::Duration;

use bytes::Bytes;
use mad_codec::{AttributeId, Gid, MadStatus, Method, SaMadBuilder};
use tracing::{debug, warn};

use super::directory;
use super::state::NameState;
use crate::log_limit::answer_status;

/// The directory record's lease for a port refreshed every
/// `refresh_interval`: three intervals, at least a minute.
fn publication_lease(refresh_interval: Duration) -> u32 {
    let secs = refresh_interval.as_secs().saturating_mul(3);
    u32::try_from(secs.max(60)).unwrap_or(u32::MAX - 1)
}

impl NameState {
    /// The Set that registers (or renews) `port_gid`'s directory record,
    /// if this port publishes one.
    pub(crate) fn publication_request(
        &self,
        port_gid: Gid,
        refresh_interval: Duration,
    ) -> Option<Bytes> {
        let p = self.publication()?;
        let record = p.record(port_gid, publication_lease(refresh_interval));
        let mut b =
            SaMadBuilder::request(Method::SET, 0, AttributeId::SERVICE_RECORD).record(&record);
        b.header_mut().sa.set_component_mask(directory::set_mask());
        Some(b.into_bytes())
    }

    /// The Delete that withdraws `port_gid`'s directory record, if the
    /// master holds it (it counts as withdrawn from now).
    pub(crate) fn withdrawal_request(&mut self, port_gid: Gid) -> Option<Bytes> {
        if !self.set_published(false) {
            return None;
        }
        let (mask, r) = directory::record_of(port_gid);
        let mut b =
            SaMadBuilder::request(Method::DELETE, 0, AttributeId::SERVICE_RECORD).record(&r);
        b.header_mut().sa.set_component_mask(mask);
        Some(b.into_bytes())
    }

    /// The master answered a directory Set (`register`) or Delete with
    /// `status` (`None`: it did not answer).
    pub(crate) fn publication_answered(&mut self, register: bool, status: Option<MadStatus>) {
        match (register, status) {
            (true, Some(MadStatus::OK)) => {
                if !self.set_published(true) {
                    debug!("this port's directory record is registered at the master");
                }
            }
            (true, other) => warn!(
                status = %answer_status(other),
                "the master did not take this port's directory record; other nodes will not \
                 resolve this host's name or addresses until the next refresh"
            ),
            (false, _) => {}
        }
    }
}
