//! A QoS policy's port groups resolved against the fabric as OpenSM's
//! parser resolves them, once: by port GUID (ports that exist), by
//! `NodeDescription/Pn` (a node no port has is none; a port number past
//! the node's is OpenSM's error), by P_Key (every port whose P_Key table
//! holds it), by partition name (its P_Key, from OpenSM's partitions
//! file), by node type (SELF: the master's own port).

use std::collections::HashSet;

use mad_codec::codes::NodeType;

use super::build::FabricRecords;
use super::fabric::Fabric;
use super::qos_levels::QosLevels;
use crate::opensm_config::{PartitionConfig, QosPolicy};

impl QosLevels {
    /// `policy`'s groups resolved against `fabric` (built from `records`):
    /// partition names through `partitions`, SELF to `master_port` (the
    /// GUID of the master's own port). A group local-sa cannot resolve is
    /// refused, named.
    pub fn resolve(
        policy: QosPolicy,
        fabric: &Fabric,
        records: &FabricRecords,
        partitions: Option<&PartitionConfig>,
        master_port: Option<u64>,
    ) -> Result<Self, String> {
        let mut members = Vec::with_capacity(policy.port_groups.len());
        for g in &policy.port_groups {
            let mut ports = HashSet::new();
            for e in fabric.endports() {
                if g.guids.iter().any(|(a, b)| (*a..=*b).contains(&e.guid)) {
                    ports.insert(e.guid);
                }
            }
            for (description, port) in &g.port_names {
                let nodes = records
                    .nodes
                    .iter()
                    .filter(|n| n.description() == *description);
                for n in nodes {
                    let num_ports = n.num_ports();
                    if *port > num_ports {
                        return Err(format!(
                            "the QoS policy file, line {}: OpenSM refuses it: '{description}/P{port}' - \
                             port number out of range in port name",
                            g.line
                        ));
                    }
                    // A switch's ports all have its port 0's GUID; an
                    // adapter's port is its own NodeRecord's.
                    if n.node_type() == NodeType::SWITCH || n.local_port_num() == *port {
                        ports.insert(n.port_guid());
                    }
                }
            }
            let mut pkeys = g.pkeys.clone();
            for name in &g.partitions {
                let Some(config) = partitions else {
                    return Err(format!(
                        "the QoS policy file, line {}: port group '{}' names partition '{name}', whose \
                         P_Key only OpenSM's partitions file says (partition_config_file)",
                        g.line, g.name
                    ));
                };
                // OpenSM skips a partition it does not have.
                let Some(p) = config.by_name(name) else {
                    continue;
                };
                let Some(k) = p.pkey else {
                    return Err(format!(
                        "the QoS policy file, line {}: partition '{name}' of port group '{}' has \
                         no P_Key in the partitions file: OpenSM makes one up that local-sa cannot \
                         know",
                        g.line, g.name
                    ));
                };
                pkeys.push((u64::from(k), u64::from(k)));
            }
            for e in fabric.endports() {
                let table = fabric.pkey_table(e);
                let holds = |(a, b): &(u64, u64)| {
                    table
                        .entries()
                        .iter()
                        .any(|p| (*a..=*b).contains(&u64::from(p & 0x7FFF)))
                };
                if pkeys.iter().any(holds) {
                    ports.insert(e.guid);
                }
            }
            let t = g.node_types;
            for n in &records.nodes {
                let ty = n.node_type();
                let by_type = t.all
                    || (t.ca && ty == NodeType::CA)
                    || (t.switch && ty == NodeType::SWITCH)
                    || (t.router && ty == NodeType::ROUTER);
                if by_type {
                    ports.insert(n.port_guid());
                }
            }
            if t.self_ {
                let Some(guid) = master_port else {
                    return Err(format!(
                        "the QoS policy file, line {}: port group '{}' names the master's own port (SELF), \
                         which is not known",
                        g.line, g.name
                    ));
                };
                ports.insert(guid);
            }
            members.push(ports);
        }
        Ok(Self::new(policy, members))
    }
}
