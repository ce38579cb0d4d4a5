//! The names OpenSM knows nodes by, which its QoS policy's `port-name`
//! looks up: a node's NodeDescription as OpenSM prints it
//! (`clean_nodedesc`: at most 63 characters, each one that is not
//! printable a blank), or, where OpenSM reads a node name map
//! (`node_name_map_name`, else its default `ib-node-name-map` if it
//! exists), the map's name for the node's GUID (`remap_node_name`).
//!
//! The map is read as `parse_node_map` reads it: a line is a GUID
//! (`strtoull`'s, any base) then the name — the text up to a `"` or a
//! `#` after any leading ones (`strtok(p, "\"#")`), so `0x1 "a b"` names
//! `a b` and `0x1 ab # c` names `ab ` with its blank; blank lines and
//! those starting with `#` are none; a line that does not start with a
//! number followed by a blank ends the reading, and OpenSM then uses no
//! map at all.

use std::collections::HashMap;

/// A node name map: names by node GUID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNameMap {
    names: HashMap<u64, String>,
}

/// The line of a node name map OpenSM's parser stops at: it then uses
/// no map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnparsedLine {
    /// Its number, from 1.
    pub number: usize,
    /// The line.
    pub text: String,
}

impl std::fmt::Display for UnparsedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, {:?}", self.number, self.text)
    }
}

impl std::error::Error for UnparsedLine {}

impl NodeNameMap {
    /// The map of `text`; `Err` with the line OpenSM stops at (it then
    /// uses no map).
    pub fn parse(text: &str) -> Result<Self, UnparsedLine> {
        let mut names = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let p = line.trim_start();
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            let unparsed = || UnparsedLine {
                number: i + 1,
                text: line.to_owned(),
            };
            let (guid, rest) = strtoull(p).ok_or_else(unparsed)?;
            if !(rest.is_empty() || rest.starts_with([' ', '\t', '#'])) {
                return Err(unparsed());
            }
            let rest = rest.trim_start();
            let name = rest.trim_start_matches(['"', '#']);
            let name = name.split(['"', '#']).next().unwrap_or_default();
            if !name.is_empty() {
                names.insert(guid, name.to_owned());
            }
        }
        Ok(Self { names })
    }

    /// The map's name for the node of GUID `node_guid`, if it has one.
    pub fn name(&self, node_guid: u64) -> Option<&str> {
        self.names.get(&node_guid).map(String::as_str)
    }

    /// How many nodes it names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether it names none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The name OpenSM knows the node of GUID `node_guid` and NodeDescription
/// `description` (its 64 bytes) by: the map's, else the description as
/// `clean_nodedesc` leaves it.
pub fn print_name(map: Option<&NodeNameMap>, node_guid: u64, description: &[u8; 64]) -> String {
    if let Some(name) = map.and_then(|m| m.name(node_guid)) {
        return name.to_owned();
    }
    description
        .iter()
        .take(63)
        .take_while(|b| **b != 0)
        .map(|b| {
            if b.is_ascii_graphic() || *b == b' ' {
                char::from(*b)
            } else {
                ' '
            }
        })
        .collect()
}

/// What `strtoull(p, &e, 0)` reads at the start of `p`, and the rest; none
/// if it reads no digit.
fn strtoull(p: &str) -> Option<(u64, &str)> {
    let (digits, radix, prefix) =
        if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            (h, 16, 2)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8, 1)
        } else {
            (p, 10, 0)
        };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        // A lone 0 (or 0 before no octal digit) is zero.
        return p.starts_with('0').then(|| (0, &p[1..]));
    }
    let value = u64::from_str_radix(&digits[..end], radix).ok()?;
    Some((value, &p[prefix + end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_opensm_reads_them() {
        let map = NodeNameMap::parse(
            "# the map\n\n0x0002c90300000001 \"leaf 1\"\n  0x2c90300000002 spine2 # comment\n\
             0x3\n4 \"four\" # a comment \"quoted\"\n",
        )
        .unwrap();
        assert_eq!(map.name(0x0002_c903_0000_0001), Some("leaf 1"));
        assert_eq!(
            map.name(0x0002_c903_0000_0002),
            Some("spine2 "),
            "its blank kept"
        );
        assert_eq!(map.name(3), None, "no name");
        assert_eq!(map.name(4), Some("four"));
        assert_eq!(map.len(), 3);
        assert!(
            NodeNameMap::parse("0x1x \"a\"\n").is_err(),
            "no blank after the GUID"
        );
        assert!(NodeNameMap::parse("node \"a\"\n").is_err(), "no GUID");
    }

    #[test]
    fn a_description_is_printed_as_opensm_cleans_it_unless_the_map_names_the_node() {
        let mut d = [0u8; 64];
        d[..11].copy_from_slice(b"h1 HCA-1\x01\x7f!");
        assert_eq!(print_name(None, 7, &d), "h1 HCA-1  !");
        let long = [b'a'; 64];
        assert_eq!(
            print_name(None, 7, &long).len(),
            63,
            "63 characters at most"
        );
        let map = NodeNameMap::parse("7 \"h1\"\n").unwrap();
        assert_eq!(print_name(Some(&map), 7, &d), "h1");
        assert_eq!(print_name(Some(&map), 8, &d), "h1 HCA-1  !");
    }
}
