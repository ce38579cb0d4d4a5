//! Where a MAD goes to or comes from: the parts of a UD address (IBA
//! 13.5.4's MAD addressing) that an agent answers with — LID, QP, Q_Key,
//! SL, P_Key index, path bits and the GRH. One type for everyone: the
//! transport fills it from what the device says, the agent answers with
//! it.

use crate::Gid;

/// The Q_Key of QP1 (the GSI): every SA MAD uses it.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// The highest unicast LID (IBA 4.1.3: 0x0001–0xBFFF unicast, then
/// multicast and the permissive LID).
pub const MAX_UNICAST_LID: u16 = 0xBFFF;

/// A global route header, for peers in another subnet or that sent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grh {
    /// The peer's GID (on receive: the source's; on send: the destination).
    pub gid: Gid,
    /// Index of the local GID to send from.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

/// A MAD peer: LID, QP and the rest of a UD address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Address {
    /// LID.
    pub lid: u16,
    /// QP number (1 for the GSI).
    pub qpn: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Service level.
    pub sl: u8,
    /// P_Key table index to send with.
    pub pkey_index: u16,
    /// Source path bits (for LMC > 0).
    pub path_bits: u8,
    /// The GRH, if any.
    pub grh: Option<Grh>,
}

impl Address {
    /// QP1 of the port at `lid`, Q_Key 0x80010000, SL `sl`, P_Key index 0.
    pub fn gsi(lid: u16, sl: u8) -> Self {
        Self {
            lid,
            qpn: 1,
            qkey: GSI_QKEY,
            sl,
            pkey_index: 0,
            path_bits: 0,
            grh: None,
        }
    }

    /// The address to answer a MAD that came from `self`: same LID, QP, SL
    /// and P_Key index, the GSI Q_Key, and the GRH turned around.
    pub fn reply(&self) -> Self {
        Self {
            qkey: GSI_QKEY,
            path_bits: 0,
            ..*self
        }
    }
}
