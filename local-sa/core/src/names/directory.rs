//! The host directory local-sa keeps at the master SA: every local-sa
//! publishes one ServiceRecord per port with its host name and IP
//! addresses, and every local-sa reads them all back with one GetTable,
//! so that names and IPs resolve to GIDs on every node without hosts
//! files (see `docs/acm.md`, "The directory record", for the contract).
//!
//! The record, as the master stores it (its identity is ServiceID +
//! ServiceGID + ServiceP_Key, so there is one per port):
//!
//! | field            | value                                                    |
//! |------------------|----------------------------------------------------------|
//! | ServiceID        | `0x4C4F_4341_4C53_4102` ("LOCALSA", 0x02)                |
//! | ServiceGID       | the port's GID                                           |
//! | ServiceP_Key     | `0xFFFF`                                                 |
//! | ServiceLease     | seconds; renewed by the publisher at every refresh       |
//! | ServiceKey       | zero                                                     |
//! | ServiceName      | the host name, NUL-terminated (at most 63 bytes)         |
//! | ServiceData8, 16, 32 (48 bytes in wire order) | up to three IP addresses, 16 bytes each, as IPv6 in network order; IPv4 as IPv4-mapped (`::ffff:a.b.c.d`); unused slots all zero |
//! | ServiceData64    | reserved: zero when written, ignored when read           |
//!
//! Data64 stays out of the address slots because the last 24 bytes of an
//! SA MAD are the first a short-cutting transport loses (the simulated
//! fabric delivers garbage from MAD offset 224 on, which is `Data64[1]`):
//! a reader that must not trust them loses nothing.
//! Pure functions of their input: the agent's `names` module sends and
//! receives them.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use mad_codec::attr::service_record::mask as sr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{ComponentMask, Gid, ServiceRecord};

use crate::names::hosts::{HostAddress, MAX_NAME_LEN, NameSource, Names};

/// The directory records' ServiceID ("LOCALSA" in ASCII, then 2).
pub const SERVICE_ID: u64 = 0x4C4F_4341_4C53_4102;

/// The ServiceP_Key of every directory record.
pub const SERVICE_PKEY: u16 = 0xFFFF;

/// How many addresses one record carries (Data8, Data16 and Data32: 48
/// bytes, 16 each).
pub const MAX_ADDRESSES: usize = 3;

/// The component mask of a directory record's Set: every field it
/// defines, all 64 data bytes included.
pub fn set_mask() -> ComponentMask {
    let mut mask =
        sr::SERVICE_ID | sr::SERVICE_GID | sr::SERVICE_PKEY | sr::SERVICE_LEASE | sr::SERVICE_NAME;
    for i in 0..16 {
        mask |= sr::data8(i);
    }
    for i in 0..8 {
        mask |= sr::data16(i);
    }
    for i in 0..4 {
        mask |= sr::data32(i);
    }
    mask | sr::data64(0) | sr::data64(1)
}

/// The port `gid`'s record as far as its identity goes — the directory's
/// ServiceID, the GID and [`SERVICE_PKEY`] — and the mask selecting those:
/// what one port's record is asked for (a Get) or withdrawn with (a
/// Delete).
pub fn record_of(gid: Gid) -> (ComponentMask, ServiceRecord) {
    let mut r = ServiceRecord::new_zeroed();
    r.set_service_id(SERVICE_ID);
    r.set_service_gid(gid);
    r.set_service_pkey(SERVICE_PKEY);
    (sr::SERVICE_ID | sr::SERVICE_GID | sr::SERVICE_PKEY, r)
}

/// What a port publishes: its host's name and addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    host_name: String,
    addresses: Vec<IpAddr>,
}

/// Why a publication cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicationError {
    /// The host name is empty, too long, or has spaces or NULs.
    BadName(String),
    /// More addresses than a record carries.
    TooManyAddresses(usize),
    /// `::` or `0.0.0.0`, which mark unused slots.
    Unspecified,
}

impl fmt::Display for PublicationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadName(n) => write!(
                f,
                "{n:?} cannot be published as a host name (1 to {MAX_NAME_LEN} bytes, no spaces)"
            ),
            Self::TooManyAddresses(n) => write!(
                f,
                "{n} addresses given; a port publishes at most {MAX_ADDRESSES}"
            ),
            Self::Unspecified => f.write_str("the unspecified address cannot be published"),
        }
    }
}

impl std::error::Error for PublicationError {}

impl Publication {
    /// A publication of `host_name` with `addresses` (IPv4 and IPv6).
    pub fn new(host_name: &str, addresses: Vec<IpAddr>) -> Result<Self, PublicationError> {
        if host_name.is_empty()
            || host_name.len() > MAX_NAME_LEN
            || host_name
                .chars()
                .any(|c| c.is_whitespace() || c == '\0' || c == '#')
        {
            return Err(PublicationError::BadName(host_name.to_owned()));
        }
        if addresses.len() > MAX_ADDRESSES {
            return Err(PublicationError::TooManyAddresses(addresses.len()));
        }
        if addresses.iter().any(IpAddr::is_unspecified) {
            return Err(PublicationError::Unspecified);
        }
        Ok(Self {
            host_name: host_name.to_owned(),
            addresses,
        })
    }

    /// The host name.
    pub fn host_name(&self) -> &str {
        &self.host_name
    }

    /// The addresses.
    pub fn addresses(&self) -> &[IpAddr] {
        &self.addresses
    }

    /// The record the port with `gid` registers, with a lease of
    /// `lease_secs`.
    pub fn record(&self, gid: Gid, lease_secs: u32) -> ServiceRecord {
        let (_, mut r) = record_of(gid);
        r.set_service_lease(lease_secs);
        r.set_service_name(&self.host_name);
        let mut data = [0u8; 64];
        for (slot, ip) in data.chunks_exact_mut(16).zip(&self.addresses) {
            let v6 = match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => *v6,
            };
            slot.copy_from_slice(&v6.octets());
        }
        r.set_data_bytes(&data);
        r
    }

    /// The port and publication a record carries, or `None` if it is not
    /// a directory record or its name is not one a publisher could give.
    pub fn from_record(r: &ServiceRecord) -> Option<(Gid, Self)> {
        if r.service_id() != SERVICE_ID {
            return None;
        }
        let addresses = r.data_bytes()[..16 * MAX_ADDRESSES]
            .chunks_exact(16)
            .filter_map(|slot| {
                let v6 = Ipv6Addr::from(<[u8; 16]>::try_from(slot).ok()?);
                if v6.is_unspecified() {
                    return None;
                }
                Some(match v6.to_ipv4_mapped() {
                    Some(v4) => IpAddr::V4(v4),
                    None => IpAddr::V6(v6),
                })
            })
            .collect();
        let p = Self::new(&r.service_name(), addresses).ok()?;
        Some((r.service_gid(), p))
    }

    /// Adds the publication's name and addresses, naming `gid`, to `names`.
    pub fn add_to(&self, gid: Gid, names: &mut Names) {
        names.insert(
            HostAddress::Name(self.host_name.clone()),
            gid,
            NameSource::Directory,
        );
        for ip in &self.addresses {
            names.insert(HostAddress::Ip(*ip), gid, NameSource::Directory);
        }
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::IntoBytes;

    use super::*;

    fn gid() -> Gid {
        Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_1234)
    }

    #[test]
    fn a_publication_round_trips_through_its_record() {
        let addrs: Vec<IpAddr> = vec!["10.1.2.3".parse().unwrap(), "fd00::7".parse().unwrap()];
        let p = Publication::new("node017", addrs.clone()).unwrap();
        let r = p.record(gid(), 1800);
        let bytes = r.as_bytes();
        assert_eq!(&bytes[..8], &SERVICE_ID.to_be_bytes());
        assert_eq!(&bytes[48..56], b"node017\0");
        assert_eq!(
            &bytes[112..128],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 1, 2, 3],
            "IPv4 travels IPv4-mapped in slot 0"
        );
        assert_eq!(&bytes[144..176], &[0; 32], "slot 2 unused, Data64 zero");
        assert_eq!(r.service_lease(), 1800);
        let (g, back) = Publication::from_record(&r).unwrap();
        assert_eq!(g, gid());
        assert_eq!(back, p);
        assert_eq!(back.addresses(), &addrs[..]);
    }

    #[test]
    fn bad_publications_are_refused_with_the_reason() {
        assert!(matches!(
            Publication::new("", vec![]),
            Err(PublicationError::BadName(_))
        ));
        assert!(Publication::new("two words", vec![]).is_err());
        assert!(Publication::new(&"x".repeat(64), vec![]).is_err());
        let four = vec!["10.0.0.1".parse().unwrap(); 4];
        let e = Publication::new("h", four).unwrap_err();
        assert_eq!(
            e.to_string(),
            "4 addresses given; a port publishes at most 3"
        );
        assert_eq!(
            Publication::new("h", vec!["0.0.0.0".parse().unwrap()]),
            Err(PublicationError::Unspecified)
        );
    }

    #[test]
    fn data64_is_ignored_when_read() {
        let p = Publication::new("h", vec!["10.0.0.1".parse().unwrap()]).unwrap();
        let mut r = p.record(gid(), 60);
        r.set_data64([0x3001, u64::MAX]);
        assert_eq!(
            Publication::from_record(&r).map(|(_, p)| p.addresses().len()),
            Some(1)
        );
    }

    #[test]
    fn other_records_are_not_directory_entries() {
        let p = Publication::new("h", vec![]).unwrap();
        let mut r = p.record(gid(), 60);
        r.set_service_id(SERVICE_ID - 1);
        assert_eq!(Publication::from_record(&r), None);
        let mut r = p.record(gid(), 60);
        r.set_service_name("");
        assert_eq!(Publication::from_record(&r), None, "no name");
    }

    #[test]
    fn the_set_mask_covers_every_defined_field_but_the_key() {
        let m = set_mask();
        assert!(m.contains(sr::SERVICE_NAME) && m.contains(sr::data64(1)));
        assert!(!m.contains(sr::SERVICE_KEY));
    }
}
