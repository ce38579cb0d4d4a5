//! What RMPP transfers a port's agent holds at once, and why it refuses
//! one. Every transfer is kept by a peer's request: a load a peer sends
//! (held until whole or timed out, 40 s) or a table answer it asked for
//! (held until acknowledged, about 8 s without ACKs). Without limits a
//! peer that starts transfers and never finishes them makes the daemon
//! hold memory without end.

use std::collections::HashMap;

/// Caps on the transfers one port's agent holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferLimits {
    /// Loads being received at once, from everyone.
    pub receiving: usize,
    /// Loads being received at once from one LID.
    pub receiving_per_source: usize,
    /// Bytes of load data held at once, every load together (each load is
    /// also capped by `RmppConfig::max_data_len`).
    pub receive_bytes: usize,
    /// Table answers being sent at once, to everyone.
    pub sending: usize,
    /// Table answers being sent at once to one LID.
    pub sending_per_peer: usize,
    /// Bytes of table answers held at once, every answer together.
    pub send_bytes: usize,
}

impl Default for TransferLimits {
    fn default() -> Self {
        Self {
            // A distributor sends one load per node at a time; a node's
            // own loader one. These leave room for several loaders.
            receiving: 64,
            receiving_per_source: 8,
            // Two of the largest loads (1 M PathRecords each).
            receive_bytes: 128 << 20,
            // Each process asking GetTable holds one until it is acked.
            sending: 1024,
            sending_per_peer: 64,
            send_bytes: 256 << 20,
        }
    }
}

/// Why a transfer was refused or cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransferRefusal {
    /// As many transfers as allowed are in progress.
    Busy,
    /// The peer's LID already has as many as allowed.
    PerPeer,
    /// The transfer would take the held bytes over the limit.
    Memory,
}

impl TransferRefusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "too many transfers in progress",
            Self::PerPeer => "too many transfers with this LID",
            Self::Memory => "transfer memory limit reached",
        }
    }
}

/// Transfers per LID, for the per-peer caps.
#[derive(Debug, Default)]
pub(super) struct PerLid(HashMap<u16, usize>);

impl PerLid {
    pub(super) fn get(&self, lid: u16) -> usize {
        self.0.get(&lid).copied().unwrap_or(0)
    }

    pub(super) fn add(&mut self, lid: u16) {
        *self.0.entry(lid).or_insert(0) += 1;
    }

    pub(super) fn remove(&mut self, lid: u16) {
        if let Some(n) = self.0.get_mut(&lid) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(&lid);
            }
        }
    }
}
