//! What a daemon serving local sockets needs from the process: how many
//! descriptors it may open, and which user connected.

use std::io;
use std::os::fd::AsFd;

use crate::sys::process as sys;

/// Raises the soft limit on open descriptors to the hard limit (as far as
/// `cap`), and returns the limit now in force.
pub fn raise_open_files_limit(cap: u64) -> io::Result<u64> {
    let (soft, hard) = sys::open_files_limit()?;
    let wanted = hard.min(cap).max(soft);
    if wanted > soft {
        sys::set_open_files_soft_limit(wanted)?;
    }
    Ok(sys::open_files_limit()?.0)
}

/// The user ID of the process that connected the Unix socket `socket`.
pub fn peer_uid(socket: &impl AsFd) -> io::Result<u32> {
    sys::peer_uid(socket.as_fd())
}

/// This process's effective user ID: the user its files and sockets
/// belong to.
pub fn effective_uid() -> u32 {
    sys::effective_uid()
}

/// Whether user `uid` may administer this daemon: root, or the user it
/// runs as.
pub fn is_admin(uid: u32) -> bool {
    uid == 0 || uid == effective_uid()
}

/// Makes `cmd`'s child inherit `fds` as descriptors 3, 4, …, the way
/// systemd passes sockets (the caller sets `LISTEN_FDS`, `LISTEN_FDNAMES`
/// and `LISTEN_PID`): for tests that hand local-sa sockets.
pub fn pass_as_inherited(cmd: &mut std::process::Command, fds: Vec<std::os::fd::OwnedFd>) {
    sys::pass_as_inherited(cmd, fds);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_user_administers_its_own_daemon() {
        let me = effective_uid();
        assert!(is_admin(me) && is_admin(0));
        assert_eq!(is_admin(me.wrapping_add(1)), me.wrapping_add(1) == 0);
    }

    #[test]
    fn the_peer_of_a_socketpair_is_this_user() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let me = std::fs::metadata("/proc/self").map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid()
        });
        assert_eq!(peer_uid(&a).unwrap(), me.unwrap());
    }

    #[test]
    fn the_limit_never_goes_down() {
        let (soft, _) = sys::open_files_limit().unwrap();
        assert!(raise_open_files_limit(0).unwrap() >= soft);
    }
}
