//! The counters file: where an operator (or a monitoring agent) reads a
//! running daemon's counters without talking to it.
//!
//! The file is rewritten whole every interval and at exit, by writing a
//! temporary file next to it and renaming it over the old one, so a reader
//! never sees half a file. Its lines are `name value`, after a comment line
//! naming the port, the PID and the time of writing:
//!
//! ```text
//! # local-sa mlx5_0 port 1 pid 4242 unix_time 1795000000
//! hits 1234
//! misses 5
//! ...
//! ```

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use local_sa_core::counters::Described;

/// The counters file of one port.
#[derive(Debug, Clone)]
pub(crate) struct StatsFile {
    path: PathBuf,
    label: String,
}

impl StatsFile {
    /// A counters file at `path` for `ca`/`port`; creates its directory.
    pub(crate) fn create(path: PathBuf, ca: &str, port: u8) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = Self {
            path,
            label: format!("{ca} port {port}"),
        };
        Ok(file)
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's contents with `counters`, then `extra`.
    pub(crate) fn write(&self, counters: &[Described], extra: &[(&str, u64)]) -> io::Result<()> {
        let unix_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut text = format!(
            "# local-sa {} pid {} unix_time {unix_time}\n",
            self.label,
            std::process::id()
        );
        let port = counters.iter().map(|d| (d.name, d.value));
        for (name, value) in port.chain(extra.iter().copied()) {
            text.push_str(&format!("{name} {value}\n"));
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        drop(f);
        fs::rename(&tmp, &self.path)
    }

    /// Reads a counters file back: `(name, value)` pairs in file order.
    #[cfg(test)]
    pub(crate) fn read(path: &Path) -> io::Result<Vec<(String, u64)>> {
        let text = fs::read_to_string(path)?;
        Ok(text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.split_once(' ')?;
                Some((name.to_owned(), value.trim().parse().ok()?))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use local_sa_core::Counters;

    #[test]
    fn the_file_holds_every_counter_and_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/ca0-1.counters");
        let f = StatsFile::create(path.clone(), "ca0", 1).unwrap();
        let c = Counters {
            hits: 7,
            records: 3,
            ..Counters::default()
        };
        f.write(&c.described(), &[("door_connections", 2)]).unwrap();
        let read = StatsFile::read(&path).unwrap();
        assert_eq!(
            read.iter().find(|(n, _)| n == "hits").map(|(_, v)| *v),
            Some(7)
        );
        assert_eq!(
            read.iter().find(|(n, _)| n == "records").map(|(_, v)| *v),
            Some(3)
        );
        assert_eq!(
            read.iter()
                .find(|(n, _)| n == "door_connections")
                .map(|(_, v)| *v),
            Some(2)
        );
        assert_eq!(read.len(), c.to_text().lines().count() + 1);
        f.write(&Counters { hits: 8, ..c }.described(), &[])
            .unwrap();
        let read = StatsFile::read(&path).unwrap();
        assert_eq!(
            read.iter().find(|(n, _)| n == "hits").map(|(_, v)| *v),
            Some(8)
        );
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .starts_with("# local-sa ca0 port 1 pid ")
        );
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }
}
