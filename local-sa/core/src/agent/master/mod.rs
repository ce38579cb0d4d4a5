//! Everything between this port and the master SA, held together: the
//! requests in flight (retried, timed out, matched to their answers), the
//! requests waiting by lane and the relays out, and what the master's
//! ClassPortInfo said. Each member owns its state behind its own methods.

pub(in crate::agent) mod lanes;
pub(in crate::agent) mod policy;
pub(in crate::agent) mod purpose;
pub(in crate::agent) mod queue;
pub(in crate::agent) mod upstream;
pub(in crate::agent) mod waiters;

use crate::address::Address;
use crate::agent::master::lanes::UpstreamLanes;
use crate::agent::master::policy::MasterPolicy;
use crate::agent::master::purpose::Purpose;
use crate::config::AgentConfig;
use crate::requester::Requester;

/// The agent's side of its conversation with the master.
#[derive(Debug)]
pub(in crate::agent) struct MasterLink {
    /// Requests in flight to the master, each with what it is for.
    pub(in crate::agent) requester: Requester<Address, Purpose>,
    /// Requests waiting to go to the master, by lane, and relays out.
    pub(in crate::agent) lanes: UpstreamLanes,
    /// What the master's ClassPortInfo said (whether it applies QoS), and
    /// the queries waiting for it.
    pub(in crate::agent) policy: MasterPolicy,
}

impl MasterLink {
    /// Nothing asked yet. TransactionIDs start at `seed`, top two bits
    /// clear (reports to subscribers take them with the top bit set).
    pub(in crate::agent) fn new(config: &AgentConfig, seed: u32) -> Self {
        Self {
            requester: Requester::new(config.upstream(), seed & 0x3FFF_FFFF),
            lanes: UpstreamLanes::new(&config.pace),
            policy: MasterPolicy::default(),
        }
    }

    /// True while a request for `purpose` is in flight to the master.
    pub(in crate::agent) fn asking(&self, purpose: &Purpose) -> bool {
        self.requester.any_pending(|p| p == purpose)
    }

    /// True when nothing is in flight to the master, or waiting to go.
    pub(in crate::agent) fn is_idle(&self) -> bool {
        self.requester.in_flight() == 0
            && self.lanes.registrations_waiting() == 0
            && self.lanes.queries_waiting() == 0
    }
}
