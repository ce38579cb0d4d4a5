//! The physical layer the engine walks: ports, with what a path takes
//! from each, and switches, with their forwarding tables.

/// "None" in the index fields.
pub(super) const NONE: u32 = u32::MAX;

/// A forwarding table's "no route" (OpenSM's `OSM_NO_PATH`).
pub(super) const NO_PATH: u8 = 0xFF;

/// What a path takes from one physical port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Port {
    /// MTUCap.
    pub(super) mtu: u8,
    /// Rate rank with the port's own capability mask (what an end of a
    /// path counts).
    pub(super) rank_own: u8,
    /// Rate rank with its switch's port 0 capability mask (what a hop
    /// counts; the same as `rank_own` on an adapter).
    pub(super) rank_hop: u8,
    /// The port at the other end of its link, [`NONE`] if none.
    pub(super) remote: u32,
    /// Its switch (index in the fabric's switches), [`NONE`] on an adapter.
    pub(super) switch: u32,
    /// Its port number.
    pub(super) num: u8,
}

/// A switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Switch {
    /// Its LID (port 0's base LID).
    pub(super) lid: u16,
    /// Index of its port 0 in the fabric's ports; port `n` follows at `+n`.
    pub(super) first_port: u32,
    /// NumPorts.
    pub(super) num_ports: u8,
    /// The linear forwarding table, by LID; LIDs past its end have no
    /// route.
    pub(super) lft: Vec<u8>,
    /// Its endport (port 0).
    pub(super) endport: u32,
}

impl Switch {
    /// The port LID `lid` is forwarded to, [`NO_PATH`] if none.
    pub(super) fn route(&self, lid: u16) -> u8 {
        self.lft.get(usize::from(lid)).copied().unwrap_or(NO_PATH)
    }

    /// The index in the fabric's ports of port `port`, if the switch has it.
    pub(super) fn port(&self, port: u8) -> Option<u32> {
        (port <= self.num_ports).then(|| self.first_port + u32::from(port))
    }
}
