//! The core's MAD types to and from umad's, and the port as the core
//! needs it: the one place that knows both. Addresses need no mapping:
//! both use `mad_codec::address::Address`.

use local_sa_core::PortIdentity;
use local_sa_core::address::{Received, Transmit};
use umad::port::PortFacts;
use umad::{AgentId, IncomingMad, OutgoingMad};

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
        from: m.source,
        status: m.status,
        mad: m.mad,
        cut: m.cut,
    }
}

/// A MAD the core wants sent, as `agent` sends it.
pub(crate) fn outgoing(agent: AgentId, t: Transmit) -> OutgoingMad {
    OutgoingMad {
        agent,
        dest: t.dest,
        mad: t.mad,
        timeout_ms: t.timeout_ms,
        retries: 0,
    }
}
