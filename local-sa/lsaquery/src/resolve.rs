//! `--resolve`: a destination's path set through the ibacm protocol, as
//! `ib_acme` asks for it, from local-sa's ibacm socket (or ibacm's).
//!
//! The destination (and `--source`) is read as a LID if it is a number, an
//! IPv4 address, a GID if it is an IPv6 address in the link-local IB
//! subnet (`fe80::/64`) and an IPv6 address otherwise, else a host name;
//! `--resolve-as` says which when that guess is wrong.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;
use local_sa_cli::number;
use local_sa_core::doors::acm::wire::{self, Entry, Header, Opcode, Status, flags};
use local_sa_core::names::hosts::{HostAddress, MAX_NAME_LEN};
use local_sa_core::path_flags;
use mad_codec::Gid;
use serde::Serialize;

use crate::json::{self, JSON_SCHEMA};
use crate::print::{self, Printed};
use crate::stop::Stop;

/// ibacm's socket for ib_acme, where local-sa serves by default.
pub(crate) const DEFAULT_SOCKET: &str = "/run/ibacm-unix.sock";

/// How to read a destination or source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AddressKind {
    /// A host name.
    Name,
    /// An IPv4 or IPv6 address.
    Ip,
    /// A port GID.
    Gid,
    /// A LID.
    Lid,
}

/// `text` as an address of `kind`, or of the kind it looks like.
pub(crate) fn parse(text: &str, kind: Option<AddressKind>) -> Result<HostAddress, String> {
    let as_gid = |t: &str| {
        t.parse::<Gid>()
            .map(HostAddress::Gid)
            .map_err(|e| format!("{t:?} is not a GID: {e}"))
    };
    let as_name = |t: &str| {
        if t.is_empty() || t.len() > MAX_NAME_LEN {
            Err(format!(
                "{t:?} is not a host name (1 to {MAX_NAME_LEN} bytes)"
            ))
        } else {
            Ok(HostAddress::Name(t.to_owned()))
        }
    };
    match kind {
        Some(AddressKind::Name) => as_name(text),
        Some(AddressKind::Ip) => text
            .parse::<IpAddr>()
            .map(HostAddress::Ip)
            .map_err(|_| format!("{text:?} is not an IP address")),
        Some(AddressKind::Gid) => as_gid(text),
        Some(AddressKind::Lid) => number::<u16>(text)
            .map(HostAddress::Lid)
            .map_err(|e| format!("{text:?} is not a LID: {e}")),
        None => {
            if let Ok(lid) = number::<u16>(text) {
                return Ok(HostAddress::Lid(lid));
            }
            match text.parse::<IpAddr>() {
                Ok(IpAddr::V6(v6)) if v6.segments()[..4] == [0xfe80, 0, 0, 0] => as_gid(text),
                Ok(ip) => Ok(HostAddress::Ip(ip)),
                Err(_) => as_name(text),
            }
        }
    }
}

/// The RESOLVE message for `dest` from `source`.
fn request(
    dest: &HostAddress,
    source: Option<&HostAddress>,
    cached_only: bool,
    tid: u64,
) -> Vec<u8> {
    let mut dest_flags = flags::DEST;
    if cached_only {
        dest_flags |= flags::NODELAY;
    }
    let mut entries = vec![Entry::for_address(dest_flags, dest)];
    if let Some(s) = source {
        entries.push(Entry::for_address(flags::SOURCE, s));
    }
    wire::request(Opcode::RESOLVE, [0; 3], &entries, tid).to_vec()
}

/// What a status means, for the error message.
pub(crate) fn meaning(status: Status) -> &'static str {
    match status {
        Status::ENODATA => "no path to it (or, with --cached-only, none cached)",
        Status::EDESTADDR => "the destination is not known (no such name, address or port)",
        Status::EDESTTYPE => "the server cannot resolve that kind of destination",
        Status::ESRCADDR => "the source is not one of this node's endpoints",
        Status::ESRCTYPE => "the server cannot use that kind of source",
        Status::ETIMEDOUT => "the master SA did not answer",
        Status::ENOMEM => "the server is out of resources (too many requests waiting)",
        _ => "the server refused the request",
    }
}

/// A path entry of `--resolve --json`.
#[derive(Serialize)]
struct ResolvedPath<'a> {
    schema: u32,
    path_flags: Vec<&'static str>,
    path: &'a Printed,
}

/// A source address entry of `--resolve --json`.
#[derive(Serialize)]
struct ResolvedSource {
    schema: u32,
    source: String,
}

/// The names of a PATH entry's flags.
fn flag_names(f: u32) -> Vec<&'static str> {
    [
        (path_flags::PRIMARY, "primary"),
        (path_flags::ALTERNATE, "alternate"),
        (path_flags::OUTBOUND, "outbound"),
        (path_flags::INBOUND, "inbound"),
        (path_flags::INBOUND_REVERSE, "inbound-reverse"),
        (path_flags::GMP, "gmp"),
    ]
    .into_iter()
    .filter(|(bit, _)| f & bit != 0)
    .map(|(_, name)| name)
    .collect()
}

/// A connection to an ibacm-protocol socket.
pub(crate) struct AcmConnection {
    stream: UnixStream,
    socket: std::path::PathBuf,
    next_tid: u64,
}

impl AcmConnection {
    /// Connects to `socket`; each answer is waited for at most `timeout`.
    pub(crate) fn open(socket: &Path, timeout: Duration) -> Result<Self, Stop> {
        let unreachable = |e: std::io::Error| {
            Stop::new(
                4,
                format!(
                    "cannot reach an ibacm service at {} ({e}); is local-sa (or ibacm) serving there? \
                     --acm-socket PATH names another",
                    socket.display()
                ),
            )
        };
        let stream = UnixStream::connect(socket).map_err(unreachable)?;
        stream
            .set_read_timeout(Some(timeout))
            .map_err(unreachable)?;
        Ok(Self {
            stream,
            socket: socket.to_owned(),
            next_tid: u64::from(std::process::id()) << 32,
        })
    }

    /// The entries of the answer to a RESOLVE of `dest` (a path set, and
    /// the source the server chose), or the status it was refused with.
    pub(crate) fn resolve(
        &mut self,
        dest: &HostAddress,
        source: Option<&HostAddress>,
        cached_only: bool,
    ) -> Result<Result<Vec<Entry>, Status>, Stop> {
        let tid = self.next_tid;
        self.next_tid += 1;
        let lost = |e: std::io::Error| {
            Stop::new(4, format!("no answer from {}: {e}", self.socket.display()))
        };
        self.stream
            .write_all(&request(dest, source, cached_only, tid))
            .map_err(lost)?;
        let mut head = [0u8; wire::HEADER_LEN];
        self.stream.read_exact(&mut head).map_err(lost)?;
        let len = wire::message_len(&head).map_err(|e| {
            Stop::new(
                4,
                format!("a malformed answer from {}: {e}", self.socket.display()),
            )
        })?;
        let mut body = vec![0u8; len - wire::HEADER_LEN];
        self.stream.read_exact(&mut body).map_err(lost)?;
        let header = Header::parse(&head);
        if header.status != Status::SUCCESS {
            return Ok(Err(header.status));
        }
        Ok(Ok(body
            .chunks_exact(wire::ENTRY_LEN)
            .filter_map(Entry::parse)
            .collect()))
    }
}

/// Asks `socket` for the path set to `dest` and prints it.
pub(crate) fn resolve(
    socket: &Path,
    dest: &HostAddress,
    source: Option<&HostAddress>,
    cached_only: bool,
    json: bool,
    timeout: Duration,
) -> Result<(), Stop> {
    let mut conn = AcmConnection::open(socket, timeout)?;
    let entries = conn
        .resolve(dest, source, cached_only)?
        .map_err(|status| Stop::new(1, format!("{dest}: {status} ({})", meaning(status))))?;
    let mut out = String::new();
    for e in &entries {
        if let Some(record) = e.path_record() {
            let printed = print::path_record(&record);
            if json {
                out.push_str(&json::line(&ResolvedPath {
                    schema: JSON_SCHEMA,
                    path_flags: flag_names(e.flags),
                    path: &printed,
                }));
                out.push('\n');
            } else {
                out.push_str(&format!("Path ({})\n", flag_names(e.flags).join(", ")));
                out.push_str(&printed.to_text());
            }
        } else if let Ok(a) = e.address() {
            if json {
                out.push_str(&json::line(&ResolvedSource {
                    schema: JSON_SCHEMA,
                    source: a.to_string(),
                }));
                out.push('\n');
            } else {
                out.push_str(&format!("Source: {a}\n"));
            }
        }
    }
    crate::stdout::write(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_read_as_what_they_look_like() {
        assert_eq!(parse("12", None), Ok(HostAddress::Lid(12)));
        assert_eq!(parse("0x1f", None), Ok(HostAddress::Lid(0x1f)));
        assert_eq!(
            parse("10.0.0.9", None),
            Ok(HostAddress::Ip("10.0.0.9".parse().unwrap()))
        );
        assert!(matches!(
            parse("fe80::2:c903:0:1", None),
            Ok(HostAddress::Gid(_))
        ));
        assert_eq!(
            parse("fd00::9", None),
            Ok(HostAddress::Ip("fd00::9".parse().unwrap()))
        );
        assert_eq!(
            parse("node17", None),
            Ok(HostAddress::Name("node17".into()))
        );
        assert_eq!(
            parse("12", Some(AddressKind::Name)),
            Ok(HostAddress::Name("12".into()))
        );
        assert!(
            parse("fe80::1", Some(AddressKind::Ip)).is_ok_and(|a| matches!(a, HostAddress::Ip(_)))
        );
        assert!(parse(&"x".repeat(64), None).is_err());
        assert!(parse("nonsense", Some(AddressKind::Gid)).is_err());
    }

    #[test]
    fn the_request_is_an_ibacm_resolve() {
        let m = request(
            &HostAddress::Lid(9),
            Some(&HostAddress::Name("me".into())),
            true,
            7,
        );
        assert_eq!(m.len(), wire::HEADER_LEN + 2 * wire::ENTRY_LEN);
        let parsed = wire::decode(&m).unwrap();
        assert_eq!(parsed.header.op(), Opcode::RESOLVE);
        assert_eq!(parsed.entries[0].flags, flags::DEST | flags::NODELAY);
        assert_eq!(parsed.entries[0].address(), Ok(HostAddress::Lid(9)));
        assert_eq!(parsed.entries[1].flags, flags::SOURCE);
    }

    #[test]
    fn path_flags_are_named() {
        assert_eq!(
            flag_names(path_flags::GMP | path_flags::PRIMARY | path_flags::BIDIRECTIONAL),
            ["primary", "outbound", "inbound-reverse", "gmp"]
        );
    }
}
