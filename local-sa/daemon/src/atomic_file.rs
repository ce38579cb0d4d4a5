//! Files the daemon rewrites whole (the registrations record, the kept
//! tables): written beside and renamed, so that a reader — the next
//! local-sa after a crash included — sees the old file or the new one,
//! never half of one; and [`RecordFile`], the bookkeeping both share.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` whole.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// A file rewritten whole whenever what it records moves on (each state
/// numbered: a generation, a version), or removed while there is nothing
/// to record. The number last written is remembered, so that an unchanged
/// state is not written again; a failed write is tried again at the next
/// change and warned about once until one succeeds.
#[derive(Debug)]
pub(crate) struct RecordFile {
    path: PathBuf,
    /// The state last written (or removed).
    written: Option<u64>,
    /// The last write failed.
    failing: bool,
}

impl RecordFile {
    /// The file at `path`; nothing written yet.
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            written: None,
            failing: false,
        }
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What it holds now: `None` if there is no such file.
    pub(crate) fn read(&self) -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether state `number` is the one last written.
    pub(crate) fn holds(&self, number: u64) -> bool {
        self.written == Some(number)
    }

    /// The state last written, if the last write succeeded.
    pub(crate) fn written(&self) -> Option<u64> {
        self.written
    }

    /// Forgets what was written: the next [`RecordFile::record`] writes.
    pub(crate) fn forget_written(&mut self) {
        self.written = None;
    }

    /// Records state `number`: `bytes`, or no file at all (`None`). A
    /// failure is warned about as `failure`, once until a write succeeds.
    pub(crate) fn record(&mut self, number: u64, bytes: Option<&[u8]>, failure: &str) {
        let result = match bytes {
            Some(b) => write_atomically(&self.path, b),
            None => self.remove(),
        };
        match result {
            Ok(()) => {
                self.written = Some(number);
                self.failing = false;
            }
            Err(e) => {
                if !self.failing {
                    tracing::warn!(path = %self.path.display(), error = %e, "{failure}");
                }
                self.failing = true;
                self.written = None;
            }
        }
    }

    /// Removes the file (there being none is no error).
    pub(crate) fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_tried_again_and_a_removal_counts_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = RecordFile::new(dir.path().join("later").join("port.record"));
        assert_eq!(file.read().unwrap(), None);
        file.record(1, Some(b"one"), "cannot write");
        assert!(!file.holds(1), "the directory is missing: not written");
        std::fs::create_dir(dir.path().join("later")).unwrap();
        file.record(1, Some(b"one"), "cannot write");
        assert!(file.holds(1));
        assert_eq!(file.read().unwrap().as_deref(), Some(&b"one"[..]));
        file.record(2, None, "cannot write");
        assert!(file.holds(2) && file.read().unwrap().is_none());
        file.forget_written();
        assert!(!file.holds(2));
    }
}
