//! Where a MAD goes to or came from.

use mad_codec::Gid;

use crate::abi::UserMadHeader;

pub use mad_codec::address::{Address, GSI_QKEY, Grh};

/// Fills the address fields of a umad header.
pub(crate) fn write_into(a: &Address, h: &mut UserMadHeader) {
    h.qpn.set(a.qpn);
    h.qkey.set(a.qkey);
    h.lid.set(a.lid);
    h.sl = a.sl;
    h.path_bits = a.path_bits;
    h.pkey_index.set(a.pkey_index);
    match a.grh {
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

/// The address a umad header names.
pub(crate) fn read_from(h: &UserMadHeader) -> Address {
    let grh = (h.grh_present != 0).then(|| Grh {
        gid: Gid(h.gid),
        sgid_index: h.gid_index,
        hop_limit: h.hop_limit,
        traffic_class: h.traffic_class,
        flow_label: h.flow_label.get(),
    });
    Address {
        lid: h.lid.get(),
        qpn: h.qpn.get() & 0x00FF_FFFF,
        qkey: h.qkey.get(),
        sl: h.sl,
        pkey_index: h.pkey_index.get(),
        path_bits: h.path_bits,
        grh,
    }
}
