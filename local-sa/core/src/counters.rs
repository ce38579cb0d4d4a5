//! What an operator wants to know about one port's agent.

use std::fmt::Write as _;

/// Whether a value only grows (events since start) or says how things
/// stand now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count of events since start.
    Counter,
    /// A level now.
    Gauge,
}

/// One counter's name, value, kind and meaning (its documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Described {
    /// Its name (`hits`).
    pub name: &'static str,
    /// Its value.
    pub value: u64,
    /// Counter or gauge.
    pub kind: Kind,
    /// What it counts, in a sentence.
    pub help: &'static str,
}

/// Declares [`Counters`] from its fields' documentation and kinds, so that
/// the counters file, the metrics endpoint and the code say the same.
macro_rules! counters {
    ( $( $(#[doc = $doc:literal])+ $name:ident : $kind:ident, )* ) => {
        /// Counters of one port's SA agent: events since start, and (the
        /// gauges) how things stand now.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counters {
            $( $(#[doc = $doc])+ pub $name: u64, )*
        }

        impl Counters {
            /// Every counter with its kind and meaning, in a fixed order.
            pub fn described(&self) -> Vec<Described> {
                vec![ $( Described {
                    name: stringify!($name),
                    value: self.$name,
                    kind: Kind::$kind,
                    help: concat!($($doc),+),
                }, )* ]
            }
        }
    };
}

counters! {
    /// PathRecord queries answered from the cache.
    hits: Counter,
    /// PathRecord queries the cache could not answer (sent upstream or
    /// joined to a query already upstream).
    misses: Counter,
    /// Misses that joined an identical query already upstream.
    coalesced: Counter,
    /// Misses answered from an earlier upstream answer still fresh.
    answer_cache_hits: Counter,
    /// Queries naming fields the master's QoS policy matches on (or
    /// another partition) answered from the QoS cache's port pairs.
    qos_cache_hits: Counter,
    /// Port pairs asked of the master for the QoS cache.
    qos_cache_fetches: Counter,
    /// Sources' whole tables at a key asked of the master for the QoS
    /// cache (after a few of their pairs were asked alone).
    qos_cache_tables: Counter,
    /// Port pairs dropped from the full QoS cache, least recently used
    /// first.
    qos_cache_evicted: Counter,
    /// Records put in the QoS cache by loads (a distributor's tables at a
    /// ServiceID, QoS class or P_Key).
    qos_cache_loaded: Counter,
    /// Requests sent to the master SA (queries, refreshes, subscriptions).
    upstream_queries: Counter,
    /// Requests to the master SA that got no answer after every retry.
    upstream_failures: Counter,
    /// Queries answered BUSY without asking the master: 4,096 already
    /// waited for a place there, or this one waited until its asker had
    /// given up.
    upstream_refused: Counter,
    /// PathRecords loaded by Set (SetTable).
    loaded: Counter,
    /// PathRecords removed by Delete.
    deleted: Counter,
    /// Loads and deletes refused for a wrong SM_Key, and Reports ignored
    /// because they did not come from the master SM.
    denied: Counter,
    /// Joins refused because their owner (a local user, a requester
    /// port) held as many groups as it may.
    refused_groups: Counter,
    /// Joins refused because they would have created a group past their
    /// owner's creations.
    refused_group_creations: Counter,
    /// Subscriptions refused because their owner held as many as it may.
    refused_subscriptions: Counter,
    /// Requests answered with an error status.
    errors: Counter,
    /// MADs dropped as malformed.
    malformed: Counter,
    /// RMPP transfers completed (answers sent, loads received).
    rmpp_transfers: Counter,
    /// RMPP transfers aborted or stopped.
    rmpp_aborts: Counter,
    /// RMPP transfers refused or stopped because as many as allowed were
    /// in progress.
    rmpp_refused_busy: Counter,
    /// RMPP transfers refused because the peer's LID had as many as
    /// allowed in progress.
    rmpp_refused_per_peer: Counter,
    /// RMPP transfers refused or stopped at the limit on bytes held.
    rmpp_refused_memory: Counter,
    /// Full refreshes of this port's paths completed.
    refreshes: Counter,
    /// Loads that replaced this port's paths and so stood for a refresh
    /// (a distributor's).
    refreshes_loaded: Counter,
    /// Starts whose tables were kept from the local-sa before (no table
    /// asked of the master).
    refreshes_kept: Counter,
    /// Notices that the fabric changed (trap 128: a switch port's link
    /// went up or down).
    change_notices: Counter,
    /// Refreshes of this port's own tables owed to such a notice.
    change_refreshes: Counter,
    /// Polls of the master's activity (its SMInfoRecord's ActCount).
    sweep_polls: Counter,
    /// Heavy sweeps of the master those polls saw that no notice had
    /// announced: each led to a refresh as a notice does.
    sweeps_seen: Counter,
    /// Times this port's tables were taken as not showing the master's
    /// last sweep (after a change notice, a heavy sweep seen, a lease
    /// lapsed), until a refresh: the paths asked meanwhile were asked of
    /// the master.
    doubts: Counter,
    /// Path queries asked of the master (or answered from its answers
    /// kept since) while the tables were in doubt.
    doubt_queries: Counter,
    /// Leases a distributor took or renewed on this port's tables.
    lease_renewals: Counter,
    /// Renewals that said the master swept (`FORGET_QOS`): the QoS
    /// answers kept from it were forgotten.
    qos_forgotten: Counter,
    /// Whether local-sa holds this port's SA class (answers SA requests
    /// on QP1): 1, or 0 where it leaves it to a subnet manager on the
    /// port, now.
    sa_class_held: Gauge,
    /// Leases that ended with the distributor silent (past the lease, or
    /// for two of its renewal intervals): the port checked and then
    /// fetched its own tables again.
    leases_lapsed: Counter,
    /// Loads and deletes refused because another distributor held the
    /// port's lease.
    loads_fenced: Counter,
    /// Checks of a table this port did not fetch (a distributor's, or
    /// one kept across a restart) that agreed with the master.
    checks_passed: Counter,
    /// Such checks that found a difference (the port then fetched its
    /// own tables).
    checks_failed: Counter,
    /// Notices received from the master and passed on (duplicates of one
    /// notice count once).
    notices: Counter,
    /// Reports sent to MAD subscribers (resends not counted).
    reports_sent: Counter,
    /// MAD consumers dropped: subscribers for not answering Reports,
    /// multicast members for not joining again within their lease.
    leases_ended: Counter,
    /// Multicast joins completed here (the master held the bits).
    joins_local: Counter,
    /// Multicast joins sent to the master.
    joins_upstream: Counter,
    /// Multicast leaves.
    leaves: Counter,
    /// Groups whose leave the master never answered, given up after eight
    /// tries (the next local-sa on the port deletes them, from its
    /// registrations record).
    leaves_given_up: Counter,
    /// Groups forgotten because the master, asked before an unanswered
    /// leave was tried again, no longer held the port in them.
    groups_gone_at_master: Counter,
    /// Times every subscription and membership was registered again
    /// (a new master, a client reregister, or a master that lost them).
    reregistrations: Counter,
    /// Queries for records local-sa does not keep (NodeRecords,
    /// ServiceRecords, ...) passed to the master, its answer passed back.
    relayed: Counter,
    /// Such queries answered BUSY because as many as allowed were waiting
    /// for the master.
    relays_refused: Counter,
    /// Fetches of host names from the master completed (NodeRecords and
    /// the local-sa directory).
    name_fetches: Counter,
    /// Names tables (NodeRecords, directory ServiceRecords) loaded by a
    /// distributor.
    name_tables_loaded: Counter,
    /// PathRecords in the default table (the answers asked without a
    /// P_Key) now.
    records: Gauge,
    /// Bytes the PathRecord store holds on the heap, estimated from its
    /// tables' capacities without the allocator's overhead, now.
    cache_bytes: Gauge,
    /// Partition tables kept (one per P_Key of the port whose answers the
    /// default table does not give) now.
    partition_tables: Gauge,
    /// PathRecords in the partition tables now.
    partition_records: Gauge,
    /// Bytes the partition tables hold on the heap (as `cache_bytes`) now.
    partition_bytes: Gauge,
    /// Port pairs × QoS fields in the QoS cache now.
    qos_cache_entries: Gauge,
    /// Bytes the QoS cache holds (records and per-entry overhead) now.
    qos_cache_bytes: Gauge,
    /// Host names and IP addresses learned from the master now.
    names: Gauge,
    /// Requests to the master SA waiting for their answer now.
    upstream_in_flight: Gauge,
    /// Registration requests (subscriptions, joins, leaves) waiting for
    /// their turn at the master's pace now.
    registrations_waiting: Gauge,
    /// Queries for consumers and ports (forwarded, relayed) waiting for
    /// one of the 64 places at the master now.
    queries_queued: Gauge,
    /// Registration requests out at the master (at most the pace's
    /// `registrations_in_flight`) now.
    registrations_in_flight: Gauge,
    /// Distinct forwarded queries and QoS cache port pairs waiting for
    /// the master now.
    queries_waiting: Gauge,
    /// RMPP transfers in progress now.
    transfers_active: Gauge,
    /// Distinct subscriptions (filters) this port holds now.
    subscriptions: Gauge,
    /// Subscribers (the agent, ports, local connections) now.
    subscribers: Gauge,
    /// Multicast groups this port belongs to now.
    groups: Gauge,
    /// Local memberships (member × group) now.
    members: Gauge,
    /// Reports to MAD subscribers waiting for their answer now.
    reports_in_flight: Gauge,
}

impl Counters {
    /// `name value` lines, one counter each.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, value) in self.fields() {
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }

    /// One JSON object.
    pub fn to_json(&self) -> String {
        let body: Vec<String> = self.fields().map(|(n, v)| format!("\"{n}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    }

    fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> {
        self.described().into_iter().map(|d| (d.name, d.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_says_what_it_counts_and_the_gauges_are_the_levels_now() {
        let described = Counters::default().described();
        assert_eq!(
            described.len(),
            Counters::default().to_text().lines().count()
        );
        for d in &described {
            assert!(d.help.trim().ends_with('.'), "{}: {:?}", d.name, d.help);
            // The struct's own rule: the levels say "now".
            assert_eq!(
                d.kind == Kind::Gauge,
                d.help.trim_end().ends_with("now."),
                "{}: {:?}",
                d.name,
                d.help
            );
        }
        let c = Counters {
            hits: 3,
            records: 9,
            ..Counters::default()
        };
        assert!(c.to_text().starts_with("hits 3\nmisses 0\n"));
        assert!(c.to_json().contains("\"records\":9"));
    }
}
