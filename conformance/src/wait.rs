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
