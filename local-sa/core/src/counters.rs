//! What an operator wants to know about one port's agent.

use std::fmt::Write as _;

/// Counters of one port's SA agent. All count events since start except
/// the last ten, which say how things stand now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// PathRecord queries answered from the cache.
    pub hits: u64,
    /// PathRecord queries the cache could not answer (sent upstream or
    /// joined to a query already upstream).
    pub misses: u64,
    /// Misses that joined an identical query already upstream.
    pub coalesced: u64,
    /// Misses answered from an earlier upstream answer still fresh.
    pub answer_cache_hits: u64,
    /// Requests sent to the master SA (queries, refreshes, subscriptions).
    pub upstream_queries: u64,
    /// Requests to the master SA that got no answer after every retry.
    pub upstream_failures: u64,
    /// PathRecords loaded by Set (SetTable).
    pub loaded: u64,
    /// PathRecords removed by Delete.
    pub deleted: u64,
    /// Loads and deletes refused for a wrong SM_Key, and Reports ignored
    /// because they did not come from the master SM.
    pub denied: u64,
    /// Requests answered with an error status.
    pub errors: u64,
    /// MADs dropped as malformed.
    pub malformed: u64,
    /// RMPP transfers completed (answers sent, loads received).
    pub rmpp_transfers: u64,
    /// RMPP transfers aborted or stopped.
    pub rmpp_aborts: u64,
    /// RMPP transfers refused or stopped because as many as allowed were
    /// in progress.
    pub rmpp_refused_busy: u64,
    /// RMPP transfers refused because the peer's LID had as many as
    /// allowed in progress.
    pub rmpp_refused_per_peer: u64,
    /// RMPP transfers refused or stopped at the limit on bytes held.
    pub rmpp_refused_memory: u64,
    /// Full refreshes of this port's paths completed.
    pub refreshes: u64,
    /// Loads that replaced this port's paths and so stood for a refresh
    /// (a distributor's).
    pub refreshes_loaded: u64,
    /// Notices received from the master and passed on (duplicates of one
    /// notice count once).
    pub notices: u64,
    /// Reports sent to MAD subscribers (resends not counted).
    pub reports_sent: u64,
    /// MAD consumers dropped: subscribers for not answering Reports,
    /// multicast members for not joining again within their lease.
    pub leases_ended: u64,
    /// Multicast joins completed here (the master held the bits).
    pub joins_local: u64,
    /// Multicast joins sent to the master.
    pub joins_upstream: u64,
    /// Multicast leaves.
    pub leaves: u64,
    /// Times every subscription and membership was registered again
    /// (a new master, a client reregister, or a master that lost them).
    pub reregistrations: u64,
    /// Fetches of host names from the master completed (NodeRecords and
    /// the local-sa directory).
    pub name_fetches: u64,
    /// PathRecords cached now.
    pub records: u64,
    /// Host names and IP addresses learned from the master now.
    pub names: u64,
    /// Requests to the master SA waiting for their answer now.
    pub upstream_in_flight: u64,
    /// Distinct forwarded queries waiting for the master now.
    pub queries_waiting: u64,
    /// RMPP transfers in progress now.
    pub transfers_active: u64,
    /// Distinct subscriptions (filters) this port holds now.
    pub subscriptions: u64,
    /// Subscribers (the agent, ports, local connections) now.
    pub subscribers: u64,
    /// Multicast groups this port belongs to now.
    pub groups: u64,
    /// Local memberships (member × group) now.
    pub members: u64,
    /// Reports to MAD subscribers waiting for their answer now.
    pub reports_in_flight: u64,
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
        let body: Vec<String> = self
            .fields()
            .iter()
            .map(|(n, v)| format!("\"{n}\":{v}"))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    fn fields(&self) -> [(&'static str, u64); 36] {
        [
            ("hits", self.hits),
            ("misses", self.misses),
            ("coalesced", self.coalesced),
            ("answer_cache_hits", self.answer_cache_hits),
            ("upstream_queries", self.upstream_queries),
            ("upstream_failures", self.upstream_failures),
            ("loaded", self.loaded),
            ("deleted", self.deleted),
            ("denied", self.denied),
            ("errors", self.errors),
            ("malformed", self.malformed),
            ("rmpp_transfers", self.rmpp_transfers),
            ("rmpp_aborts", self.rmpp_aborts),
            ("rmpp_refused_busy", self.rmpp_refused_busy),
            ("rmpp_refused_per_peer", self.rmpp_refused_per_peer),
            ("rmpp_refused_memory", self.rmpp_refused_memory),
            ("refreshes", self.refreshes),
            ("refreshes_loaded", self.refreshes_loaded),
            ("notices", self.notices),
            ("reports_sent", self.reports_sent),
            ("leases_ended", self.leases_ended),
            ("joins_local", self.joins_local),
            ("joins_upstream", self.joins_upstream),
            ("leaves", self.leaves),
            ("reregistrations", self.reregistrations),
            ("name_fetches", self.name_fetches),
            ("records", self.records),
            ("names", self.names),
            ("upstream_in_flight", self.upstream_in_flight),
            ("queries_waiting", self.queries_waiting),
            ("transfers_active", self.transfers_active),
            ("subscriptions", self.subscriptions),
            ("subscribers", self.subscribers),
            ("groups", self.groups),
            ("members", self.members),
            ("reports_in_flight", self.reports_in_flight),
        ]
    }
}
