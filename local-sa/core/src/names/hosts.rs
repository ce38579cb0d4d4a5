//! Names and IP addresses of hosts and of this node's endpoints, as
//! ibacm's two files give them:
//!
//! * the hosts file (`ibacm_hosts.data`): `address GID` — a host name, an
//!   IPv4 or an IPv6 address of a remote (or local) port;
//! * the address file (`ibacm_addr.cfg`): `address device port pkey` — the
//!   names and addresses of this node's endpoints (`pkey` is hex or
//!   `default`, the first entry of the port's P_Key table).
//!
//! `#` starts a comment where it starts a word; blank lines are skipped.
//! Errors name the line. Reading the files is the daemon's job: these are
//! pure functions of their text.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use mad_codec::Gid;

/// The longest name: names travel NUL-terminated in ibacm's 64-byte
/// address fields.
pub const MAX_NAME_LEN: usize = 63;

/// What a client names a host's endpoint by, as ibacm's address types:
/// a host name, an IP address, a port GID or a LID. (Not a MAD's address:
/// that is [`mad_codec::address::Address`].)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostAddress {
    /// A host name.
    Name(String),
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A port GID.
    Gid(Gid),
    /// A LID.
    Lid(u16),
}

impl fmt::Display for HostAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Ip(ip) => write!(f, "{ip}"),
            Self::Gid(gid) => write!(f, "{gid}"),
            Self::Lid(lid) => write!(f, "LID {lid}"),
        }
    }
}

/// Where a host's name or address came from (shown to operators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameSource {
    /// The hosts file.
    HostsFile,
    /// A port's NodeDescription at the master SA (its first word).
    NodeDescription,
    /// A local-sa's record in the directory at the master SA.
    Directory,
}

/// What names and addresses map to which GIDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    hosts: HashMap<HostAddress, (Gid, NameSource)>,
}

impl Names {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) what `address` maps to.
    pub fn insert(&mut self, address: HostAddress, gid: Gid, source: NameSource) {
        self.hosts.insert(address, (gid, source));
    }

    /// Adds what `address` maps to unless it already maps to something.
    pub fn insert_if_absent(&mut self, address: HostAddress, gid: Gid, source: NameSource) {
        self.hosts.entry(address).or_insert((gid, source));
    }

    /// Adds every entry of `other` that this table does not have.
    pub fn fill_from(&mut self, other: &Self) {
        for (address, entry) in &other.hosts {
            self.hosts.entry(address.clone()).or_insert(*entry);
        }
    }

    /// The GID `address` names: a GID is itself; a name or IP address is
    /// looked up. Names compare exactly (host names are case-sensitive in
    /// ibacm's files too).
    pub fn resolve(&self, address: &HostAddress) -> Option<Gid> {
        match address {
            HostAddress::Gid(gid) => Some(*gid),
            HostAddress::Lid(_) => None,
            other => self.hosts.get(other).map(|(gid, _)| *gid),
        }
    }

    /// What `address` maps to and where that came from.
    pub fn lookup(&self, address: &HostAddress) -> Option<(Gid, NameSource)> {
        self.hosts.get(address).copied()
    }

    /// Every name and address, what it maps to and where that came from
    /// (in no particular order).
    pub fn entries(&self) -> impl Iterator<Item = (&HostAddress, Gid, NameSource)> + '_ {
        self.hosts.iter().map(|(a, (g, s))| (a, *g, *s))
    }

    /// How many names and addresses are known.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }
}

/// A line of a file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// Its number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LineError {}

/// The words of each meaningful line, with its number.
fn lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let words: Vec<&str> = line
            .split_whitespace()
            .take_while(|w| !w.starts_with('#'))
            .collect();
        (!words.is_empty()).then_some((i + 1, words))
    })
}

/// The host name a NodeDescription gives: its first word, if it is one.
pub fn host_name(description: &str) -> Option<&str> {
    let word = description.split_whitespace().next()?;
    (word.len() <= MAX_NAME_LEN).then_some(word)
}

/// A word that is neither an IP address nor a host name: longer than a
/// name may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameTooLong(pub String);

impl fmt::Display for NameTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the name {:?} is longer than {MAX_NAME_LEN} bytes",
            self.0
        )
    }
}

impl std::error::Error for NameTooLong {}

/// A host name or an IP address as the files write them.
pub fn parse_address(word: &str) -> Result<HostAddress, NameTooLong> {
    if let Ok(ip) = word.parse::<IpAddr>() {
        return Ok(HostAddress::Ip(ip));
    }
    if word.len() > MAX_NAME_LEN {
        return Err(NameTooLong(word.to_owned()));
    }
    Ok(HostAddress::Name(word.to_owned()))
}

/// The entries of a hosts file: `address GID` per line.
pub fn parse_hosts(text: &str) -> Result<Vec<(HostAddress, Gid)>, LineError> {
    lines(text)
        .map(|(line, words)| {
            let err = |message: String| LineError { line, message };
            let [address, gid] = words[..] else {
                return Err(err(format!(
                    "expected `address GID`, found {} words",
                    words.len()
                )));
            };
            let gid = gid
                .parse::<Gid>()
                .map_err(|e| err(format!("{gid:?} is not a GID: {e}")))?;
            Ok((parse_address(address).map_err(|e| err(e.to_string()))?, gid))
        })
        .collect()
}

/// Which P_Key an address-file line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PkeyChoice {
    /// The first entry of the port's P_Key table.
    Default,
    /// This P_Key (the membership bit is ignored when matching).
    Value(u16),
}

/// One line of an address file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalAddress {
    /// The name or address.
    pub address: HostAddress,
    /// The adapter's name (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u8,
    /// The endpoint's P_Key.
    pub pkey: PkeyChoice,
}

/// The entries of an address file: `address device port pkey` per line.
pub fn parse_addr_file(text: &str) -> Result<Vec<LocalAddress>, LineError> {
    lines(text)
        .map(|(line, words)| {
            let err = |message: String| LineError { line, message };
            let [address, device, port, pkey] = words[..] else {
                return Err(err(format!(
                    "expected `address device port pkey`, found {} words",
                    words.len()
                )));
            };
            let port = port
                .parse::<u8>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| err(format!("{port:?} is not a port number (1-255)")))?;
            let pkey = if pkey.eq_ignore_ascii_case("default") {
                PkeyChoice::Default
            } else {
                let hex = pkey
                    .strip_prefix("0x")
                    .or_else(|| pkey.strip_prefix("0X"))
                    .unwrap_or(pkey);
                PkeyChoice::Value(
                    u16::from_str_radix(hex, 16)
                        .map_err(|_| err(format!("{pkey:?} is not a P_Key (hex, or `default`)")))?,
                )
            };
            Ok(LocalAddress {
                address: parse_address(address).map_err(|e| err(e.to_string()))?,
                device: device.to_owned(),
                port,
                pkey,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_description_names_its_host_by_its_first_word() {
        assert_eq!(host_name("node17 mlx5_0"), Some("node17"));
        assert_eq!(host_name("H4_1"), Some("H4_1"));
        assert_eq!(host_name("   "), None);
        assert_eq!(host_name(&"x".repeat(64)), None);
    }

    #[test]
    fn hosts_files_map_names_and_addresses_to_gids() {
        let text = "# comment\n\nluna3 fe80::8:f104:39a:169\n192.168.1.3 fe80::8:f104:39a:169 # same\nfe80::208:f104:39a:169 fe80::8:f104:39a:169\n";
        let entries = parse_hosts(text).unwrap();
        let gid: Gid = "fe80::8:f104:39a:169".parse().unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0], (HostAddress::Name("luna3".into()), gid));
        assert_eq!(
            entries[1],
            (HostAddress::Ip("192.168.1.3".parse().unwrap()), gid)
        );
        let mut names = Names::new();
        for (a, g) in entries {
            names.insert(a, g, NameSource::HostsFile);
        }
        assert_eq!(names.resolve(&HostAddress::Name("luna3".into())), Some(gid));
        assert_eq!(names.resolve(&HostAddress::Name("LUNA3".into())), None);
        assert_eq!(names.resolve(&HostAddress::Gid(gid)), Some(gid));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_hosts("a fe80::1\nb nonsense\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("not a GID"), "{e}");
        let e = parse_hosts("only-one-word\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1: expected `address GID`, found 1 words"
        );
        let long = "x".repeat(64);
        assert!(parse_hosts(&format!("{long} fe80::1")).is_err());
    }

    #[test]
    fn address_files_name_local_endpoints() {
        let text = "node31 mlx4_0 1 default\nnode31-1 mlx4_0 1 0x00FF\n10.0.0.1 mlx4_0 2 8001\n";
        let a = parse_addr_file(text).unwrap();
        assert_eq!(a[0].pkey, PkeyChoice::Default);
        assert_eq!(a[1].pkey, PkeyChoice::Value(0x00FF));
        assert_eq!((a[2].port, a[2].pkey), (2, PkeyChoice::Value(0x8001)));
        let e = parse_addr_file("n mlx4_0 0 default\n").unwrap_err();
        assert!(e.message.contains("port number"), "{e}");
        let e = parse_addr_file("n mlx4_0 1 0xZZ\n").unwrap_err();
        assert!(e.message.contains("P_Key"), "{e}");
    }
}
