//! The settings in force, and what reloading them (SIGHUP, `reload`)
//! starts from.

use std::ffi::OsString;

use crate::kernel_door;
use crate::log_control::LogControl;
use crate::options::Options;

/// What a reload starts from.
pub(crate) struct Settings {
    /// The command line the daemon started with.
    pub(crate) args: Vec<OsString>,
    /// The settings in force.
    pub(crate) options: Options,
    /// The log's filter.
    pub(crate) log: LogControl,
}

/// The settings that only a restart changes, that differ between `old`
/// and `new`.
pub(crate) fn restart_needed(old: &Options, new: &Options) -> Vec<&'static str> {
    let mut changed = Vec::new();
    let mut check = |differs: bool, name: &'static str| {
        if differs {
            changed.push(name);
        }
    };
    check(old.ca != new.ca, "ca");
    check(old.port != new.port, "port");
    check(old.run_dir != new.run_dir, "run-dir");
    check(old.stats_file != new.stats_file, "stats-file");
    check(old.stats_interval != new.stats_interval, "stats-interval");
    check(old.api_socket != new.api_socket, "api-socket");
    check(old.api_mode != new.api_mode, "api-mode");
    check(old.api_group != new.api_group, "api-group");
    check(old.acm_sockets != new.acm_sockets, "acm-socket");
    check(old.acm_addr != new.acm_addr, "acm-addr");
    check(
        old.acm_server_mode != new.acm_server_mode,
        "acm-server-mode",
    );
    check(
        old.acm_server_port != new.acm_server_port,
        "acm-server-port",
    );
    check(
        old.acm_kernel_only != new.acm_kernel_only,
        "acm-kernel-only",
    );
    check(old.acm_port_dir != new.acm_port_dir, "acm-port-dir");
    check(old.netlink != new.netlink, "netlink");
    check(old.metrics != new.metrics, "metrics");
    // Told the kernel at start; follows the upstream time-outs by default.
    check(
        kernel_door::kernel_timeout(old) != kernel_door::kernel_timeout(new),
        "netlink-timeout",
    );
    check(
        old.port_poll_interval != new.port_poll_interval,
        "port-poll-interval",
    );
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_fixed_at_start_are_named() {
        let old = Options::load(["local-sa", "-P", "1", "--log-level", "info"]).unwrap();
        let new = Options::load(["local-sa", "-P", "2", "--log-level", "debug"]).unwrap();
        assert_eq!(restart_needed(&old, &new), ["port"]);
        assert!(restart_needed(&old, &old).is_empty());
    }

    #[test]
    fn the_kernels_time_out_is_fixed_at_start() {
        let old = Options::load(["local-sa"]).unwrap();
        let slower = Options::load(["local-sa", "--upstream-timeout", "3000"]).unwrap();
        let told = Options::load(["local-sa", "--netlink-timeout", "4500"]).unwrap();
        assert_eq!(restart_needed(&old, &slower), ["netlink-timeout"]);
        assert!(
            restart_needed(&old, &told).is_empty(),
            "4500 ms is the default"
        );
    }
}
