//! infiniband-diags' own files (ibdiag.conf, the node-name map): read when
//! the command line names one, and from their default place only if
//! something is there.

use std::path::Path;

/// The bytes of `given`, or of `default` when no file is given and one is
/// there; `None` when neither; the I/O error with the file's name
/// otherwise. Returns the path read, for the reader's own errors.
pub(crate) fn read<'a>(
    given: Option<&'a Path>,
    default: &'static str,
) -> Result<Option<(&'a Path, Vec<u8>)>, String> {
    let path = given.unwrap_or(Path::new(default));
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some((path, bytes))),
        Err(e) if given.is_none() && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
