//! From the records the master SA gives to a [`Fabric`]: every record
//! checked against the others, and what does not hold together refused
//! with an error naming the record, so that no path is ever computed from
//! a description that is not whole.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use mad_codec::address::MAX_UNICAST_LID;
use mad_codec::codes::NodeType;
use mad_codec::{
    GuidInfoRecord, LftRecord, LinkRecord, NodeRecord, PkeyTableRecord, PortInfoRecord,
    Sl2VlTableRecord,
};

use super::description_error::DescriptionError;
use super::fabric::{Alias, Endport, Fabric};
use super::physical::{NO_PATH, NONE, Port, Switch};
use super::pkeys::PkeyTable;
use super::rate::{CAP_EXTENDED_SPEEDS, LinkFacts, port_rate, rank};
use super::routes::{RouteError, Routes, Topology, VlMasks, sls_not_dropped};

/// PortInfo.PortState Active.
const PORT_ACTIVE: u8 = 4;

/// A fabric's description as the master SA gives it: every record of each
/// type (a GetTable with no component, or the records of every LID and
/// port where the bulk answer comes cut).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FabricRecords {
    /// NodeRecords: one per adapter port and per switch.
    pub nodes: Vec<NodeRecord>,
    /// PortInfoRecords: every adapter port, every port of every switch.
    pub ports: Vec<PortInfoRecord>,
    /// LinkRecords (each link once from either end, or both).
    pub links: Vec<LinkRecord>,
    /// LinearForwardingTableRecords: every block of every switch.
    pub lfts: Vec<LftRecord>,
    /// P_KeyTableRecords of the endports (adapter ports, switch port 0);
    /// records of other switch ports are not looked at.
    pub pkeys: Vec<PkeyTableRecord>,
    /// GUIDInfoRecords: the alias GUIDs assigned to ports (none is fine).
    pub guids: Vec<GuidInfoRecord>,
    /// SLtoVLMappingTableRecords, read only on a master with QoS.
    pub sl2vl: Vec<Sl2VlTableRecord>,
}

/// An endport while the fabric is built, with what only building needs.
struct Building {
    endport: Endport,
    /// NumPorts of its switch.
    num_ports: u8,
}

impl Fabric {
    /// Checks and indexes `records`; `qos`: the master applies QoS (its
    /// ClassPortInfo says so), so SLs that a hop maps to VL15 are left out
    /// and `records.sl2vl` must hold the table of every hop a path takes.
    pub fn build(records: &FabricRecords, qos: bool) -> Result<Self, DescriptionError> {
        let mut endports = endports(&records.nodes)?;
        let at_lid: HashMap<u16, u32> = endports
            .iter()
            .enumerate()
            .map(|(i, b)| (b.endport.lid, i as u32))
            .collect();
        let infos = port_infos(&records.ports);
        let (ports, switches) = physical_ports(&mut endports, &infos)?;
        let mut ports = ports;
        link(&mut ports, &switches, &endports, &at_lid, &records.links)?;
        let mut switches = switches;
        forwarding_tables(&mut switches, &endports, &at_lid, &records.lfts)?;
        attach_hidden_adapters(&mut ports, &switches, &endports, &infos);
        check_active_ports_linked(&ports, &switches, &endports, &infos)?;
        let pkey_tables = pkey_tables(&mut endports, &at_lid, &records.pkeys)?;
        let endports: Vec<Endport> = endports.into_iter().map(|b| b.endport).collect();
        let by_lid = lid_map(&endports)?;
        let aliases = alias_table(&endports, &at_lid, &records.guids)?;
        let by_guid = aliases
            .iter()
            .enumerate()
            .map(|(i, a)| (a.guid, i as u32))
            .collect();
        let masks = if qos {
            Some(vl_masks(
                &ports,
                &switches,
                &endports,
                &at_lid,
                &records.sl2vl,
            )?)
        } else {
            None
        };
        let dests = destinations(&endports, &switches, &by_lid);
        let max_lid = (by_lid.len().max(1) - 1) as u16;
        let routes = Routes::compute(
            Topology {
                ports: &ports,
                switches: &switches,
                dests: &dests,
                masks,
            },
            max_lid,
        )?;
        Ok(Self {
            subnet_timeout: subnet_timeout(&endports, &infos),
            ports,
            switches,
            endports,
            aliases,
            by_guid,
            by_lid,
            pkey_tables,
            partition_sl: HashMap::new(),
            routes,
            qos_levels: None,
            tavor_quirk: false,
            original_rates_only: false,
        })
    }
}

/// The endports of the NodeRecords, their LIDs checked.
fn endports(nodes: &[NodeRecord]) -> Result<Vec<Building>, DescriptionError> {
    if nodes.is_empty() {
        return Err(DescriptionError::NoNodes);
    }
    let mut out: Vec<Building> = Vec::new();
    let mut by_lid: HashMap<u16, u64> = HashMap::new();
    let mut by_guid: HashMap<u64, u16> = HashMap::new();
    for r in nodes {
        let lid = r.lid();
        if lid == 0 {
            // A port without a LID has no paths.
            continue;
        }
        if lid > MAX_UNICAST_LID {
            return Err(DescriptionError::LidOutOfRange {
                record: "NodeRecord",
                lid,
            });
        }
        match by_lid.entry(lid) {
            Entry::Occupied(e) if *e.get() == r.port_guid() => continue,
            Entry::Occupied(e) => {
                return Err(DescriptionError::DuplicateLid {
                    lid,
                    guids: (*e.get(), r.port_guid()),
                });
            }
            Entry::Vacant(e) => {
                e.insert(r.port_guid());
            }
        }
        if by_guid.insert(r.port_guid(), lid).is_some() {
            return Err(DescriptionError::DuplicateGuid {
                guid: r.port_guid(),
            });
        }
        let is_switch = r.node_type() == NodeType::SWITCH;
        out.push(Building {
            endport: Endport {
                guid: r.port_guid(),
                node_guid: r.node_guid(),
                prefix: 0,
                lid,
                lmc: 0,
                is_switch,
                port_num: if is_switch { 0 } else { r.local_port_num() },
                tavor: is_tavor(r),
                cap_mask: 0,
                cap_mask2: 0,
                port: NONE,
                switch: NONE,
                pkeys: 0,
            },
            num_ports: r.num_ports(),
        });
    }
    if out.is_empty() {
        return Err(DescriptionError::NoNodes);
    }
    Ok(out)
}

/// `sa_path_rec_is_tavor_port`: a Tavor device (DeviceID 23108) of one
/// of the vendors OpenSM names.
fn is_tavor(r: &NodeRecord) -> bool {
    const VENDORS: [u32; 4] = [0x0002C9, 0x0005AD, 0x00066A, 0x0008F1];
    r.device_id() == 23108 && VENDORS.contains(&r.vendor_id())
}

/// PortInfoRecords by LID and port number (the first of duplicates).
fn port_infos(ports: &[PortInfoRecord]) -> HashMap<(u16, u8), PortInfoRecord> {
    let mut by = HashMap::with_capacity(ports.len());
    for r in ports {
        by.entry((r.lid(), r.port())).or_insert(*r);
    }
    by
}

fn link_facts(pi: &PortInfoRecord) -> LinkFacts {
    LinkFacts {
        width: pi.link_width_active(),
        speed: pi.link_speed_active(),
        speed_ext: pi.link_speed_ext_active(),
    }
}

/// Every physical port (adapters' ports; switches' ports 0 to NumPorts)
/// from its PortInfoRecord, and the switches; fills in what the endports
/// take from their PortInfo.
fn physical_ports(
    endports: &mut [Building],
    infos: &HashMap<(u16, u8), PortInfoRecord>,
) -> Result<(Vec<Port>, Vec<Switch>), DescriptionError> {
    let mut ports = Vec::new();
    let mut switches = Vec::new();
    for (i, b) in endports.iter_mut().enumerate() {
        let e = &mut b.endport;
        let own = infos
            .get(&(e.lid, e.port_num))
            .ok_or(DescriptionError::NoPortInfo {
                lid: e.lid,
                port: e.port_num,
            })?;
        e.prefix = own.gid_prefix();
        e.lmc = own.lmc();
        e.cap_mask = own.capability_mask();
        e.cap_mask2 = own.capability_mask2();
        let own_extended = e.cap_mask & CAP_EXTENDED_SPEEDS != 0;
        e.port = ports.len() as u32;
        if !e.is_switch {
            let r = rank(port_rate(link_facts(own), own_extended));
            ports.push(Port {
                mtu: own.mtu_cap(),
                rank_own: r,
                rank_hop: r,
                remote: NONE,
                switch: NONE,
                num: e.port_num,
            });
            continue;
        }
        e.switch = switches.len() as u32;
        for n in 0..=b.num_ports {
            let pi = infos.get(&(e.lid, n)).ok_or(DescriptionError::NoPortInfo {
                lid: e.lid,
                port: n,
            })?;
            let link = link_facts(pi);
            let extended = pi.capability_mask() & CAP_EXTENDED_SPEEDS != 0;
            ports.push(Port {
                mtu: pi.mtu_cap(),
                rank_own: rank(port_rate(link, extended)),
                // A switch's hops are rated with its port 0's capability.
                rank_hop: rank(port_rate(link, own_extended)),
                remote: NONE,
                switch: e.switch,
                num: n,
            });
        }
        switches.push(Switch {
            lid: e.lid,
            first_port: e.port,
            num_ports: b.num_ports,
            lft: Vec::new(),
            endport: i as u32,
        });
    }
    Ok((ports, switches))
}

/// The physical port at LID `lid`, port `port`, for `record`.
fn port_at(
    record: &'static str,
    lid: u16,
    port: u8,
    endports: &[Building],
    switches: &[Switch],
    at_lid: &HashMap<u16, u32>,
) -> Result<u32, DescriptionError> {
    let b = &endports[*at_lid
        .get(&lid)
        .ok_or(DescriptionError::UnknownLid { record, lid })? as usize];
    let e = &b.endport;
    let found = if e.is_switch {
        switches[e.switch as usize].port(port)
    } else {
        (port == e.port_num).then_some(e.port)
    };
    found.ok_or(DescriptionError::NoSuchPort { record, lid, port })
}

/// Both ends of every LinkRecord.
fn link(
    ports: &mut [Port],
    switches: &[Switch],
    endports: &[Building],
    at_lid: &HashMap<u16, u32>,
    links: &[LinkRecord],
) -> Result<(), DescriptionError> {
    const R: &str = "LinkRecord";
    for l in links {
        let from = port_at(R, l.from_lid(), l.from_port(), endports, switches, at_lid)?;
        let to = port_at(R, l.to_lid(), l.to_port(), endports, switches, at_lid)?;
        for (a, b, lid, port) in [
            (from, to, l.from_lid(), l.from_port()),
            (to, from, l.to_lid(), l.to_port()),
        ] {
            let remote = &mut ports[a as usize].remote;
            if *remote != NONE && *remote != b {
                return Err(DescriptionError::ConflictingLinks { lid, port });
            }
            *remote = b;
        }
    }
    Ok(())
}

/// Links OpenSM does not show: it gives a LinkRecord only for two ports
/// that share a P_Key with a full member, so the link of an adapter port
/// that is only a limited member of its partitions is in no record (nor
/// is its switch port's, which partition enforcement gives the same
/// table). Such a port is where a switch forwards the adapter's LID
/// through an active port without a link: if exactly one switch port is,
/// the two are linked.
fn attach_hidden_adapters(
    ports: &mut [Port],
    switches: &[Switch],
    endports: &[Building],
    infos: &HashMap<(u16, u8), PortInfoRecord>,
) {
    let active = |lid: u16, port: u8| {
        infos
            .get(&(lid, port))
            .is_some_and(|pi| pi.port_state() == PORT_ACTIVE)
    };
    for b in endports {
        let e = &b.endport;
        if e.is_switch || ports[e.port as usize].remote != NONE || !active(e.lid, e.port_num) {
            continue;
        }
        let mut found = switches.iter().filter_map(|s| {
            let out = s.route(e.lid);
            let port = s.port(out).filter(|_| out != 0)?;
            (ports[port as usize].remote == NONE && active(s.lid, out)).then_some(port)
        });
        if let (Some(port), None) = (found.next(), found.next()) {
            ports[port as usize].remote = e.port;
            ports[e.port as usize].remote = port;
        }
    }
}

/// Every active port but switches' port 0 has a link: a description that
/// misses one would route into nothing.
fn check_active_ports_linked(
    ports: &[Port],
    switches: &[Switch],
    endports: &[Building],
    infos: &HashMap<(u16, u8), PortInfoRecord>,
) -> Result<(), DescriptionError> {
    let adapters = endports
        .iter()
        .map(|b| &b.endport)
        .filter(|e| !e.is_switch)
        .map(|e| (e.lid, e.port_num, e.port));
    let switch_ports = switches
        .iter()
        .flat_map(|s| (1..=s.num_ports).map(move |n| (s.lid, n, s.first_port + u32::from(n))));
    for (lid, port, i) in adapters.chain(switch_ports) {
        let active = infos
            .get(&(lid, port))
            .is_some_and(|pi| pi.port_state() == PORT_ACTIVE);
        if active && ports[i as usize].remote == NONE {
            return Err(DescriptionError::NoLink { lid, port });
        }
    }
    Ok(())
}

/// Each switch's table from its LFTRecords.
fn forwarding_tables(
    switches: &mut [Switch],
    endports: &[Building],
    at_lid: &HashMap<u16, u32>,
    lfts: &[LftRecord],
) -> Result<(), DescriptionError> {
    const R: &str = "LFTRecord";
    const LAST_BLOCK: u16 = MAX_UNICAST_LID / 64;
    for r in lfts {
        let lid = r.lid();
        let e = &endports[*at_lid
            .get(&lid)
            .ok_or(DescriptionError::UnknownLid { record: R, lid })?
            as usize]
            .endport;
        if !e.is_switch {
            return Err(DescriptionError::NotASwitch { record: R, lid });
        }
        if r.block() > LAST_BLOCK {
            return Err(DescriptionError::BlockOutOfRange {
                lid,
                block: r.block(),
            });
        }
        let lft = &mut switches[e.switch as usize].lft;
        let start = usize::from(r.block()) * 64;
        if lft.len() < start + 64 {
            lft.resize(start + 64, NO_PATH);
        }
        lft[start..start + 64].copy_from_slice(&r.ports());
    }
    match switches.iter().find(|s| s.lft.is_empty()) {
        Some(s) => Err(DescriptionError::NoForwardingTable { lid: s.lid }),
        None => Ok(()),
    }
}

/// Each endport's P_Key table, the distinct ones once.
fn pkey_tables(
    endports: &mut [Building],
    at_lid: &HashMap<u16, u32>,
    records: &[PkeyTableRecord],
) -> Result<Vec<PkeyTable>, DescriptionError> {
    const R: &str = "P_KeyTableRecord";
    let mut entries: Vec<Vec<u16>> = vec![Vec::new(); endports.len()];
    for r in records {
        let i = *at_lid.get(&r.lid()).ok_or(DescriptionError::UnknownLid {
            record: R,
            lid: r.lid(),
        })? as usize;
        // Only the endport's own port counts (a switch's port 0).
        if r.port() == endports[i].endport.port_num {
            entries[i].extend(r.pkeys());
        }
    }
    let mut tables: Vec<PkeyTable> = Vec::new();
    let mut index: HashMap<PkeyTable, u32> = HashMap::new();
    for (b, keys) in endports.iter_mut().zip(entries) {
        let t = PkeyTable::new(keys);
        let next = tables.len() as u32;
        b.endport.pkeys = *index.entry(t.clone()).or_insert_with(|| {
            tables.push(t);
            next
        });
    }
    Ok(tables)
}

/// LID to endport, over each one's LMC range.
fn lid_map(endports: &[Endport]) -> Result<Vec<u32>, DescriptionError> {
    let mut top = 0u32;
    for e in endports {
        let last = u32::from(e.lid) + (1u32 << e.lmc.min(7)) - 1;
        if last > u32::from(MAX_UNICAST_LID) {
            return Err(DescriptionError::LidOutOfRange {
                record: "PortInfoRecord",
                lid: MAX_UNICAST_LID + 1,
            });
        }
        top = top.max(last);
    }
    let mut by_lid = vec![NONE; top as usize + 1];
    for (i, e) in endports.iter().enumerate() {
        for lid in e.lids() {
            let slot = &mut by_lid[usize::from(lid)];
            if *slot != NONE {
                return Err(DescriptionError::DuplicateLid {
                    lid,
                    guids: (endports[*slot as usize].guid, e.guid),
                });
            }
            *slot = i as u32;
        }
    }
    Ok(by_lid)
}

/// OpenSM's alias table: every endport's GUID and the alias GUIDs
/// assigned to it, in OpenSM's order.
fn alias_table(
    endports: &[Endport],
    at_lid: &HashMap<u16, u32>,
    guids: &[GuidInfoRecord],
) -> Result<Vec<Alias>, DescriptionError> {
    let mut aliases: Vec<Alias> = endports
        .iter()
        .enumerate()
        .map(|(i, e)| Alias {
            guid: e.guid,
            endport: i as u32,
        })
        .collect();
    for r in guids {
        let i = *at_lid.get(&r.lid()).ok_or(DescriptionError::UnknownLid {
            record: "GUIDInfoRecord",
            lid: r.lid(),
        })?;
        let own = endports[i as usize].guid;
        aliases.extend(
            r.guids()
                .into_iter()
                .filter(|g| *g != 0 && *g != own)
                .map(|guid| Alias { guid, endport: i }),
        );
    }
    // Network byte order compared as an x86 integer; a GUID named twice
    // names its first port.
    aliases.sort_by_key(|a| a.guid.swap_bytes());
    aliases.dedup_by_key(|a| a.guid);
    Ok(aliases)
}

/// The SL masks of the SL to VL tables (QoS masters).
fn vl_masks(
    ports: &[Port],
    switches: &[Switch],
    endports: &[Endport],
    at_lid: &HashMap<u16, u32>,
    records: &[Sl2VlTableRecord],
) -> Result<VlMasks, DescriptionError> {
    const R: &str = "SL2VLTableRecord";
    let mut masks = VlMasks::default();
    for r in records {
        let lid = r.lid();
        let e = &endports[*at_lid
            .get(&lid)
            .ok_or(DescriptionError::UnknownLid { record: R, lid })?
            as usize];
        let (egress, ingress) = if e.is_switch {
            let s = &switches[e.switch as usize];
            let out = s.port(r.out_port()).ok_or(DescriptionError::NoSuchPort {
                record: R,
                lid,
                port: r.out_port(),
            })?;
            (out, r.in_port())
        } else {
            (e.port, 0)
        };
        masks
            .by_ports
            .insert((egress, ingress), sls_not_dropped(r.vls()));
    }
    // Every path starts from a table: an adapter's own, or its switch's
    // from port 0 to the egress port.
    let starts = endports.iter().flat_map(|e| {
        let ports: Vec<(u32, u8)> = if e.is_switch {
            let s = &switches[e.switch as usize];
            (1..=s.num_ports)
                .map(|n| (s.first_port + u32::from(n), n))
                .filter(|(i, _)| ports[*i as usize].remote != NONE)
                .collect()
        } else {
            vec![(e.port, 0)]
        };
        ports.into_iter().map(move |(i, n)| (e.lid, i, n))
    });
    for (lid, egress, num) in starts {
        if !masks.by_ports.contains_key(&(egress, 0)) {
            return Err(RouteError::NoSl2Vl {
                lid,
                ingress: 0,
                egress: num,
            }
            .into());
        }
    }
    Ok(masks)
}

/// Each LID in use and the port its paths end at: the adapter's port, or
/// where a switch forwards its own LID (port 0).
fn destinations(endports: &[Endport], switches: &[Switch], by_lid: &[u32]) -> Vec<(u16, u32)> {
    by_lid
        .iter()
        .enumerate()
        .filter(|(_, e)| **e != NONE)
        .map(|(lid, &i)| {
            let lid = lid as u16;
            let e = &endports[i as usize];
            let port = if e.is_switch {
                let s = &switches[e.switch as usize];
                s.port(s.route(lid)).unwrap_or(NONE)
            } else {
                e.port
            };
            (lid, port)
        })
        .collect()
}

/// SubnetTimeOut: OpenSM sets its `subnet_timeout` option in every port;
/// the value most ports hold (the least of equally common ones).
fn subnet_timeout(endports: &[Endport], infos: &HashMap<(u16, u8), PortInfoRecord>) -> u8 {
    let mut counts = [0usize; 32];
    for e in endports {
        if let Some(pi) = infos.get(&(e.lid, e.port_num)) {
            counts[usize::from(pi.subnet_timeout())] += 1;
        }
    }
    (0..32u8)
        .max_by_key(|t| (counts[usize::from(*t)], std::cmp::Reverse(*t)))
        .unwrap_or(0)
}
