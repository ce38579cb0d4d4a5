//! The descriptors systemd hands a socket-activated service
//! (`sd_listen_fds(3)`): fds 3.. `3 + LISTEN_FDS`, meant for the process
//! whose PID is `LISTEN_PID`, named by `LISTEN_FDNAMES`.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::raw::c_int;

/// The first inherited descriptor (`SD_LISTEN_FDS_START`).
pub(crate) const FIRST_FD: RawFd = 3;

/// Takes ownership of inherited descriptor `fd` and marks it close-on-exec.
///
/// The caller must pass each descriptor of the `LISTEN_FDS` range once,
/// and only when `LISTEN_PID` named this process.
pub(crate) fn take(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_GETFD only reads the descriptor's flags; an fd that is not
    // open gives EBADF, which is returned before anything owns it.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; setting FD_CLOEXEC changes no memory of ours.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the fd is open (F_GETFD succeeded), systemd gave it to this
    // process (the caller checked LISTEN_PID), and the caller takes each
    // one once, so nothing else owns or closes it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An `int` socket option of `fd`.
fn int_option(fd: RawFd, option: c_int) -> io::Result<c_int> {
    let mut value: c_int = 0;
    let mut len = size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes and outlive the call;
    // `len` says how many bytes `value` holds.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(value)
    }
}

/// The socket's (domain, type, listening), or an error if `fd` is not a
/// socket.
pub(crate) fn socket_kind(fd: RawFd) -> io::Result<(c_int, c_int, bool)> {
    Ok((
        int_option(fd, libc::SO_DOMAIN)?,
        int_option(fd, libc::SO_TYPE)?,
        int_option(fd, libc::SO_ACCEPTCONN)? != 0,
    ))
}

/// A socket's protocol (`SO_PROTOCOL`).
pub(crate) fn protocol(fd: RawFd) -> io::Result<c_int> {
    int_option(fd, libc::SO_PROTOCOL)
}
