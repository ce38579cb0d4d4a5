use core::{fmt, ops};

/// The SA ComponentMask (SA header bytes 48–55): bit *n* says that component
/// *n* of the record takes part in the query. Each attribute module defines
/// its bits as constants of this type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ComponentMask(pub u64);

impl ComponentMask {
    /// No component.
    pub const NONE: Self = Self(0);

    /// The mask with only bit `n` set.
    pub const fn bit(n: u32) -> Self {
        Self(1 << n)
    }

    /// True when every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when at least one bit of `other` is set here.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// The union of two masks.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl ops::BitOr for ComponentMask {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl ops::BitOrAssign for ComponentMask {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl ops::BitAnd for ComponentMask {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

/// As hex (`0x30` for SGID|DGID of a PathRecord).
impl fmt::Display for ComponentMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Debug for ComponentMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ComponentMask({:#x})", self.0)
    }
}
