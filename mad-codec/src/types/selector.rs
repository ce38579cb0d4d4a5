use crate::bits::FromBits;

/// The 2-bit selector that qualifies MTU, Rate and PacketLifeTime values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Selector {
    /// The value must be greater than the given one.
    #[default]
    GreaterThan,
    /// The value must be less than the given one.
    LessThan,
    /// Exactly the given value (what SAs write in returned records).
    Exactly,
    /// The best available: largest MTU or rate, smallest PacketLifeTime.
    Best,
}

impl Selector {
    /// Decodes the two bits (higher bits are ignored).
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0x3 {
            0 => Self::GreaterThan,
            1 => Self::LessThan,
            2 => Self::Exactly,
            _ => Self::Best,
        }
    }

    /// The two bits on the wire.
    pub const fn bits(self) -> u8 {
        match self {
            Self::GreaterThan => 0,
            Self::LessThan => 1,
            Self::Exactly => 2,
            Self::Best => 3,
        }
    }
}

impl FromBits for Selector {
    fn from_bits(bits: u32) -> Self {
        // Only the low two bits matter; the field is two bits wide.
        Self::from_bits(bits as u8)
    }
    fn into_bits(self) -> u32 {
        u32::from(self.bits())
    }
}
