//! The process's own limits and who is at the other end of a local
//! socket: `getrlimit`/`setrlimit(RLIMIT_NOFILE)` and
//! `getsockopt(SO_PEERCRED)`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

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

/// Makes `cmd`'s child receive `fd` as descriptor 3 (systemd's first
/// inherited descriptor), open across its exec.
pub(crate) fn pass_as_fd3(cmd: &mut std::process::Command, fd: OwnedFd) {
    use std::os::unix::process::CommandExt;
    let raw = fd.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: dup2 and fcntl are. It
    // touches no memory but the integer `raw`, which `fd` (moved into the
    // closure) keeps open in the parent until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &fd;
            let target = super::activation::FIRST_FD;
            if raw == target {
                let flags = libc::fcntl(raw, libc::F_GETFD);
                if flags < 0 || libc::fcntl(raw, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, target) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
