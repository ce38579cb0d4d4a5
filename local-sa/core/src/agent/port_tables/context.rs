//! What the port's tables know of the agent, told whenever it changes
//! ([`super::PortTables::know`]): the settings the upkeep's rules and
//! the refresh go by, the port, the master's QoS, and whether the agent
//! is shutting down.

use std::time::Duration;

use crate::config::{AgentConfig, PortIdentity};
use crate::pacing::MasterPace;

/// What the upkeep's rules need to know of the agent.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct UpkeepContext {
    /// The configured refresh interval.
    pub(in crate::agent) refresh_interval: Duration,
    /// At start, how long a distributor's load is waited for before the
    /// first refresh (zero: none).
    pub(in crate::agent) load_wait: Duration,
    /// The master's sweep after a change notice.
    pub(in crate::agent) change_settle: Duration,
    /// Between checks of tables this port did not fetch.
    pub(in crate::agent) check_interval: Duration,
    /// Destinations of the default table each check asks again.
    pub(in crate::agent) check_sample: usize,
    /// Between polls of the master's activity (zero: none).
    pub(in crate::agent) sweep_poll: Duration,
    /// The master's pace: windows and the upkeep bound.
    pub(in crate::agent) pace: MasterPace,
    /// This port's phase in 0..1 (from its GUID).
    pub(in crate::agent) phase: f64,
    pub(in crate::agent) shutting_down: bool,
}

impl UpkeepContext {
    /// This port's place in `window`.
    pub(in crate::agent) fn spread(&self, window: Duration) -> Duration {
        window.mul_f64(self.phase)
    }
}

/// What the refresh needs to know of the agent.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct RefreshContext {
    /// This port: its GID, its LIDs and the master's LID (a walk
    /// reaches past it).
    pub(in crate::agent) port: PortIdentity,
    /// LIDs tried past the highest that answered before a walk ends, and
    /// per-destination queries in flight.
    pub(in crate::agent) walk_gap: u16,
    pub(in crate::agent) walk_window: usize,
    /// The master is known to apply no QoS.
    pub(in crate::agent) no_qos: bool,
    /// The agent is shutting down: nothing more is asked.
    pub(in crate::agent) shutting_down: bool,
    /// How a table the master did not give waits to be asked again.
    pub(in crate::agent) backoff: Backoff,
}

/// The wait after a failed refresh: the back-off, then this port's phase
/// within a window of the back-off doubled for each failure before this
/// one, held at the longest window. A master that turned many ports away
/// at once sees them come back spread, fewer at a time after each failure.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct Backoff {
    pub(in crate::agent) base: Duration,
    pub(in crate::agent) longest_window: Duration,
    /// This port's phase, in 0..1.
    pub(in crate::agent) phase: f64,
}

impl Backoff {
    /// The wait after `failures` failures in a row.
    pub(in crate::agent) fn after(self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(16);
        let window = self
            .base
            .saturating_mul(1 << doublings)
            .min(self.longest_window);
        self.base + window.mul_f64(self.phase)
    }
}

/// What the port's tables know of the agent: its settings (`config`),
/// the port, whether the master applies no QoS, whether it is shutting
/// down.
pub(in crate::agent) fn of(
    config: &AgentConfig,
    port: PortIdentity,
    no_qos: bool,
    shutting_down: bool,
) -> (UpkeepContext, RefreshContext) {
    let upkeep = UpkeepContext {
        refresh_interval: config.refresh_interval,
        load_wait: config.load_wait,
        change_settle: config.change_settle,
        check_interval: config.check_interval,
        check_sample: config.check_sample,
        sweep_poll: config.sweep_poll,
        pace: config.pace,
        phase: port.phase(),
        shutting_down,
    };
    let refresh = RefreshContext {
        port,
        walk_gap: config.walk_gap,
        walk_window: config.walk_window,
        no_qos,
        shutting_down,
        backoff: Backoff {
            base: config.retry_backoff,
            longest_window: config.pace.max_window,
            phase: port.phase(),
        },
    };
    (upkeep, refresh)
}
