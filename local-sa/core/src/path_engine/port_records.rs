//! One port's PathRecords, as OpenSM's `osm_pr_rcv_process` answers a
//! GetTable with the port's SGID (and a P_Key): its destinations in alias
//! table order (`osm_pr_process_half`), each pair's LIDs and Preference
//! (`pr_rcv_get_port_pair_paths`), each path's MTU, rate, PacketLifeTime,
//! P_Key and SL (`pr_rcv_get_path_parms`), Reversible from the reverse
//! path, and the record (`pr_rcv_build_pr`).
//!
//! The requester is taken to be the source itself (a local-sa asking for
//! its own port's table), so OpenSM's check that requester, source and
//! destination share a P_Key comes down to source and destination.

use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, Mtu, PathRecord, Rate, Selector};

use super::fabric::{Endport, Fabric};
use super::physical::NONE;
use super::pkeys::{self, PkeyTable};
use super::rate::{code, fixup_2x_hdr, original_extended_rate};
use super::routes::{Leg, MAX_HOPS};
use crate::opensm_config::qos_policy::{QosLevel, QueryKeys};

/// OpenSM's `IB_PATH_RECORD_RATE_28_GBS`: rate codes from it on are
/// checked against what the ends support (numerically, as OpenSM does).
const FIRST_2X_HDR_RATE: u8 = 19;

/// Which of a port's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// Its paths with no P_Key asked: each pair's common P_Key.
    Default,
    /// Its paths in the partition of this P_Key, asked as given
    /// (membership bit included; local-sa asks as a full member).
    Partition(u16),
    /// Its paths in a partition asked with a ServiceID or a QoS class
    /// too: what a QoS policy's match rules may give another level.
    AtKey {
        /// The P_Key, as [`Table::Partition`]'s.
        pkey: u16,
        /// The ServiceID asked, if any.
        service_id: Option<u64>,
        /// The QoS class asked, if any.
        qos_class: Option<u16>,
    },
}

impl Table {
    /// A partition's table, by its P_Key (either membership bit): its
    /// full member's, which the tables are kept under.
    pub fn partition(pkey: u16) -> Self {
        Self::Partition(pkey | pkeys::FULL_MEMBER)
    }

    /// The table of partition `pkey` (low 15 bits, asked as a full
    /// member) at the ServiceID and QoS class of `keys` (its P_Key is not
    /// looked at): the partition's own table if it names neither.
    pub fn at(pkey: u16, keys: QueryKeys) -> Self {
        let pkey = pkey | pkeys::FULL_MEMBER;
        match (keys.service_id, keys.qos_class) {
            (None, None) => Self::Partition(pkey),
            (service_id, qos_class) => Self::AtKey {
                pkey,
                service_id,
                qos_class,
            },
        }
    }

    /// The P_Key the table is asked with, if any.
    pub fn pkey(&self) -> Option<u16> {
        match *self {
            Self::Default => None,
            Self::Partition(p) | Self::AtKey { pkey: p, .. } => Some(p),
        }
    }

    /// What a QoS policy's match rules see of a query for the table.
    pub fn query_keys(&self) -> QueryKeys {
        match *self {
            Self::Default => QueryKeys::default(),
            Self::Partition(p) => QueryKeys {
                pkey: Some(p),
                ..QueryKeys::default()
            },
            Self::AtKey {
                pkey,
                service_id,
                qos_class,
            } => QueryKeys {
                service_id,
                qos_class,
                pkey: Some(pkey),
            },
        }
    }
}

/// As the summaries name it: `default`, a partition's P_Key (low 15
/// bits), with the ServiceID or QoS class a table at a key is asked
/// with.
impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Default => f.write_str("default"),
            Self::Partition(p) => write!(f, "{:#06x}", p & 0x7FFF),
            Self::AtKey {
                pkey,
                service_id,
                qos_class,
            } => {
                write!(f, "{:#06x}", pkey & 0x7FFF)?;
                if let Some(id) = service_id {
                    write!(f, " ServiceID {id:#018x}")?;
                }
                if let Some(class) = qos_class {
                    write!(f, " QoS class {class}")?;
                }
                Ok(())
            }
        }
    }
}

/// A table that cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// No endport has this GUID.
    UnknownPort(u64),
    /// A path's partition has no SL given
    /// ([`Fabric::set_partition_sl`]).
    NoPartitionSl {
        /// The partition (low 15 bits).
        pkey: u16,
    },
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownPort(guid) => write!(f, "no port has GUID {guid:#018x}"),
            Self::NoPartitionSl { pkey } => write!(
                f,
                "the SL of partition {pkey:#06x} is not known (the master does not publish it)"
            ),
        }
    }
}

impl std::error::Error for TableError {}

/// What the P_Keys allow between a source and each destination P_Key
/// table, worked out once per table.
enum Allowed<'f> {
    /// The default table: the common P_Key with each table, if any.
    Common(Vec<Option<u16>>),
    /// A partition's: whether each table shares it.
    This(u16, Vec<bool>),
    /// One pair: asked directly.
    Direct(&'f PkeyTable, Table),
}

impl Allowed<'_> {
    /// The P_Key of the source's paths to an endport with P_Key table
    /// `to` (index `index`), if they may have any.
    fn pkey(&self, index: u32, to: &PkeyTable) -> Option<u16> {
        match self {
            Self::Common(row) => row[index as usize],
            Self::This(p, row) => row[index as usize].then_some(*p),
            Self::Direct(from, table) => match table.pkey() {
                None => pkeys::common(from, to),
                Some(p) => pkeys::share_this(from, to, p).then_some(p),
            },
        }
    }
}

/// A source endport and the request it answers.
struct Source<'f> {
    endport: &'f Endport,
    /// The SGID asked (echoed in every record).
    sgid: Gid,
    allowed: Allowed<'f>,
    /// What the query names that a QoS policy matches (the P_Key, if
    /// the table is a partition's, also what a level allows).
    asked: QueryKeys,
}

/// What a path's QoS level gives it, and the P_Key it carries.
struct Leveled<'l> {
    pkey: u16,
    level: Option<&'l QosLevel>,
}

impl Fabric {
    /// The table `table` of the port with GUID `source` (its own or an
    /// alias): the records OpenSM answers to a GetTable with that SGID
    /// (and P_Key), in its order, appended to `out`.
    pub fn table(
        &self,
        source: u64,
        table: Table,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), TableError> {
        let src = self.source(source, table, true)?;
        for alias in &self.aliases {
            let dest = &self.endports[alias.endport as usize];
            self.pair_records(&src, dest, alias.guid, out)?;
        }
        Ok(())
    }

    /// The records of one pair: what OpenSM answers to a GetTable naming
    /// the SGID and the DGID (and the P_Key), in its order; a Get is
    /// answered the first.
    pub fn pair(
        &self,
        source: u64,
        dest: u64,
        table: Table,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), TableError> {
        let src = self.source(source, table, false)?;
        let dest_port = self.endport(dest).ok_or(TableError::UnknownPort(dest))?;
        self.pair_records(&src, dest_port, dest, out)
    }

    /// How many records `source`'s table may hold at most (for
    /// reserving).
    pub fn table_capacity(&self, source: &Endport) -> usize {
        let lids = 1usize << source.lmc;
        self.aliases
            .iter()
            .map(|a| lids << self.endports[a.endport as usize].lmc)
            .sum()
    }

    fn source(&self, guid: u64, table: Table, whole: bool) -> Result<Source<'_>, TableError> {
        let endport = self.endport(guid).ok_or(TableError::UnknownPort(guid))?;
        let own = self.pkey_table(endport);
        let allowed = match (whole, table.pkey()) {
            (false, _) => Allowed::Direct(own, table),
            (true, None) => Allowed::Common(
                self.pkey_tables
                    .iter()
                    .map(|t| pkeys::common(own, t))
                    .collect(),
            ),
            (true, Some(p)) => Allowed::This(
                p,
                self.pkey_tables
                    .iter()
                    .map(|t| pkeys::share_this(own, t, p))
                    .collect(),
            ),
        };
        Ok(Source {
            endport,
            sgid: Gid::new(endport.prefix, guid),
            allowed,
            asked: table.query_keys(),
        })
    }

    /// The P_Key and QoS level of the paths from `from` to `to` for a
    /// query naming `asked` (`pkey`: what the P_Keys alone give), as
    /// `pr_rcv_get_path_parms` sets them; `None` if the level allows no
    /// path: a P_Key asked that its P_Keys do not hold, or none of them
    /// the two share.
    fn leveled(
        &self,
        from: &Endport,
        to: &Endport,
        asked: QueryKeys,
        pkey: u16,
    ) -> Option<Leveled<'_>> {
        let Some(levels) = &self.qos_levels else {
            return Some(Leveled { pkey, level: None });
        };
        let level = levels.level(from.guid, to.guid, asked);
        let pkey = match asked.pkey {
            Some(p) if !level.allows_pkey(p) => return None,
            Some(_) => pkey,
            // osm_qos_level_get_shared_pkey: the first of its P_Keys (its
            // ranges sorted, as OpenSM's parser sorts them: the least) the
            // two share, as the level writes it, without the membership
            // bit. Sought among the source's own P_Keys, not through the
            // level's ranges.
            None if !level.pkeys.is_empty() => {
                let (a, b) = (self.pkey_table(from), self.pkey_table(to));
                a.entries()
                    .iter()
                    .map(|p| p & 0x7FFF)
                    .filter(|k| level.allows_pkey(*k) && pkeys::share_this(a, b, *k))
                    .min()?
            }
            None => pkey,
        };
        Some(Leveled {
            pkey,
            level: Some(level),
        })
    }

    /// `pr_rcv_get_port_pair_paths`: the records from `src` to `dest`
    /// (named by `dest_guid`), the LID pairs of equal offset first
    /// (Preference 0), then the others source LID first (Preference 2).
    fn pair_records(
        &self,
        src: &Source<'_>,
        dest: &Endport,
        dest_guid: u64,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), TableError> {
        // OpenSM first checks that the two share a P_Key at all (an end
        // without any P_Key shares with everyone, and gets no record).
        let s = src.endport;
        if s.port != dest.port && !pkeys::share_any(self.pkey_table(s), self.pkey_table(dest)) {
            return Ok(());
        }
        let Some(pkey) = src.allowed.pkey(dest.pkeys, self.pkey_table(dest)) else {
            return Ok(());
        };
        let Some(leveled) = self.leveled(s, dest, src.asked, pkey) else {
            return Ok(());
        };
        let dgid = Gid::new(dest.prefix, dest_guid);
        let (slids, dlids) = (s.lids(), dest.lids());
        for (slid, dlid) in slids.clone().zip(dlids.clone()) {
            self.record(src, dest, dgid, &leveled, (slid, dlid), 0, out)?;
        }
        for (i, slid) in slids.enumerate() {
            for (j, dlid) in dlids.clone().enumerate() {
                if i != j {
                    self.record(src, dest, dgid, &leveled, (slid, dlid), 2, out)?;
                }
            }
        }
        Ok(())
    }

    /// The SL of a path with P_Key `pkey` and level `level`: the level's,
    /// else the partition's.
    fn sl_of(&self, pkey: u16, level: Option<&QosLevel>) -> Result<u8, TableError> {
        match level.and_then(|l| l.sl) {
            Some(sl) => Ok(sl),
            None => self.partition_sl(pkey).ok_or(TableError::NoPartitionSl {
                pkey: pkey & 0x7FFF,
            }),
        }
    }

    /// Whether the reverse path, `dest` to `s`'s LID `slid` for the same
    /// query, has its parameters: a P_Key and level of its own (the
    /// policy may match it otherwise), and an SL no hop maps to VL15.
    fn reversible(&self, s: &Endport, dest: &Endport, asked: QueryKeys, slid: u16, sl: u8) -> bool {
        let Some((_, back)) = self.walk(dest, slid) else {
            return false;
        };
        if self.qos_levels.is_none() {
            // Without levels the reverse path's common P_Key is of the
            // same partition, and so its SL.
            return back & 1 << sl != 0;
        }
        let pkey = match asked.pkey {
            Some(p) => Some(p),
            None => pkeys::common(self.pkey_table(dest), self.pkey_table(s)),
        };
        let Some(rev) = pkey.and_then(|p| self.leveled(dest, s, asked, p)) else {
            return false;
        };
        self.sl_of(rev.pkey, rev.level)
            .is_ok_and(|rev_sl| back & 1 << rev_sl != 0)
    }

    /// `pr_rcv_get_lid_pair_path`: the record of one LID pair, if it has a
    /// path.
    #[allow(clippy::too_many_arguments)] // One OpenSM call's arguments.
    fn record(
        &self,
        src: &Source<'_>,
        dest: &Endport,
        dgid: Gid,
        leveled: &Leveled<'_>,
        (slid, dlid): (u16, u16),
        preference: u8,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), TableError> {
        let s = src.endport;
        let Some((leg, sls)) = self.walk(s, dlid) else {
            return Ok(());
        };
        let (pkey, level) = (leveled.pkey, leveled.level);
        let sl = self.sl_of(pkey, level)?;
        if sls & 1 << sl == 0 {
            return Ok(());
        }
        let reversible = self.reversible(s, dest, src.asked, slid, sl);
        // A level's limits: the least of the path's and its own; and, with
        // OpenSM's quirks, 1024 for a path with a Tavor end.
        let mut mtu = match level.and_then(|l| l.mtu_limit) {
            Some(limit) => leg.mtu.min(limit),
            None => leg.mtu,
        };
        if self.tavor_quirk && (s.tavor || dest.tavor) {
            mtu = mtu.min(Mtu::MTU_1024.0);
        }
        let mut rank = leg.rank;
        if let Some(limit) = level.and_then(|l| l.rate_limit) {
            rank = rank.min(super::rate::rank(limit));
        }
        let mut rate = code(rank);
        // As `pr_rcv_build_pr`: with the original rates only, no fixups.
        if self.original_rates_only {
            rate = original_extended_rate(rate);
        } else if rate >= FIRST_2X_HDR_RATE {
            rate = fixup_2x_hdr(rate, s.cap_mask, s.cap_mask2);
            if reversible {
                rate = fixup_2x_hdr(rate, dest.cap_mask, dest.cap_mask2);
            }
        }
        // A port's path to itself has PacketLifeTime 0 (IBA 1.2 table 205).
        let life = if s.port == dest.port {
            0
        } else {
            level
                .and_then(|l| l.packet_life)
                .unwrap_or(self.subnet_timeout)
        };
        let mut r = PathRecord::new_zeroed();
        r.set_dgid(dgid);
        r.set_sgid(src.sgid);
        r.set_dlid(dlid);
        r.set_slid(slid);
        r.set_reversible(reversible);
        r.set_pkey(pkey);
        r.set_sl(sl);
        r.set_mtu_selector(Selector::Exactly);
        r.set_mtu(Mtu(mtu));
        r.set_rate_selector(Selector::Exactly);
        r.set_rate(Rate(rate));
        // OpenSM writes its byte OR'ed with Exactly's bits: a level's
        // packet-life past 63 spills into the selector, as it does there.
        let life = life | 0x80;
        r.set_packet_life_selector(Selector::from_bits(life >> 6));
        r.set_packet_life(life & 0x3F);
        r.set_preference(preference);
        out.push(r);
        Ok(())
    }

    /// Whether `from` has a path to `to`'s base LID.
    pub(super) fn has_path(&self, from: &Endport, to: &Endport) -> bool {
        self.walk(from, to.lid).is_some()
    }

    /// The path from endport `from` to `dlid`: what its ports give and the
    /// SLs no hop maps to VL15, if it has one within [`MAX_HOPS`]
    /// switches.
    fn walk(&self, from: &Endport, dlid: u16) -> Option<(Leg, u16)> {
        let dest = self.routes.dest(dlid)?;
        let ports = &self.ports;
        let start = {
            let p = &ports[from.port as usize];
            Leg::port(p.mtu, p.rank_own)
        };
        let end = {
            let p = &ports[dest as usize];
            Leg::port(p.mtu, p.rank_own)
        };
        // The first port a packet leaves by: a switch's where its table
        // sends it (the egress itself is not counted), an adapter's own.
        let (egress, first_in) = if from.switch == NONE {
            (from.port, 0)
        } else {
            let sw = &self.switches[from.switch as usize];
            (sw.port(sw.route(dlid))?, 0)
        };
        let mut sls = self.routes.sls_at(egress, first_in);
        let middle = if egress == dest {
            None
        } else {
            let ingress = ports[egress as usize].remote;
            if ingress == NONE {
                return None;
            }
            if ingress == dest {
                None
            } else {
                let next = ports[ingress as usize].switch;
                if next == NONE {
                    return None;
                }
                let inp = &ports[ingress as usize];
                let leg = Leg::port(inp.mtu, inp.rank_hop).then(self.routes.leg(next, dlid));
                if self.routes.with_sls() {
                    let sw = &self.switches[next as usize];
                    let out = sw.port(sw.route(dlid))?;
                    sls &= self.routes.sls_at(out, inp.num) & self.routes.leg_sls(next, dlid);
                }
                Some(leg)
            }
        };
        let path = match middle {
            Some(m) => start.then(m).then(end),
            None => start.then(end),
        };
        (path.is_path() && path.hops <= MAX_HOPS && sls != 0).then_some((path, sls))
    }
}
