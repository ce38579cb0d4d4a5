//! Descriptors sent over Unix datagram sockets (SCM_RIGHTS), as
//! sd_pid_notify_with_fds(3) sends them to the service manager's store,
//! and received the same way (the tests' stand-in manager).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The most descriptors one message carries (the kernel's SCM_MAX_FD).
pub(crate) const MAX_FDS: usize = 253;

/// `to` as a `sockaddr_un` and its length.
fn sockaddr(to: &SocketAddr) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all zeros is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let (bytes, offset): (Vec<u8>, usize) = if let Some(path) = to.as_pathname() {
        use std::os::unix::ffi::OsStrExt as _;
        (path.as_os_str().as_bytes().to_vec(), 0)
    } else if let Some(name) = to.as_abstract_name() {
        // An abstract name: a NUL, then the name.
        (name.to_vec(), 1)
    } else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an unnamed socket address",
        ));
    };
    if bytes.len() + offset >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket address too long",
        ));
    }
    for (i, b) in bytes.iter().enumerate() {
        addr.sun_path[offset + i] = *b as libc::c_char;
    }
    let path_start = std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let len = path_start + offset + bytes.len() + usize::from(offset == 0);
    Ok((addr, len as libc::socklen_t))
}

/// Sends `data` with `fds` (at most [`MAX_FDS`]) to `to` from `socket`.
pub(crate) fn send(
    socket: &UnixDatagram,
    to: &SocketAddr,
    data: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors",
        ));
    }
    let (mut addr, addr_len) = sockaddr(to)?;
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let fd_bytes = size_of_val(raw.as_slice());
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u8; if raw.is_empty() { 0 } else { space }];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; all zeros is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&raw mut addr).cast();
    msg.msg_namelen = addr_len;
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !raw.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len();
        // SAFETY: `msg` points at `control`, which has room for one
        // header and `raw`'s descriptors (CMSG_SPACE above), so
        // CMSG_FIRSTHDR is not null and CMSG_DATA has `fd_bytes` bytes.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&raw const msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as usize;
            std::ptr::copy_nonoverlapping(
                raw.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(header),
                fd_bytes,
            );
        }
    }
    // SAFETY: `msg` and everything it points at (address, iovec over
    // `data`, control) are valid for the call; the kernel only reads them.
    let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &raw const msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one datagram into `buf` with the descriptors it carries.
pub(crate) fn recv(socket: &UnixDatagram, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * size_of::<RawFd>()) as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; all zeros is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len();
    // SAFETY: `msg` points at `buf` (through the iovec) and `control`,
    // both valid for writes of the lengths given, for the call.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `control` up to msg_controllen with
    // well-formed headers; CMSG_FIRSTHDR/CMSG_NXTHDR walk only those, and
    // each SCM_RIGHTS header's data holds the descriptors it counts, now
    // open in this process and owned by nobody else.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&raw const msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header);
                let bytes = (*header).cmsg_len as usize - (data as usize - header as usize);
                for i in 0..bytes / size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&raw const msg, header);
        }
    }
    Ok((n as usize, fds))
}

/// Whether `fd` reports POLLHUP or POLLERR now, without waiting.
pub(crate) fn hung_up(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    // SAFETY: `pfd` is a valid pollfd array of length 1 for the call.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0)
}
