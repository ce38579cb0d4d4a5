//! The simulator's own memory: a run's peak resident set (VmHWM from
//! /proc/self/status), each run in a process of its own.

/// The peak resident set of this process, in bytes (0 where unreadable).
pub(crate) fn peak() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
