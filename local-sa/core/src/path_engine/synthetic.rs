//! Made-up fabrics, as records a master would give ([`FabricRecords`]):
//! for the engine's tests, its benchmarks and the storm simulator. A
//! [`FabricSpec`] is built node by node, link by link; [`FatTree`] builds
//! a two-level fat tree. Forwarding tables are the author's or
//! [`FabricSpec::route_min_hop`]'s (shortest paths, spread over the
//! equal ports by destination LID, as OpenSM's minhop does).

use std::collections::VecDeque;

use mad_codec::codes::NodeType;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    GuidInfoRecord, LftRecord, LinkRecord, NodeRecord, PkeyTableRecord, PortInfoRecord,
    Sl2VlTableRecord,
};

use super::FabricRecords;
use super::physical::NO_PATH;
use super::rate::{CAP_EXTENDED_SPEEDS, CAP_HAS_CAP_MASK2};

/// The default GID prefix.
pub const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// What a port's PortInfo says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    /// MTUCap.
    pub mtu: u8,
    /// LinkWidthActive.
    pub width: u8,
    /// LinkSpeedActive.
    pub speed: u8,
    /// LinkSpeedExtActive.
    pub speed_ext: u8,
    /// CapabilityMask.
    pub cap_mask: u32,
    /// CapabilityMask2.
    pub cap_mask2: u16,
    /// PortState.
    pub state: u8,
}

impl Default for PortSpec {
    /// 4x QDR, MTU 2048, active, extended speeds supported (none active).
    fn default() -> Self {
        Self {
            mtu: 4,
            width: 2,
            speed: 4,
            speed_ext: 0,
            cap_mask: CAP_EXTENDED_SPEEDS | CAP_HAS_CAP_MASK2,
            cap_mask2: 0,
            state: 4,
        }
    }
}

/// A node of a [`FabricSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

#[derive(Debug, Clone)]
struct NodeSpec {
    switch: bool,
    guid: u64,
    name: String,
    /// Switch: its LID; adapter: each port's base LID (index = port).
    lids: Vec<u16>,
    lmc: Vec<u8>,
    /// Index = port number (an adapter's port 0 unused).
    ports: Vec<PortSpec>,
    remotes: Vec<Option<(NodeId, u8)>>,
    pkeys: Vec<Vec<u16>>,
    aliases: Vec<Vec<u64>>,
    lft: Vec<u8>,
}

/// A fabric being made up.
#[derive(Debug, Clone, Default)]
pub struct FabricSpec {
    nodes: Vec<NodeSpec>,
    subnet_timeout: u8,
    /// SL to VL tables to publish (QoS): every table the same.
    sl2vl: Option<[u8; 16]>,
}

impl FabricSpec {
    /// An empty fabric; SubnetTimeOut 18 (OpenSM's default).
    pub fn new() -> Self {
        Self {
            subnet_timeout: 18,
            ..Self::default()
        }
    }

    /// Adds a switch with `ports` ports (port 0 with MTU 1024, as ibsim's).
    pub fn switch(&mut self, guid: u64, lid: u16, ports: u8, name: &str) -> NodeId {
        let mut specs = vec![PortSpec::default(); usize::from(ports) + 1];
        specs[0].mtu = 3;
        self.add(NodeSpec {
            switch: true,
            guid,
            name: name.to_owned(),
            lids: vec![lid],
            lmc: vec![0],
            remotes: vec![None; specs.len()],
            pkeys: vec![vec![0xFFFF]; 1],
            aliases: vec![Vec::new()],
            ports: specs,
            lft: Vec::new(),
        })
    }

    /// Adds a one-port adapter at base LID `lid` with LMC `lmc`; its port
    /// GUID is `guid + 1`.
    pub fn host(&mut self, guid: u64, lid: u16, lmc: u8, name: &str) -> NodeId {
        self.add(NodeSpec {
            switch: false,
            guid,
            name: name.to_owned(),
            lids: vec![0, lid],
            lmc: vec![0, lmc],
            ports: vec![PortSpec::default(); 2],
            remotes: vec![None; 2],
            pkeys: vec![Vec::new(), vec![0xFFFF]],
            aliases: vec![Vec::new(); 2],
            lft: Vec::new(),
        })
    }

    fn add(&mut self, n: NodeSpec) -> NodeId {
        self.nodes.push(n);
        NodeId(self.nodes.len() - 1)
    }

    /// Links port `a.1` of `a.0` with port `b.1` of `b.0`.
    pub fn link(&mut self, a: (NodeId, u8), b: (NodeId, u8)) {
        self.nodes[a.0.0].remotes[usize::from(a.1)] = Some(b);
        self.nodes[b.0.0].remotes[usize::from(b.1)] = Some(a);
    }

    /// Removes the link at port `port` of `node` (both ends go down).
    pub fn unlink(&mut self, node: NodeId, port: u8) {
        if let Some((other, p)) = self.nodes[node.0].remotes[usize::from(port)].take() {
            self.nodes[other.0].remotes[usize::from(p)] = None;
            self.nodes[other.0].ports[usize::from(p)].state = 1;
        }
        self.nodes[node.0].ports[usize::from(port)].state = 1;
    }

    /// Port `port` of `node`, to change what its PortInfo says.
    pub fn port_mut(&mut self, node: NodeId, port: u8) -> &mut PortSpec {
        &mut self.nodes[node.0].ports[usize::from(port)]
    }

    /// Sets the P_Key table of `node`'s endport (an adapter's port 1).
    pub fn pkeys(&mut self, node: NodeId, pkeys: &[u16]) {
        let n = &mut self.nodes[node.0];
        let port = usize::from(!n.switch);
        n.pkeys[port] = pkeys.to_vec();
    }

    /// Assigns alias GUID `guid` to `node`'s endport.
    pub fn alias(&mut self, node: NodeId, guid: u64) {
        let n = &mut self.nodes[node.0];
        let port = usize::from(!n.switch);
        n.aliases[port].push(guid);
    }

    /// Sets one forwarding table entry of switch `node`.
    pub fn route(&mut self, node: NodeId, lid: u16, port: u8) {
        let lft = &mut self.nodes[node.0].lft;
        if lft.len() <= usize::from(lid) {
            lft.resize(usize::from(lid) + 1, NO_PATH);
        }
        lft[usize::from(lid)] = port;
    }

    /// Publishes SL to VL tables (as a master with QoS does), all `vls`.
    pub fn sl2vl(&mut self, vls: [u8; 16]) {
        self.sl2vl = Some(vls);
    }

    /// Every endport's LIDs: (node, port, base LID, LMC).
    fn endports(&self) -> impl Iterator<Item = (NodeId, u8, u16, u8)> + '_ {
        self.nodes.iter().enumerate().flat_map(|(i, n)| {
            let ports: Vec<u8> = if n.switch {
                vec![0]
            } else {
                (1..n.ports.len() as u8).collect()
            };
            ports
                .into_iter()
                .map(move |p| (NodeId(i), p, n.lids[usize::from(p)], n.lmc[usize::from(p)]))
        })
    }

    /// Fills every switch's forwarding table with shortest paths: to each
    /// LID, among the ports one hop closer to it, the one at `LID mod
    /// count`; a switch's own LID to port 0.
    pub fn route_min_hop(&mut self) {
        // Switches by a compact index, and hops between every two (BFS
        // over switch-to-switch links).
        let switches: Vec<usize> = (0..self.nodes.len())
            .filter(|i| self.nodes[*i].switch)
            .collect();
        let mut index = vec![usize::MAX; self.nodes.len()];
        for (k, &s) in switches.iter().enumerate() {
            index[s] = k;
        }
        let count = switches.len();
        let mut dist = vec![u32::MAX; count * count];
        for (k, &s) in switches.iter().enumerate() {
            let d = &mut dist[k * count..(k + 1) * count];
            d[k] = 0;
            let mut queue = VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                for (peer, _) in self.nodes[u].remotes.iter().flatten() {
                    let j = index[peer.0];
                    if j != usize::MAX && d[j] == u32::MAX {
                        d[j] = d[index[u]] + 1;
                        queue.push_back(peer.0);
                    }
                }
            }
        }
        // The ports of each switch one hop closer to each switch.
        let mut closer: Vec<Vec<u8>> = vec![Vec::new(); count * count];
        for (k, &s) in switches.iter().enumerate() {
            for (p, r) in self.nodes[s].remotes.iter().enumerate() {
                let Some((peer, _)) = r else { continue };
                let j = index[peer.0];
                if j == usize::MAX {
                    continue;
                }
                for at in 0..count {
                    let (dk, dj) = (dist[k * count + at], dist[j * count + at]);
                    if dj != u32::MAX && dj + 1 == dk {
                        closer[k * count + at].push(p as u8);
                    }
                }
            }
        }
        // Each endport's LIDs, the switch it hangs off and by which port.
        let targets: Vec<(u16, u8, usize, u8)> = self
            .endports()
            .filter_map(|(node, port, lid, lmc)| {
                let n = &self.nodes[node.0];
                match (n.switch, n.remotes[usize::from(port)]) {
                    (true, _) => Some((lid, lmc, index[node.0], 0)),
                    (false, Some((peer, p))) if index[peer.0] != usize::MAX => {
                        Some((lid, lmc, index[peer.0], p))
                    }
                    _ => None,
                }
            })
            .collect();
        for (k, &s) in switches.iter().enumerate() {
            let mut lft = Vec::new();
            for &(base, lmc, at, via) in &targets {
                let ports = &closer[k * count + at];
                if k != at && ports.is_empty() {
                    continue;
                }
                for lid in base..base + (1 << lmc) {
                    let port = if k == at {
                        via
                    } else {
                        ports[usize::from(lid) % ports.len()]
                    };
                    if lft.len() <= usize::from(lid) {
                        lft.resize(usize::from(lid) + 1, NO_PATH);
                    }
                    lft[usize::from(lid)] = port;
                }
            }
            self.nodes[s].lft = lft;
        }
    }

    /// The records a master would give for this fabric.
    pub fn records(&self) -> FabricRecords {
        let mut out = FabricRecords::default();
        for n in &self.nodes {
            let endport_ports: Vec<u8> = if n.switch {
                vec![0]
            } else {
                (1..n.ports.len() as u8).collect()
            };
            for &p in &endport_ports {
                let lid = n.lids[usize::from(p)];
                let port_guid = if n.switch {
                    n.guid
                } else {
                    n.guid + u64::from(p)
                };
                let mut r = NodeRecord::new_zeroed();
                r.set_lid(lid);
                r.set_node_type(if n.switch {
                    NodeType::SWITCH
                } else {
                    NodeType::CA
                });
                r.set_num_ports((n.ports.len() - 1) as u8);
                r.set_node_guid(n.guid);
                r.set_port_guid(port_guid);
                r.set_local_port_num(p);
                r.set_description(&n.name);
                out.nodes.push(r);
                let mut k = PkeyTableRecord::new_zeroed();
                k.set_lid(lid);
                k.set_port(p);
                let mut block = [0u16; 32];
                for (slot, key) in block.iter_mut().zip(&n.pkeys[usize::from(p)]) {
                    *slot = *key;
                }
                k.set_pkeys(block);
                out.pkeys.push(k);
                let aliases = &n.aliases[usize::from(p)];
                if !aliases.is_empty() {
                    let mut g = GuidInfoRecord::new_zeroed();
                    g.set_lid(lid);
                    let mut guids = [0u64; 8];
                    guids[0] = port_guid;
                    for (slot, a) in guids[1..].iter_mut().zip(aliases) {
                        *slot = *a;
                    }
                    g.set_guids(guids);
                    out.guids.push(g);
                }
            }
            let ports: Vec<u8> = if n.switch {
                (0..n.ports.len() as u8).collect()
            } else {
                endport_ports.clone()
            };
            for &p in &ports {
                let lid = n.lids[if n.switch { 0 } else { usize::from(p) }];
                let lmc = n.lmc[if n.switch { 0 } else { usize::from(p) }];
                out.ports
                    .push(self.port_info(lid, lmc, p, &n.ports[usize::from(p)]));
                if let Some((peer, peer_port)) = n.remotes[usize::from(p)] {
                    let m = &self.nodes[peer.0];
                    let to_lid = m.lids[if m.switch { 0 } else { usize::from(peer_port) }];
                    let mut l = LinkRecord::new_zeroed();
                    l.set_from_lid(lid);
                    l.set_from_port(p);
                    l.set_to_lid(to_lid);
                    l.set_to_port(peer_port);
                    out.links.push(l);
                }
                if let Some(vls) = self.sl2vl {
                    let ins: Vec<u8> = if n.switch {
                        (0..n.ports.len() as u8).collect()
                    } else {
                        vec![0]
                    };
                    for inp in ins {
                        let mut s = Sl2VlTableRecord::new_zeroed();
                        s.set_lid(lid);
                        if n.switch {
                            s.set_in_port(inp);
                            s.set_out_port(p);
                        }
                        s.set_vls(vls);
                        out.sl2vl.push(s);
                    }
                }
            }
            if n.switch {
                for (block, chunk) in n.lft.chunks(64).enumerate() {
                    let mut ports = [NO_PATH; 64];
                    ports[..chunk.len()].copy_from_slice(chunk);
                    let mut r = LftRecord::new_zeroed();
                    r.set_lid(n.lids[0]);
                    r.set_block(block as u16);
                    r.set_ports(ports);
                    out.lfts.push(r);
                }
            }
        }
        out
    }

    fn port_info(&self, lid: u16, lmc: u8, port: u8, spec: &PortSpec) -> PortInfoRecord {
        let mut pi = [0u8; 64];
        pi[8..16].copy_from_slice(&PREFIX.to_be_bytes());
        pi[16..18].copy_from_slice(&lid.to_be_bytes());
        pi[20..24].copy_from_slice(&spec.cap_mask.to_be_bytes());
        pi[28] = port;
        pi[31] = spec.width;
        pi[32] = 0x70 | spec.state;
        pi[34] = lmc & 7;
        pi[35] = spec.speed << 4 | 7;
        pi[41] = 0x10 | spec.mtu;
        pi[51] = self.subnet_timeout & 0x1F;
        pi[60..62].copy_from_slice(&spec.cap_mask2.to_be_bytes());
        pi[62] = spec.speed_ext << 4 | 7;
        let mut r = PortInfoRecord::new_zeroed();
        r.set_lid(lid);
        r.set_port(port);
        r.set_port_info(pi);
        r
    }
}

/// A two-level fat tree: `leaves` leaf switches of `hosts_per_leaf`
/// one-port hosts each, every leaf linked once to each of `spines` spine
/// switches; LIDs: spines, then leaves, then hosts (aligned to their LMC);
/// min-hop forwarding tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    /// Leaf switches.
    pub leaves: u16,
    /// Hosts per leaf.
    pub hosts_per_leaf: u16,
    /// Spine switches.
    pub spines: u16,
    /// The hosts' LMC.
    pub lmc: u8,
}

impl FatTree {
    /// The fabric, to change before taking its records.
    pub fn spec(&self) -> (FabricSpec, Vec<NodeId>) {
        assert!(
            self.leaves <= 254 && self.hosts_per_leaf + self.spines <= 254,
            "a switch has at most 254 ports"
        );
        let mut f = FabricSpec::new();
        let mut lid: u16 = 1;
        let mut next = || {
            let l = lid;
            lid += 1;
            l
        };
        let spines: Vec<NodeId> = (0..self.spines)
            .map(|s| {
                f.switch(
                    0x0002_0000_0000 + u64::from(s),
                    next(),
                    self.leaves as u8,
                    &format!("spine{}", s + 1),
                )
            })
            .collect();
        let leaf_ports = (self.hosts_per_leaf + self.spines) as u8;
        let leaves: Vec<NodeId> = (0..self.leaves)
            .map(|l| {
                f.switch(
                    0x0003_0000_0000 + u64::from(l),
                    next(),
                    leaf_ports,
                    &format!("leaf{}", l + 1),
                )
            })
            .collect();
        let step = 1u16 << self.lmc;
        let mut host_lid = lid.div_ceil(step) * step;
        let mut hosts = Vec::new();
        for (l, &leaf) in leaves.iter().enumerate() {
            for h in 0..self.hosts_per_leaf {
                let i = l as u64 * u64::from(self.hosts_per_leaf) + u64::from(h);
                let host = f.host(
                    0x0001_0000_0000 + i * 16,
                    host_lid,
                    self.lmc,
                    &format!("h{}", i + 1),
                );
                host_lid += step;
                f.link((host, 1), (leaf, (h + 1) as u8));
                hosts.push(host);
            }
            for (s, &spine) in spines.iter().enumerate() {
                f.link(
                    (leaf, (self.hosts_per_leaf + 1 + s as u16) as u8),
                    (spine, (l + 1) as u8),
                );
            }
        }
        f.route_min_hop();
        (f, hosts)
    }

    /// Its records.
    pub fn records(&self) -> FabricRecords {
        self.spec().0.records()
    }

    /// The fabric with the links to its first spine narrowed to 1x (the
    /// others 4x), and with `unplugged` the first leaf's link to that
    /// spine gone and the routes worked out again: a reroute that changes
    /// the rate of the paths that crossed that link.
    pub fn slow_first_spine(&self, unplugged: bool) -> FabricSpec {
        let (mut f, _) = self.spec();
        // Switches come spines first, then leaves; a leaf's spine ports
        // follow its host ports.
        let first_spine_port = (self.hosts_per_leaf + 1) as u8;
        for leaf in 0..self.leaves {
            f.port_mut(NodeId(usize::from(self.spines + leaf)), first_spine_port)
                .width = 1;
            f.port_mut(NodeId(0), (leaf + 1) as u8).width = 1;
        }
        if unplugged {
            f.unlink(NodeId(usize::from(self.spines)), first_spine_port);
            f.route_min_hop();
        }
        f
    }
}
