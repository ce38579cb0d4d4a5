//! A port's registrations record (`<run-dir>/<ca>-<port>.registrations`,
//! see `local_sa_core::registrations`): read at start to remove what a
//! previous local-sa on the port left at the master, rewritten whenever
//! what this one asked the master to hold may have grown — before the
//! requests go out, so that it never lists less than the master may hold —
//! and at most [`SHRINK_DELAY`] after it shrank (a thousand leaves rewrite
//! it a few times, not a thousand: a longer list costs the next local-sa
//! only leaves the master refuses), and removed at a clean exit that
//! withdrew everything.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tracing::warn;

use crate::atomic_file::RecordFile;
use local_sa_core::SaCore;
use local_sa_core::registrations_record::Registrations;

/// The record of one port, by the core's registrations generation.
#[derive(Debug)]
pub(crate) struct RegistrationsFile {
    file: RecordFile,
    /// When it was last written (or tried).
    written_at: Option<Instant>,
}

/// How long a record that lists more than the master may hold waits to be
/// written again.
pub(crate) const SHRINK_DELAY: Duration = Duration::from_secs(1);

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
        (
            Self {
                file,
                written_at: None,
            },
            previous,
        )
    }

    /// Writes `core`'s registrations if they may have grown since the
    /// last write, or shrunk [`SHRINK_DELAY`] ago; a failure is tried
    /// again at the next change.
    pub(crate) fn update(&mut self, core: &SaCore, now: Instant) {
        let generation = core.registrations_generation();
        if self.file.holds(generation) || self.deferred_until(core).is_some_and(|t| t > now) {
            return;
        }
        let text = core.registrations().to_text();
        self.written_at = Some(now);
        self.file.record(
            generation,
            Some(text.as_bytes()),
            "cannot write the registrations record; a crash would leave registrations at the master",
        );
    }

    /// When a record that is out of date only because the registrations
    /// shrank is written: [`SHRINK_DELAY`] after the last write. `None`
    /// if it is up to date, or is written at the next
    /// [`RegistrationsFile::update`] (they may have grown).
    pub(crate) fn deferred_until(&self, core: &SaCore) -> Option<Instant> {
        deferral(
            self.file.written().zip(self.written_at),
            core.registrations_generation(),
            core.registrations_grown(),
        )
    }

    /// At exit: the record goes if nothing is left at the master, else it
    /// lists what is (withdrawals that went unanswered), for the next
    /// local-sa on the port.
    pub(crate) fn close(mut self, core: &SaCore) {
        let left = core.registrations();
        if left.is_empty() {
            if let Err(e) = self.file.remove() {
                warn!(path = %self.file.path().display(), error = %e, "cannot remove the registrations record");
            }
        } else {
            self.file.forget_written();
            self.update(core, Instant::now());
        }
    }
}

/// When a record last written at state `written` (and when) is written
/// again, if that can wait: the registrations at `generation` moved past
/// it, but nothing may have been added since (`grown`, the generation of
/// the last addition, is not past it).
fn deferral(written: Option<(u64, Instant)>, generation: u64, grown: u64) -> Option<Instant> {
    match written {
        Some((written, at)) if written != generation && written >= grown => Some(at + SHRINK_DELAY),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic_file::write_atomically;

    #[test]
    fn only_a_record_that_lists_more_than_the_master_holds_waits() {
        let at = Instant::now();
        // Up to date: nothing to wait for.
        assert_eq!(deferral(Some((7, at)), 7, 5), None);
        // Leaves since generation 7 (the last addition was at 5): written
        // a second after the last write.
        assert_eq!(deferral(Some((7, at)), 9, 5), Some(at + SHRINK_DELAY));
        assert_eq!(deferral(Some((7, at)), 9, 7), Some(at + SHRINK_DELAY));
        // A join or subscription since: written before it goes out.
        assert_eq!(deferral(Some((7, at)), 9, 8), None);
        // Never written (or the last write failed): written at once.
        assert_eq!(deferral(None, 9, 0), None);
    }

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
