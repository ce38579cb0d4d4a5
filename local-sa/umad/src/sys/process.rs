//! The process's own limits and who is at the other end of a local
//! socket: `getrlimit`/`setrlimit(RLIMIT_NOFILE)` and
//! `getsockopt(SO_PEERCRED)`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// The soft and hard limits on open file descriptors.
pub(crate) fn open_files_limit() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the call to fill.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Sets the soft limit on open file descriptors to `soft` (at most the
/// hard limit, which is left as it is).
pub(crate) fn set_open_files_soft_limit(soft: u64) -> io::Result<()> {
    let (_, hard) = open_files_limit()?;
    let lim = libc::rlimit {
        rlim_cur: soft.min(hard),
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid rlimit that the call only reads.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The user ID of the process at the other end of the Unix socket `fd`,
/// as the kernel recorded it when the connection was made.
pub(crate) fn peer_uid(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `fd` is an open descriptor for the duration of the borrow;
    // `cred` and `len` are valid and writable, and `len` holds the size of
    // `cred`, so the kernel writes within it.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// This process's effective user ID.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and
    // cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes `cmd`'s child receive `fds` as descriptors 3, 4, … (systemd's
/// inherited descriptors, in order), open across its exec.
pub(crate) fn pass_as_inherited(cmd: &mut std::process::Command, fds: Vec<OwnedFd>) {
    use std::os::unix::process::CommandExt;
    let first = super::activation::FIRST_FD;
    let count = fds.len() as RawFd;
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    // Where each is parked above the targets; filled in the child.
    let mut parked: Vec<RawFd> = raw.clone();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: fcntl and dup2 are, and it
    // allocates nothing (it writes into `parked`, allocated before the
    // fork). `fds` (moved in) keeps the descriptors open in the parent
    // until the command is dropped. Each one is first duplicated above
    // the target range, so that no dup2 onto a target closes a descriptor
    // still to be moved.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &fds;
            for (i, fd) in raw.iter().enumerate() {
                let high = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, first + count);
                if high < 0 {
                    return Err(io::Error::last_os_error());
                }
                parked[i] = high;
            }
            for (i, fd) in parked.iter().enumerate() {
                // dup2 leaves the new descriptor open across exec.
                if libc::dup2(*fd, first + i as RawFd) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}
