//! Fabric topologies in ibsim's net-file format: generated two-level fat
//! trees and the example fabrics Debian ships with ibsim.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{fs, io};

/// Where Debian's ibsim-utils installs its example fabrics.
pub const DEBIAN_EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";

/// A fabric description for ibsim, and the node names it defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    name: String,
    text: String,
    hcas: Vec<String>,
    switches: Vec<String>,
}

/// A net file that could not be read or understood.
#[derive(Debug)]
pub enum TopologyError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// A node header line is malformed.
    BadHeader {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
}

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, source } => {
                write!(f, "cannot read topology {}: {source}", path.display())
            }
            Self::BadHeader { line, text } => write!(
                f,
                "topology line {line}: expected `Switch|Hca <ports> \"<name>\"`, found {text:?}"
            ),
        }
    }
}

impl std::error::Error for TopologyError {}

impl Topology {
    /// A two-level fat tree: `leaves` leaf switches with `hosts_per_leaf`
    /// single-port hosts each, every leaf linked once to each of `spines`
    /// spine switches.
    ///
    /// Hosts are named `h1`, `h2`, ... in leaf order, switches `leaf1`, ...
    /// and `spine1`, .... Host `h1` is written first, so ibsim treats it as
    /// the default SM port.
    pub fn fat_tree(leaves: usize, hosts_per_leaf: usize, spines: usize) -> Self {
        assert!(leaves >= 1 && hosts_per_leaf >= 1, "a fat tree needs hosts");
        assert!(
            hosts_per_leaf + spines <= 254 && leaves <= 254,
            "ibsim switches have at most 254 ports"
        );
        let host = |leaf: usize, i: usize| format!("h{}", leaf * hosts_per_leaf + i + 1);
        let mut text = format!(
            "# Two-level fat tree: {leaves} leaves x {hosts_per_leaf} hosts, {spines} spines.\n\n"
        );
        for leaf in 0..leaves {
            for i in 0..hosts_per_leaf {
                let _ = writeln!(
                    text,
                    "Hca 1 \"{}\"\n[1] \"leaf{}\"[{}]\n",
                    host(leaf, i),
                    leaf + 1,
                    i + 1
                );
            }
        }
        for leaf in 0..leaves {
            let _ = writeln!(
                text,
                "Switch {} \"leaf{}\"",
                hosts_per_leaf + spines,
                leaf + 1
            );
            for i in 0..hosts_per_leaf {
                let _ = writeln!(text, "[{}] \"{}\"[1]", i + 1, host(leaf, i));
            }
            for s in 0..spines {
                let _ = writeln!(
                    text,
                    "[{}] \"spine{}\"[{}]",
                    hosts_per_leaf + s + 1,
                    s + 1,
                    leaf + 1
                );
            }
            text.push('\n');
        }
        for s in 0..spines {
            let _ = writeln!(text, "Switch {leaves} \"spine{}\"", s + 1);
            for leaf in 0..leaves {
                let _ = writeln!(
                    text,
                    "[{}] \"leaf{}\"[{}]",
                    leaf + 1,
                    leaf + 1,
                    hosts_per_leaf + s + 1
                );
            }
            text.push('\n');
        }
        Self::parse(format!("fat-tree-{leaves}x{hosts_per_leaf}-{spines}"), text)
            .expect("generated topologies are well formed")
    }

    /// `switches` switches in a ring (each linked to the next by its ports
    /// 2 and 3), a host on port 1 of each: hosts `h1`, ... (written first:
    /// `h1` is ibsim's default SM port), switches `s1`, .... Routing
    /// engines that keep a ring free of deadlocks (LASH, DFSSSP) give its
    /// paths several SLs.
    pub fn ring(switches: usize) -> Self {
        assert!(switches >= 3, "a ring has three switches or more");
        let mut text = format!("# A ring of {switches} switches, a host on each.\n\n");
        for i in 1..=switches {
            let _ = writeln!(text, "Hca 1 \"h{i}\"\n[1] \"s{i}\"[1]\n");
        }
        for i in 1..=switches {
            let next = i % switches + 1;
            let previous = (i + switches - 2) % switches + 1;
            let _ = writeln!(
                text,
                "Switch 4 \"s{i}\"\n[1] \"h{i}\"[1]\n[2] \"s{next}\"[3]\n[3] \"s{previous}\"[2]\n"
            );
        }
        Self::parse(format!("ring-{switches}"), text).expect("generated topologies are well formed")
    }

    /// One of the example fabrics of Debian's ibsim-utils, by file name
    /// (for example `net.2sw2path4hca`).
    pub fn debian_example(name: &str) -> Result<Self, TopologyError> {
        Self::from_file(Path::new(DEBIAN_EXAMPLES).join(name))
    }

    /// A net file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|source| TopologyError::Io {
            path: path.to_owned(),
            source,
        })?;
        let name = path
            .file_name()
            .map_or_else(|| "topology".into(), |n| n.to_string_lossy().into_owned());
        Self::parse(name, text)
    }

    /// Net-file text. Node header lines are `Switch|Hca <ports> "<name>"`.
    pub fn parse(name: impl Into<String>, text: String) -> Result<Self, TopologyError> {
        let mut hcas = Vec::new();
        let mut switches = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            let kind = if line.starts_with("Hca") {
                &mut hcas
            } else if line.starts_with("Switch") {
                &mut switches
            } else {
                continue;
            };
            let bad = || TopologyError::BadHeader {
                line: i + 1,
                text: line.to_owned(),
            };
            let mut quoted = line.split('"');
            let _ = quoted.next();
            let node = quoted.next().filter(|n| !n.is_empty()).ok_or_else(bad)?;
            kind.push(node.to_owned());
        }
        Ok(Self {
            name: name.into(),
            text,
            hcas,
            switches,
        })
    }

    /// A short name for logs and directory names.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The net-file text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Names of the channel adapters (the nodes processes can run on).
    pub fn hcas(&self) -> &[String] {
        &self.hcas
    }

    /// Names of the switches.
    pub fn switches(&self) -> &[String] {
        &self.switches
    }

    /// True if `node` is a channel adapter of this fabric.
    pub fn has_hca(&self, node: &str) -> bool {
        self.hcas.iter().any(|h| h == node)
    }
}

#[cfg(test)]
mod tests {
    use super::Topology;

    #[test]
    fn fat_tree_shape() {
        let t = Topology::fat_tree(3, 4, 2);
        assert_eq!(t.hcas().len(), 12);
        assert_eq!(
            t.switches(),
            ["leaf1", "leaf2", "leaf3", "spine1", "spine2"]
        );
        assert_eq!(t.hcas()[0], "h1");
        assert_eq!(t.hcas()[11], "h12");
        // Leaf 2's first uplink goes to spine 1's port 2, and back.
        assert!(t.text().contains("Switch 6 \"leaf2\"\n[1] \"h5\"[1]"));
        assert!(t.text().contains("[5] \"spine1\"[2]"));
        assert!(
            t.text().contains(
                "Switch 3 \"spine2\"\n[1] \"leaf1\"[6]\n[2] \"leaf2\"[6]\n[3] \"leaf3\"[6]"
            )
        );
    }

    #[test]
    fn every_link_is_declared_from_both_ends() {
        assert_eq!(links_of(&Topology::fat_tree(4, 3, 3)), 2 * (12 + 4 * 3));
        assert_eq!(links_of(&Topology::ring(5)), 2 * (5 + 5));
    }

    /// How many port lines `t` has, each checked to have its way back.
    fn links_of(t: &Topology) -> usize {
        let mut links = Vec::new();
        let mut node = String::new();
        for line in t.text().lines() {
            if line.starts_with("Hca") || line.starts_with("Switch") {
                node = line.split('"').nth(1).unwrap().to_owned();
            } else if let Some(rest) = line.strip_prefix('[') {
                let (port, rest) = rest.split_once(']').unwrap();
                let peer = rest.split('"').nth(1).unwrap();
                let peer_port = rest.rsplit('[').next().unwrap().trim_end_matches(']');
                links.push((
                    (node.clone(), port.to_owned()),
                    (peer.to_owned(), peer_port.to_owned()),
                ));
            }
        }
        for (a, b) in &links {
            assert!(
                links.contains(&(b.clone(), a.clone())),
                "{a:?} -> {b:?} has no way back"
            );
        }
        links.len()
    }

    #[test]
    fn ring_shape() {
        let t = Topology::ring(4);
        assert_eq!(t.hcas(), ["h1", "h2", "h3", "h4"]);
        assert_eq!(t.switches(), ["s1", "s2", "s3", "s4"]);
        assert!(
            t.text()
                .contains("Switch 4 \"s1\"\n[1] \"h1\"[1]\n[2] \"s2\"[3]\n[3] \"s4\"[2]")
        );
    }

    #[test]
    fn parses_the_debian_example_format() {
        let text = "# comment\nSwitch\t8 \"Switch1\"\n[1]\t\"Hca1\"[1]\n\nHca\t2 \"Hca1\"\n[1]\t\"Switch1\"[1]\n";
        let t = Topology::parse("x", text.into()).unwrap();
        assert_eq!(t.hcas(), ["Hca1"]);
        assert_eq!(t.switches(), ["Switch1"]);
        assert!(Topology::parse("x", "Hca 1 h1\n".into()).is_err());
    }
}
