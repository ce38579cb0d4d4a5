//! A few bytes shared with the next process: an anonymous memory file
//! (memfd) whose descriptor is handed to someone who keeps it (the
//! service manager's descriptor store) and mapped again by whoever gets
//! it back. What a process writes there is seen after it ends, however it
//! ends — a crash included.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;

use crate::sys::shared_memory as sys;

/// Shared bytes, by index.
#[derive(Debug)]
pub struct SharedBytes {
    map: sys::Mapping,
    fd: OwnedFd,
}

impl SharedBytes {
    /// `len` new zero bytes (`len` > 0), named `name` in /proc.
    pub fn create(name: &str, len: usize) -> io::Result<Self> {
        let fd = sys::create(name, len.max(1))?;
        Self::open(fd)
    }

    /// The bytes of memory file `fd`, as an earlier process left them.
    pub fn open(fd: OwnedFd) -> io::Result<Self> {
        let map = sys::map(&fd)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "an empty file"))?;
        Ok(Self { map, fd })
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.map.bytes().len()
    }

    /// Whether there are none (never, once made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Byte `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<u8> {
        self.map.bytes().get(i).map(|b| b.load(Ordering::Relaxed))
    }

    /// Sets byte `i` (nothing if there is none).
    pub fn set(&self, i: usize, value: u8) {
        if let Some(b) = self.map.bytes().get(i) {
            b.store(value, Ordering::Relaxed);
        }
    }
}

impl AsFd for SharedBytes {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_one_mapping_writes_another_of_the_same_file_reads() {
        let first = SharedBytes::create("umad-test", 16).unwrap();
        assert_eq!(
            (first.len(), first.get(3), first.get(16)),
            (16, Some(0), None)
        );
        first.set(3, 2);
        first.set(99, 1); // out of range: nothing
        let again = SharedBytes::open(first.as_fd().try_clone_to_owned().unwrap()).unwrap();
        drop(first);
        assert_eq!(again.get(3), Some(2), "kept after the first mapping went");
        again.set(0, 7);
        assert_eq!(again.get(0), Some(7));
    }

    #[test]
    fn an_empty_or_unmappable_file_is_refused() {
        let empty = sys::create("umad-empty", 0).unwrap();
        assert!(SharedBytes::open(empty).is_err());
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(SharedBytes::open(OwnedFd::from(a)).is_err());
    }
}
