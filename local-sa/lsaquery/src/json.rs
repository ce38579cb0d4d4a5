//! What every JSON output of lsaquery shares (docs/json.md): the schema
//! version, one object per line written through serde, numbers printed
//! with a fixed count of decimals, and values that are numbers where a
//! double holds them exactly.
//!
//! Each output is a struct deriving `Serialize` whose fields are its keys
//! in order; serde_json does the escaping.

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// The version of the JSON lsaquery prints: raised when a key changes
/// meaning or goes away (new keys do not raise it).
pub(crate) const JSON_SCHEMA: u32 = 1;

/// `value` as one line of JSON (without the newline).
pub(crate) fn line(value: &impl Serialize) -> String {
    // Only a Serialize impl that fails, or a map with keys that are not
    // strings, can make this fail: none of lsaquery's outputs has either.
    serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({"schema": JSON_SCHEMA, "error": e.to_string()}).to_string()
    })
}

/// A number with `DECIMALS` digits after the point, as the text output
/// prints it (`1.500`); `null` when it is not finite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed<const DECIMALS: usize>(pub(crate) f64);

impl<const DECIMALS: usize> Serialize for Fixed<DECIMALS> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.0.is_finite() {
            return serializer.serialize_none();
        }
        number::<S::Error>(format!("{:.*}", DECIMALS, self.0))?.serialize(serializer)
    }
}

/// A number written as `text` (which must be a JSON number) as it is.
pub(crate) fn number<E: serde::ser::Error>(text: String) -> Result<Box<RawValue>, E> {
    RawValue::from_string(text).map_err(E::custom)
}

/// A value of a `name value` line: a number where it is one that a
/// double holds exactly, else the text.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum Scalar {
    Number(u64),
    Text(String),
}

impl Scalar {
    /// `text` as a number if it is an integer below 2^53, else as text.
    pub(crate) fn of(text: &str) -> Self {
        match text.parse::<u64>() {
            Ok(n) if n < 1 << 53 => Self::Number(n),
            _ => Self::Text(text.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_numbers_keep_their_decimals_and_infinities_are_null() {
        assert_eq!(line(&Fixed::<3>(1.5)), "1.500");
        assert_eq!(line(&Fixed::<6>(0.25)), "0.250000");
        assert_eq!(line(&Fixed::<1>(f64::INFINITY)), "null");
    }

    #[test]
    fn scalars_are_numbers_only_where_a_double_holds_them() {
        let values = [
            Scalar::of("42"),
            Scalar::of("9007199254740993"),
            Scalar::of("yes \"quoted\""),
        ];
        assert_eq!(line(&values), r#"[42,"9007199254740993","yes \"quoted\""]"#);
    }
}
