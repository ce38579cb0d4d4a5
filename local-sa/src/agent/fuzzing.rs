//! The fuzz harness of the SA core: `fuzz/fuzz_targets/sa_core.rs` calls
//! [`drive`], and `tests/fuzz_corpus.rs` replays the committed corpus
//! through it on stable Rust.
//!
//! The input is a script of steps, each starting with an opcode byte:
//!
//! * `0`: a MAD from a client: LID byte, 2-byte length, then the bytes;
//! * `1`: a MAD from the master SA (same framing; its LID is the SM's);
//! * `2`: time passes: 2-byte milliseconds;
//! * `3`: the port changes: one byte picks the new SM LID and LID.
//!
//! The harness panics only when the core breaks its contract: a panic on
//! any input, a MAD to send longer than 256 bytes or to LID 0, a burst of
//! MADs out of proportion to one input, or work still in flight (transfers,
//! forwarded queries, requests to the master) once shutdown has had time
//! to finish.

use std::time::{Duration, Instant};

use mad_codec::Gid;

use super::{AgentConfig, PortIdentity, SaCore};
use crate::umad::MadAddress;

/// Most MADs one step may produce: an RMPP window (64) plus a refresh
/// walk's window and the registrations, with room to spare.
const MAX_BURST: usize = 256;

fn port(sm_lid: u16, lid: u16) -> PortIdentity {
    PortIdentity {
        lid,
        lmc: 0,
        gid: Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(lid)),
        sm_lid,
        sm_sl: 0,
    }
}

/// Runs the script in `data` against a fresh core; see the module docs.
pub fn drive(data: &[u8]) {
    let t0 = Instant::now();
    let mut now = t0;
    let config = AgentConfig {
        sm_key: 1,
        ..AgentConfig::default()
    };
    let mut current = port(1, 2);
    let mut core = SaCore::new(config, current, now);
    drain(&mut core);
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 4 {
            0 | 1 => {
                let Some((&lid, tail)) = rest.split_first() else {
                    break;
                };
                let Some((len, tail)) = tail.split_first_chunk::<2>() else {
                    break;
                };
                let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
                let (mad, tail) = tail.split_at(len);
                rest = tail;
                let source = if op % 4 == 1 {
                    current.sm_lid
                } else {
                    u16::from(lid).max(1)
                };
                core.handle_mad(now, MadAddress::gsi(source, 0), 0, mad);
            }
            2 => {
                let Some((ms, tail)) = rest.split_first_chunk::<2>() else {
                    break;
                };
                rest = tail;
                now += Duration::from_millis(u64::from(u16::from_le_bytes(*ms)));
                core.handle_timeout(now);
            }
            _ => {
                let Some((&which, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                current = port(1 + u16::from(which & 3), 2 + u16::from(which >> 6));
                core.handle_port_change(now, current);
            }
        }
        drain(&mut core);
    }
    // Shut down and let every timer run out: nothing may be left.
    core.begin_shutdown(now);
    drain(&mut core);
    for _ in 0..120 {
        now += Duration::from_secs(1);
        core.handle_timeout(now);
        drain(&mut core);
    }
    let c = core.counters();
    assert_eq!(
        (c.upstream_in_flight, c.queries_waiting, c.transfers_active),
        (0, 0, 0),
        "work left in flight after shutdown: {c:?}"
    );
}

/// Takes every MAD the core wants sent and checks it.
fn drain(core: &mut SaCore) {
    let mut n = 0;
    while let Some(t) = core.poll_transmit() {
        n += 1;
        assert!(
            t.mad.len() <= mad_codec::MAD_LEN,
            "a {}-byte MAD to send",
            t.mad.len()
        );
        assert!(t.dest.lid != 0, "a MAD to LID 0");
        assert!(n <= MAX_BURST, "more than {MAX_BURST} MADs from one step");
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::attr::path_record::mask as pr;
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{AttributeId, Method, PathRecord, SaMadBuilder};

    use super::*;

    fn step_mad(op: u8, lid: u8, mad: &[u8]) -> Vec<u8> {
        let mut v = vec![op, lid];
        v.extend_from_slice(&u16::try_from(mad.len()).unwrap().to_le_bytes());
        v.extend_from_slice(mad);
        v
    }

    #[test]
    fn scripts_run_and_garbage_is_survived() {
        let mut t = PathRecord::new_zeroed();
        t.set_slid(2);
        t.set_dlid(3);
        let mut b = SaMadBuilder::request(Method::GET, 1, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(pr::SLID | pr::DLID);
        let get = b.into_bytes();
        let mut script = step_mad(0, 9, &get);
        script.extend([2, 0xE8, 0x03]); // one second
        script.extend(step_mad(1, 0, &get));
        script.extend([3, 0x41]);
        script.extend(step_mad(0, 9, &[0xFF; 300]));
        drive(&script);
        drive(&[]);
        drive(&[0, 1, 0xFF, 0xFF]);
        drive(&(0..=255).collect::<Vec<u8>>());
    }
}
