//! The fuzz harness of the SA core: `fuzz/fuzz_targets/sa_core.rs` calls
//! [`drive`], and `tests/fuzz_corpus.rs` replays the committed corpus
//! through it on stable Rust.
//!
//! The input is a script of steps, each starting with an opcode byte:
//!
//! * `0`: a MAD from a client: LID byte, 2-byte length, then the bytes;
//! * `1`: a MAD from the master SA (same framing; its LID is the SM's);
//! * `2`: time passes: 2-byte milliseconds;
//! * `3`: the port changes: one byte picks the new SM LID and LID;
//! * `4`: a local API request: connection byte, kind byte, then the bytes
//!   the kind needs (a PathRecord query, an InformInfo, a join or a leave,
//!   a listing), zero-filled where the input runs out;
//! * `5`: a local connection closes: connection byte.
//!
//! The harness panics only when the core breaks its contract: a panic on
//! any input, a MAD to send longer than 256 bytes or to LID 0, a burst of
//! MADs out of proportion to one input, or work still in flight (transfers,
//! forwarded queries, requests to the master) once shutdown has had time
//! to finish.

use std::time::{Duration, Instant};

use mad_codec::zerocopy::{FromBytes, FromZeros};
use mad_codec::{ComponentMask, Gid, InformInfo, McMemberRecord, Method, PathRecord};

use super::local::LocalRequest;
use super::{AgentConfig, PortIdentity, SaCore};
use umad::MadAddress;

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
        match op % 6 {
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
            4 => {
                let Some((&[conn, kind], tail)) = rest.split_first_chunk::<2>() else {
                    break;
                };
                let (request, tail) = local_request(kind, tail);
                rest = tail;
                core.handle_local(now, u64::from(conn % 4), u32::from(kind), request);
            }
            5 => {
                let Some((&conn, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                core.handle_local_closed(now, u64::from(conn % 4));
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
                // 3: the port changes.
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
    while core.poll_local().is_some() {}
    let c = core.counters();
    assert_eq!(
        (
            c.upstream_in_flight,
            c.queries_waiting,
            c.transfers_active,
            c.reports_in_flight
        ),
        (0, 0, 0, 0),
        "work left in flight after shutdown: {c:?}"
    );
    assert_eq!(
        (c.subscriptions, c.members, c.groups),
        (0, 0, 0),
        "registrations left after shutdown: {c:?}"
    );
}

/// Takes `N` bytes from `data` (zero-filled past its end).
fn take<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut out = [0u8; N];
    let n = data.len().min(N);
    out[..n].copy_from_slice(&data[..n]);
    (out, &data[n..])
}

/// A local request of `kind` read from `data`.
fn local_request(kind: u8, data: &[u8]) -> (LocalRequest, &[u8]) {
    match kind % 6 {
        0 => {
            let (mask, data) = take::<8>(data);
            let (t, data) = take::<64>(data);
            let method = if mask[0] & 1 == 0 {
                Method::GET
            } else {
                Method::GET_TABLE
            };
            let template =
                PathRecord::read_from_bytes(&t).unwrap_or_else(|_| PathRecord::new_zeroed());
            (
                LocalRequest::PathQuery {
                    method,
                    mask: ComponentMask(u64::from_be_bytes(mask)),
                    template,
                },
                data,
            )
        }
        1 => {
            let (ii, data) = take::<36>(data);
            (
                LocalRequest::Inform(
                    InformInfo::read_from_bytes(&ii).unwrap_or_else(|_| InformInfo::new_zeroed()),
                ),
                data,
            )
        }
        k @ (2 | 3) => {
            let (mask, data) = take::<4>(data);
            let (r, data) = take::<52>(data);
            let record = McMemberRecord::read_from_bytes(&r)
                .unwrap_or_else(|_| McMemberRecord::new_zeroed());
            let mask = ComponentMask(u64::from(u32::from_be_bytes(mask)));
            let request = if k == 2 {
                LocalRequest::Join { mask, record }
            } else {
                LocalRequest::Leave { mask, record }
            };
            (request, data)
        }
        4 => (LocalRequest::Subscriptions, data),
        _ => (LocalRequest::Groups, data),
    }
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
        // A local subscription (generic, all traps) and a join with the
        // creation components, then the connection closes.
        let mut ii = [0u8; 36];
        (ii[16], ii[17]) = (0xFF, 0xFF);
        (ii[22], ii[23]) = (1, 1);
        let mut script = vec![4, 1, 1];
        script.extend(ii);
        script.extend([4, 1, 2, 0, 1, 0x30, 0xC7]);
        script.extend([0xFF; 16]);
        script.extend([5, 1, 2, 0xE8, 0x03]);
        drive(&script);
    }
}
