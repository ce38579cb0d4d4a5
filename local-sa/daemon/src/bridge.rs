//! The core's types to and from umad's: MADs, their addresses, the port.
//! The one place that knows both.

use local_sa_core::PortIdentity;
use local_sa_core::address::{Address, Grh, Received, Transmit};
use umad::port::PortFacts;
use umad::{AgentId, IncomingMad, MadAddress, OutgoingMad};

/// The port as the core needs it.
pub(crate) fn identity(f: &PortFacts) -> PortIdentity {
    PortIdentity {
        lid: f.lid,
        lmc: f.lmc,
        gid: f.gid,
        sm_lid: f.sm_lid,
        sm_sl: f.sm_sl,
    }
}

/// A MAD the transport delivered, as the core takes it.
pub(crate) fn received(m: IncomingMad) -> Received {
    Received {
        from: to_core(&m.source),
        status: m.status,
        mad: m.mad,
        cut: m.cut,
    }
}

/// A MAD the core wants sent, as `agent` sends it.
pub(crate) fn outgoing(agent: AgentId, t: Transmit) -> OutgoingMad {
    OutgoingMad {
        agent,
        dest: to_umad(&t.dest),
        mad: t.mad,
        timeout_ms: t.timeout_ms,
        retries: 0,
    }
}

fn to_core(a: &MadAddress) -> Address {
    Address {
        lid: a.lid,
        qpn: a.qpn,
        qkey: a.qkey,
        sl: a.sl,
        pkey_index: a.pkey_index,
        path_bits: a.path_bits,
        grh: a.grh.map(|g| Grh {
            gid: g.gid,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
            flow_label: g.flow_label,
        }),
    }
}

fn to_umad(a: &Address) -> MadAddress {
    MadAddress {
        lid: a.lid,
        qpn: a.qpn,
        qkey: a.qkey,
        sl: a.sl,
        pkey_index: a.pkey_index,
        path_bits: a.path_bits,
        grh: a.grh.map(|g| umad::Grh {
            gid: g.gid,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
            flow_label: g.flow_label,
        }),
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::Gid;

    use super::*;

    #[test]
    fn addresses_map_both_ways_unchanged() {
        let a = Address {
            lid: 7,
            qpn: 0x12_3456,
            qkey: 0x8001_0000,
            sl: 3,
            pkey_index: 2,
            path_bits: 1,
            grh: Some(Grh {
                gid: Gid::new(Gid::DEFAULT_PREFIX, 9),
                sgid_index: 1,
                hop_limit: 64,
                traffic_class: 5,
                flow_label: 0xABCDE,
            }),
        };
        assert_eq!(to_core(&to_umad(&a)), a);
        let plain = Address::gsi(4, 0);
        assert_eq!(to_core(&to_umad(&plain)), plain);
    }
}
