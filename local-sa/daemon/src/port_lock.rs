//! One local-sa per port: an exclusive lock on `<run-dir>/<ca>-<port>.lock`
//! (`flock`, released by the kernel when the process ends, however it
//! ends), taken before anything else of the port is touched. The file
//! holds the PID of the holder, for the message a second instance prints.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use crate::error::DaemonError;

/// The held lock of a port.
#[derive(Debug)]
pub(crate) struct PortLock {
    _file: File,
}

impl PortLock {
    /// Takes `path`'s lock for `port` (named so in messages), or says who
    /// holds it.
    pub(crate) fn take(path: &Path, port: &str) -> Result<Self, DaemonError> {
        let io = |e: std::io::Error| {
            DaemonError::Device(format!("cannot lock {} ({port}): {e}", path.display()))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(DaemonError::Device(format!(
                    "{port} is already served by another local-sa{} (it holds {}); stop it first, or serve another port with -C/-P",
                    if holder.is_empty() {
                        String::new()
                    } else {
                        format!(", PID {holder}")
                    },
                    path.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PORT: &str = "mlx5_0 port 1";

    #[test]
    fn a_second_holder_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/mlx5_0-1.lock");
        let held = PortLock::take(&path, PORT).unwrap();
        let e = PortLock::take(&path, PORT).unwrap_err().to_string();
        assert!(
            e.contains("already served by another local-sa")
                && e.contains(&format!("PID {}", std::process::id())),
            "{e}"
        );
        drop(held);
        PortLock::take(&path, PORT).expect("free again once released");
    }
}
