//! A QoS policy's port groups resolved against the fabric as OpenSM's
//! parser resolves them, once: by port GUID (ports that exist), by
//! `NodeDescription/Pn` (the name OpenSM knows the node by: its printed
//! description or its node name map's name, the first node of that name
//! in OpenSM's node table; a name no node has is none), by P_Key (every
//! port whose P_Key table holds it), by partition name (its P_Key, from
//! OpenSM's partitions file), by node type (SELF: the master's own
//! port).
//!
//! OpenSM looks ports and partitions up as it parses, so a policy can be
//! refused by the fabric it meets: a port number past a named node's, or
//! an `ipoib` rule whose partition does not exist or has fewer than two
//! full members. OpenSM then drops the whole policy (ERR AC03) and runs
//! with the partitions' SLs alone: [`ResolveError::Dropped`].

use std::collections::{BTreeMap, HashMap, HashSet};

use mad_codec::NodeRecord;
use mad_codec::codes::NodeType;

use super::build::FabricRecords;
use super::fabric::Fabric;
use super::pkeys::FULL_MEMBER;
use super::qos_levels::QosLevels;
use crate::opensm_config::node_names::{NodeNameMap, print_name};
use crate::opensm_config::qos_policy::Range;
use crate::opensm_config::{PartitionConfig, QosPolicy};

/// Why a policy's groups do not resolve against a fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// OpenSM refuses the policy at this fabric and runs without one.
    Dropped(String),
    /// A group names what only OpenSM knows.
    Unknown(String),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dropped(why) => write!(
                f,
                "{why}: OpenSM drops the whole policy (its ERR AC03) and applies the partitions' SLs \
                 alone"
            ),
            Self::Unknown(why) => f.write_str(why),
        }
    }
}

/// A node as the policy's `port-name` finds it.
struct NamedNode {
    node_type: NodeType,
    num_ports: u8,
    /// Each port's GUID by port number (a switch: its port 0's).
    ports: HashMap<u8, u64>,
}

/// The nodes by the name OpenSM knows them by: the first node of each
/// name in OpenSM's node table, whose order is the node GUIDs' in network
/// byte order read as x86 integers.
fn nodes_by_name(
    records: &FabricRecords,
    names: Option<&NodeNameMap>,
) -> HashMap<String, NamedNode> {
    let mut nodes: BTreeMap<u64, (u64, Vec<&NodeRecord>)> = BTreeMap::new();
    for n in &records.nodes {
        let guid = n.node_guid();
        nodes
            .entry(guid.swap_bytes())
            .or_insert((guid, Vec::new()))
            .1
            .push(n);
    }
    let mut by_name = HashMap::new();
    for (guid, records) in nodes.into_values() {
        let first = records[0];
        let name = print_name(names, guid, &first.description_bytes());
        by_name.entry(name).or_insert_with(|| NamedNode {
            node_type: first.node_type(),
            num_ports: first.num_ports(),
            ports: records
                .iter()
                .map(|r| (r.local_port_num(), r.port_guid()))
                .collect(),
        });
    }
    by_name
}

impl QosLevels {
    /// `policy`'s groups resolved against `fabric` (built from `records`):
    /// node names as OpenSM prints them or through its node name map
    /// (`names`), partition names through `partitions`, SELF to
    /// `master_port` (the GUID of the master's own port). A group
    /// local-sa cannot resolve is refused, named; a policy OpenSM drops at
    /// this fabric is said so.
    pub fn resolve(
        policy: QosPolicy,
        fabric: &Fabric,
        records: &FabricRecords,
        (partitions, names): (Option<&PartitionConfig>, Option<&NodeNameMap>),
        master_port: Option<u64>,
    ) -> Result<Self, ResolveError> {
        ipoib_partitions_hold(&policy, fabric, partitions)?;
        let named = nodes_by_name(records, names);
        let mut members = Vec::with_capacity(policy.port_groups.len());
        for g in &policy.port_groups {
            let mut ports = HashSet::new();
            for e in fabric.endports() {
                if g.guids.iter().any(|(a, b)| (*a..=*b).contains(&e.guid)) {
                    ports.insert(e.guid);
                }
            }
            for (name, port) in &g.port_names {
                let Some(n) = named.get(name) else {
                    continue;
                };
                if *port > n.num_ports {
                    return Err(ResolveError::Dropped(format!(
                        "the QoS policy file, line {}: '{name}/P{port}' - port number out of range \
                         in port name",
                        g.line
                    )));
                }
                // A switch's ports all have its port 0's GUID; an
                // adapter's port is its own NodeRecord's (none: a port
                // that is down).
                let guid = match n.node_type {
                    NodeType::SWITCH => n.ports.values().next().copied(),
                    _ => n.ports.get(port).copied(),
                };
                ports.extend(guid);
            }
            let mut pkeys = g.pkeys.clone();
            for name in &g.partitions {
                let Some(config) = partitions else {
                    return Err(ResolveError::Unknown(format!(
                        "the QoS policy file, line {}: port group '{}' names partition '{name}', whose \
                         P_Key only OpenSM's partitions file says (partition_config_file)",
                        g.line, g.name
                    )));
                };
                // OpenSM skips a partition it does not have.
                let Some(p) = config.by_name(name) else {
                    continue;
                };
                let Some(k) = p.pkey else {
                    return Err(ResolveError::Unknown(format!(
                        "the QoS policy file, line {}: partition '{name}' of port group '{}' has \
                         no P_Key in the partitions file: OpenSM makes one up that local-sa cannot \
                         know",
                        g.line, g.name
                    )));
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
                    return Err(ResolveError::Unknown(format!(
                        "the QoS policy file, line {}: port group '{}' names the master's own port (SELF), \
                         which is not known",
                        g.line, g.name
                    )));
                };
                ports.insert(guid);
            }
            members.push(ports);
        }
        Ok(Self::new(policy, members))
    }
}

/// OpenSM's check of an `ipoib` rule's P_Keys as it parses it
/// (`__validate_pkeys`, strict): each must be a partition OpenSM made
/// (the default one, or one of its partitions file's) with two full
/// members at least.
fn ipoib_partitions_hold(
    policy: &QosPolicy,
    fabric: &Fabric,
    partitions: Option<&PartitionConfig>,
) -> Result<(), ResolveError> {
    let ranges: Vec<(usize, Range)> = (policy.rules.iter())
        .filter(|r| r.ipoib)
        .flat_map(|r| r.pkeys.iter().map(move |range| (r.line, *range)))
        .collect();
    for (line, (from, to)) in ranges {
        for pkey in from..=to.min(0x7FFF) {
            let pkey = pkey as u16;
            let made = pkey == crate::opensm_config::partitions::DEFAULT_PKEY
                || partitions.is_some_and(|c| c.by_pkey(pkey).is_some());
            if !made {
                return Err(ResolveError::Dropped(format!(
                    "the QoS policy file, line {line}: IPoIB partition, pkey {pkey:#06x} - partition \
                     doesn't exist"
                )));
            }
            let full = (fabric.endports().iter())
                .filter(|e| {
                    let table = fabric.pkey_table(e);
                    table.entries().contains(&(pkey | FULL_MEMBER))
                })
                .count();
            if full < 2 {
                return Err(ResolveError::Dropped(format!(
                    "the QoS policy file, line {line}: IPoIB partition, pkey {pkey:#06x} - partition \
                     has less than two full members"
                )));
            }
        }
    }
    Ok(())
}
