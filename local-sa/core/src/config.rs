//! What the agent is told: which port it serves and how it behaves.

use std::ops::RangeInclusive;
use std::time::Duration;

use informinfo::DeliveryConfig;
use mad_codec::Gid;
use mad_codec::rmpp::RmppConfig;

use crate::pacing::MasterPace;
use crate::quota::RegistrationLimits;
use crate::transfers::TransferLimits;

use crate::address::Address;
use crate::requester::RequesterConfig;

/// This port, as the agent needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortIdentity {
    /// Base LID.
    pub lid: u16,
    /// LID mask count.
    pub lmc: u8,
    /// GID index 0.
    pub gid: Gid,
    /// The master SM's LID (where the master SA is).
    pub sm_lid: u16,
    /// SL to reach it.
    pub sm_sl: u8,
}

impl PortIdentity {
    /// The LIDs this port answers to.
    pub fn lids(&self) -> RangeInclusive<u16> {
        let span = (1u16 << self.lmc.min(7)) - 1;
        self.lid..=self.lid.saturating_add(span)
    }

    /// QP1 of the master SA.
    pub fn master(&self) -> Address {
        Address::gsi(self.sm_lid, self.sm_sl)
    }

    /// This port's phase in 0..1, from its GUID: where in a window it
    /// calls on the master for work every port of the fabric does, so
    /// that the fabric's ports spread over the window
    /// ([`crate::pacing`] sizes the windows).
    pub fn phase(&self) -> f64 {
        let fraction = self.gid.guid().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54; // 0..1023
        fraction as f64 / 1024.0
    }

    /// This port's place in `window`.
    pub fn spread(&self, window: Duration) -> Duration {
        window.mul_f64(self.phase())
    }
}

/// The port at `lid` in the doors' tests: its GUID is its LID, under the
/// default prefix; the master SM at LID 1.
#[cfg(test)]
pub(crate) fn test_port(lid: u16) -> PortIdentity {
    PortIdentity {
        lid,
        lmc: 0,
        gid: Gid::new(Gid::DEFAULT_PREFIX, u64::from(lid)),
        sm_lid: 1,
        sm_sl: 0,
    }
}

/// The SM_Key loads and deletes must carry. A secret: its `Debug` output
/// never shows it, so no log line can.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SmKey(u64);

impl SmKey {
    /// The key `value`.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// Whether a request's SM_Key is this one.
    pub const fn matches(self, carried: u64) -> bool {
        self.0 == carried
    }
}

impl std::fmt::Debug for SmKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SmKey(<hidden>)")
    }
}

/// How the agent behaves.
#[derive(Debug, Clone, Copy)]
pub struct AgentConfig {
    /// The SM_Key that loads and deletes must carry; with none, every load
    /// and delete is refused (there is no default: OpenSM's well-known
    /// default, 1, would let any node rewrite the cache).
    pub sm_key: Option<SmKey>,
    /// How long each request to the master waits for its answer.
    pub upstream_timeout: Duration,
    /// Attempts after the first for requests to the master.
    pub upstream_retries: u32,
    /// How long each attempt of a request for a whole table (this port's
    /// paths, the names) waits, plus this port's share of half as long
    /// again; `upstream_retries` attempts follow the first, as for other
    /// requests. When every port of a fabric asks at once (a cold start),
    /// the master queues the tables one behind the other: the answer to
    /// any attempt ends the request, so with four attempts a table
    /// queued for up to about a minute is not wasted, and OpenSM drops
    /// the repeated requests on arrival while its queue holds ten seconds
    /// of work (`max_msg_fifo_timeout`).
    pub table_timeout: Duration,
    /// How often this port's paths are refreshed from the master, at
    /// least: on a fabric too large for the master to afford it, less
    /// often ([`MasterPace::upkeep_interval`]). A load that replaces this
    /// port's paths (from a distributor) counts as a refresh: the next
    /// one waits a whole interval from it; while a distributor's lease
    /// runs (`load_flags::LEASE`) the port does not refresh at all.
    pub refresh_interval: Duration,
    /// How long after a notice that the fabric changed (trap 128: a
    /// switch port's link went up or down) a port
    /// keeping its own tables refreshes them, plus its phase of the
    /// refresh window: the master sweeps and reroutes after such a
    /// notice, and the refresh should see the new routes.
    pub change_settle: Duration,
    /// How often a table this port did not fetch itself (a distributor's,
    /// or one kept across a restart) is checked against the master: a
    /// few of its paths asked again and compared.
    pub check_interval: Duration,
    /// How often a port keeping its own tables asks the master for its
    /// SMInfoRecord, whose ActCount shows a heavy sweep (a link went up
    /// or down, routes may have moved) even when the change notice that
    /// came before it was lost; zero: never. On a fabric whose ports'
    /// polls together would take more than their share of the master's
    /// time, less often ([`MasterPace::activity_poll_interval`]). While a
    /// distributor's lease runs, the distributor watches instead.
    pub sweep_poll: Duration,
    /// How many destinations each check asks the master for.
    pub check_sample: usize,
    /// How long the first refresh waits at start for a load of this
    /// port's paths before asking the master itself (plus the port's
    /// phase of a quarter as long again): where a distributor next to the
    /// master fills every node, the nodes need not each ask for their
    /// table. Zero (the default) asks at once.
    pub load_wait: Duration,
    /// How long a refresh or subscription that failed waits to try again.
    /// A refresh that fails again waits at its port's phase within a
    /// window that doubles each time (up to the pace's longest window), so
    /// that ports the master turned away together do not return together.
    pub retry_backoff: Duration,
    /// How long the master's answer to a forwarded query is reused.
    pub answer_ttl: Duration,
    /// How long a forwarded query's "no such record" is reused.
    pub negative_ttl: Duration,
    /// Most forwarded answers kept.
    pub max_cached_answers: usize,
    /// How much the QoS cache (port pairs asked for the fields the
    /// master's QoS policy matches on, or for another partition) holds.
    pub qos_cache: QosCacheLimits,
    /// Per-destination queries in flight during a refresh walk.
    pub walk_window: usize,
    /// LIDs past the highest one found after which a walk stops.
    pub walk_gap: u16,
    /// RMPP timers and limits (loads, answers, upstream tables), and the
    /// segment size the transport carries (the daemon takes it from the
    /// transport).
    pub rmpp: RmppConfig,
    /// How many RMPP transfers, and how many bytes of them, the agent
    /// holds at once.
    pub transfer_limits: TransferLimits,
    /// Reports to MAD subscribers: time-out, retries, and the misses that
    /// end a subscriber's lease.
    pub delivery: DeliveryConfig,
    /// How the fabric's agents together pace their refreshes and
    /// re-registrations after a new master, so that they do not all call
    /// on it at once.
    pub pace: MasterPace,
    /// How long a multicast member that joined by MAD stays without
    /// joining again (local API members stay while connected).
    pub member_lease: Duration,
    /// How often the master is asked whether it still holds this port's
    /// registrations (the canary ServiceRecord).
    pub audit_interval: Duration,
    /// What one user (or requester port) may make the master hold
    /// through this agent.
    pub limits: RegistrationLimits,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            sm_key: None,
            upstream_timeout: Duration::from_millis(1000),
            upstream_retries: 3,
            table_timeout: Duration::from_secs(12),
            refresh_interval: Duration::from_secs(600),
            change_settle: Duration::from_secs(5),
            sweep_poll: Duration::from_secs(30),
            check_interval: Duration::from_secs(6 * 3600),
            check_sample: 4,
            load_wait: Duration::ZERO,
            retry_backoff: Duration::from_secs(5),
            answer_ttl: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(5),
            max_cached_answers: 65_536,
            qos_cache: QosCacheLimits::default(),
            walk_window: 16,
            walk_gap: crate::lid_walk::DEFAULT_WALK_GAP,
            rmpp: RmppConfig::default(),
            transfer_limits: TransferLimits::default(),
            delivery: DeliveryConfig::default(),
            pace: MasterPace::default(),
            member_lease: Duration::from_secs(600),
            audit_interval: Duration::from_secs(180),
            limits: RegistrationLimits::default(),
        }
    }
}

/// How much the QoS cache may hold (see `agent::qos_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosCacheLimits {
    /// Port pairs × keys.
    pub entries: usize,
    /// Bytes, records and per-entry overhead counted.
    pub bytes: usize,
}

impl Default for QosCacheLimits {
    fn default() -> Self {
        Self {
            entries: 65_536,
            bytes: 16 << 20,
        }
    }
}

impl AgentConfig {
    /// How requests to the master are timed and retried.
    pub fn upstream(&self) -> RequesterConfig {
        RequesterConfig {
            timeout: self.upstream_timeout,
            retries: self.upstream_retries,
            rmpp: self.rmpp,
        }
    }
}
