//! What the agent knows of the master SA's policy, as path queries need
//! it: whether it applies QoS (its ClassPortInfo's CapabilityMask2), from
//! which SM that came, and the queries held while that is asked (those
//! naming a P_Key, SL, ... whose answer depends on it). After the master
//! moves, the old master's answer is used until the new one's.

use crate::agent::counterparts::Asker;
use crate::request::{ConnId, PathQuery};

/// Queries held while the master's ClassPortInfo is asked; past this
/// they go to the master as before.
const MAX_WAITERS: usize = 4096;

/// The master SA's ClassPortInfo, as far as path queries need it.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct MasterInfo {
    /// Whether it applies QoS policy (CapabilityMask2's QoS bit).
    pub(in crate::agent) qos: bool,
    /// The SM LID it came from.
    pub(in crate::agent) sm_lid: u16,
}

/// The master's policy as known, and who waits to know it.
#[derive(Debug, Default)]
pub(in crate::agent) struct MasterPolicy {
    /// `None` until the master's ClassPortInfo arrives.
    info: Option<MasterInfo>,
    /// Queries waiting for that ClassPortInfo.
    waiters: Vec<(Asker, PathQuery)>,
}

impl MasterPolicy {
    /// What the master said, if it did.
    pub(in crate::agent) fn info(&self) -> Option<MasterInfo> {
        self.info
    }

    /// The master said so.
    pub(in crate::agent) fn learned(&mut self, info: MasterInfo) {
        self.info = Some(info);
    }

    /// What the master said no longer holds (a new master, one that lost
    /// its state, a new registration).
    pub(in crate::agent) fn forget(&mut self) {
        self.info = None;
    }

    /// True if the policy is unknown and another query may wait for it.
    pub(in crate::agent) fn may_wait(&self) -> bool {
        self.info.is_none() && self.waiters.len() < MAX_WAITERS
    }

    /// `asker`'s `query` waits for the policy.
    pub(in crate::agent) fn wait(&mut self, asker: Asker, query: PathQuery) {
        self.waiters.push((asker, query));
    }

    /// Everyone who waited, to be answered now.
    pub(in crate::agent) fn take_waiters(&mut self) -> Vec<(Asker, PathQuery)> {
        std::mem::take(&mut self.waiters)
    }

    /// Forgets the queries of local connection `conn` (it closed).
    pub(in crate::agent) fn forget_waiters_of(&mut self, conn: ConnId) {
        self.waiters.retain(|(w, _)| w.conn() != Some(conn));
    }
}
