//! Golden MAD vectors: real MADs captured from OpenSM, saquery and the
//! simulator, stored as text under `conformance/vectors/`.
//!
//! A vector file is a few `key: value` lines (what it is, how it was
//! captured), then sections, each a `[name]` line followed by content:
//! `[request]`, `[response]` and `[mad]` hold MADs as 16-bit hex groups (the
//! layout `saquery -d -d` prints); `[saquery]` holds what saquery printed
//! for the response, which tests compare with the decoded fields.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{fs, io};

/// One captured exchange.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vector {
    /// File stem.
    pub name: String,
    /// `key: value` lines, in file order.
    pub meta: Vec<(String, String)>,
    /// Sections by name; MAD sections hold bytes, text sections text.
    pub sections: BTreeMap<String, Section>,
}

/// One `[name]` section of a vector file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Section {
    /// MAD bytes.
    Mad(Vec<u8>),
    /// Free text.
    Text(String),
}

/// Sections whose content is hex.
const MAD_SECTIONS: [&str; 3] = ["request", "response", "mad"];

impl Vector {
    /// A metadata value.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The bytes of a MAD section.
    pub fn mad(&self, section: &str) -> Option<&[u8]> {
        match self.sections.get(section)? {
            Section::Mad(b) => Some(b),
            Section::Text(_) => None,
        }
    }

    /// The text of a text section.
    pub fn text(&self, section: &str) -> Option<&str> {
        match self.sections.get(section)? {
            Section::Text(t) => Some(t),
            Section::Mad(_) => None,
        }
    }

    /// True if the metadata says the response was cut by the simulator.
    pub fn truncated(&self) -> bool {
        self.meta("truncated").is_some_and(|v| v.starts_with("yes"))
    }

    /// Parses a vector file's text.
    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        let mut v = Self {
            name: name.to_owned(),
            ..Self::default()
        };
        let mut current: Option<(String, String)> = None;
        let finish = |v: &mut Self, cur: Option<(String, String)>| -> Result<(), String> {
            if let Some((section, body)) = cur {
                let content = if MAD_SECTIONS.contains(&section.as_str()) {
                    Section::Mad(
                        mad_codec::hex::parse(&body)
                            .map_err(|e| format!("{name} [{section}]: {e}"))?,
                    )
                } else {
                    Section::Text(body.trim_end().to_owned())
                };
                v.sections.insert(section, content);
            }
            Ok(())
        };
        for line in text.lines() {
            if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                finish(&mut v, current.take())?;
                current = Some((section.to_owned(), String::new()));
            } else if let Some((_, body)) = current.as_mut() {
                body.push_str(line);
                body.push('\n');
            } else if let Some((k, val)) = line.split_once(':') {
                v.meta.push((k.trim().to_owned(), val.trim().to_owned()));
            }
        }
        finish(&mut v, current)?;
        Ok(v)
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (k, val) in &self.meta {
            let _ = writeln!(out, "{k}: {val}");
        }
        for (name, section) in &self.sections {
            let _ = writeln!(out, "\n[{name}]");
            match section {
                Section::Mad(bytes) => out.push_str(&mad_codec::hex::dump(bytes)),
                Section::Text(t) => out.push_str(t.trim_end()),
            }
            out.push('\n');
        }
        out
    }
}

/// Where the committed vectors live.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// Loads one vector by file stem from [`vectors_dir`].
pub fn load(name: &str) -> Result<Vector, String> {
    let path = vectors_dir().join(format!("{name}.mad"));
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Vector::parse(name, &text)
}

/// Every vector in [`vectors_dir`], by name.
pub fn load_all() -> Result<Vec<Vector>, String> {
    let mut names: Vec<String> = fs::read_dir(vectors_dir())
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "mad" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names.iter().map(|n| load(n)).collect()
}

/// Writes a vector to `dir/<name>.mad`.
pub fn save(dir: &Path, v: &Vector) -> io::Result<()> {
    fs::write(dir.join(format!("{}.mad", v.name)), v.to_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let mut v = Vector {
            name: "x".into(),
            ..Vector::default()
        };
        v.meta.push(("title".into(), "a: b".into()));
        v.sections
            .insert("request".into(), Section::Mad((0..40).collect()));
        v.sections
            .insert("saquery".into(), Section::Text("A:\n\t\tb....1".into()));
        let again = Vector::parse("x", &v.to_text()).unwrap();
        assert_eq!(again, v);
        assert_eq!(again.meta("title"), Some("a: b"));
    }
}
