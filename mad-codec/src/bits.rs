//! Named sub-byte fields: the IBA packs selectors, flags and short numbers
//! into bytes and words. Each field is a `BitField { shift, width }`
//! constant next to the structure that holds it, so the masks read like the
//! tables in the specification.

/// A run of `width` bits starting `shift` bits above the least significant
/// bit of a (big-endian-decoded) word.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BitField {
    shift: u32,
    width: u32,
}

impl BitField {
    /// A field of `width` bits whose lowest bit is bit `shift`.
    pub(crate) const fn new(shift: u32, width: u32) -> Self {
        assert!(width >= 1 && shift + width <= 32);
        Self { shift, width }
    }

    const fn mask(self) -> u32 {
        if self.width == 32 {
            u32::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// Extracts the field from `word`.
    pub(crate) const fn get(self, word: u32) -> u32 {
        (word >> self.shift) & self.mask()
    }

    /// Returns `word` with the field replaced by `value` truncated to the
    /// field's width; every other bit is kept.
    pub(crate) const fn set(self, word: u32, value: u32) -> u32 {
        let mask = self.mask() << self.shift;
        (word & !mask) | ((value << self.shift) & mask)
    }
}

/// Conversion between a field's raw bits and its typed value.
pub(crate) trait FromBits: Sized {
    fn from_bits(bits: u32) -> Self;
    fn into_bits(self) -> u32;
}

impl FromBits for bool {
    fn from_bits(bits: u32) -> Self {
        bits != 0
    }
    fn into_bits(self) -> u32 {
        u32::from(self)
    }
}

impl FromBits for u8 {
    fn from_bits(bits: u32) -> Self {
        // Callers only use u8 for fields of at most 8 bits.
        bits as Self
    }
    fn into_bits(self) -> u32 {
        u32::from(self)
    }
}

impl FromBits for u16 {
    fn from_bits(bits: u32) -> Self {
        // Callers only use u16 for fields of at most 16 bits.
        bits as Self
    }
    fn into_bits(self) -> u32 {
        u32::from(self)
    }
}

impl FromBits for u32 {
    fn from_bits(bits: u32) -> Self {
        bits
    }
    fn into_bits(self) -> u32 {
        self
    }
}

/// Reads a 24-bit big-endian number (QPNs, ProducerType, VendorID).
pub(crate) const fn get_u24(bytes: [u8; 3]) -> u32 {
    u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]])
}

/// Writes the low 24 bits of `value` big-endian.
pub(crate) const fn put_u24(value: u32) -> [u8; 3] {
    let b = value.to_be_bytes();
    [b[1], b[2], b[3]]
}

#[cfg(test)]
mod tests {
    use super::BitField;

    #[test]
    fn set_keeps_neighbouring_bits() {
        let flow_label = BitField::new(8, 20);
        let word = 0x8000_00FF; // RawTraffic and HopLimit set
        let word = flow_label.set(word, 0xABCDE);
        assert_eq!(word, 0x8ABC_DEFF);
        assert_eq!(flow_label.get(word), 0xABCDE);
    }

    #[test]
    fn set_truncates_to_width() {
        let sl = BitField::new(0, 4);
        assert_eq!(sl.set(0xFFF0, 0x1F), 0xFFFF);
        assert_eq!(sl.get(0xFFFF), 0xF);
    }

    #[test]
    fn full_width_field() {
        let all = BitField::new(0, 32);
        assert_eq!(all.get(u32::MAX), u32::MAX);
        assert_eq!(all.set(0, 0x1234_5678), 0x1234_5678);
    }
}
