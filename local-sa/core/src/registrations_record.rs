//! What an agent asked the master SA to hold for its port — notice
//! subscriptions and multicast JoinState bits — kept by the daemon in a
//! file beside the port's lock, so that the next agent on the port can
//! remove what one that ended without withdrawing it (SIGKILL, a crash)
//! left at the master. The master cannot tell which of a port's
//! registrations an agent made: the kernel's IPoIB and rdma_cm join
//! through the same port GID, and a port's InformInfoRecords carry no
//! mark of who asked. This record is that mark.
//!
//! The text form, one item per line, `#` starting a comment:
//!
//! ```text
//! port fe80::2:c903:0:1
//! subscription 0000…ffff   # generic trap 64, …  (the InformInfo, hex)
//! group ff12:601b:ffff::1 0x1
//! ```
//!
//! Written before the requests it lists are sent: it may list more than
//! the master holds (removing those is harmless), never less.

use std::fmt::Write as _;

use informinfo::Filter;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, InformInfo, InformInfoRepr, JoinState};

/// The file's opening comment.
const HEADER: &str = "# local-sa: what this port's agent asked the master SA to hold.\n\
# The next local-sa on this port removes whatever is listed here that\n\
# nobody on the node holds any more. Do not edit.\n";

/// An agent's registrations at the master.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registrations {
    /// The port they were made for.
    pub port_gid: Gid,
    /// Notice subscriptions.
    pub subscriptions: Vec<Filter>,
    /// Multicast groups and the JoinState bits the agent added.
    pub groups: Vec<(Gid, JoinState)>,
}

/// A line of a registrations file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

impl Registrations {
    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.subscriptions.is_empty() && self.groups.is_empty()
    }

    /// The text form (see the module docs).
    pub fn to_text(&self) -> String {
        let mut s = String::from(HEADER);
        let _ = writeln!(s, "port {}", self.port_gid);
        for f in &self.subscriptions {
            let wire = f.inform_info(true, 0, 0).to_wire();
            let hex: String = wire.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(s, "subscription {hex}   # {f}");
        }
        for (mgid, bits) in &self.groups {
            let _ = writeln!(s, "group {mgid} {:#x}   # {bits}", bits.0);
        }
        s
    }

    /// Reads the text form.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut r = Self::default();
        let mut port = None;
        for (i, raw) in text.lines().enumerate() {
            let bad = |message: String| ParseError {
                line: i + 1,
                message,
            };
            let line = raw.split('#').next().unwrap_or_default().trim();
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next(), words.next()) {
                (None, ..) => {}
                (Some("port"), Some(gid), None, None) => {
                    port = Some(gid.parse().map_err(|_| bad(format!("not a GID: {gid}")))?);
                }
                (Some("subscription"), Some(hex), None, None) => {
                    r.subscriptions.push(
                        filter_from_hex(hex)
                            .ok_or_else(|| bad(format!("not an InformInfo in hex: {hex}")))?,
                    );
                }
                (Some("group"), Some(mgid), Some(bits), None) => {
                    let mgid: Gid = mgid
                        .parse()
                        .map_err(|_| bad(format!("not a GID: {mgid}")))?;
                    let bits = join_bits(bits)
                        .filter(|b| *b <= 0xF)
                        .ok_or_else(|| bad(format!("not a JoinState: {bits}")))?;
                    r.groups.push((mgid, JoinState(bits)));
                }
                _ => return Err(bad(format!("unknown line: {line:?}"))),
            }
        }
        r.port_gid = port.ok_or(ParseError {
            line: 0,
            message: "no `port` line".to_owned(),
        })?;
        Ok(r)
    }
}

/// JoinState bits as `save` writes them (`0x1`), or in decimal.
fn join_bits(text: &str) -> Option<u8> {
    match text.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The filter of an InformInfo written in hex.
fn filter_from_hex(hex: &str) -> Option<Filter> {
    if hex.len() != 2 * InformInfo::LEN || !hex.is_ascii() {
        return None;
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect::<Option<_>>()?;
    let wire = InformInfo::read_from_bytes(&bytes).ok()?;
    // Recorded subscriptions were accepted once: no check refuses them.
    Filter::of(&InformInfoRepr::parse(&wire), true).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_codec::TrapNumber;

    fn sample() -> Registrations {
        let ii = InformInfoRepr::generic_subscription(TrapNumber(64), true, 1, 19);
        let vendor = InformInfoRepr {
            is_generic: 0,
            trap_number: 0x1234,
            producer_type: 0x02C9,
            ..ii
        };
        Registrations {
            port_gid: Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0001),
            subscriptions: vec![
                Filter::of(&ii, false).unwrap(),
                Filter::of(&vendor, false).unwrap(),
            ],
            groups: vec![
                (Gid::new(0xff12_601b_ffff_0000, 1), JoinState::FULL_MEMBER),
                (
                    Gid::new(0xff12_401b_ffff_0000, 0xFFFF_FFFF),
                    JoinState::NON_MEMBER | JoinState::SEND_ONLY_NON_MEMBER,
                ),
            ],
        }
    }

    #[test]
    fn the_text_form_reads_back_the_same() {
        let r = sample();
        let text = r.to_text();
        assert!(text.contains("generic trap 64"), "{text}");
        assert_eq!(Registrations::parse(&text), Ok(r));
    }

    #[test]
    fn bad_files_say_which_line() {
        let e = Registrations::parse("port ::1\ngroup ff12::1 0x10\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Registrations::parse("port ::1\nsubscription 00ff\n").unwrap_err();
        assert!(e.message.contains("InformInfo"), "{e}");
        let e = Registrations::parse("group ff12::1 0x1\n").unwrap_err();
        assert!(e.message.contains("port"), "{e}");
        assert!(Registrations::parse("port ::1\nsomething else\n").is_err());
        let e = Registrations::parse("port ::1\ngroup ff12::1 0xz\n").unwrap_err();
        assert!(e.message.contains("JoinState"), "{e}");
    }

    #[test]
    fn join_states_may_be_written_in_decimal_too() {
        let r = Registrations::parse("port ::1\ngroup ff12::1 0x8\ngroup ff12::2 3\n").unwrap();
        let bits: Vec<u8> = r.groups.iter().map(|(_, j)| j.0).collect();
        assert_eq!(bits, [8, 3]);
    }
}
