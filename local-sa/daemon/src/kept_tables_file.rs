//! A port's tables kept across a restart (`<run-dir>/<ca>-<port>.tables`,
//! [`local_sa_core::kept_tables`]): read at start, where the core takes
//! them instead of asking the master if they are still good; rewritten
//! whenever they may have changed (a refresh, a load, a lease renewal),
//! at most once per stats interval, so that after a crash too the next
//! local-sa finds them; removed while they are not worth keeping (a
//! fabric change awaits a refresh). Under systemd the unit keeps the run
//! directory across restarts (`RuntimeDirectoryPreserve=restart`).

use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use tracing::{info, warn};

use crate::atomic_file::RecordFile;
use local_sa_core::SaCore;
use local_sa_core::kept_tables::Kept;

/// The kept tables of one port, by the core's tables version.
#[derive(Debug)]
pub(crate) struct KeptTablesFile(RecordFile);

/// The Unix time now, in seconds.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl KeptTablesFile {
    /// The file at `path`, and the tables a predecessor kept there, if it
    /// kept any whole ones.
    pub(crate) fn open(path: PathBuf) -> (Self, Option<Kept>) {
        let file = RecordFile::new(path);
        let kept = match file.read() {
            Ok(Some(bytes)) => match Kept::decode(&bytes) {
                Ok(k) => Some(k),
                Err(e) => {
                    info!(path = %file.path().display(), error = %e, "the tables kept from before are not used");
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                warn!(path = %file.path().display(), error = %e, "cannot read the tables kept from before");
                None
            }
        };
        (Self(file), kept)
    }

    /// What to write for `core` if its tables may have changed since the
    /// last write: `Some(Some(bytes))` to write, `Some(None)` to remove
    /// the file, `None` for nothing. Called with the core locked; the
    /// writing is [`KeptTablesFile::write`]'s, after.
    pub(crate) fn due(&self, core: &SaCore) -> Option<(u64, Option<Vec<u8>>)> {
        let version = core.tables_version();
        if self.0.holds(version) {
            return None;
        }
        let kept = core.keep_tables(Instant::now(), unix_now());
        Some((version, kept.map(|k| k.encode())))
    }

    /// Writes (or removes) what [`KeptTablesFile::due`] gave.
    pub(crate) fn write(&mut self, (version, bytes): (u64, Option<Vec<u8>>)) {
        self.0.record(
            version,
            bytes.as_deref(),
            "cannot keep this port's tables for a restart; the next local-sa will ask the master for them",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_or_missing_file_gives_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mlx5_0-1.tables");
        assert!(KeptTablesFile::open(path.clone()).1.is_none());
        std::fs::write(&path, b"LSAKEPT1 but not whole").unwrap();
        assert!(KeptTablesFile::open(path.clone()).1.is_none());
        let (mut file, _) = KeptTablesFile::open(path.clone());
        file.write((1, None));
        assert!(
            !path.exists(),
            "removed while there is nothing worth keeping"
        );
    }
}
