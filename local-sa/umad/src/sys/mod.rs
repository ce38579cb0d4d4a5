//! Every call into C lives here: libc for the umad device and sysfs, and
//! libibverbs (through rdma-sys) for port events. Each `unsafe` block says
//! why it is sound.
//!
//! The umad device and sysfs are opened with libc's `open` and used with
//! `read`/`write`/`ioctl`/`poll`/`close`, never through `std::fs`: std calls
//! `open64`, which the simulator's LD_PRELOAD (umad2sim) does not intercept,
//! and it would bypass the simulated device and sysfs entirely.

pub(crate) mod activation;
pub(crate) mod fd_passing;
pub(crate) mod ifaddrs;
pub(crate) mod netlink;
pub(crate) mod process;
pub(crate) mod shared_memory;
pub(crate) mod verbs;

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::raw::{c_int, c_ulong};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use zerocopy::{FromBytes, IntoBytes};

/// An open file descriptor, closed on drop.
///
/// Shared between a reader and a writer thread through an `Arc`; the owner
/// must join both before the last reference goes (the simulator frees the
/// queue a concurrent `poll` waits on when the fd is closed).
#[derive(Debug)]
pub(crate) struct Fd(c_int);

/// What a non-blocking read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// This many bytes were read.
    Data(usize),
    /// Nothing to read right now.
    WouldBlock,
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

impl Fd {
    /// `open(2)` through libc's `open` symbol.
    pub(crate) fn open(path: &Path, flags: c_int) -> io::Result<Self> {
        let c = c_path(path)?;
        // SAFETY: `c` is a valid NUL-terminated string that outlives the
        // call; `open` does not keep the pointer.
        let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(Self(fd))
        }
    }

    /// `read(2)` without blocking. The simulator returns `-EWOULDBLOCK`
    /// (-11) as the return value without setting errno when its queue is
    /// empty; any negative return other than -1 is read that way.
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<ReadOutcome> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the
        // duration of the call.
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            n if n >= 0 => Ok(ReadOutcome::Data(n as usize)),
            -1 => {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {
                        Ok(ReadOutcome::WouldBlock)
                    }
                    _ => Err(err),
                }
            }
            _ => Ok(ReadOutcome::WouldBlock),
        }
    }

    /// `write(2)` of the whole buffer (umad writes are all or nothing).
    pub(crate) fn write(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the
        // duration of the call.
        let n = unsafe { libc::write(self.0, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Waits up to `timeout_ms` for the descriptor to become readable.
    /// Only this one descriptor is polled: the simulator's `poll` looks at
    /// nothing but the first fake descriptor of the array.
    pub(crate) fn poll_readable(&self, timeout_ms: c_int) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is a valid pollfd array of length 1 for the call.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        match n {
            n if n > 0 => Ok(pfd.revents & libc::POLLIN != 0),
            0 => Ok(false),
            _ => {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    Ok(false)
                } else {
                    Err(err)
                }
            }
        }
    }

    /// An ioctl whose argument is a struct the kernel reads and may update.
    pub(crate) fn ioctl_inout<T: FromBytes + IntoBytes>(
        &self,
        request: u64,
        arg: &mut T,
    ) -> io::Result<()> {
        let ptr: *mut T = arg;
        // SAFETY: `ptr` points to a live, exclusively borrowed `T` whose
        // layout is the C struct the request expects (checked by the
        // caller's types and their size assertions); any bytes the kernel
        // writes are valid for `T` because `T: FromBytes`.
        let r = unsafe { libc::ioctl(self.0, request as c_ulong, ptr) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// An ioctl whose argument is a `u32` passed by pointer.
    pub(crate) fn ioctl_u32(&self, request: u64, mut value: u32) -> io::Result<()> {
        self.ioctl_inout(request, &mut value)
    }

    /// An ioctl without an argument.
    pub(crate) fn ioctl_none(&self, request: u64) -> io::Result<()> {
        // SAFETY: the request takes no argument; nothing is dereferenced.
        let r = unsafe { libc::ioctl(self.0, request as c_ulong) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and nothing uses it after drop.
        unsafe { libc::close(self.0) };
    }
}

/// Reads a small text file (sysfs) with libc, so that the simulator can
/// redirect the path.
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    let fd = Fd::open(path, libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match fd.read(&mut buf)? {
            ReadOutcome::Data(0) => break,
            ReadOutcome::Data(n) => out.extend_from_slice(&buf[..n]),
            ReadOutcome::WouldBlock => break,
        }
        if out.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "sysfs file larger than 64 KiB",
            ));
        }
    }
    String::from_utf8(out)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "sysfs file is not UTF-8"))
}

/// Names in a directory (sysfs) through libc's `opendir`, which the
/// simulator redirects; `.` and `..` are left out.
pub(crate) fn list_dir(path: &Path) -> io::Result<Vec<String>> {
    let c = c_path(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let dir = unsafe { libc::opendir(c.as_ptr()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: `dir` is a live DIR* from opendir, closed only below.
        let entry = unsafe { libc::readdir(dir) };
        if entry.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid dirent whose d_name is a
        // NUL-terminated string, valid until the next readdir/closedir; we
        // copy it out before either.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
        let name = OsStr::from_bytes(name.to_bytes())
            .to_string_lossy()
            .into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    // SAFETY: `dir` came from opendir and is closed exactly once.
    unsafe { libc::closedir(dir) };
    names.sort();
    Ok(names)
}
