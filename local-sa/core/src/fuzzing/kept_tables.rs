//! Kept tables a crash, a full disk or anyone with access to the run
//! directory left: decoding any bytes ends in tables or an error, never a
//! panic; tables decoded, encoded and decoded again are the same tables;
//! and a core that is offered them takes them or says why not, and goes
//! on.

use std::time::Instant;

use crate::agent::SaCore;
use crate::config::{AgentConfig, PortIdentity};
use crate::kept_tables::{Kept, sealed};

/// One file's bytes, as they are and with a digest that matches.
pub fn kept_tables(data: &[u8]) {
    for bytes in [data.to_vec(), sealed(data)] {
        if let Ok(kept) = Kept::decode(&bytes) {
            offer(kept);
        }
    }
}

/// Tables that decoded, re-encoded and offered to a core.
fn offer(kept: Kept) {
    assert_eq!(
        Kept::decode(&kept.encode()).as_ref(),
        Ok(&kept),
        "decoded tables encode and decode again unchanged"
    );
    let port = PortIdentity {
        gid: kept.gid,
        lid: kept.lid,
        lmc: kept.lmc.min(7),
        sm_lid: kept.sm_lid,
        sm_sl: 0,
    };
    let now = Instant::now();
    let mut core = SaCore::new(AgentConfig::default(), port, now, 1);
    let wall = kept.written;
    let _ = core.restore_tables(now, wall, kept);
    core.handle_timeout(now);
    while core.poll_transmit().is_some() {}
}
