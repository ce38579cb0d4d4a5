//! Text fields of SA records: NUL-padded, fixed size.

/// A NUL-padded text field up to its first NUL; invalid UTF-8 is replaced.
pub(super) fn nul_padded_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Writes `text` into a NUL-padded field, truncated to the field's size.
pub(super) fn put_nul_padded(field: &mut [u8], text: &str) {
    let n = text.len().min(field.len());
    field[..n].copy_from_slice(&text.as_bytes()[..n]);
    field[n..].fill(0);
}
