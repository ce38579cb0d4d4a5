//! Rates as OpenSM 3.3 computes and compares them: a port's rate from its
//! active width and speed (`ib_port_info_compute_rate`), the bandwidth
//! order in which a path's least rate is taken (`ordered_rates`,
//! `ib_path_compare_rates`) and the adjustment of the 2x and HDR-only
//! rates to what the path's ends support (`ib_path_rate_2x_hdr_fixups`).
//!
//! Codes past 600 Gb/s (22) are unknown to OpenSM 3.3: it never computes
//! them, so neither does this module.

/// PortInfo.CapabilityMask: IsExtendedSpeedsSupported.
pub const CAP_EXTENDED_SPEEDS: u32 = 0x0000_4000;
/// PortInfo.CapabilityMask: IsCapabilityMask2Supported.
pub const CAP_HAS_CAP_MASK2: u32 = 0x0000_8000;
/// PortInfo.CapabilityMask2: IsLinkWidth2XSupported.
pub const CAP2_WIDTH_2X: u16 = 0x0010;
/// PortInfo.CapabilityMask2: IsLinkSpeedHDRSupported.
pub const CAP2_SPEED_HDR: u16 = 0x0020;

/// OpenSM's `ordered_rates`: each rate code's place in bandwidth order
/// (1 the slowest), 0 for the reserved codes 0 and 1.
const RANK: [u8; 23] = [
    0, 0, 1, 3, 6, 2, 5, 9, 10, 13, 14, 4, 12, 16, 17, 7, 15, 18, 19, 8, 11, 20, 21,
];

/// The rate code of each rank, the inverse of [`RANK`] (rank 0: none).
const BY_RANK: [u8; 22] = [
    0, 2, 5, 3, 11, 6, 4, 15, 19, 7, 8, 20, 12, 9, 10, 16, 13, 14, 17, 18, 21, 22,
];

/// The bandwidth rank of rate `code`: higher is faster; 0 for a code
/// OpenSM does not know.
pub fn rank(code: u8) -> u8 {
    RANK.get(usize::from(code)).copied().unwrap_or(0)
}

/// The rate code of bandwidth rank `rank` (0 for none).
pub fn code(rank: u8) -> u8 {
    BY_RANK.get(usize::from(rank)).copied().unwrap_or(0)
}

/// The PortInfo fields a port's rate is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkFacts {
    /// LinkWidthActive (1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x).
    pub width: u8,
    /// LinkSpeedActive (1: 2.5, 2: 5, 4: 10 Gb/s a lane).
    pub speed: u8,
    /// LinkSpeedExtActive (1: 14, 2: 25, 4: 50 Gb/s a lane; 0 none).
    pub speed_ext: u8,
}

/// The rate of a port with `link`, as `ib_port_info_compute_rate`: the
/// extended speed counts only when `extended` (the capability mask OpenSM
/// looks at says IsExtendedSpeedsSupported) and it is one OpenSM knows.
pub fn port_rate(link: LinkFacts, extended: bool) -> u8 {
    // Codes per width, in the order 1x, 4x, 8x, 12x, 2x; any other width
    // value counts as 1x.
    let by_width = |codes: [u8; 5]| match link.width {
        2 => codes[1],
        4 => codes[2],
        8 => codes[3],
        16 => codes[4],
        _ => codes[0],
    };
    if extended {
        let ext = match link.speed_ext {
            1 => Some([11, 12, 13, 14, 19]), // 14, 56, 112, 168, 28 Gb/s
            2 => Some([15, 16, 17, 18, 20]), // 25, 100, 200, 300, 50
            4 => Some([20, 17, 21, 22, 16]), // 50, 200, 400, 600, 100
            _ => None,
        };
        if let Some(codes) = ext {
            return by_width(codes);
        }
    }
    match link.speed {
        2 => by_width([5, 6, 7, 8, 3]),  // 5, 20, 40, 60, 10 Gb/s
        4 => by_width([3, 7, 9, 10, 6]), // 10, 40, 80, 120, 20
        1 => by_width([2, 3, 6, 4, 5]),  // 2.5, 10, 20, 30, 5
        _ => 2,
    }
}

/// `ib_path_rate_2x_hdr_fixups`: a path rate that only a 2x link or HDR
/// gives, lowered to what a port with `cap_mask` and `cap_mask2` that does
/// not support them can carry.
pub fn fixup_2x_hdr(rate: u8, cap_mask: u32, cap_mask2: u16) -> u8 {
    let has2 = cap_mask & CAP_HAS_CAP_MASK2 != 0;
    let two_x = has2 && cap_mask2 & CAP2_WIDTH_2X != 0;
    let hdr = has2 && cap_mask2 & CAP2_SPEED_HDR != 0;
    match rate {
        // 28 Gb/s: only 2x FDR.
        19 if !two_x => {
            if cap_mask & CAP_EXTENDED_SPEEDS != 0 {
                15
            } else {
                6
            }
        }
        // 50 Gb/s: 2x EDR or 1x HDR.
        20 if !two_x && !hdr => 7,
        // 400 and 600 Gb/s: only HDR.
        21 | 22 if !hdr => 18,
        _ => rate,
    }
}

/// `ib_path_rate_max_12xedr` (OpenSM's `use_original_extended_sa_rates_only`):
/// a rate past the original extended ones (up to 300 Gb/s, 12x EDR)
/// lowered to the nearest of them that old drivers know.
pub fn original_extended_rate(rate: u8) -> u8 {
    match rate {
        ..=18 => rate,
        19 => 15,      // 28 Gb/s: 25
        20 => 7,       // 50 Gb/s: 40
        21 | 22 => 18, // 400 and 600 Gb/s: 300
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn original_extended_rates_are_kept_and_newer_ones_lowered_as_opensm_does() {
        for c in 2..=18u8 {
            assert_eq!(original_extended_rate(c), c);
        }
        assert_eq!(original_extended_rate(19), 15);
        assert_eq!(original_extended_rate(20), 7);
        assert_eq!(original_extended_rate(21), 18);
        assert_eq!(original_extended_rate(22), 18);
        // Never more than the path carries.
        for c in 19..=22u8 {
            assert!(rank(original_extended_rate(c)) <= rank(c));
        }
    }

    #[test]
    fn rank_and_code_are_inverse_over_every_code_opensm_knows() {
        for c in 2..=22u8 {
            assert_eq!(code(rank(c)), c);
        }
        assert_eq!(rank(0), 0);
        assert_eq!(rank(23), 0, "800 Gb/s is past OpenSM 3.3");
    }

    #[test]
    fn ranks_follow_bandwidth_not_codes() {
        // 5 Gb/s (code 5) is slower than 10 Gb/s (code 3), 14 (code 11)
        // slower than 20 (code 6).
        assert!(rank(5) < rank(3));
        assert!(rank(11) < rank(6));
        // OpenSM ranks the 64b/66b rates by their 8b/10b equivalents: 25
        // Gb/s (31.25) above 30, 28 (35) above 30 too.
        assert!(rank(15) > rank(4));
        assert!(rank(19) > rank(4));
    }

    #[test]
    fn a_port_s_rate_is_its_width_times_its_speed() {
        let qdr_4x = LinkFacts {
            width: 2,
            speed: 4,
            speed_ext: 0,
        };
        assert_eq!(port_rate(qdr_4x, true), 7, "4x QDR: 40 Gb/s");
        let sdr_1x = LinkFacts {
            width: 1,
            speed: 1,
            speed_ext: 0,
        };
        assert_eq!(port_rate(sdr_1x, false), 2);
        let fdr_4x = LinkFacts {
            width: 2,
            speed: 4,
            speed_ext: 1,
        };
        assert_eq!(port_rate(fdr_4x, true), 12, "4x FDR: 56 Gb/s");
        assert_eq!(
            port_rate(fdr_4x, false),
            7,
            "without IsExtendedSpeedsSupported the extended speed is not looked at"
        );
        let hdr_2x = LinkFacts {
            width: 16,
            speed: 4,
            speed_ext: 4,
        };
        assert_eq!(port_rate(hdr_2x, true), 16, "2x HDR: 100 Gb/s");
        let unknown_ext = LinkFacts {
            width: 8,
            speed: 2,
            speed_ext: 8,
        };
        assert_eq!(
            port_rate(unknown_ext, true),
            8,
            "an unknown extended speed falls back to LinkSpeedActive (12x DDR: 60)"
        );
        let none = LinkFacts::default();
        assert_eq!(port_rate(none, true), 2, "no speed reads as 2.5 Gb/s");
    }

    #[test]
    fn rates_only_a_2x_link_or_hdr_gives_are_lowered_for_ports_without_them() {
        let plain = CAP_EXTENDED_SPEEDS;
        assert_eq!(fixup_2x_hdr(19, plain, 0), 15, "28 -> 25 Gb/s");
        assert_eq!(fixup_2x_hdr(19, 0, 0), 6, "28 -> 20 Gb/s");
        assert_eq!(
            fixup_2x_hdr(19, CAP_HAS_CAP_MASK2, CAP2_WIDTH_2X),
            19,
            "a 2x port keeps 28"
        );
        assert_eq!(fixup_2x_hdr(20, plain, 0), 7, "50 -> 40");
        assert_eq!(fixup_2x_hdr(20, CAP_HAS_CAP_MASK2, CAP2_SPEED_HDR), 20);
        assert_eq!(fixup_2x_hdr(21, CAP_HAS_CAP_MASK2, CAP2_WIDTH_2X), 18);
        assert_eq!(fixup_2x_hdr(22, CAP_HAS_CAP_MASK2, CAP2_SPEED_HDR), 22);
        assert_eq!(fixup_2x_hdr(16, 0, 0), 16, "other rates stay");
    }
}
