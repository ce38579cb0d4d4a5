//! `--shard I/K`: one of K distributors' share of the nodes (parsed by
//! the command line, used by the distributor).

/// One of K distributors' share of the nodes: those whose port GUID
/// hashes to it, so that K distributors started with 1/K … K/K fill
/// disjoint shares that together are every node, whatever each of them
/// probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    index: u64,
    of: u64,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.of)
    }
}

impl Shard {
    /// Share `index` (1-based) of `of`.
    pub fn new(index: u32, of: u32) -> Self {
        Self {
            index: u64::from(index.max(1) - 1),
            of: u64::from(of.max(1)),
        }
    }

    /// Whether the port with GUID `guid` is in this share.
    pub fn owns(&self, guid: u64) -> bool {
        // splitmix64's finaliser: consecutive GUIDs spread evenly.
        let mut z = guid.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % self.of == self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_cover_every_port_and_are_even() {
        let guids: Vec<u64> = (0..10_000u64)
            .map(|i| 0x0002_c903_0000_0001 + 2 * i)
            .collect();
        let shards: Vec<Shard> = (1..=4).map(|i| Shard::new(i, 4)).collect();
        let mut sizes = [0usize; 4];
        for g in &guids {
            let owners: Vec<usize> = (0..4).filter(|s| shards[*s].owns(*g)).collect();
            assert_eq!(owners.len(), 1, "{g:#x} has exactly one shard");
            sizes[owners[0]] += 1;
        }
        assert!(
            sizes.iter().all(|n| (2_300..2_700).contains(n)),
            "{sizes:?}"
        );
        assert!(guids.iter().all(|g| Shard::new(1, 1).owns(*g)));
    }
}
