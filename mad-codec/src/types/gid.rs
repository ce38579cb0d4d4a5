use core::{fmt, str::FromStr};
use std::net::Ipv6Addr;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// A 128-bit Global Identifier: a 64-bit subnet prefix and a 64-bit
/// interface ID (the port GUID), in network byte order.
///
/// Displayed and parsed in IPv6 notation, as saquery prints it
/// (`fe80::2:c903:a:b`).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(transparent)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The all-zero GID.
    pub const ZERO: Self = Self([0; 16]);

    /// The default link-local subnet prefix, fe80::/64.
    pub const DEFAULT_PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// Builds a GID from a subnet prefix and a port GUID.
    pub const fn new(prefix: u64, guid: u64) -> Self {
        let p = prefix.to_be_bytes();
        let g = guid.to_be_bytes();
        Self([
            p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], g[0], g[1], g[2], g[3], g[4], g[5],
            g[6], g[7],
        ])
    }

    /// The subnet prefix (upper 64 bits).
    pub const fn prefix(&self) -> u64 {
        let b = &self.0;
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// The interface ID (lower 64 bits): the port GUID for a port GID.
    pub const fn guid(&self) -> u64 {
        let b = &self.0;
        u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]])
    }

    /// True for the all-zero GID.
    pub const fn is_zero(&self) -> bool {
        self.prefix() == 0 && self.guid() == 0
    }

    /// True for a multicast GID (first byte 0xFF).
    pub const fn is_multicast(&self) -> bool {
        self.0[0] == 0xFF
    }

    /// True for a link-local prefix (fe80::/10).
    pub const fn is_link_local(&self) -> bool {
        self.0[0] == 0xFE && self.0[1] & 0xC0 == 0x80
    }
}

impl From<Ipv6Addr> for Gid {
    fn from(addr: Ipv6Addr) -> Self {
        Self(addr.octets())
    }
}

impl From<Gid> for Ipv6Addr {
    fn from(gid: Gid) -> Self {
        Self::from(gid.0)
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv6Addr::from(*self), f)
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A GID string that is not valid IPv6 notation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseGidError(String);

impl fmt::Display for ParseGidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid GID {:?}: expected IPv6 notation such as fe80::2:c903:a:b",
            self.0
        )
    }
}

impl std::error::Error for ParseGidError {}

impl FromStr for Gid {
    type Err = ParseGidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<Ipv6Addr>()
            .map(Self::from)
            .map_err(|_| ParseGidError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::Gid;

    #[test]
    fn prefix_and_guid() {
        let gid = Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_000a_000b);
        assert_eq!(gid.prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(gid.guid(), 0x0002_c903_000a_000b);
        assert_eq!(gid.to_string(), "fe80::2:c903:a:b");
        assert_eq!("fe80::2:c903:a:b".parse::<Gid>().unwrap(), gid);
        assert!(gid.is_link_local());
        assert!(!gid.is_multicast());
    }

    #[test]
    fn bad_text_is_a_clear_error() {
        let err = "fe80::zz".parse::<Gid>().unwrap_err();
        assert!(err.to_string().contains("fe80::zz"));
    }
}
