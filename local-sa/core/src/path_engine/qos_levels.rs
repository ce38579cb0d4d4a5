//! A master's QoS policy, its port groups known by their ports' GUIDs
//! (`qos_groups` resolves them against the fabric), for the
//! engine to give each path its level as `pr_rcv_get_path_parms` does: the
//! level of the first match rule the query meets (from the source's port
//! to the destination's, with the P_Key a partition's table is asked
//! with), its SL, MTU and rate limits, PacketLifeTime, and P_Keys.

use std::collections::HashSet;

use crate::opensm_config::QosPolicy;
use crate::opensm_config::qos_policy::{PortMembership, QosLevel, QueryKeys};

/// A policy whose port groups are known by their ports' GUIDs.
#[derive(Debug, Clone)]
pub struct QosLevels {
    policy: QosPolicy,
    /// Each group's port GUIDs, in the policy's order.
    members: Vec<HashSet<u64>>,
}

impl PortMembership for QosLevels {
    fn in_group(&self, port: u64, group: usize) -> bool {
        self.members.get(group).is_some_and(|m| m.contains(&port))
    }
}

impl QosLevels {
    /// The policy with each group's port GUIDs, in the policy's order.
    pub(super) fn new(policy: QosPolicy, members: Vec<HashSet<u64>>) -> Self {
        Self { policy, members }
    }

    /// The level of a query from port GUID `source` to `dest`.
    pub(super) fn level(&self, source: u64, dest: u64, keys: QueryKeys) -> &QosLevel {
        self.policy.level(self, source, dest, keys)
    }

    /// The policy.
    pub fn policy(&self) -> &QosPolicy {
        &self.policy
    }
}
