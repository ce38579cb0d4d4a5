//! P_Key tables as OpenSM keeps them for its SA (`osm_pkey_tbl_t.keys`)
//! and the three questions a path asks of two of them
//! (`osm_physp_share_pkey`, `osm_physp_find_common_pkey`,
//! `osm_physp_share_this_pkey`), with OpenSM's `allow_both_pkeys` FALSE
//! (its default) or TRUE.
//!
//! OpenSM keeps its entries in a map keyed by the P_Key in network byte
//! order read as a host integer: on x86, byte-swapped. By default one entry
//! per partition (the low 15 bits, the base), the full member's when a
//! table holds both; the common P_Key of two ports is the first partition
//! in that order which both hold and at least one holds as a full member,
//! with the first port's membership bit. With `allow_both_pkeys` the map
//! is keyed by the whole P_Key, so a port may hold a partition as both a
//! full and a limited member: the common P_Key is looked for in that order
//! first, then between the first port's full entries and the second's
//! limited ones, then the other way round; a given P_Key is the full
//! entry if a port holds it, else the limited one.

/// The membership bit of a P_Key.
pub const FULL_MEMBER: u16 = 0x8000;

/// One port's P_Keys, as OpenSM's map holds them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PkeyTable {
    /// Every valid entry of the port's table, once each, sorted.
    held: Vec<u16>,
    /// The map's entries, in its order.
    entries: Vec<u16>,
    /// `allow_both_pkeys`: keyed by the whole P_Key.
    both: bool,
}

/// The order of OpenSM's P_Key map by partition (x86).
fn map_order(pkey: u16) -> u16 {
    (pkey & !FULL_MEMBER).swap_bytes()
}

/// The order of the map keyed by the whole P_Key (`allow_both_pkeys`).
fn whole_order(pkey: u16) -> u16 {
    pkey.swap_bytes()
}

impl PkeyTable {
    /// The table of a port whose P_Key table holds `entries` (every block,
    /// in any order), as OpenSM keeps it by default: empty entries
    /// (partition 0) are left out, and of two entries of one partition
    /// the greater, the full member's, kept.
    pub fn new(entries: impl IntoIterator<Item = u16>) -> Self {
        let mut held: Vec<u16> = entries
            .into_iter()
            .filter(|p| p & !FULL_MEMBER != 0)
            .collect();
        held.sort_unstable();
        held.dedup();
        Self::keyed(held, false)
    }

    /// The same port's table as OpenSM keeps it with `allow_both_pkeys`
    /// `both` (TRUE) or not.
    pub fn allowing_both(&self, both: bool) -> Self {
        Self::keyed(self.held.clone(), both)
    }

    fn keyed(held: Vec<u16>, both: bool) -> Self {
        let mut entries = held.clone();
        if both {
            entries.sort_unstable_by_key(|p| whole_order(*p));
        } else {
            // Greatest first within a partition, so that dedup keeps it.
            entries.sort_unstable_by_key(|p| (map_order(*p), !*p));
            entries.dedup_by_key(|p| *p & !FULL_MEMBER);
        }
        Self {
            held,
            entries,
            both,
        }
    }

    /// Whether the port holds no P_Key at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The port's entry for partition `pkey` (membership bit ignored):
    /// with both entries held, the full member's.
    pub fn entry(&self, pkey: u16) -> Option<u16> {
        if self.both {
            return self
                .exact(pkey | FULL_MEMBER)
                .or_else(|| self.exact(pkey & !FULL_MEMBER));
        }
        let key = map_order(pkey);
        self.entries
            .binary_search_by_key(&key, |p| map_order(*p))
            .ok()
            .map(|i| self.entries[i])
    }

    /// The entry `pkey` itself, membership bit included.
    fn exact(&self, pkey: u16) -> Option<u16> {
        self.held.binary_search(&pkey).ok().map(|_| pkey)
    }

    /// Every entry, in OpenSM's map order.
    pub fn entries(&self) -> &[u16] {
        &self.entries
    }
}

/// `match_pkey`: the same partition, one of them a full member.
fn matches(a: u16, b: u16) -> bool {
    (a | b) & FULL_MEMBER != 0 && a & !FULL_MEMBER == b & !FULL_MEMBER
}

/// One of `osm_physp_find_common_pkey`'s walks over two maps in order:
/// the first pair that [`matches()`] among the entries `a_takes` and
/// `b_takes` admit, advancing the lower key (`order`), both on a tie.
fn walk(
    a: &[u16],
    b: &[u16],
    order: fn(u16) -> u16,
    a_takes: impl Fn(u16) -> bool,
    b_takes: impl Fn(u16) -> bool,
) -> Option<u16> {
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        if !a_takes(x) {
            i += 1;
            continue;
        }
        if !b_takes(y) {
            j += 1;
            continue;
        }
        if matches(x, y) {
            return Some(x);
        }
        let (kx, ky) = (order(x), order(y));
        if kx == ky {
            i += 1;
            j += 1;
        } else if ky < kx {
            j += 1;
        } else {
            i += 1;
        }
    }
    None
}

/// `osm_physp_find_common_pkey`: the first partition in map order that
/// both hold and one holds as a full member, with `a`'s membership bit;
/// with `allow_both_pkeys`, then `a`'s full entries against `b`'s limited
/// ones, then `a`'s limited against `b`'s full.
pub fn common(a: &PkeyTable, b: &PkeyTable) -> Option<u16> {
    let full = |p: u16| p & FULL_MEMBER != 0;
    if !a.both {
        return walk(&a.entries, &b.entries, map_order, |_| true, |_| true);
    }
    walk(&a.entries, &b.entries, whole_order, |_| true, |_| true)
        .or_else(|| walk(&a.entries, &b.entries, map_order, full, |p| !full(p)))
        .or_else(|| walk(&a.entries, &b.entries, map_order, |p| !full(p), full))
}

/// `osm_physp_share_pkey` between two different ports: whether they may
/// talk at all. A port without any P_Key shares with everyone (OpenSM's
/// stated hack: the specification does not require a table).
pub fn share_any(a: &PkeyTable, b: &PkeyTable) -> bool {
    a.is_empty() || b.is_empty() || common(a, b).is_some()
}

/// `osm_physp_share_this_pkey`: both hold partition `pkey`, one of them as
/// a full member.
pub fn share_this(a: &PkeyTable, b: &PkeyTable, pkey: u16) -> bool {
    match (a.entry(pkey), b.entry(pkey)) {
        (Some(x), Some(y)) => matches(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_partition_the_full_member_s_in_byte_swapped_order() {
        let t = PkeyTable::new([0x7FFF, 0x0002, 0x8000, 0x0000, 0x8002, 0x0100, 0xFFFF]);
        // 0x0100 swaps to 0x0001, 0x0002 to 0x0200, 0x7FFF to 0xFF7F.
        assert_eq!(t.entries(), [0x0100, 0x8002, 0xFFFF]);
        assert_eq!(t.entry(0x7FFF), Some(0xFFFF));
        assert_eq!(t.entry(0x8100), Some(0x0100));
        assert_eq!(t.entry(0x0003), None);
        assert!(PkeyTable::new([0x8000, 0]).is_empty());
    }

    #[test]
    fn the_common_key_is_the_first_in_map_order_with_a_full_member() {
        let a = PkeyTable::new([0xFFFF, 0x8001, 0x0002]);
        let b = PkeyTable::new([0x7FFF, 0x0001, 0x8002]);
        // Map order: 0x0001 (0x0100), 0x0002 (0x0200), 0x7FFF (0xFF7F).
        assert_eq!(common(&a, &b), Some(0x8001), "a's entry, with a's bit");
        assert_eq!(common(&b, &a), Some(0x0001));
        let limited_only = PkeyTable::new([0x7FFF]);
        assert_eq!(common(&limited_only, &limited_only), None);
        assert_eq!(common(&limited_only, &a), Some(0x7FFF));
    }

    #[test]
    fn sharing_a_given_key_needs_both_and_one_full_member() {
        let a = PkeyTable::new([0xFFFF, 0x0005]);
        let b = PkeyTable::new([0x7FFF, 0x0005, 0x8006]);
        assert!(share_this(&a, &b, 0xFFFF));
        assert!(share_this(&a, &b, 0x7FFF), "the asked bit does not matter");
        assert!(!share_this(&a, &b, 0x8005), "both limited");
        assert!(!share_this(&a, &b, 0x8006), "only one holds it");
    }

    #[test]
    fn with_allow_both_pkeys_a_port_holds_a_partition_both_ways() {
        let both = |keys: &[u16]| PkeyTable::new(keys.iter().copied()).allowing_both(true);
        let a = both(&[0x8001, 0x0001, 0x0002]);
        // Keyed by the whole P_Key: 0x0001 (0x0100), 0x8001 (0x0180),
        // 0x0002 (0x0200).
        assert_eq!(a.entries(), [0x0001, 0x8001, 0x0002]);
        assert_eq!(a.entry(0x0001), Some(0x8001), "the full entry first");
        assert_eq!(a.entry(0x8002), Some(0x0002));
        // The first walk, by the whole P_Key: a's 0x0001 meets b's 0x8001
        // only after b's own 0x0001... which b does not hold.
        let b = both(&[0x8001, 0x8002]);
        assert_eq!(common(&a, &b), Some(0x0001), "a's limited entry, met first");
        assert_eq!(common(&b, &a), Some(0x8001));
        // Two limited entries of one partition never match; a full one
        // found by the later walks does.
        let limited = both(&[0x0002, 0x0005]);
        let full_late = both(&[0x0002, 0x8005]);
        assert_eq!(common(&limited, &full_late), Some(0x0005));
        assert_eq!(common(&full_late, &limited), Some(0x8005));
        assert!(share_this(&a, &b, 0x0002), "b's full 0x8002 and a's 0x0002");
        assert!(!share_this(&a, &both(&[0x0002]), 0x0002), "both limited");
        // The same ports without allow_both_pkeys: one entry a partition.
        assert_eq!(a.allowing_both(false).entries(), [0x8001, 0x0002]);
        assert_eq!(
            common(&a.allowing_both(false), &b.allowing_both(false)),
            Some(0x8001)
        );
    }

    #[test]
    fn a_port_without_p_keys_shares_with_everyone_but_has_no_common_key() {
        let none = PkeyTable::default();
        let a = PkeyTable::new([0xFFFF]);
        assert!(share_any(&none, &a));
        assert!(share_any(&a, &none));
        assert_eq!(common(&none, &a), None);
        assert!(!share_any(&a, &PkeyTable::new([0x8001])));
    }
}
