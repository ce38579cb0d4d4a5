//! "Did you mean": the known name closest to a mistyped one.

/// The name in `known` closest to `typed` (in Levenshtein edits), if one
/// is close enough to be what was meant: `sm_key` and `smkey` find
/// `sm-key`, `refresh-intervall` finds `refresh-interval`, `colour` finds
/// nothing.
pub(crate) fn closest<'a>(
    typed: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // Underscores for dashes is the commonest slip (opensm.conf's style).
    let typed = typed.replace('_', "-");
    // A third of the name, at least one edit and at most three.
    let allowed = (typed.chars().count() / 3).clamp(1, 3);
    known
        .into_iter()
        .map(|k| (strsim::levenshtein(&typed, k), k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [&str; 4] = ["sm-key", "sm-key-file", "refresh-interval", "port"];

    #[test]
    fn slips_find_the_name_and_strangers_find_nothing() {
        assert_eq!(closest("sm_key", KNOWN), Some("sm-key"));
        assert_eq!(closest("smkey", KNOWN), Some("sm-key"));
        assert_eq!(closest("sm_key_file", KNOWN), Some("sm-key-file"));
        assert_eq!(
            closest("refresh-intervall", KNOWN),
            Some("refresh-interval")
        );
        assert_eq!(closest("prt", KNOWN), Some("port"));
        assert_eq!(closest("colour", KNOWN), None);
        assert_eq!(closest("", KNOWN), None);
    }
}
