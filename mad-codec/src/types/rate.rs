use core::cmp::Ordering;

use crate::bits::FromBits;

wire_code! {
    /// Static rate code (6 bits on the wire). The codes are *not* ordered by
    /// bandwidth: compare with [`Rate::cmp_bandwidth`].
    pub struct Rate(u8) {
        /// 2.5 Gb/s.
        GBPS_2_5 = 2,
        /// 10 Gb/s.
        GBPS_10 = 3,
        /// 30 Gb/s.
        GBPS_30 = 4,
        /// 5 Gb/s.
        GBPS_5 = 5,
        /// 20 Gb/s.
        GBPS_20 = 6,
        /// 40 Gb/s.
        GBPS_40 = 7,
        /// 60 Gb/s.
        GBPS_60 = 8,
        /// 80 Gb/s.
        GBPS_80 = 9,
        /// 120 Gb/s.
        GBPS_120 = 10,
        /// 14 Gb/s.
        GBPS_14 = 11,
        /// 56 Gb/s.
        GBPS_56 = 12,
        /// 112 Gb/s.
        GBPS_112 = 13,
        /// 168 Gb/s.
        GBPS_168 = 14,
        /// 25 Gb/s.
        GBPS_25 = 15,
        /// 100 Gb/s.
        GBPS_100 = 16,
        /// 200 Gb/s.
        GBPS_200 = 17,
        /// 300 Gb/s.
        GBPS_300 = 18,
        /// 28 Gb/s.
        GBPS_28 = 19,
        /// 50 Gb/s.
        GBPS_50 = 20,
        /// 400 Gb/s.
        GBPS_400 = 21,
        /// 600 Gb/s.
        GBPS_600 = 22,
        /// 800 Gb/s.
        GBPS_800 = 23,
        /// 1200 Gb/s.
        GBPS_1200 = 24,
    }
}

/// Valid rate codes in ascending bandwidth order.
const BY_BANDWIDTH: [Rate; 23] = [
    Rate::GBPS_2_5,
    Rate::GBPS_5,
    Rate::GBPS_10,
    Rate::GBPS_14,
    Rate::GBPS_20,
    Rate::GBPS_25,
    Rate::GBPS_28,
    Rate::GBPS_30,
    Rate::GBPS_40,
    Rate::GBPS_50,
    Rate::GBPS_56,
    Rate::GBPS_60,
    Rate::GBPS_80,
    Rate::GBPS_100,
    Rate::GBPS_112,
    Rate::GBPS_120,
    Rate::GBPS_168,
    Rate::GBPS_200,
    Rate::GBPS_300,
    Rate::GBPS_400,
    Rate::GBPS_600,
    Rate::GBPS_800,
    Rate::GBPS_1200,
];

impl Rate {
    /// The bandwidth in Mb/s, for valid codes (2..=24).
    pub const fn mbps(self) -> Option<u32> {
        Some(match self.0 {
            2 => 2_500,
            3 => 10_000,
            4 => 30_000,
            5 => 5_000,
            6 => 20_000,
            7 => 40_000,
            8 => 60_000,
            9 => 80_000,
            10 => 120_000,
            11 => 14_000,
            12 => 56_000,
            13 => 112_000,
            14 => 168_000,
            15 => 25_000,
            16 => 100_000,
            17 => 200_000,
            18 => 300_000,
            19 => 28_000,
            20 => 50_000,
            21 => 400_000,
            22 => 600_000,
            23 => 800_000,
            24 => 1_200_000,
            _ => return None,
        })
    }

    /// True for codes 2..=24.
    pub const fn is_valid(self) -> bool {
        self.mbps().is_some()
    }

    /// Position in ascending bandwidth order (0 = 2.5 Gb/s), for valid codes.
    pub fn bandwidth_rank(self) -> Option<usize> {
        BY_BANDWIDTH.iter().position(|r| *r == self)
    }

    /// Compares two rates by bandwidth. Invalid codes sort below every
    /// valid one and compare among themselves by code.
    pub fn cmp_bandwidth(self, other: Self) -> Ordering {
        match (self.mbps(), other.mbps()) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => self.0.cmp(&other.0),
        }
    }

    /// The valid rate with the next lower bandwidth ("less than" in a
    /// selector), if there is one.
    pub fn next_lower(self) -> Option<Self> {
        let rank = self.bandwidth_rank()?;
        rank.checked_sub(1).map(|r| BY_BANDWIDTH[r])
    }

    /// The valid rate with the next higher bandwidth, if there is one.
    pub fn next_higher(self) -> Option<Self> {
        let rank = self.bandwidth_rank()?;
        BY_BANDWIDTH.get(rank + 1).copied()
    }

    /// The code for a bandwidth in Mb/s.
    pub fn from_mbps(mbps: u32) -> Option<Self> {
        BY_BANDWIDTH
            .iter()
            .copied()
            .find(|r| r.mbps() == Some(mbps))
    }
}

impl FromBits for Rate {
    fn from_bits(bits: u32) -> Self {
        Self(u8::from_bits(bits))
    }
    fn into_bits(self) -> u32 {
        u32::from(self.0)
    }
}

#[cfg(test)]
mod tests {
    use core::cmp::Ordering;

    use super::{BY_BANDWIDTH, Rate};

    #[test]
    fn table_is_sorted_and_complete() {
        for pair in BY_BANDWIDTH.windows(2) {
            assert!(pair[0].mbps() < pair[1].mbps(), "{pair:?}");
        }
        for code in 2..=24 {
            assert!(Rate(code).bandwidth_rank().is_some(), "code {code}");
        }
    }

    #[test]
    fn ordering_is_by_bandwidth_not_code() {
        // 5 Gb/s has a higher code than 10 Gb/s but less bandwidth.
        assert_eq!(Rate::GBPS_5.cmp_bandwidth(Rate::GBPS_10), Ordering::Less);
        assert_eq!(Rate::GBPS_14.cmp_bandwidth(Rate::GBPS_120), Ordering::Less);
        assert_eq!(Rate(0).cmp_bandwidth(Rate::GBPS_2_5), Ordering::Less);
    }

    #[test]
    fn next_lower_follows_bandwidth() {
        // OpenSM: "less than 10 Gb/s" gives 5 Gb/s (code 5).
        assert_eq!(Rate::GBPS_10.next_lower(), Some(Rate::GBPS_5));
        assert_eq!(Rate::GBPS_2_5.next_lower(), None);
        assert_eq!(Rate::GBPS_30.next_lower(), Some(Rate::GBPS_28));
        assert_eq!(Rate::GBPS_1200.next_higher(), None);
        assert_eq!(Rate(1).next_lower(), None);
    }
}
