//! MADs as hex text, in the layout `saquery -d -d` prints: 16 bytes a line
//! in groups of two, lower case.

/// Formats `bytes` as saquery prints MADs (no trailing newline).
pub fn dump(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 5 / 2);
    for (i, line) in bytes.chunks(16).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, group) in line.chunks(2).enumerate() {
            if j > 0 {
                out.push(' ');
            }
            for b in group {
                out.push_str(&format!("{b:02x}"));
            }
        }
    }
    out
}

/// Why text is not hex bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// An odd number of digits (whitespace left out): how many.
    OddLength(usize),
    /// Two characters that are not a hex byte.
    NotHex(String),
}

impl core::fmt::Display for HexError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::OddLength(n) => write!(f, "odd number of hex digits ({n})"),
            Self::NotHex(s) => write!(f, "not hex: {s:?}"),
        }
    }
}

impl std::error::Error for HexError {}

/// Parses hex digits in any grouping (whitespace is ignored).
pub fn parse(text: &str) -> Result<Vec<u8>, HexError> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(HexError::OddLength(digits.len()));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = String::from_utf8_lossy(pair);
            u8::from_str_radix(&s, 16).map_err(|_| HexError::NotHex(s.into_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn saquery_layout_round_trips() {
        let bytes: Vec<u8> = (0..19).collect();
        let text = super::dump(&bytes);
        assert_eq!(text, "0001 0203 0405 0607 0809 0a0b 0c0d 0e0f\n1011 12");
        assert_eq!(super::parse(&text).unwrap(), bytes);
        assert!(super::parse("0").is_err());
        assert!(super::parse("zz").is_err());
    }
}
