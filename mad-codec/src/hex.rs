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

/// Parses hex digits in any grouping (whitespace is ignored).
pub fn parse(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).map_err(|e| e.to_string())?;
            u8::from_str_radix(s, 16).map_err(|_| format!("not hex: {s:?}"))
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
