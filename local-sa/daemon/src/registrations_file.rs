//! A port's registrations record (`<run-dir>/<ca>-<port>.registrations`,
//! see `local_sa_core::registrations`): read at start to remove what a
//! previous local-sa on the port left at the master, rewritten whenever
//! what this one asked the master to hold may have changed — before the
//! requests go out, so that it never lists less than the master may hold —
//! and removed at a clean exit that withdrew everything.

use std::path::PathBuf;

use tracing::warn;

use crate::atomic_file::RecordFile;
use local_sa_core::SaCore;
use local_sa_core::registrations::Registrations;

/// The record of one port, by the core's registrations generation.
#[derive(Debug)]
pub(crate) struct RegistrationsFile(RecordFile);

/// What the log says when the record cannot be read.
const UNREADABLE: &str = "cannot read the previous local-sa's registrations record; whatever it left at the master stays there";

impl RegistrationsFile {
    /// The record at `path`, and what it holds now: a previous agent's
    /// registrations, if one left any. An unreadable record is reported
    /// and ignored (the master then keeps what it listed).
    pub(crate) fn open(path: PathBuf) -> (Self, Option<Registrations>) {
        let file = RecordFile::new(path);
        let text = file.read().and_then(|bytes| {
            bytes
                .map(|b| String::from_utf8(b).map_err(std::io::Error::other))
                .transpose()
        });
        let previous = match text {
            Ok(Some(text)) => match Registrations::parse(&text) {
                Ok(r) => Some(r),
                Err(e) => {
                    warn!(path = %file.path().display(), error = %e, "{UNREADABLE}");
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                warn!(path = %file.path().display(), error = %e, "{UNREADABLE}");
                None
            }
        };
        (Self(file), previous)
    }

    /// Writes `core`'s registrations if they may have changed since the
    /// last write; a failure is tried again at the next change.
    pub(crate) fn update(&mut self, core: &SaCore) {
        let generation = core.registrations_generation();
        if self.0.holds(generation) {
            return;
        }
        let text = core.registrations().to_text();
        self.0.record(
            generation,
            Some(text.as_bytes()),
            "cannot write the registrations record; a crash would leave registrations at the master",
        );
    }

    /// At exit: the record goes if nothing is left at the master, else it
    /// lists what is (withdrawals that went unanswered), for the next
    /// local-sa on the port.
    pub(crate) fn close(mut self, core: &SaCore) {
        let left = core.registrations();
        if left.is_empty() {
            if let Err(e) = self.0.remove() {
                warn!(path = %self.0.path().display(), error = %e, "cannot remove the registrations record");
            }
        } else {
            self.0.forget_written();
            self.update(core);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic_file::write_atomically;

    #[test]
    fn a_damaged_record_is_ignored_and_a_missing_one_is_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mlx5_0-1.registrations");
        let (_, previous) = RegistrationsFile::open(path.clone());
        assert_eq!(previous, None);
        std::fs::write(&path, "port ::1\ngroup nonsense\n").unwrap();
        let (_, previous) = RegistrationsFile::open(path.clone());
        assert_eq!(previous, None);
        write_atomically(&path, b"port ::1\ngroup ff12::1 0x1\n").unwrap();
        let (_, previous) = RegistrationsFile::open(path);
        assert_eq!(previous.map(|r| r.groups.len()), Some(1));
    }
}
