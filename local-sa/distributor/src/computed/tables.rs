//! Nodes' tables computed on every core: the fabric is shared read-only,
//! each thread takes every k-th node.

use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::{Endport, Fabric, Table, TableError};
use mad_codec::PathRecord;
use mad_codec::zerocopy::IntoBytes;

use crate::sent_tables::SentTables;

/// One node's tables as it keeps them: its default table, and one per
/// partition of its P_Key table but the one its default table's paths
/// carry when the master applies no QoS (as the node itself decides).
#[derive(Debug)]
pub struct NodeTables {
    /// The port's GUID.
    pub guid: u64,
    /// Its lowest LID.
    pub lid: u16,
    /// Its default table (empty if not kept, see `records`).
    pub default: Result<Vec<PathRecord>, TableError>,
    /// Each partition (low 15 bits) and its table.
    pub partitions: Vec<(u16, Result<Vec<PathRecord>, TableError>)>,
    /// Its tables at ServiceIDs and QoS classes, on each of its
    /// partitions.
    pub at_keys: Vec<(Table, Result<Vec<PathRecord>, TableError>)>,
    /// Records computed in each kind of table.
    pub records: Counts,
    /// A digest of every table's records (and errors), kept or not: two
    /// computations with the same digest gave the node the same tables.
    pub fingerprint: u64,
}

/// The tables of each of `endports`, in their order, with those at each
/// of `at_keys` on each of its partitions; the records kept only if
/// `keep` (else only counted).
pub fn compute_tables(
    fabric: &Fabric,
    endports: &[&Endport],
    qos: bool,
    at_keys: &[QueryKeys],
    keep: bool,
) -> Vec<NodeTables> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(endports.len().max(1));
    let mut out: Vec<Option<NodeTables>> = (0..endports.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    endports
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(i, e)| (i, node_tables(fabric, e, qos, at_keys, keep)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for w in workers {
            // A panicking worker is a bug; it surfaces as the panic.
            for (i, tables) in w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)) {
                out[i] = Some(tables);
            }
        }
    });
    out.into_iter().flatten().collect()
}

/// A count for each kind of table: default, partitions', at keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Default tables.
    pub default: usize,
    /// Partition tables.
    pub partitions: usize,
    /// Tables at ServiceIDs and QoS classes.
    pub at_keys: usize,
}

impl Counts {
    /// Every table.
    pub fn all(self) -> usize {
        self.default + self.partitions + self.at_keys
    }
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.default += other.default;
        self.partitions += other.partitions;
        self.at_keys += other.at_keys;
    }
}

/// One node's tables.
fn node_tables(
    fabric: &Fabric,
    e: &Endport,
    qos: bool,
    at_keys: &[QueryKeys],
    keep: bool,
) -> NodeTables {
    let compute = |t: Table| {
        let mut records = Vec::with_capacity(fabric.table_capacity(e));
        fabric.table(e.guid, t, &mut records).map(|()| records)
    };
    let mut digest = Digest::default();
    let mut kept = |t: &mut Result<Vec<PathRecord>, TableError>| {
        match t {
            Ok(r) => r.iter().for_each(|r| digest.add(r.as_bytes())),
            Err(e) => digest.add(e.to_string().as_bytes()),
        }
        let n = t.as_ref().map_or(0, Vec::len);
        if let (false, Ok(r)) = (keep, t) {
            *r = Vec::new();
        }
        n
    };
    let mut default = compute(Table::Default);
    let carried = default
        .as_ref()
        .ok()
        .and_then(|r| r.first())
        .map(|r| r.pkey() & 0x7FFF);
    let mut records = Counts {
        default: kept(&mut default),
        ..Counts::default()
    };
    let mut pkeys: Vec<u16> = fabric
        .pkey_table(e)
        .entries()
        .iter()
        .map(|p| p & 0x7FFF)
        .filter(|p| *p != 0)
        .collect();
    pkeys.sort_unstable();
    pkeys.dedup();
    let partitions = pkeys
        .iter()
        .filter(|p| qos || Some(**p) != carried)
        .map(|p| {
            let mut t = compute(Table::partition(*p));
            records.partitions += kept(&mut t);
            (*p, t)
        })
        .collect();
    let at_keys = pkeys
        .iter()
        .flat_map(|p| at_keys.iter().map(|k| Table::at(*p, *k)))
        .map(|table| {
            let mut t = compute(table);
            records.at_keys += kept(&mut t);
            (table, t)
        })
        .collect();
    NodeTables {
        guid: e.guid,
        lid: e.lid,
        default,
        partitions,
        at_keys,
        records,
        fingerprint: digest.0,
    }
}

/// A fast 64-bit digest of bytes, eight at a time (FxHash's step): enough
/// to tell whether a node's tables changed between two computations, not
/// a defence against anyone.
#[derive(Default)]
struct Digest(u64);

impl Digest {
    fn add(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut step = |word: u64| self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            step(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let mut rest = [0u8; 8];
        rest[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        step(u64::from_le_bytes(rest) ^ (bytes.len() as u64) << 56);
    }
}

/// Every computed record, as a snapshot holds them.
pub fn held(tables: &[NodeTables]) -> SentTables {
    let mut held = SentTables::default();
    for t in tables {
        if let Ok(r) = &t.default {
            held.default.extend_from_slice(r);
        }
        for (_, p) in &t.partitions {
            if let Ok(r) = p {
                held.partitions.extend_from_slice(r);
            }
        }
    }
    held
}
