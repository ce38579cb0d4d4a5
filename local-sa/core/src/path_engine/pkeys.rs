//! P_Key tables as OpenSM keeps them for its SA (`osm_pkey_tbl_t.keys`)
//! and the three questions a path asks of two of them
//! (`osm_physp_share_pkey`, `osm_physp_find_common_pkey`,
//! `osm_physp_share_this_pkey`), with OpenSM's default
//! `allow_both_pkeys FALSE`.
//!
//! OpenSM keeps one entry per partition (the low 15 bits, the base), the
//! full member's when a table holds both, in a map keyed by the P_Key in
//! network byte order read as a host integer: on x86, byte-swapped. The
//! common P_Key of two ports is the first partition in that order which
//! both hold and at least one holds as a full member, with the first
//! port's membership bit.

/// The membership bit of a P_Key.
pub const FULL_MEMBER: u16 = 0x8000;

/// One port's P_Keys, as OpenSM's map holds them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PkeyTable {
    /// One entry per partition, in the map's order.
    entries: Vec<u16>,
}

/// The order of OpenSM's P_Key map (x86).
fn map_order(pkey: u16) -> u16 {
    (pkey & !FULL_MEMBER).swap_bytes()
}

impl PkeyTable {
    /// The table of a port whose P_Key table holds `entries` (every block,
    /// in any order): empty entries (partition 0) are left out, and of
    /// two entries of one partition the greater, the full member's, kept.
    pub fn new(entries: impl IntoIterator<Item = u16>) -> Self {
        let mut all: Vec<u16> = entries
            .into_iter()
            .filter(|p| p & !FULL_MEMBER != 0)
            .collect();
        // Greatest first within a partition, so that dedup keeps it.
        all.sort_unstable_by_key(|p| (map_order(*p), !*p));
        all.dedup_by_key(|p| *p & !FULL_MEMBER);
        Self { entries: all }
    }

    /// Whether the port holds no P_Key at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The port's entry for partition `pkey` (membership bit ignored).
    pub fn entry(&self, pkey: u16) -> Option<u16> {
        let key = map_order(pkey);
        self.entries
            .binary_search_by_key(&key, |p| map_order(*p))
            .ok()
            .map(|i| self.entries[i])
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

/// `osm_physp_find_common_pkey`: the first partition in map order that
/// both hold and one holds as a full member, with `a`'s membership bit.
pub fn common(a: &PkeyTable, b: &PkeyTable) -> Option<u16> {
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.entries.get(i), b.entries.get(j)) {
        if matches(x, y) {
            return Some(x);
        }
        let (kx, ky) = (map_order(x), map_order(y));
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
    fn a_port_without_p_keys_shares_with_everyone_but_has_no_common_key() {
        let none = PkeyTable::default();
        let a = PkeyTable::new([0xFFFF]);
        assert!(share_any(&none, &a));
        assert!(share_any(&a, &none));
        assert_eq!(common(&none, &a), None);
        assert!(!share_any(&a, &PkeyTable::new([0x8001])));
    }
}
