//! Node names as infiniband-diags shows them: a node-name map (the
//! `--node-name-map` file, `/etc/rdma/ib-node-name-map` by default) maps
//! node GUIDs to names; other nodes go by their NodeDescription with
//! unprintable bytes made spaces.

use std::collections::HashMap;
use std::path::Path;

/// Where infiniband-diags looks for a node-name map when none is named.
pub(crate) const DEFAULT_MAP: &str = "/etc/rdma/ib-node-name-map";

/// Node GUID → name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeNameMap(HashMap<u64, String>);

impl NodeNameMap {
    /// Reads `path`; with no path, the default map if there is one.
    pub(crate) fn open(path: Option<&Path>) -> Result<Self, String> {
        match crate::diag_file::read(path, DEFAULT_MAP).map_err(|e| format!("node-name map {e}"))? {
            Some((path, bytes)) => Self::parse(&String::from_utf8_lossy(&bytes))
                .map_err(|e| format!("node-name map {}: {e}", path.display())),
            None => Ok(Self::default()),
        }
    }

    /// The map's text: `GUID "name"` lines (the quotes optional), `#`
    /// comments and blank lines; the first line for a GUID wins, as in
    /// infiniband-diags.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut map = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let end = line
                .find(|c: char| c.is_whitespace() || c == '#')
                .unwrap_or(line.len());
            let guid = local_sa_cli::number::<u64>(&line[..end])
                .map_err(|e| format!("line {}: {e}: {line:?}", n + 1))?;
            // The name: up to a quote or '#', past any opening quote.
            let rest = line[end..].trim_start();
            let name = rest
                .split(['"', '#'])
                .find(|part| !part.is_empty())
                .unwrap_or("");
            if !name.is_empty() {
                map.entry(guid).or_insert_with(|| name.to_owned());
            }
        }
        Ok(Self(map))
    }

    /// The node's name: the map's, else its description cleaned.
    pub(crate) fn name(&self, node_guid: u64, description: &[u8; 64]) -> String {
        match self.0.get(&node_guid) {
            Some(name) => name.clone(),
            None => clean_description(description),
        }
    }
}

/// A NodeDescription up to its first NUL, each unprintable byte a space.
pub(crate) fn clean_description(description: &[u8; 64]) -> String {
    description
        .iter()
        .take_while(|b| **b != 0)
        .map(|&b| {
            if (0x20..0x7F).contains(&b) {
                b as char
            } else {
                ' '
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_read_as_infiniband_diags_reads_them() {
        let map = NodeNameMap::parse(
            "# comment\n\n0x0002c90300000001 \"leaf one\"\n  0x2 spine # trailing\n0x2 \"second\"\n",
        )
        .unwrap();
        let mut desc = [0u8; 64];
        desc[..5].copy_from_slice(b"h\x01 x\xff");
        assert_eq!(map.name(0x0002_c903_0000_0001, &desc), "leaf one");
        assert_eq!(map.name(2, &desc), "spine ", "the first line for a GUID");
        assert_eq!(map.name(3, &desc), "h  x ");
        assert!(
            NodeNameMap::parse("nonsense \"x\"")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(NodeNameMap::open(Some(Path::new("/nonexistent/map"))).is_err());
    }
}
