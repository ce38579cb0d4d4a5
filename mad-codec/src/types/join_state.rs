use core::{fmt, ops};

/// MCMemberRecord JoinState: four membership bits (byte 48, bits 3..0).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JoinState(pub u8);

impl JoinState {
    /// No membership.
    pub const NONE: Self = Self(0);
    /// Full member: sends and receives.
    pub const FULL_MEMBER: Self = Self(0x1);
    /// Non member: receives only.
    pub const NON_MEMBER: Self = Self(0x2);
    /// Send-only non member.
    pub const SEND_ONLY_NON_MEMBER: Self = Self(0x4);
    /// Send-only full member.
    pub const SEND_ONLY_FULL_MEMBER: Self = Self(0x8);

    /// Each of the four bits, lowest first.
    pub const BITS: [Self; 4] = [
        Self::FULL_MEMBER,
        Self::NON_MEMBER,
        Self::SEND_ONLY_NON_MEMBER,
        Self::SEND_ONLY_FULL_MEMBER,
    ];

    /// True when no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 & 0xF == 0
    }

    /// True when every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The bits set here and not in `other`.
    pub const fn minus(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The four bits, lowest first, that are set.
    pub fn iter(self) -> impl Iterator<Item = Self> {
        Self::BITS.into_iter().filter(move |b| self.contains(*b))
    }
}

impl ops::BitOr for JoinState {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl ops::BitOrAssign for JoinState {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl ops::BitAnd for JoinState {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

/// The set bits by name, `|`-separated (`Full|Non`), `none` when empty;
/// bits beyond the four defined ones in hex.
impl fmt::Display for JoinState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 4] = ["Full", "Non", "SendOnlyNon", "SendOnlyFull"];
        if self.0 == 0 {
            return f.write_str("none");
        }
        let mut first = true;
        for (i, name) in NAMES.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if self.0 & 0xF0 != 0 {
            write!(f, "{}{:#x}", if first { "" } else { "|" }, self.0 & 0xF0)?;
        }
        Ok(())
    }
}

impl fmt::Debug for JoinState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinState({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::JoinState;

    #[test]
    fn bit_operations() {
        let s = JoinState::FULL_MEMBER | JoinState::SEND_ONLY_FULL_MEMBER;
        assert!(s.contains(JoinState::FULL_MEMBER));
        assert!(!s.contains(JoinState::NON_MEMBER));
        assert_eq!(
            s.minus(JoinState::FULL_MEMBER),
            JoinState::SEND_ONLY_FULL_MEMBER
        );
        assert_eq!(s.iter().count(), 2);
        assert_eq!(format!("{s:?}"), "JoinState(Full|SendOnlyFull)");
    }
}
