//! What the agent tells its operator: counters, answers by kind and the
//! master's answer times, and the limits on what a peer can make it log.

use std::time::Duration;

use crate::agent::master::purpose::Purpose;
use crate::counters::Counters;
use crate::log_limit::LogLimit;
use crate::stats::Stats;

/// The warnings a peer (or the master) can cause the agent to log,
/// counted per kind and source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Warning {
    /// The master's answer to a forwarded query arrived cut.
    CutAnswer,
    /// Queries refused BUSY: as many as allowed wait for the master.
    QueriesWaiting,
    /// The master did not answer a request of this kind.
    Unanswered(std::mem::Discriminant<Purpose>),
    /// A Report that did not come from the master SM.
    StrayReport,
    /// GID out of service, and in service (trap 65, 64).
    PortGone,
    PortCame,
    /// A link-change notice, and a heavy sweep seen without one.
    FabricChange,
    HeavySweep,
    /// Loads refused: a wrong key, malformed, another distributor's lease.
    DeniedLoad,
    InvalidLoad,
    FencedLoad,
    /// An RMPP transfer refused.
    RefusedTransfer,
}

/// Counters, statistics and the log's limits.
#[derive(Debug)]
pub(super) struct Telemetry {
    /// Counters (the gauges are read when they are asked for).
    pub(super) counters: Counters,
    /// Answers by attribute, method and status; the master's answer times.
    pub(super) stats: Stats,
    /// Warnings a peer can cause, limited.
    pub(super) log_limit: LogLimit<Warning>,
    /// The log said that loads are refused for want of an SM_Key.
    unkeyed_warned: bool,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self {
            counters: Counters::default(),
            stats: Stats::default(),
            log_limit: LogLimit::new(Duration::from_secs(60)),
            unkeyed_warned: false,
        }
    }
}

impl Telemetry {
    /// True the first time a load is refused for want of an SM_Key (the
    /// log says so once, not for every load).
    pub(super) fn first_unkeyed_refusal(&mut self) -> bool {
        !std::mem::replace(&mut self.unkeyed_warned, true)
    }

    /// The key was taken away again: the next refusal is logged.
    pub(super) fn rearm_unkeyed(&mut self) {
        self.unkeyed_warned = false;
    }
}
