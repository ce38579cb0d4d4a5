//! The rest of the way from each switch to each destination LID, worked
//! out once for all sources.
//!
//! OpenSM walks every path from its source (`pr_rcv_get_path_parms`): at
//! each switch it takes the ingress port's MTUCap and rate, looks the
//! destination LID up in the forwarding table, takes the egress port's,
//! counts a hop and follows the link. From a given switch on, what the
//! walk finds depends only on the destination LID, so a [`Leg`] per
//! (switch, LID) — the least MTU and rate from the switch's egress port to
//! the destination, the switches counted — lets each path be put together
//! from its first hop: computing N tables of N paths costs N² lookups, not
//! N² walks. On a master with QoS each leg also carries the SLs no hop
//! maps to VL15 (the SL to VL table of each switch's ingress and egress
//! port pair).
//!
//! A forwarding table that loops, forwards to a port without a link or
//! through an adapter that is not the destination, or names a port the
//! switch does not have, costs the paths that take that way, as it costs
//! them at OpenSM (its walk fails with ERR 1F05, 1F06, 1F07 or past
//! `MAX_HOPS`, and the pair gets no record): the leg is no path, and the
//! fault ([`RouteError`], naming the switch and LID) is kept for the
//! summary and the check ([`Routes::faults`]).

use std::collections::HashMap;

use super::physical::{NO_PATH, NONE, Port, Switch};

/// OpenSM's `MAX_HOPS`: a walk through more switches fails.
pub const MAX_HOPS: u8 = 64;

/// What part of a path holds: the least MTUCap and rate rank of the ports
/// counted, and the switches passed. Rank 0 means no path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leg {
    /// Least MTUCap.
    pub mtu: u8,
    /// Least rate, as a bandwidth rank ([`super::rate::rank`]).
    pub rank: u8,
    /// Switches passed (saturating).
    pub hops: u8,
}

impl Leg {
    /// No path.
    pub const NONE: Self = Self {
        mtu: 0,
        rank: 0,
        hops: 0,
    };

    /// What one port gives, no hop counted.
    pub(super) fn port(mtu: u8, rank: u8) -> Self {
        Self { mtu, rank, hops: 0 }
    }

    /// Whether there is a path.
    pub fn is_path(self) -> bool {
        self.rank != 0
    }

    /// Both parts of a path in turn: the lesser of each, the hops added;
    /// no path if either has none.
    pub(super) fn then(self, next: Self) -> Self {
        if !self.is_path() || !next.is_path() {
            return Self::NONE;
        }
        Self {
            mtu: self.mtu.min(next.mtu),
            rank: self.rank.min(next.rank),
            hops: self.hops.saturating_add(next.hops),
        }
    }
}

/// The SLs (bit per SL) that an SL to VL table does not map to VL15.
pub(super) fn sls_not_dropped(vls: [u8; 16]) -> u16 {
    vls.iter()
        .enumerate()
        .filter(|(_, vl)| **vl != 15)
        .fold(0, |m, (sl, _)| m | 1 << sl)
}

/// The SL to VL tables of a master with QoS, as SL masks
/// ([`sls_not_dropped`]): by egress port (index in the fabric's ports) and
/// ingress port number (0 from the node itself, and on an adapter).
#[derive(Debug, Default)]
pub(super) struct VlMasks {
    pub(super) by_ports: HashMap<(u32, u8), u16>,
}

impl VlMasks {
    fn get(&self, egress: u32, ingress: u8) -> Option<u16> {
        self.by_ports.get(&(egress, ingress)).copied()
    }
}

/// Faults kept by name; past them only counted.
pub const FAULTS_KEPT: usize = 16;

/// An inconsistent forwarding table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// The table names a port the switch does not have.
    NoSuchPort {
        /// The switch's LID.
        switch: u16,
        /// The destination LID.
        lid: u16,
        /// The port named.
        port: u8,
    },
    /// The table forwards to a port without a link.
    DeadEnd {
        /// The switch's LID.
        switch: u16,
        /// The destination LID.
        lid: u16,
        /// The port.
        port: u8,
    },
    /// The table forwards to an adapter that is not the destination.
    ThroughAdapter {
        /// The switch's LID.
        switch: u16,
        /// The destination LID.
        lid: u16,
        /// The port.
        port: u8,
    },
    /// Following the tables from this switch comes back to it.
    Loop {
        /// The switch's LID.
        switch: u16,
        /// The destination LID.
        lid: u16,
    },
    /// A master with QoS gave no SL to VL table for a port pair a path
    /// passes.
    NoSl2Vl {
        /// The node's LID.
        lid: u16,
        /// Ingress port.
        ingress: u8,
        /// Egress port.
        egress: u8,
    },
}

impl RouteError {
    /// The switch's LID and the destination LID of a way that leads
    /// nowhere (`None` for a missing SL to VL table, which is no way).
    pub fn way(&self) -> Option<(u16, u16)> {
        match *self {
            Self::NoSuchPort { switch, lid, .. }
            | Self::DeadEnd { switch, lid, .. }
            | Self::ThroughAdapter { switch, lid, .. }
            | Self::Loop { switch, lid } => Some((switch, lid)),
            Self::NoSl2Vl { .. } => None,
        }
    }
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::NoSuchPort { switch, lid, port } => write!(
                f,
                "LFTRecord of switch LID {switch}: LID {lid} is forwarded to port {port}, which the switch does not have"
            ),
            Self::DeadEnd { switch, lid, port } => write!(
                f,
                "LFTRecord of switch LID {switch}: LID {lid} is forwarded to port {port}, which has no link \
                 (the forwarding tables and the links were read on either side of a change?)"
            ),
            Self::ThroughAdapter { switch, lid, port } => write!(
                f,
                "LFTRecord of switch LID {switch}: LID {lid} is forwarded to port {port}, whose link leads to an \
                 adapter that does not answer to LID {lid}"
            ),
            Self::Loop { switch, lid } => write!(
                f,
                "LFTRecords: the way from switch LID {switch} to LID {lid} comes back to the switch (a forwarding loop)"
            ),
            Self::NoSl2Vl {
                lid,
                ingress,
                egress,
            } => write!(
                f,
                "SL2VLTableRecords: none for LID {lid} from port {ingress} to port {egress}, which a path passes \
                 (the master applies QoS)"
            ),
        }
    }
}

impl std::error::Error for RouteError {}

/// Where the paths to one LID end.
#[derive(Debug, Clone, Copy)]
struct Dest {
    /// The physical port they end at ([`NONE`]: no path reaches the LID).
    port: u32,
}

/// Every switch's [`Leg`] to every LID.
#[derive(Debug, Default)]
pub struct Routes {
    /// LIDs per switch row.
    stride: usize,
    /// By switch, then LID.
    legs: Vec<Leg>,
    /// The SLs each leg keeps (QoS only; empty otherwise).
    sls: Vec<u16>,
    dests: Vec<Dest>,
    masks: Option<VlMasks>,
    /// The first [`FAULTS_KEPT`] ways that lead nowhere, and how many in
    /// all.
    faults: Vec<RouteError>,
    fault_count: usize,
}

/// The inputs of a computation.
pub(super) struct Topology<'a> {
    pub(super) ports: &'a [Port],
    pub(super) switches: &'a [Switch],
    /// Each LID in use, with the port paths to it end at ([`NONE`]: a
    /// switch's LID that its own table does not route).
    pub(super) dests: &'a [(u16, u32)],
    pub(super) masks: Option<VlMasks>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    New,
    Open,
    Done,
}

/// One step of a walk from a switch.
enum Step {
    /// The destination is reached through egress port `egress`.
    Arrived { egress: u32 },
    /// On through egress port `egress` to switch `next`, entering at
    /// `ingress`.
    Through {
        egress: u32,
        ingress: u32,
        next: u32,
    },
    /// No route.
    Nowhere,
}

impl Routes {
    /// Works out every switch's leg to every LID of `t.dests`, LIDs up to
    /// `max_lid`.
    pub(super) fn compute(t: Topology<'_>, max_lid: u16) -> Result<Self, RouteError> {
        let stride = usize::from(max_lid) + 1;
        let n = t.switches.len();
        let mut routes = Self {
            stride,
            legs: vec![Leg::NONE; n * stride],
            sls: if t.masks.is_some() {
                vec![0; n * stride]
            } else {
                Vec::new()
            },
            dests: vec![Dest { port: NONE }; stride],
            masks: None,
            faults: Vec::new(),
            fault_count: 0,
        };
        let mut visits = vec![Visit::New; n];
        let mut stack: Vec<u32> = Vec::new();
        for &(lid, dest) in t.dests {
            routes.dests[usize::from(lid)] = Dest { port: dest };
            visits.fill(Visit::New);
            for first in 0..n as u32 {
                if visits[first as usize] != Visit::New {
                    continue;
                }
                stack.push(first);
                while let Some(&s) = stack.last() {
                    let sw = &t.switches[s as usize];
                    let first_visit = visits[s as usize] == Visit::New;
                    let mut step = step(&t, sw, lid, dest).unwrap_or_else(|fault| {
                        if first_visit {
                            routes.fault(fault);
                        }
                        Step::Nowhere
                    });
                    if first_visit {
                        visits[s as usize] = Visit::Open;
                        if let Step::Through { next, .. } = step {
                            match visits[next as usize] {
                                Visit::New => {
                                    stack.push(next);
                                    continue;
                                }
                                // On the stack: the walk came back, and
                                // every switch on the loop leads nowhere.
                                Visit::Open => {
                                    routes.fault(RouteError::Loop {
                                        switch: sw.lid,
                                        lid,
                                    });
                                    step = Step::Nowhere;
                                }
                                Visit::Done => {}
                            }
                        }
                    }
                    // Every switch this one leads to is done.
                    routes.finish(&t, s, lid, step)?;
                    visits[s as usize] = Visit::Done;
                    stack.pop();
                }
            }
        }
        routes.masks = t.masks;
        Ok(routes)
    }

    /// Keeps `fault` (the first [`FAULTS_KEPT`]) and counts it.
    fn fault(&mut self, fault: RouteError) {
        self.fault_count += 1;
        if self.faults.len() < FAULTS_KEPT {
            self.faults.push(fault);
        }
    }

    /// The ways that lead nowhere (the first [`FAULTS_KEPT`]), and how
    /// many there are: each costs the paths from its switch to its LID.
    pub fn faults(&self) -> (&[RouteError], usize) {
        (&self.faults, self.fault_count)
    }

    /// Sets switch `s`'s leg to `lid` from the next switch's.
    fn finish(&mut self, t: &Topology<'_>, s: u32, lid: u16, step: Step) -> Result<(), RouteError> {
        let i = self.index(s, lid);
        let hop = |port: u32| {
            let p = &t.ports[port as usize];
            Leg::port(p.mtu, p.rank_hop)
        };
        let (leg, sls) = match step {
            Step::Nowhere => (Leg::NONE, 0),
            Step::Arrived { egress } => (
                Leg {
                    hops: 1,
                    ..hop(egress)
                },
                u16::MAX,
            ),
            Step::Through {
                egress,
                ingress,
                next,
            } => {
                let j = self.index(next, lid);
                let rest = hop(ingress).then(self.legs[j]);
                let mut leg = Leg {
                    hops: 1,
                    ..hop(egress)
                }
                .then(rest);
                let mut sls = u16::MAX;
                if leg.is_path()
                    && let Some(masks) = &t.masks
                {
                    let next_sw = &t.switches[next as usize];
                    let out = next_sw.first_port + u32::from(next_sw.route(lid));
                    let ingress_num = t.ports[ingress as usize].num;
                    let m = masks.get(out, ingress_num).ok_or(RouteError::NoSl2Vl {
                        lid: next_sw.lid,
                        ingress: ingress_num,
                        egress: next_sw.route(lid),
                    })?;
                    sls = m & self.sls[j];
                    if sls == 0 {
                        leg = Leg::NONE;
                    }
                }
                (leg, sls)
            }
        };
        self.legs[i] = leg;
        if !self.sls.is_empty() {
            self.sls[i] = sls;
        }
        Ok(())
    }

    fn index(&self, switch: u32, lid: u16) -> usize {
        switch as usize * self.stride + usize::from(lid)
    }

    /// Switch `switch`'s leg to `lid`: from its egress port to the
    /// destination.
    pub(super) fn leg(&self, switch: u32, lid: u16) -> Leg {
        if usize::from(lid) >= self.stride {
            return Leg::NONE;
        }
        self.legs[self.index(switch, lid)]
    }

    /// The SLs switch `switch`'s leg to `lid` keeps (every SL without
    /// QoS).
    pub(super) fn leg_sls(&self, switch: u32, lid: u16) -> u16 {
        if self.sls.is_empty() || usize::from(lid) >= self.stride {
            return u16::MAX;
        }
        self.sls[self.index(switch, lid)]
    }

    /// The port paths to `lid` end at, if any reaches it.
    pub(super) fn dest(&self, lid: u16) -> Option<u32> {
        let d = self.dests.get(usize::from(lid))?;
        (d.port != NONE).then_some(d.port)
    }

    /// The SLs the SL to VL table of `egress` from `ingress` does not drop
    /// (every SL without QoS; none where the master gave no table).
    pub(super) fn sls_at(&self, egress: u32, ingress: u8) -> u16 {
        match &self.masks {
            None => u16::MAX,
            Some(m) => m.get(egress, ingress).unwrap_or(0),
        }
    }

    /// Whether SL to VL tables are looked at (the master applies QoS).
    pub(super) fn with_sls(&self) -> bool {
        self.masks.is_some()
    }
}

/// Where switch `sw` sends `lid`, whose paths end at port `dest`.
fn step(t: &Topology<'_>, sw: &Switch, lid: u16, dest: u32) -> Result<Step, RouteError> {
    let out = sw.route(lid);
    if out == NO_PATH {
        return Ok(Step::Nowhere);
    }
    let Some(egress) = sw.port(out) else {
        return Err(RouteError::NoSuchPort {
            switch: sw.lid,
            lid,
            port: out,
        });
    };
    if egress == dest {
        return Ok(Step::Arrived { egress });
    }
    let ingress = t.ports[egress as usize].remote;
    if ingress == NONE {
        return Err(RouteError::DeadEnd {
            switch: sw.lid,
            lid,
            port: out,
        });
    }
    if ingress == dest {
        return Ok(Step::Arrived { egress });
    }
    let next = t.ports[ingress as usize].switch;
    if next == NONE {
        return Err(RouteError::ThroughAdapter {
            switch: sw.lid,
            lid,
            port: out,
        });
    }
    Ok(Step::Through {
        egress,
        ingress,
        next,
    })
}
