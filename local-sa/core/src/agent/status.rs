//! What `lsaquery --status` shows of one port's agent: who it is, where
//! its master is, how fresh its paths are, what it holds for its
//! consumers — read from the groups `SaCore` holds, in a fixed order.

use std::time::Instant;

use crate::agent::master::policy::MasterInfo;
use crate::agent::port_tables::PortTables;
use crate::agent::registration_proxy::quotas::Registrant;
use crate::config::PortIdentity;
use crate::counters::Counters;
use crate::names::state::NameState;
use crate::request::StatusReport;
use crate::sa_class::Wanted;

/// Owners the status lists, the most registrations first.
const STATUS_REGISTRANTS: usize = 16;

/// What the status is made of.
pub(super) struct StatusInputs<'a> {
    pub(super) port: PortIdentity,
    /// What the master's ClassPortInfo said, if it is known.
    pub(super) master: Option<MasterInfo>,
    /// The port's paths are complete.
    pub(super) ready: bool,
    pub(super) tables: &'a PortTables,
    pub(super) naming: &'a NameState,
    /// The counters, with the gauges read now.
    pub(super) counters: Counters,
    /// Path queries answered from the cache and not, in the last
    /// minute.
    pub(super) last_minute: (u64, u64),
    /// This port's share of the fabric's registration pace, per second.
    pub(super) registration_rate: f64,
    /// Owners holding or refused registrations, the most first.
    pub(super) registrants: Vec<Registrant>,
    /// Whether the SA class is local-sa's or a subnet manager's.
    pub(super) sa_class: Wanted,
}

/// This port's status now, as named values in a fixed order.
pub(super) fn report(i: &StatusInputs<'_>, now: Instant) -> StatusReport {
    let c = &i.counters;
    let mut s = StatusReport::default();
    s.push("port_gid", i.port.gid);
    s.push("lid", i.port.lid);
    s.push("sm_lid", i.port.sm_lid);
    if let Some(m) = i.master {
        s.push("master_sa_lid", m.sm_lid);
        s.push("master_qos", if m.qos { "yes" } else { "no" });
    }
    match &i.sa_class {
        Wanted::Hold => s.push("sa_class", "held"),
        Wanted::Wait => s.push("sa_class", "asking whether the master at this LID answers"),
        Wanted::Leave(sign) => s.push("sa_class", format!("left to the subnet manager: {sign}")),
    }
    let table = if i.ready { "complete" } else { "incomplete" };
    s.push("table", table);
    i.tables.push_contents(&mut s, i.port.gid.guid());
    s.push("names", c.names);
    if i.naming.publication().is_some() {
        let published = if i.naming.published() {
            "published"
        } else {
            "not_published"
        };
        s.push("directory", published);
    }
    i.tables.push_freshness(&mut s, now);
    for (name, value) in [
        ("refreshes", c.refreshes),
        ("refreshes_loaded", c.refreshes_loaded),
        ("change_notices", c.change_notices),
        ("change_refreshes", c.change_refreshes),
        ("sweep_polls", c.sweep_polls),
        ("sweeps_seen", c.sweeps_seen),
        ("doubts", c.doubts),
        ("doubt_queries", c.doubt_queries),
        ("lease_renewals", c.lease_renewals),
        ("leases_lapsed", c.leases_lapsed),
        ("loads_fenced", c.loads_fenced),
        ("checks_passed", c.checks_passed),
        ("checks_failed", c.checks_failed),
        ("subscriptions", c.subscriptions),
        ("subscribers", c.subscribers),
        ("groups", c.groups),
        ("members", c.members),
        ("hits", c.hits),
        ("misses", c.misses),
        ("qos_cache_entries", c.qos_cache_entries),
        ("qos_cache_bytes", c.qos_cache_bytes),
        ("qos_cache_hits", c.qos_cache_hits),
        ("qos_cache_fetches", c.qos_cache_fetches),
        ("qos_cache_tables", c.qos_cache_tables),
        ("qos_cache_evicted", c.qos_cache_evicted),
        ("qos_cache_loaded", c.qos_cache_loaded),
        ("upstream_in_flight", c.upstream_in_flight),
        ("upstream_failures", c.upstream_failures),
        ("errors", c.errors),
        ("queries_queued", c.queries_queued),
        ("upstream_refused", c.upstream_refused),
        ("registrations_waiting", c.registrations_waiting),
        ("registrations_in_flight", c.registrations_in_flight),
        ("refused_groups", c.refused_groups),
        ("refused_group_creations", c.refused_group_creations),
        ("refused_subscriptions", c.refused_subscriptions),
    ] {
        s.push(name, value);
    }
    let (hits, misses) = i.last_minute;
    s.push("hits_last_minute", hits);
    s.push("misses_last_minute", misses);
    let rate = i.registration_rate;
    s.push("registrations_per_s", format!("{rate:.1}"));
    for r in i.registrants.iter().take(STATUS_REGISTRANTS) {
        s.push(
            "registrant",
            format!(
                "{} groups={} created={} subscriptions={} refused={}",
                r.owner, r.groups, r.created, r.subscriptions, r.refused
            ),
        );
    }
    s
}
