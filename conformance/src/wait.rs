//! Waiting for a fabric to reach a state: peers act asynchronously, so
//! tests poll for what they expect instead of sleeping a fixed time.

use std::thread;
use std::time::{Duration, Instant};

/// Polls `check` every 100 ms until it holds (true) or `limit` passes
/// (false).
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        thread::sleep(Duration::from_millis(100));
    }
    false
}

/// True if the other end closed `stream` (end of file, or an error other
/// than a time-out, within `within`); false if it is still open.
pub fn closed_by_peer(mut stream: &std::os::unix::net::UnixStream, within: Duration) -> bool {
    use std::io::{ErrorKind, Read};
    stream
        .set_read_timeout(Some(within.max(Duration::from_millis(1))))
        .expect("a read time-out can be set");
    match stream.read(&mut [0u8; 1]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(_) => true,
    }
}
