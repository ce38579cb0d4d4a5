//! "Did you mean": the known name closest to a mistyped one.

/// The name in `known` closest to `typed`, if one is close enough to be
/// what was meant: `sm_key` and `smkey` find `sm-key`, `refresh-intervall`
/// finds `refresh-interval`, `colour` finds nothing.
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
        .map(|k| (edit_distance(&typed, k), k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance: insertions, deletions and substitutions of one
/// character each.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // The previous row of the table, then the current one.
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
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

    #[test]
    fn distance_counts_single_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
    }
}
