//! The fuzz harness of the SA core (`fuzz/fuzz_targets/sa_core.rs`).
//!
//! The input is a script of steps, each starting with an opcode byte
//! (taken modulo 8):
//!
//! * `0`: a MAD from a client: LID byte, 2-byte length, then the bytes;
//! * `1`: a MAD from the master SA (same framing; its LID is the SM's);
//! * `2`: time passes: 2-byte milliseconds;
//! * `3`: the port changes: one byte picks the new SM LID and LID;
//! * `4`: a local request: connection byte, kind byte, then the bytes the
//!   kind needs (a PathRecord query, an InformInfo, a join or a leave, a
//!   listing, hello), zero-filled where the input runs out;
//! * `5`: a local connection closes: connection byte;
//! * `6`: the master answers one of the requests the core sent it: a byte
//!   picks which (0: the newest, 1: the one before, ...), a status byte
//!   (the SA status's upper byte), a 2-byte length, then the answer's data;
//!   the harness gives it the request's headers and TransactionID, so the
//!   core's paths that need an answer are reached without guessing;
//! * `7`: the same, delivered as the simulator delivers a multi-MAD answer:
//!   256 bytes claiming RMPP, only the first 224 of them real.
//!
//! The core starts from a fixed TransactionID seed, so a script means the
//! same thing every time it runs.
//!
//! The harness panics only when the core breaks its contract: a panic on
//! any input, a MAD to send longer than 256 bytes or to LID 0, a burst of
//! MADs out of proportion to one input, or work still in flight (transfers,
//! forwarded queries, requests to the master) once shutdown has had time
//! to finish.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};
use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{ComponentMask, Gid, InformInfo, MAD_LEN, McMemberRecord, Method, PathRecord};

use crate::address::{Address, Received};
use crate::agent::SaCore;
use crate::config::{AgentConfig, PortIdentity};
use crate::request::{Lookup, PathQuery, Request};

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

/// The TransactionID seed of the fuzzed core.
const SEED: u32 = 1;

/// Requests to the master remembered for answering (the newest).
const REMEMBERED: usize = 64;

/// Runs the script in `data` against a fresh core, then shuts it down and
/// checks that nothing is left; see the module docs.
pub fn sa_core(data: &[u8]) {
    let mut s = Script::play(data);
    s.shut_down();
}

/// A core and what the harness knows of it.
struct Script {
    core: SaCore,
    now: Instant,
    port: PortIdentity,
    /// The core's latest requests to the master, oldest first.
    requests: Vec<Bytes>,
}

impl Script {
    /// A fresh core after the steps of `data`.
    fn play(data: &[u8]) -> Self {
        let now = Instant::now();
        let config = AgentConfig {
            sm_key: Some(crate::config::SmKey::new(1)),
            ..AgentConfig::default()
        };
        let port = port(1, 2);
        let core = SaCore::new(config, port, now, SEED);
        let mut s = Self {
            core,
            now,
            port,
            requests: Vec::new(),
        };
        s.drain();
        let mut rest = data;
        while let Some((&op, tail)) = rest.split_first() {
            match s.step(op, tail) {
                Some(tail) => rest = tail,
                None => break,
            }
            s.drain();
        }
        s
    }

    /// Runs the step of opcode `op` on its operands at the start of
    /// `data`; returns what follows them, or `None` if they run short.
    fn step<'a>(&mut self, op: u8, data: &'a [u8]) -> Option<&'a [u8]> {
        let now = self.now;
        match op % 8 {
            op @ (0 | 1) => {
                let (&lid, tail) = data.split_first()?;
                let (mad, tail) = framed(tail)?;
                let source = if op == 1 {
                    self.port.sm_lid
                } else {
                    u16::from(lid).max(1)
                };
                let from = Address::gsi(source, 0);
                self.core
                    .handle_mad(now, Received::new(from, Bytes::copy_from_slice(mad)));
                Some(tail)
            }
            2 => {
                let (ms, tail) = data.split_first_chunk::<2>()?;
                self.now += Duration::from_millis(u64::from(u16::from_le_bytes(*ms)));
                self.core.handle_timeout(self.now);
                Some(tail)
            }
            3 => {
                let (&which, tail) = data.split_first()?;
                self.port = port(1 + u16::from(which & 3), 2 + u16::from(which >> 6));
                self.core.handle_port_change(now, self.port);
                Some(tail)
            }
            4 => {
                let (&[conn, kind], tail) = data.split_first_chunk::<2>()?;
                let (request, tail) = local_request(kind, tail);
                self.core
                    .handle_local(now, u64::from(conn % 4), u32::from(kind), request);
                Some(tail)
            }
            5 => {
                let (&conn, tail) = data.split_first()?;
                self.core.handle_local_closed(now, u64::from(conn % 4));
                Some(tail)
            }
            op => {
                // 6 and 7: the master answers a request of the core's.
                let (&[which, status], tail) = data.split_first_chunk::<2>()?;
                let (answer_data, tail) = framed(tail)?;
                if !self.requests.is_empty() {
                    let back = usize::from(which) % self.requests.len();
                    let request = &self.requests[self.requests.len() - 1 - back];
                    let received = answer(&self.port, request, status, answer_data, op == 7);
                    self.core.handle_mad(now, received);
                }
                Some(tail)
            }
        }
    }

    /// Takes every MAD the core wants sent and checks it; remembers its
    /// requests to the master.
    fn drain(&mut self) {
        let mut n = 0;
        while let Some(t) = self.core.poll_transmit() {
            n += 1;
            assert!(t.mad.len() <= MAD_LEN, "a {}-byte MAD to send", t.mad.len());
            assert!(t.dest.lid != 0, "a MAD to LID 0");
            assert!(n <= MAX_BURST, "more than {MAX_BURST} MADs from one step");
            let is_request = t.timeout_ms > 0 && t.mad.len() >= SaMadHeader::LEN;
            if t.dest == self.port.master() && is_request {
                if self.requests.len() == REMEMBERED {
                    self.requests.remove(0);
                }
                self.requests.push(t.mad);
            }
        }
    }

    /// Shuts down and lets every timer run out: nothing may be left.
    fn shut_down(&mut self) {
        self.core.begin_shutdown(self.now);
        self.drain();
        for _ in 0..120 {
            self.now += Duration::from_secs(1);
            self.core.handle_timeout(self.now);
            self.drain();
        }
        while self.core.poll_local().is_some() {}
        let c = self.core.counters();
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
}

/// A 2-byte length and that many bytes (fewer if the input ends).
fn framed(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, tail) = data.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
    Some(tail.split_at(len))
}

/// The master's answer to `request`: its headers with the response
/// method, `status` (shifted into the SA's status bits) and `data`; cut as
/// the simulator cuts a multi-MAD answer when `cut`.
fn answer(port: &PortIdentity, request: &Bytes, status: u8, data: &[u8], cut: bool) -> Received {
    let mut header = SaMadHeader::new_zeroed();
    header
        .as_mut_bytes()
        .copy_from_slice(&request[..SaMadHeader::LEN]);
    header.mad.set_method(header.mad.method().response());
    header
        .mad
        .set_status(mad_codec::MadStatus(u16::from(status) << 8));
    header
        .sa
        .set_attribute_offset(header.sa.attribute_offset().max(1));
    if cut {
        header.rmpp = RmppHeader::new(RmppType::NONE, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
    }
    let mut mad = BytesMut::from(header.as_bytes());
    mad.extend_from_slice(data);
    if cut {
        mad.resize(MAD_LEN, 0xA5);
    }
    mad.truncate(MAD_LEN);
    Received {
        cut: cut.then_some(224),
        ..Received::new(port.master(), mad.freeze())
    }
}

/// Takes `N` bytes from `data` (zero-filled past its end).
fn take<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut out = [0u8; N];
    let n = data.len().min(N);
    out[..n].copy_from_slice(&data[..n]);
    (out, &data[n..])
}

/// A local request of `kind` read from `data`.
fn local_request(kind: u8, data: &[u8]) -> (Request, &[u8]) {
    match kind % 7 {
        0 => {
            let (mask, data) = take::<8>(data);
            let (t, data) = take::<64>(data);
            let method = if mask[0] & 1 == 0 {
                Method::GET
            } else {
                Method::GET_TABLE
            };
            // The mask's top byte selects no PathRecord field: it picks
            // the method and the lookup.
            let lookup = match (mask[0] >> 1) % 4 {
                0 => Lookup::Anywhere,
                1 => Lookup::CacheOnly,
                2 => Lookup::KnownOnly,
                _ => Lookup::Master,
            };
            let template =
                PathRecord::read_from_bytes(&t).unwrap_or_else(|_| PathRecord::new_zeroed());
            (
                Request::PathQuery {
                    query: PathQuery {
                        method,
                        mask: ComponentMask(u64::from_be_bytes(mask)),
                        template,
                    },
                    lookup,
                },
                data,
            )
        }
        1 => {
            let (ii, data) = take::<36>(data);
            (
                Request::Inform(
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
                Request::Join { mask, record }
            } else {
                Request::Leave { mask, record }
            };
            (request, data)
        }
        4 => (Request::ListSubscriptions, data),
        5 => (Request::ListGroups, data),
        _ => (Request::Hello, data),
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
        sa_core(&script);
        sa_core(&[]);
        sa_core(&[0, 1, 0xFF, 0xFF]);
        sa_core(&(0..=255).collect::<Vec<u8>>());
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
        sa_core(&script);
    }

    #[test]
    fn the_master_answers_what_the_core_asked() {
        // At start the core asks for the master's activity, its
        // ClassPortInfo and its paths, and nothing else until they are
        // in: answering the paths (the newest request) with three of them
        // makes it ready.
        let paths: Vec<u8> = (3..6u16)
            .flat_map(|dlid| {
                let mut r = PathRecord::new_zeroed();
                r.set_sgid(port(1, 2).gid);
                r.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(dlid)));
                r.set_slid(2);
                r.set_dlid(dlid);
                r.as_bytes().to_vec()
            })
            .collect();
        let s = Script::play(&[0u8, 0]);
        assert_eq!(s.requests.len(), 3, "the core's requests at start");
        let mut script = vec![6, 0, 0, 192, 0];
        script.extend(&paths);
        // Within a second (the start's window on a fabric this small):
        // traps 64, 65 and 128, the canary and the two names tables; the
        // master answers them all, and the ClassPortInfo from the start.
        script.extend([2, 0xE8, 0x03]);
        for back in 0..8 {
            script.extend([6, back, 0, 0, 0]);
        }
        let mut s = Script::play(&script);
        assert!(s.core.is_ready());
        let c = s.core.counters();
        assert_eq!((c.records, c.refreshes, c.upstream_in_flight), (3, 1, 0));
        s.shut_down();
    }
}
