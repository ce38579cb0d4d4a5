//! A port's registrations record (`<run-dir>/<ca>-<port>.registrations`,
//! see `local_sa_core::registrations`): read at start to remove what a
//! previous local-sa on the port left at the master, rewritten whenever
//! what this one asked the master to hold may have changed — before the
//! requests go out, so that it never lists less than the master may hold —
//! and removed at a clean exit that withdrew everything.

use std::path::PathBuf;

use tracing::warn;

use crate::atomic_file::write_atomically;
use local_sa_core::SaCore;
use local_sa_core::registrations::Registrations;

/// The record of one port.
#[derive(Debug)]
pub(crate) struct RegistrationsFile {
    path: PathBuf,
    /// The core's registrations generation last written.
    written: Option<u64>,
    /// The last write failed (warned once until one succeeds).
    failing: bool,
}

impl RegistrationsFile {
    /// The record at `path`, and what it holds now: a previous agent's
    /// registrations, if one left any. An unreadable record is reported
    /// and ignored (the master then keeps what it listed).
    pub(crate) fn open(path: PathBuf) -> (Self, Option<Registrations>) {
        let previous = match std::fs::read_to_string(&path) {
            Ok(text) => match Registrations::parse(&text) {
                Ok(r) => Some(r),
                Err(e) => {
                    warn!(path = %path.display(), error = %e, "cannot read the previous local-sa's registrations record; whatever it left at the master stays there");
                    None
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                warn!(path = %path.display(), error = %e, "cannot read the previous local-sa's registrations record; whatever it left at the master stays there");
                None
            }
        };
        let file = Self {
            path,
            written: None,
            failing: false,
        };
        (file, previous)
    }

    /// Writes `core`'s registrations if they may have changed since the
    /// last write.
    pub(crate) fn update(&mut self, core: &SaCore) {
        let generation = core.registrations_generation();
        if self.written == Some(generation) {
            return;
        }
        match write_atomically(&self.path, core.registrations().to_text().as_bytes()) {
            Ok(()) => {
                self.written = Some(generation);
                self.failing = false;
            }
            Err(e) => {
                // Tried again at the next change; warned once until a
                // write succeeds, not once per registration.
                if !self.failing {
                    warn!(path = %self.path.display(), error = %e, "cannot write the registrations record; a crash would leave registrations at the master");
                }
                self.failing = true;
                self.written = None;
            }
        }
    }

    /// At exit: the record goes if nothing is left at the master, else it
    /// lists what is (withdrawals that went unanswered), for the next
    /// local-sa on the port.
    pub(crate) fn close(mut self, core: &SaCore) {
        let left = core.registrations();
        if left.is_empty() {
            if let Err(e) = std::fs::remove_file(&self.path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                warn!(path = %self.path.display(), error = %e, "cannot remove the registrations record");
            }
        } else {
            self.written = None;
            self.update(core);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
