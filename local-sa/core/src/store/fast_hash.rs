//! A fast hash for the store's integer keys (LID pairs, GUIDs): FxHash's
//! rotate, xor and multiply per word.
//!
//! The keys come from the master SA and from loads that carry the SM_Key,
//! not from arbitrary peers, so collision flooding is not a concern here;
//! the default SipHash cost a third of the time of a cached answer.
//! Maps keyed by what any peer sends (forwarded query templates) keep
//! SipHash.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash's multiplier (from Firefox and rustc).
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The hasher; see the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A set with [`FastHasher`].
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn nearby_keys_spread_over_the_high_bits() {
        // hashbrown takes its control byte from the top 7 bits.
        let b = BuildHasherDefault::<FastHasher>::default();
        let tops: HashSet<u64> = (0u32..512).map(|k| b.hash_one(k) >> 57).collect();
        assert!(tops.len() > 100, "only {} distinct top bits", tops.len());
        let mut m: FastMap<u32, u32> = FastMap::default();
        m.extend((0..1000).map(|k| (k, k * 2)));
        assert_eq!(m.get(&777), Some(&1554));
    }
}
