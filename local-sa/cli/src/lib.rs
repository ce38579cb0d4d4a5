//! What local-sa's command-line programs (`local-sa` and `lsaquery`)
//! share: numbers written as saquery takes them, and manual pages and
//! completions written from their option definitions and `--help`. Kept out of the I/O-free core,
//! which has no command line.

#![forbid(unsafe_code)]

mod catalogue;
mod manual;
mod page;

pub use catalogue::{generated_part_is_current, metrics_catalogue, with_generated_part};
pub use clap_complete::Shell;
pub use manual::{escape_line as roff_line, man_section, man_sections};
pub use page::{SHORT_HELP_LINES, completions, help_problems, manual_page};

/// Parses a number the way saquery's strtoul does: decimal, or hex with
/// 0x. For clap's `value_parser`.
pub fn number<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    let t = s.trim();
    let value = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("{s:?} is not a number (decimal, or hex with 0x)"))?;
    T::try_from(value).map_err(|_| format!("{s} is too large for this field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(number::<u16>("0xC000"), Ok(0xC000));
        assert_eq!(number::<u8>("127"), Ok(127));
        assert!(number::<u8>("300").unwrap_err().contains("too large"));
        assert!(number::<u8>("x").unwrap_err().contains("not a number"));
    }
}
