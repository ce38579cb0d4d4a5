use crate::bits::FromBits;

wire_code! {
    /// Path MTU code (6 bits on the wire).
    pub struct Mtu(u8) {
        /// 256 bytes.
        MTU_256 = 1,
        /// 512 bytes.
        MTU_512 = 2,
        /// 1024 bytes.
        MTU_1024 = 3,
        /// 2048 bytes.
        MTU_2048 = 4,
        /// 4096 bytes.
        MTU_4096 = 5,
    }
}

impl Mtu {
    /// The MTU in bytes, for valid codes.
    pub const fn bytes(self) -> Option<u32> {
        match self.0 {
            1..=5 => Some(128 << self.0),
            _ => None,
        }
    }

    /// True for codes 1..=5. MTUs are ordered by their code.
    pub const fn is_valid(self) -> bool {
        self.bytes().is_some()
    }

    /// The code for an MTU given in bytes.
    pub const fn from_bytes(bytes: u32) -> Option<Self> {
        match bytes {
            256 => Some(Self::MTU_256),
            512 => Some(Self::MTU_512),
            1024 => Some(Self::MTU_1024),
            2048 => Some(Self::MTU_2048),
            4096 => Some(Self::MTU_4096),
            _ => None,
        }
    }
}

impl FromBits for Mtu {
    fn from_bits(bits: u32) -> Self {
        Self(u8::from_bits(bits))
    }
    fn into_bits(self) -> u32 {
        u32::from(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Mtu;

    #[test]
    fn sizes() {
        assert_eq!(Mtu::MTU_256.bytes(), Some(256));
        assert_eq!(Mtu::MTU_4096.bytes(), Some(4096));
        assert_eq!(Mtu(0).bytes(), None);
        assert_eq!(Mtu(6).bytes(), None);
        assert_eq!(Mtu::from_bytes(2048), Some(Mtu::MTU_2048));
        assert_eq!(Mtu::from_bytes(3000), None);
    }
}
