//! Checking computed records against the master's own answers before
//! anything is sent: which pairs to ask ([`Fabric::sample`]), which pair
//! tells a partition's SL ([`Fabric::partition_probe`]) and how two
//! answers differ ([`compare_pair`]), field by field, so that a summary
//! can say why the engine and the master disagree.

use std::collections::HashSet;

use mad_codec::{PathRecord, PathRecordRepr};

use super::fabric::{Endport, Fabric};
use super::pkeys;
use super::port_records::Table;
use crate::opensm_config::qos_policy::QueryKeys;

/// A pair to check: source and destination port GUIDs, and the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PairCheck {
    /// The source's port GUID.
    pub source: u64,
    /// The destination's port GUID.
    pub dest: u64,
    /// The table (a partition's: its P_Key as a full member's).
    pub table: Table,
}

/// The first field in which a computed answer and the master's differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The field's name (`records`: how many).
    pub field: &'static str,
    /// The computed value.
    pub ours: String,
    /// The master's.
    pub theirs: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: computed {}, the master's {}",
            self.field, self.ours, self.theirs
        )
    }
}

/// How `ours` and `theirs` (records of one query, in order) differ, if
/// they do: their count, or the first field of the first record that
/// differs.
pub fn compare_pair(ours: &[PathRecord], theirs: &[PathRecord]) -> Option<Difference> {
    if ours.len() != theirs.len() {
        return Some(Difference {
            field: "records",
            ours: ours.len().to_string(),
            theirs: theirs.len().to_string(),
        });
    }
    ours.iter()
        .zip(theirs)
        .find_map(|(a, b)| first_difference(a, b))
}

fn first_difference(a: &PathRecord, b: &PathRecord) -> Option<Difference> {
    let (x, y) = (PathRecordRepr::parse(a), PathRecordRepr::parse(b));
    // Each field as it is usually written: keys and IDs in hex.
    macro_rules! fields {
        ($($name:ident: $fmt:literal),*) => {
            $(
                if x.$name != y.$name {
                    return Some(Difference {
                        field: stringify!($name),
                        ours: format!($fmt, x.$name),
                        theirs: format!($fmt, y.$name),
                    });
                }
            )*
        };
    }
    fields!(
        sgid: "{}", dgid: "{}", slid: "{}", dlid: "{}", pkey: "{:#06x}", sl: "{}", mtu: "{:?}",
        rate: "{:?}", packet_life: "{}", reversible: "{}", preference: "{}",
        service_id: "{:#018x}", raw_traffic: "{}", flow_label: "{:#x}", hop_limit: "{}",
        tclass: "{:#x}", numb_path: "{}", qos_class: "{:#x}", mtu_selector: "{:?}",
        rate_selector: "{:?}", packet_life_selector: "{:?}"
    );
    (a.reserved() != b.reserved()).then(|| Difference {
        field: "reserved",
        ours: format!("{:?}", a.reserved()),
        theirs: format!("{:?}", b.reserved()),
    })
}

/// A small deterministic generator (splitmix64), so that a sample is the
/// same for the same seed.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

impl Fabric {
    /// The switch an endport's paths leave through first: its own, or the
    /// one its link leads to (index; `u32::MAX` for none).
    fn first_switch(&self, e: &Endport) -> u32 {
        if e.is_switch {
            return e.switch;
        }
        let remote = self.ports[e.port as usize].remote;
        self.ports
            .get(remote as usize)
            .map_or(u32::MAX, |p| p.switch)
    }

    /// The pairs of the default table to check: about `count` drawn,
    /// every pair when the fabric has no more than that — each endport a
    /// source in turn, its destinations taken in turn from each group of
    /// endports behind one switch (a leaf's hosts and the leaf), so that
    /// the pairs spread over switch pairs, at random within them — and,
    /// whatever `count`, every endport a source and a destination at least
    /// once: a check that sees every port catches an input local-sa was
    /// not told (a QoS level for one port group, OpenSM's node name map, a
    /// policy on OpenSM's command line) whatever the sample's size, at a
    /// cost of N pairs a table. Then, for every partition — those every
    /// endport holds too: a master with QoS sends and answers their tables
    /// apart — pairs of its members in its table (asked as a full
    /// member's), the same way with a quarter of `count`; and in its table
    /// at each of `at_keys` (their ServiceID or QoS class), the same way
    /// with that quarter shared among them. And from the switch of each
    /// way through the forwarding tables that leads nowhere
    /// ([`Fabric::route_faults`], those kept by name), to its LID. `seed`
    /// makes it repeatable.
    pub fn sample(&self, count: usize, seed: u64, at_keys: &[QueryKeys]) -> Vec<PairCheck> {
        let mut mix = Mix(seed);
        let all: Vec<usize> = (0..self.endports.len()).collect();
        let mut pairs = self.sample_among(&all, count, Table::Default, &mut mix);
        // Each way that leads nowhere, from its switch: the master must
        // have no path there either.
        let (faults, _) = self.route_faults();
        pairs.extend(faults.iter().filter_map(|f| {
            let (switch, lid) = f.way()?;
            Some(PairCheck {
                source: self.endport_at(switch)?.guid,
                dest: self.endport_at(lid)?.guid,
                table: Table::Default,
            })
        }));
        for p in self.partitions() {
            let members: Vec<usize> = all
                .iter()
                .copied()
                .filter(|i| self.pkey_table(&self.endports[*i]).entry(p).is_some())
                .collect();
            let table = Table::Partition(p | pkeys::FULL_MEMBER);
            pairs.extend(self.sample_among(&members, count / 4, table, &mut mix));
            let per_key = count / 4 / at_keys.len().max(1);
            for keys in at_keys {
                pairs.extend(self.sample_among(&members, per_key, Table::at(p, *keys), &mut mix));
            }
        }
        pairs
    }

    /// About `count` pairs among the endports `among`, in `table`.
    fn sample_among(
        &self,
        among: &[usize],
        count: usize,
        table: Table,
        mix: &mut Mix,
    ) -> Vec<PairCheck> {
        let n = among.len();
        let pair = |a: usize, b: usize| PairCheck {
            source: self.endports[a].guid,
            dest: self.endports[b].guid,
            table,
        };
        if n.saturating_mul(n) <= count {
            return among
                .iter()
                .flat_map(|&a| among.iter().map(move |&b| pair(a, b)))
                .collect();
        }
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of_switch = std::collections::HashMap::new();
        for &i in among {
            let g = *group_of_switch
                .entry(self.first_switch(&self.endports[i]))
                .or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
            groups[g].push(i);
        }
        let mut order: Vec<usize> = among.to_vec();
        for i in (1..n).rev() {
            order.swap(i, mix.below(i + 1));
        }
        let mut pairs: Vec<PairCheck> = (0..count)
            .map(|k| {
                let g = &groups[(k / n + k) % groups.len()];
                pair(order[k % n], g[mix.below(g.len())])
            })
            .collect();
        // Every endport a source and a destination: those no pair leaves,
        // each to one no pair reaches, the rest at random.
        let sources: HashSet<u64> = pairs.iter().map(|p| p.source).collect();
        let reached: HashSet<u64> = pairs.iter().map(|p| p.dest).collect();
        let missing = |seen: &HashSet<u64>| -> Vec<usize> {
            (among.iter().copied())
                .filter(|i| !seen.contains(&self.endports[*i].guid))
                .collect()
        };
        let (unsourced, unreached) = (missing(&sources), missing(&reached));
        for k in 0..unsourced.len().max(unreached.len()) {
            let a = unsourced.get(k).copied();
            let b = unreached.get(k).copied();
            let a = a.unwrap_or_else(|| among[mix.below(n)]);
            let b = b.unwrap_or_else(|| among[mix.below(n)]);
            pairs.push(pair(a, b));
        }
        pairs
    }

    /// A pair whose path in partition `pkey` shows the partition's SL: two
    /// endports that share it (adapters first), one a full member, with a
    /// path between them; or a full member's path to itself.
    pub fn partition_probe(&self, pkey: u16) -> Option<PairCheck> {
        let mut members: Vec<&Endport> = self
            .endports
            .iter()
            .filter(|e| self.pkey_table(e).entry(pkey).is_some())
            .collect();
        members.sort_by_key(|e| (e.is_switch, e.lid));
        let probe = |a: &Endport, b: &Endport| PairCheck {
            source: a.guid,
            dest: b.guid,
            table: Table::Partition(pkey | pkeys::FULL_MEMBER),
        };
        for a in members.iter().take(8) {
            for b in &members {
                if a.port != b.port
                    && pkeys::share_this(self.pkey_table(a), self.pkey_table(b), pkey)
                    && self.has_path(a, b)
                {
                    return Some(probe(a, b));
                }
            }
        }
        members
            .iter()
            .find(|a| {
                pkeys::share_this(self.pkey_table(a), self.pkey_table(a), pkey)
                    && self.has_path(a, a)
            })
            .map(|a| probe(a, a))
    }
}
