//! A small anonymous shared memory file (memfd) mapped into this process:
//! bytes that outlive the process when its descriptor is kept elsewhere
//! (the service manager's store), and are seen by the next process that
//! maps the same descriptor.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU8;

/// A shared mapping of a memfd's bytes, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<AtomicU8>,
    len: usize,
}

impl Mapping {
    /// The mapped bytes. Atomics, because another process may map the same
    /// file (one after the other in practice; never a data race either way).
    pub(crate) fn bytes(&self) -> &[AtomicU8] {
        // SAFETY: `ptr` is the start of a live shared mapping of `len`
        // readable and writable bytes (made in `map`, unmapped only in
        // drop, which needs `&mut self`); `AtomicU8` has the size and
        // alignment of `u8`, and every byte value is a valid `AtomicU8`.
        // Only shared references to the atomics are ever made.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map` with this address and
        // length, and no reference into it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// A new memfd named `name` of `len` zero bytes (closed on exec).
pub(crate) fn create(name: &str, len: usize) -> io::Result<OwnedFd> {
    let name = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the
    // call, which does not keep the pointer.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    File::from(fd.try_clone()?).set_len(len as u64)?;
    Ok(fd)
}

/// Maps the whole of file `fd` shared, read and write; `Ok(None)` when it
/// is empty.
pub(crate) fn map(fd: &OwnedFd) -> io::Result<Option<Mapping>> {
    let len = File::from(fd.try_clone()?).metadata()?.len();
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a file too large to map"))?;
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: a new mapping at an address the kernel chooses, of a file
    // this process holds open; nothing existing is overwritten. The result
    // is checked before use.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_fd().as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr = NonNull::new(ptr.cast::<AtomicU8>())
        .ok_or_else(|| io::Error::other("mmap returned a null address"))?;
    Ok(Some(Mapping { ptr, len }))
}
