//! Node names where saquery takes a LID: a word starting with a letter is
//! a node's NodeDescription, looked up at the SA before the query is
//! built.

use std::collections::HashMap;

use local_sa_cli::number;

/// What the names on the command line stand for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Names<'a> {
    /// Not looked up yet: a name stands for a placeholder LID, for a first
    /// pass that only needs to know what is asked.
    Pending,
    /// Looked up: each name's LID.
    Resolved(&'a HashMap<String, u16>),
}

impl Names<'_> {
    fn lid(self, name: &str) -> Result<u16, String> {
        match self {
            Names::Pending => Ok(u16::MAX),
            Names::Resolved(map) => map.get(name).copied().ok_or_else(|| {
                format!(
                    "no node is named {name:?} (a name is a node's whole NodeDescription; \
                         the query names are in --help)"
                )
            }),
        }
    }
}

/// Whether saquery reads `text` as a node name rather than a number.
pub(crate) fn is_name(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// A LID or a node name; 0 or nothing is "any" (None), as in saquery.
pub(crate) fn optional_lid(text: &str, names: Names<'_>) -> Result<Option<u16>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let lid = if is_name(text) {
        names.lid(text)?
    } else {
        number::<u16>(text)?
    };
    Ok((lid != 0).then_some(lid))
}

/// A LID or a node name that must be given (0 is not a LID).
pub(crate) fn lid(text: &str, names: Names<'_>) -> Result<u16, String> {
    optional_lid(text, names)?.ok_or_else(|| format!("{text:?}: LID 0 is not a valid LID"))
}

/// saquery's `lid/number/number` argument: a LID (or node name) and up to
/// two numbers (ports, blocks, a position), each of them optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LidArgument {
    pub(crate) lid: Option<u16>,
    pub(crate) first: Option<u32>,
    pub(crate) second: Option<u32>,
}

/// Reads a [`LidArgument`].
pub(crate) fn lid_and_numbers(text: &str, names: Names<'_>) -> Result<LidArgument, String> {
    let mut parts = text.splitn(3, '/');
    let lid = optional_lid(parts.next().unwrap_or(""), names)?;
    let mut next = || -> Result<Option<u32>, String> {
        match parts.next() {
            None | Some("") => Ok(None),
            Some(n) => number::<u32>(n).map(Some),
        }
    };
    let first = next()?;
    let second = next()?;
    Ok(LidArgument { lid, first, second })
}

/// Narrows a number to a field's width, naming the field if it does not fit.
pub(crate) fn narrow<T: TryFrom<u32>>(v: Option<u32>, what: &str) -> Result<Option<T>, String> {
    v.map(|n| T::try_from(n).map_err(|_| format!("{what} {n} is out of range")))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_read_as_saquery_reads_them() {
        let map = HashMap::from([("sw1".to_owned(), 7u16)]);
        let names = Names::Resolved(&map);
        let arg = |lid, first, second| Ok(LidArgument { lid, first, second });
        assert_eq!(
            lid_and_numbers("4/1/2", names),
            arg(Some(4), Some(1), Some(2))
        );
        assert_eq!(
            lid_and_numbers("sw1//0x3", names),
            arg(Some(7), None, Some(3))
        );
        assert_eq!(lid_and_numbers("0/5", names), arg(None, Some(5), None));
        assert_eq!(lid_and_numbers("", names), arg(None, None, None));
        assert!(
            lid_and_numbers("h9/1", names)
                .unwrap_err()
                .contains("no node is named")
        );
        assert!(lid_and_numbers("4/x", names).is_err());
        assert_eq!(
            narrow::<u8>(Some(300), "port").unwrap_err(),
            "port 300 is out of range"
        );
        assert_eq!(lid("0x10", names), Ok(16));
        assert!(lid("0", names).is_err());
    }
}
