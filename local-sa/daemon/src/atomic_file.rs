//! Files the daemon rewrites whole (the registrations record, the kept
//! tables): written beside and renamed, so that a reader — the next
//! local-sa after a crash included — sees the old file or the new one,
//! never half of one.

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
