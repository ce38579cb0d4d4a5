//! A port's tables as kept across a restart (`<run-dir>/<ca>-<port>.tables`,
//! written by the daemon): the default table and the partition tables,
//! and the host names learnt from the master, stamped with what they were
//! valid for — the port's identity, its
//! master SM's LID, when they were written, whether the master applies
//! QoS, and the distributor's lease if one ran — and a digest of it all,
//! so that a file cut short by a crash is refused, not half used.
//!
//! No panic on any input: [`Kept::decode`] checks every length before it
//! reads.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "LSAKEPT1" | port GID (16) | LID u16 | LMC u8 | SM LID u16
//! | written (Unix seconds) u64 | master QoS u8 (0 unknown, 1 no, 2 yes)
//! | lease: distributor LID u16, end (Unix seconds) u64, length (s) u16
//!   (all 0: none) | tables u16
//! | per table: P_Key u16 (0: the default table) | records u32 | records × 64
//! | names known u8 (0: never fetched) | names u32
//! | per name: source u8 (1 NodeDescription, 2 directory)
//!   | GID (16) | kind u8 (0 name, 1 IPv4, 2 IPv6) | length u8 | bytes
//! | digest u64 (of everything before it)
//! ```

use std::net::IpAddr;

use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, PathRecord, SaRecord};

use crate::names::hosts::{HostAddress, MAX_NAME_LEN, NameSource};

const MAGIC: &[u8; 8] = b"LSAKEPT1";

/// The tables and what they were valid for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The port they are the tables of.
    pub gid: Gid,
    /// Its LID and LMC.
    pub lid: u16,
    /// Its LMC.
    pub lmc: u8,
    /// The master SM they came from (directly, or through a distributor).
    pub sm_lid: u16,
    /// When they were written, in Unix seconds.
    pub written: u64,
    /// Whether the master applies QoS, if it was known.
    pub master_qos: Option<bool>,
    /// The lease a distributor held: its LID, its end (Unix seconds) and
    /// its length (seconds).
    pub lease: Option<(u16, u64, u16)>,
    /// Each table: its partition's P_Key (`None`: the default table) and
    /// its records.
    pub tables: Vec<(Option<u16>, Vec<PathRecord>)>,
    /// The host names and addresses learnt from the master (names and IP
    /// addresses only), what each maps to and where it came from, if they
    /// had been fetched (or loaded) at all.
    pub names: Option<Vec<(HostAddress, Gid, NameSource)>>,
}

/// Why kept tables were not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptError {
    /// Not a kept-tables file (or another version of one).
    NotKeptTables,
    /// Shorter than it says, or longer.
    Truncated,
    /// Its digest does not match: damaged, or cut short by a crash.
    Damaged,
}

impl std::fmt::Display for KeptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotKeptTables => "not a kept-tables file of this version",
            Self::Truncated => "its length is not what it says",
            Self::Damaged => "its digest does not match (damaged, or cut short)",
        })
    }
}

impl std::error::Error for KeptError {}

/// Why a port does not take tables that were kept for it (read whole):
/// they are not what it would fetch now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotTaken {
    /// They are another port's: its GID, LID and LMC, then this port's.
    OtherPort {
        /// The kept tables' port.
        kept: (Gid, u16, u8),
        /// This port.
        port: (Gid, u16, u8),
    },
    /// They came from the master at `kept`; the master is at `now`.
    OtherMaster {
        /// The master's LID they came from.
        kept: u16,
        /// The master's LID now.
        now: u16,
    },
    /// They were kept `age_s` ago, longer than the refresh interval,
    /// and no lease runs.
    TooOld {
        /// Seconds since they were written.
        age_s: u64,
        /// The refresh interval, in seconds.
        max_s: u64,
    },
}

impl std::fmt::Display for NotTaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::OtherPort { kept, port } => write!(
                f,
                "they are the tables of {} at LID {} (LMC {}); this port is {} at LID {} (LMC {})",
                kept.0, kept.1, kept.2, port.0, port.1, port.2
            ),
            Self::OtherMaster { kept, now } => write!(
                f,
                "they came from the master at LID {kept}; the master is at LID {now} now"
            ),
            Self::TooOld { age_s, max_s } => write!(
                f,
                "they were kept {age_s} s ago, longer than the refresh interval ({max_s} s), and no lease runs"
            ),
        }
    }
}

impl std::error::Error for NotTaken {}

impl Kept {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let records: usize = self.tables.iter().map(|(_, r)| r.len()).sum();
        let mut out = Vec::with_capacity(64 + self.tables.len() * 6 + records * PathRecord::LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.gid.0);
        out.extend_from_slice(&self.lid.to_le_bytes());
        out.push(self.lmc);
        out.extend_from_slice(&self.sm_lid.to_le_bytes());
        out.extend_from_slice(&self.written.to_le_bytes());
        out.push(match self.master_qos {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        });
        let (lid, end, length) = self.lease.unwrap_or((0, 0, 0));
        out.extend_from_slice(&lid.to_le_bytes());
        out.extend_from_slice(&end.to_le_bytes());
        out.extend_from_slice(&length.to_le_bytes());
        let tables = u16::try_from(self.tables.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&tables.to_le_bytes());
        for (pkey, records) in self.tables.iter().take(usize::from(tables)) {
            out.extend_from_slice(&pkey.unwrap_or(0).to_le_bytes());
            let n = u32::try_from(records.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&n.to_le_bytes());
            for r in records.iter().take(n as usize) {
                out.extend_from_slice(r.as_bytes());
            }
        }
        out.push(u8::from(self.names.is_some()));
        let names: Vec<_> = self
            .names
            .iter()
            .flatten()
            .filter_map(|(a, g, s)| Some((name_bytes(a)?, *g, *s)))
            .collect();
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        for ((kind, bytes), gid, source) in names {
            out.push(match source {
                NameSource::Directory => 2,
                _ => 1,
            });
            out.extend_from_slice(&gid.0);
            out.push(kind);
            out.push(bytes.len() as u8);
            out.extend_from_slice(&bytes);
        }
        let digest = digest(&out);
        out.extend_from_slice(&digest.to_le_bytes());
        out
    }

    /// The tables in `bytes`, if they are whole.
    pub fn decode(bytes: &[u8]) -> Result<Self, KeptError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(KeptError::NotKeptTables);
        }
        let body_len = bytes.len().checked_sub(8).ok_or(KeptError::Truncated)?;
        let (body, tail) = bytes.split_at(body_len);
        let stored = u64::from_le_bytes(tail.try_into().map_err(|_| KeptError::Truncated)?);
        if digest(body) != stored {
            return Err(KeptError::Damaged);
        }
        let mut r = Reader {
            bytes: body,
            at: MAGIC.len(),
        };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(r.take(16)?);
        let lid = r.u16()?;
        let lmc = r.u8()?;
        let sm_lid = r.u16()?;
        let written = r.u64()?;
        let master_qos = match r.u8()? {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        };
        let lease = (r.u16()?, r.u64()?, r.u16()?);
        let count = r.u16()?;
        let mut tables = Vec::with_capacity(usize::from(count).min(64));
        for _ in 0..count {
            let pkey = r.u16()?;
            let n = r.u32()? as usize;
            let raw = r.take(n.checked_mul(PathRecord::LEN).ok_or(KeptError::Truncated)?)?;
            let records = raw
                .chunks_exact(PathRecord::LEN)
                .filter_map(|c| PathRecord::read_from_bytes(c).ok())
                .collect();
            tables.push(((pkey != 0).then_some(pkey), records));
        }
        let known = r.u8()? != 0;
        let count = r.u32()?;
        let mut names = Vec::with_capacity((count as usize).min(4096));
        for _ in 0..count {
            let source = match r.u8()? {
                2 => NameSource::Directory,
                _ => NameSource::NodeDescription,
            };
            let mut gid = [0u8; 16];
            gid.copy_from_slice(r.take(16)?);
            let kind = r.u8()?;
            let len = usize::from(r.u8()?);
            let address = name_from(kind, r.take(len)?).ok_or(KeptError::Damaged)?;
            names.push((address, Gid(gid), source));
        }
        if r.at != body.len() {
            return Err(KeptError::Truncated);
        }
        Ok(Self {
            gid: Gid(gid),
            lid,
            lmc,
            sm_lid,
            written,
            master_qos,
            lease: (lease.0 != 0).then_some(lease),
            tables,
            names: known.then_some(names),
        })
    }
}

/// A name's kind and bytes as kept; `None` for what is not kept (GIDs
/// and LIDs, which map to themselves).
fn name_bytes(a: &HostAddress) -> Option<(u8, Vec<u8>)> {
    match a {
        HostAddress::Name(n) if n.len() <= MAX_NAME_LEN => Some((0, n.as_bytes().to_vec())),
        HostAddress::Ip(IpAddr::V4(ip)) => Some((1, ip.octets().to_vec())),
        HostAddress::Ip(IpAddr::V6(ip)) => Some((2, ip.octets().to_vec())),
        _ => None,
    }
}

/// The name of `kind` in `bytes`, if they make one.
fn name_from(kind: u8, bytes: &[u8]) -> Option<HostAddress> {
    match kind {
        0 if bytes.len() <= MAX_NAME_LEN => {
            Some(HostAddress::Name(String::from_utf8(bytes.to_vec()).ok()?))
        }
        1 => Some(HostAddress::Ip(IpAddr::from(
            <[u8; 4]>::try_from(bytes).ok()?,
        ))),
        2 => Some(HostAddress::Ip(IpAddr::from(
            <[u8; 16]>::try_from(bytes).ok()?,
        ))),
        _ => None,
    }
}

/// `body` with its digest appended: a file [`Kept::decode`] reads past
/// its digest check (for the fuzzer, which could not find digests).
pub fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&digest(body).to_le_bytes());
    out
}

/// Reads the fields of a body in turn.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], KeptError> {
        let end = self.at.checked_add(n).ok_or(KeptError::Truncated)?;
        let out = self.bytes.get(self.at..end).ok_or(KeptError::Truncated)?;
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, KeptError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, KeptError> {
        Ok(u16::from_le_bytes([self.u8()?, self.u8()?]))
    }

    fn u32(&mut self) -> Result<u32, KeptError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, KeptError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
}

/// FNV-1a over `bytes`: enough to tell a file cut short or damaged.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;

    use super::*;

    fn record(slid: u16, dlid: u16) -> PathRecord {
        let mut r = PathRecord::new_zeroed();
        r.set_slid(slid);
        r.set_dlid(dlid);
        r.set_pkey(0xFFFF);
        r
    }

    fn kept() -> Kept {
        Kept {
            gid: Gid::new(Gid::DEFAULT_PREFIX, 0x22),
            lid: 2,
            lmc: 0,
            sm_lid: 1,
            written: 1_700_000_000,
            master_qos: Some(false),
            lease: Some((14, 1_700_000_180, 180)),
            tables: vec![
                (None, vec![record(2, 1), record(2, 3)]),
                (Some(0x8001), vec![record(2, 3)]),
            ],
            names: Some(vec![
                (
                    HostAddress::Name("node17".into()),
                    Gid::new(Gid::DEFAULT_PREFIX, 0x17),
                    NameSource::NodeDescription,
                ),
                (
                    HostAddress::Ip("10.0.0.17".parse().unwrap()),
                    Gid::new(Gid::DEFAULT_PREFIX, 0x17),
                    NameSource::Directory,
                ),
            ]),
        }
    }

    #[test]
    fn tables_come_back_as_they_were_kept() {
        let k = kept();
        assert_eq!(Kept::decode(&k.encode()), Ok(k));
        let empty = Kept {
            tables: Vec::new(),
            names: None,
            lease: None,
            master_qos: None,
            ..kept()
        };
        assert_eq!(Kept::decode(&empty.encode()), Ok(empty));
    }

    #[test]
    fn a_file_cut_short_damaged_or_foreign_is_refused() {
        let bytes = kept().encode();
        for cut in [0, 7, 8, 40, bytes.len() - 9, bytes.len() - 1] {
            assert!(Kept::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut damaged = bytes.clone();
        damaged[60] ^= 1;
        assert_eq!(Kept::decode(&damaged), Err(KeptError::Damaged));
        assert_eq!(
            Kept::decode(b"port ::1\ngroup ff12::1 0x1\n"),
            Err(KeptError::NotKeptTables)
        );
    }

    #[test]
    fn a_count_larger_than_the_file_is_refused_without_reading_past_it() {
        // A record count of u32::MAX, with a digest that matches.
        let mut body = kept().encode();
        body.truncate(body.len() - 8);
        let first_count = MAGIC.len() + 16 + 2 + 1 + 2 + 8 + 1 + 12 + 2 + 2;
        assert!(body.len() > first_count + 4);
        body[first_count..first_count + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let d = digest(&body);
        body.extend_from_slice(&d.to_le_bytes());
        assert_eq!(Kept::decode(&body), Err(KeptError::Truncated));
    }
}
