//! Where a MAD goes to or came from.

use mad_codec::Gid;

use crate::abi::UserMadHeader;

/// The Q_Key of QP1 (the GSI): every SA MAD uses it.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// A global route header, for destinations in another subnet or when the
/// source asked for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grh {
    /// Destination (or, on receive, source) GID.
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
pub struct MadAddress {
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

impl MadAddress {
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

    pub(crate) fn write_into(&self, h: &mut UserMadHeader) {
        h.qpn.set(self.qpn);
        h.qkey.set(self.qkey);
        h.lid.set(self.lid);
        h.sl = self.sl;
        h.path_bits = self.path_bits;
        h.pkey_index.set(self.pkey_index);
        match self.grh {
            Some(g) => {
                h.grh_present = 1;
                h.gid = g.gid.0;
                h.gid_index = g.sgid_index;
                h.hop_limit = g.hop_limit;
                h.traffic_class = g.traffic_class;
                h.flow_label.set(g.flow_label);
            }
            None => h.grh_present = 0,
        }
    }

    pub(crate) fn read_from(h: &UserMadHeader) -> Self {
        let grh = (h.grh_present != 0).then(|| Grh {
            gid: Gid(h.gid),
            sgid_index: h.gid_index,
            hop_limit: h.hop_limit,
            traffic_class: h.traffic_class,
            flow_label: h.flow_label.get(),
        });
        Self {
            lid: h.lid.get(),
            qpn: h.qpn.get() & 0x00FF_FFFF,
            qkey: h.qkey.get(),
            sl: h.sl,
            pkey_index: h.pkey_index.get(),
            path_bits: h.path_bits,
            grh,
        }
    }
}
