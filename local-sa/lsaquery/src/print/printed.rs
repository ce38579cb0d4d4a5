//! A printed record: saquery's text and lsaquery's JSON for it, built
//! field by field by the printers of each record type.

use std::fmt::Write as _;

use mad_codec::{Mtu, Rate};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::json::{self, JSON_SCHEMA};

/// How saquery formats a value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fmt {
    /// `%u`
    Dec,
    /// `0x%X`
    Hex,
    /// `0x%x`
    HexLower,
    /// `0x%0NX` (upper case, N digits)
    HexUpper(usize),
    /// `0x%016` PRIx64 (lower case, 16 digits)
    Guid,
}

#[derive(Debug, Clone)]
pub(super) enum Value {
    Num(u64, Fmt),
    Text(String),
    /// A table's entries: a JSON array (of `"0x…"` strings with
    /// [`Fmt::Guid`]).
    List(Vec<u64>, Fmt),
}

/// A part of a printed record.
#[derive(Debug, Clone)]
pub(super) enum Item {
    /// `\t\tname....value` in the text, `"name": value` in JSON.
    Field(&'static str, Value),
    /// A line of the text as saquery prints it (sub-headings, table rows,
    /// libibmad's fields); JSON leaves it out.
    Line(String),
    /// A value only the JSON carries, the text showing it in lines.
    Json(&'static str, Value),
}

/// One printed record.
#[derive(Debug, Clone)]
pub(crate) struct Printed {
    heading: &'static str,
    /// Width of name plus dots (24 for most records, 25 for ClassPortInfo,
    /// 27 for the switch and port tables).
    width: usize,
    /// The record in print order.
    items: Vec<Item>,
}

impl Printed {
    pub(super) fn new(heading: &'static str, width: usize) -> Self {
        Self {
            heading,
            width,
            items: Vec::new(),
        }
    }

    pub(super) fn num(mut self, name: &'static str, v: impl Into<u64>, fmt: Fmt) -> Self {
        self.items
            .push(Item::Field(name, Value::Num(v.into(), fmt)));
        self
    }

    pub(super) fn text(mut self, name: &'static str, v: impl Into<String>) -> Self {
        self.items.push(Item::Field(name, Value::Text(v.into())));
        self
    }

    /// A line of text only (printed after two tabs).
    pub(super) fn line(mut self, text: impl Into<String>) -> Self {
        self.items.push(Item::Line(format!("\t\t{}", text.into())));
        self
    }

    /// A line of text only, exactly as given.
    pub(super) fn raw_line(mut self, text: impl Into<String>) -> Self {
        self.items.push(Item::Line(text.into()));
        self
    }

    /// A table's entries, for JSON only.
    pub(super) fn list(mut self, name: &'static str, values: Vec<u64>, fmt: Fmt) -> Self {
        self.items.push(Item::Json(name, Value::List(values, fmt)));
        self
    }

    /// A number for JSON only.
    pub(super) fn json_num(self, name: &'static str, v: impl Into<u64>) -> Self {
        self.json_value(name, v.into(), Fmt::Dec)
    }

    /// A value for JSON only.
    pub(super) fn json_value(mut self, name: &'static str, v: u64, fmt: Fmt) -> Self {
        self.items.push(Item::Json(name, Value::Num(v, fmt)));
        self
    }

    /// Text for JSON only.
    pub(super) fn json_text(mut self, name: &'static str, v: impl Into<String>) -> Self {
        self.items.push(Item::Json(name, Value::Text(v.into())));
        self
    }

    /// saquery's text: the heading, then `\t\tname.....value` lines and
    /// the record's other lines.
    pub(crate) fn to_text(&self) -> String {
        let mut out = format!("{}:\n", self.heading);
        for item in &self.items {
            let (name, value) = match item {
                Item::Field(name, value) => (name, value),
                Item::Line(line) => {
                    let _ = writeln!(out, "{line}");
                    continue;
                }
                Item::Json(..) => continue,
            };
            let dots = self.width.saturating_sub(name.len()).max(1);
            let _ = write!(out, "\t\t{name}{}", ".".repeat(dots));
            let _ = match value {
                Value::Text(t) => writeln!(out, "{t}"),
                Value::Num(v, Fmt::Dec) => writeln!(out, "{v}"),
                Value::Num(v, Fmt::Hex) => writeln!(out, "0x{v:X}"),
                Value::Num(v, Fmt::HexLower) => writeln!(out, "0x{v:x}"),
                Value::Num(v, Fmt::HexUpper(w)) => writeln!(out, "0x{v:0w$X}"),
                Value::Num(v, Fmt::Guid) => writeln!(out, "0x{v:016x}"),
                Value::List(..) => writeln!(out),
            };
        }
        out
    }

    /// Writes it to standard output: a JSON line with `json`, else text.
    pub(crate) fn print(&self, json: bool) -> Result<(), crate::stop::Stop> {
        if json {
            outln!("{}", self.to_json())
        } else {
            out!("{}", self.to_text())
        }
    }

    /// One JSON object (docs/json.md), as [`Printed`]'s `Serialize` writes it.
    pub(crate) fn to_json(&self) -> String {
        json::line(self)
    }
}

/// One JSON object (docs/json.md): `{"schema": 1, "record": heading,
/// field: value, ...}` with saquery's field names in snake_case.
/// 64-bit values (GUIDs, ServiceIDs, keys) are `"0x…"` strings, which
/// parsers that hold numbers as doubles keep exact; other numbers are
/// numbers; GIDs and names are strings. An MTU or rate code comes with
/// its meaning (`mtu_bytes`, `rate_gbps`; null for a code without one).
impl Serialize for Printed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", &JSON_SCHEMA)?;
        map.serialize_entry("record", self.heading.trim_end_matches(" dump"))?;
        for (name, value) in self.items.iter().filter_map(|item| match item {
            Item::Field(name, value) | Item::Json(name, value) => Some((name, value)),
            Item::Line(_) => None,
        }) {
            let key = json_key(name);
            match value {
                Value::Text(t) => map.serialize_entry(&key, t)?,
                Value::Num(v, Fmt::Guid) => map.serialize_entry(&key, &guid_text(*v))?,
                Value::Num(v, _) => map.serialize_entry(&key, v)?,
                Value::List(values, Fmt::Guid) => {
                    let texts: Vec<String> = values.iter().map(|v| guid_text(*v)).collect();
                    map.serialize_entry(&key, &texts)?;
                }
                Value::List(values, _) => map.serialize_entry(&key, values)?,
            }
            if let Value::Num(v, _) = value {
                // Selector bits 7..6 aside.
                let code = (*v & 0x3F) as u8;
                match key.as_str() {
                    "mtu" => map.serialize_entry("mtu_bytes", &Mtu(code).bytes())?,
                    "rate" => {
                        let gbps = rate_gbps(Rate(code)).map(json::number).transpose()?;
                        map.serialize_entry("rate_gbps", &gbps)?;
                    }
                    _ => {}
                }
            }
        }
        map.end()
    }
}

/// A 64-bit value as `0x` and 16 hex digits.
fn guid_text(v: u64) -> String {
    format!("0x{v:016x}")
}

/// A saquery field name as a JSON key: snake_case, words split at spaces,
/// slashes and lower-to-upper steps ("Capability mask 2" →
/// "capability_mask_2", "PortGid" → "port_gid", "Trap HL/QP" →
/// "trap_hl_qp"); saquery's own snake_case names stay as they are.
pub(crate) fn json_key(name: &str) -> String {
    match name {
        "TClass" => return "tclass".into(),
        "ServiceP_Key" => return "service_pkey".into(),
        // Acronyms run into the next word.
        "LinearFDBCap" => return "linear_fdb_cap".into(),
        "RandomFDBCap" => return "random_fdb_cap".into(),
        "MulticastFDBCap" => return "multicast_fdb_cap".into(),
        "LinearFDBTop" => return "linear_fdb_top".into(),
        "MulticastFDBTop" => return "multicast_fdb_top".into(),
        "SMState" => return "sm_state".into(),
        "LifeTimeValue/PortStateChange/OpSL2VL" => return "life_state".into(),
        _ => {}
    }
    let mut key = String::with_capacity(name.len() + 4);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !key.is_empty() && !key.ends_with('_') {
                key.push('_');
            }
        } else {
            if c.is_ascii_uppercase()
                && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                && !key.ends_with('_')
            {
                key.push('_');
            }
            key.push(c.to_ascii_lowercase());
        }
        previous = Some(c);
    }
    key.trim_end_matches('_').to_owned()
}

/// A rate code's bandwidth in Gb/s (2.5, 10, ...), for codes with one.
fn rate_gbps(rate: Rate) -> Option<String> {
    let name = rate.name()?.strip_prefix("GBPS_")?;
    Some(name.replace('_', "."))
}

pub(super) const NOT_DISPLAYED: &str = "<not displayed>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys_are_snake_case() {
        for (name, key) in [
            ("service_id", "service_id"),
            ("Capability mask 2", "capability_mask_2"),
            ("PortGid", "port_gid"),
            ("NodeDescription", "node_description"),
            ("Trap HL/QP", "trap_hl_qp"),
            ("Redirect TC/SL/FL", "redirect_tc_sl_fl"),
            ("MGID", "mgid"),
            ("SL", "sl"),
            ("TClass", "tclass"),
            ("ServiceP_Key", "service_pkey"),
            ("Response time value", "response_time_value"),
        ] {
            assert_eq!(json_key(name), key, "{name}");
        }
    }

    #[test]
    fn json_strings_are_escaped() {
        let p = Printed::new("NodeRecord", 24).text("NodeDescription", "a\"b\\c\n\u{1}");
        assert!(
            p.to_json()
                .ends_with(r#","node_description":"a\"b\\c\n\u0001"}"#),
            "{}",
            p.to_json()
        );
    }
}
