//! Where MADs come from and go to, in the core's own terms: the parts of a
//! UD address an SA agent answers with, what arrived, and what to send.
//! The daemon maps these to and from its transport (umad); nothing here
//! knows about one.

use bytes::Bytes;
use mad_codec::Gid;

/// The Q_Key of QP1 (the GSI): every SA MAD uses it.
pub const GSI_QKEY: u32 = 0x8001_0000;

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

/// A MAD the transport delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Where it came from.
    pub from: Address,
    /// 0, or an errno when the transport gave one of our own requests back
    /// undelivered (ETIMEDOUT: nobody answered it in time).
    pub status: u32,
    /// The MAD at the length it arrived.
    pub mad: Bytes,
    /// `Some(n)` when the transport delivered only part of what the sender
    /// sent: the sender meant a longer answer, or the transport damaged the
    /// MAD's tail; only its first `n` bytes are real.
    pub cut: Option<usize>,
}

impl Received {
    /// A whole MAD from `from` with status 0.
    pub fn new(from: Address, mad: impl Into<Bytes>) -> Self {
        Self {
            from,
            status: 0,
            mad: mad.into(),
            cut: None,
        }
    }
}

/// A MAD to put on the wire, to a destination of type `A`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<A = Address> {
    /// Where it goes.
    pub dest: A,
    /// The MAD (up to 256 bytes; shorter ones are answers at their exact
    /// length).
    pub mad: Bytes,
    /// For requests: how long the transport should wait for the answer
    /// (0 for answers and other MADs that expect none).
    pub timeout_ms: u32,
}

impl<A> Transmit<A> {
    /// An answer or control MAD: nothing to wait for.
    pub fn reply(dest: A, mad: Bytes) -> Self {
        Self {
            dest,
            mad,
            timeout_ms: 0,
        }
    }
}
