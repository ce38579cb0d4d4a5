//! The SA agent's logic, without I/O: a state machine fed MADs, local
//! requests and the time, producing MADs to send and local replies
//! (quinn-proto's shape).
//!
//! * [`SaCore::handle_mad`] with every MAD the port receives;
//! * [`SaCore::handle_local`] with every local program's request, and
//!   [`SaCore::handle_local_closed`] when its connection closes;
//! * [`SaCore::handle_timeout`] at [`SaCore::poll_timeout`];
//! * [`SaCore::handle_port_change`] when the port's LID or SM changes;
//! * after each of them, [`SaCore::poll_transmit`] and
//!   [`SaCore::poll_local`] until they return `None`.
//!
//! The agent answers PathRecord Get/GetTable from its [`PathStore`],
//! forwards what it cannot answer to the master SA (coalescing identical
//! queries, keeping answers for a while), keeps the store filled (a bulk
//! GetTable of this port's paths at start, on SM change and periodically,
//! falling back to per-destination queries when the bulk answer comes back
//! cut; traps 64/65 for ports coming and going), accepts PathRecord loads
//! and deletes carrying the configured SM_Key, proxies notice
//! subscriptions and multicast memberships, and answers ClassPortInfo.
//! Anything else gets MAD status 0x000C.
//!
//! `SaCore` owns sub-machines and routes events between them: each
//! decides for itself and says what follows (requests for the master,
//! answers, effects), which `SaCore` carries out. `impl SaCore` is in
//! this file (the public calls) and in `routing/`'s. Each folder is the
//! group `SaCore` holds for one concern, and its `mod.rs` says what its
//! files do: `port_tables/` (`PortTables`), `master/` (`MasterLink`),
//! `answers/` (`AnswerReuse`), `registration_proxy/` (`RegistrationProxy`).
//! The names (fetched, loaded, published) are `crate::names`' state.
//!
//! Nothing here reads a clock, an environment variable or a random
//! source: the time comes with every call and the TransactionID seed with
//! [`SaCore::new`], so the same inputs give the same outputs.

mod answers;
mod counterparts;
mod master;
mod outbox;
mod port_tables;
mod registration_proxy;
mod replies;
mod routing;
mod status;
mod telemetry;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Instant;

use mad_codec::{AttributeId, MadStatus, Method};
use tracing::{debug, info, warn};

use self::answers::AnswerReuse;
use self::counterparts::{Asker, Member, Subscriber};
use self::master::MasterLink;
use self::master::policy::MasterInfo;
use self::master::purpose::Purpose;
use self::outbox::Outbox;
use self::port_tables::PortTables;
use self::port_tables::rules::RefreshDue;
use self::port_tables::timers::Due;
use self::registration_proxy::RegistrationProxy;
pub use self::registration_proxy::quotas::Registrant;
use self::replies::Replies;
use self::status::StatusInputs;
use self::telemetry::Telemetry;
use crate::address::{Address, Received, Transmit};
use crate::config::{AgentConfig, PortIdentity};
use crate::counters::Counters;
use crate::inbound::{Inbound, SaRequest};
use crate::kept_tables::{Kept, NotTaken};
use crate::load_flags::NAMES_TABLE;
use crate::names::directory::Publication;
use crate::names::hosts::Names;
use crate::names::state::NameState;
use crate::outlook::Outlook;
use crate::partitions::{Partitions, TableKey};
use crate::quota::LocalUser;
use crate::registrations_record::Registrations;
use crate::request::{ConnId, Hello, LocalBody, LocalReply, Request, StatusReport};
use crate::requester::Handled;
use crate::sa_class::{RegistrationRefused, SaClass, SmSign, Wanted};
use crate::stats::Stats;
use crate::store::PathStore;
use crate::transfers::Transfers;

/// An SA agent for one port.
#[derive(Debug)]
pub struct SaCore {
    config: AgentConfig,
    port: PortIdentity,
    /// The port's tables, their refresh and their upkeep.
    tables: PortTables,
    /// Requests to the master, waiting and in flight, and its policy.
    master: MasterLink,
    /// Forwarded queries and the QoS cache.
    answers: AnswerReuse,
    /// The registration proxy: subscriptions, memberships, their quotas,
    /// the agent's own registrations.
    proxy: RegistrationProxy,
    /// Host names from the master, and this port's directory record.
    naming: NameState,
    /// RMPP transfers, both ways.
    transfers: Transfers,
    /// MADs to send and local replies, until the driver takes them.
    outbox: Outbox,
    /// Counters, statistics, the log's limits.
    telemetry: Telemetry,
    /// Whether this port's SA class is local-sa's to hold or a subnet
    /// manager's.
    sa_class: SaClass,
    /// Withdrawing everything: nothing is refreshed or registered again.
    shutting_down: bool,
}

impl SaCore {
    /// An agent for `port`; it starts filling its store at once. Its
    /// requests to the master take TransactionIDs from `seed` on: a
    /// restarted agent should use another one, so that late answers to its
    /// predecessor's requests do not match its own.
    pub fn new(config: AgentConfig, port: PortIdentity, now: Instant, seed: u32) -> Self {
        let mut agent = Self {
            config,
            port,
            tables: PortTables::new(now, port_tables::context::of(&config, port, false, false)),
            master: MasterLink::new(&config, seed),
            answers: AnswerReuse::new(&config),
            proxy: RegistrationProxy::new(&config, &port),
            naming: NameState::default(),
            transfers: Transfers::new(config.rmpp, config.transfer_limits),
            outbox: Outbox::default(),
            telemetry: Telemetry::default(),
            sa_class: SaClass::default(),
            shutting_down: false,
        };
        // The first audit at this port's own phase in the second half of
        // the interval; the rest one interval apart.
        let half = config.audit_interval / 2;
        let first_audit = now + half + agent.port.spread(half);
        agent.proxy.audit_at(first_audit);
        agent.handle_timeout(now);
        agent
    }

    /// Takes `config` (a reloaded configuration) for what happens from
    /// now on, keeping every record, subscription, membership and transfer:
    /// the SM_Key, time-outs and retries, intervals, answer lifetimes,
    /// member lease. The RMPP settings and transfer limits stay as the
    /// agent started (transfers in progress depend on them).
    pub fn reconfigure(&mut self, now: Instant, config: AgentConfig) {
        let config = AgentConfig {
            rmpp: self.config.rmpp,
            transfer_limits: self.config.transfer_limits,
            ..config
        };
        if config.sm_key.is_none() && self.config.sm_key.is_some() {
            // The one log line that loads are refused comes again.
            self.telemetry.rearm_unkeyed();
        }
        let audit_sooner = config.audit_interval < self.config.audit_interval;
        self.config = config;
        self.tables_know(now);
        self.master.set_config(&config);
        self.answers
            .set_ttls(config.answer_ttl, config.negative_ttl);
        self.proxy.reconfigure(&config);
        if audit_sooner {
            self.proxy.audit_by(now + config.audit_interval);
        }
    }

    /// Whether a query carrying `sm_key` is trusted (sees what only the
    /// SM_Key's holder may): never while no key is configured.
    fn trusted(&self, sm_key: u64) -> bool {
        self.config.sm_key.is_some_and(|k| k.matches(sm_key))
    }

    /// The port as the agent knows it.
    pub fn port(&self) -> PortIdentity {
        self.port
    }

    /// The counters, with the gauges read now.
    pub fn counters(&self) -> Counters {
        let mut c = Counters {
            transfers_active: self.transfers.in_progress() as u64,
            sa_class_held: u64::from(self.sa_class.holding()),
            ..self.telemetry.counters
        };
        self.naming.add_counts(&mut c);
        self.tables.add_counts(&mut c);
        self.answers.add_counts(&mut c);
        self.master.add_counts(&mut c);
        self.proxy.add_counts(&mut c);
        c
    }

    /// Answers by attribute, method and status, and how long the master
    /// took to answer.
    pub fn stats(&self) -> &Stats {
        &self.telemetry.stats
    }

    /// The PathRecord store (the default table).
    pub fn store(&self) -> &PathStore {
        self.tables.store()
    }

    /// Whether the tables are in doubt: the master swept since they were
    /// fetched (after a change notice, a heavy sweep its activity showed,
    /// a distributor's lease lapsed), and until a refresh the paths asked
    /// are asked of the master instead of answered from them.
    pub fn tables_in_doubt(&self) -> bool {
        self.tables.in_doubt()
    }

    /// The port's partition tables.
    pub fn partitions(&self) -> &Partitions {
        self.tables.partitions()
    }

    /// True once this port's paths have been fetched completely.
    pub fn is_ready(&self) -> bool {
        self.tables.is_complete(self.port.gid.guid())
    }

    /// True when nothing is left in flight to the master, or waiting to
    /// go there.
    pub fn is_idle(&self) -> bool {
        self.master.is_idle()
    }

    /// The next MAD to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.outbox.mads.pop_front()
    }

    /// The next reply for a local program.
    #[must_use]
    pub fn poll_local(&mut self) -> Option<LocalReply> {
        self.outbox.local.pop_front()
    }

    /// When [`SaCore::handle_timeout`] must next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            (self.master).poll_timeout(self.config.pace.registrations_in_flight),
            self.transfers.poll_timeout(),
            self.tables.poll_timeout(),
            self.naming.next_fetch(),
            self.proxy.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The driver's view of the agent now (see [`Outlook`]).
    #[must_use]
    pub fn outlook(&self) -> Outlook {
        Outlook {
            timeout: self.poll_timeout(),
            local_replies: !self.outbox.local.is_empty(),
            names_generation: self.names_generation(),
            ready: self.is_ready(),
            idle: self.is_idle(),
        }
    }

    /// Does whatever is due at `now`: retries and failures upstream, RMPP
    /// resends, refreshes, (re)registrations.
    pub fn handle_timeout(&mut self, now: Instant) {
        for completion in self.master.handle_timeout(now, &mut self.outbox.mads) {
            self.upstream_done(now, completion);
        }
        self.release_queued(now);
        for event in self.transfers.handle_timeout(now, &mut self.outbox.mads) {
            self.reply().count_transfer(now, &event);
        }
        self.answers.prune(now);
        let due = self.proxy.handle_timeout(now);
        self.carry_out(now, due, None);
        if self.shutting_down {
            return;
        }
        let at_master = self.port.sm_lid == self.port.lid;
        if self.sa_class.take_master_question(self.port.lid, at_master) {
            self.ask_master_here(now);
        }
        for due in Due::ORDER {
            if !self.tables.take_due(due, now) {
                continue;
            }
            match due {
                Due::DoubtSettled => self.doubt_settled(now),
                Due::Refresh => {
                    if matches!(self.tables.handle_refresh_due(now), RefreshDue::Go) {
                        self.start_refresh(now);
                    }
                }
                Due::Check => self.start_table_check(now),
                Due::SweepPoll => self.poll_sweeps(now),
                Due::Partitions => self.fetch_new_partitions(now),
            }
        }
        if self.proxy.take_registration_due(now) {
            self.register(now);
            self.send_publication(now);
        }
        if let Some(epoch) = self.naming.take_fetch_due(now) {
            self.start_name_fetch(now, epoch);
        }
        if self.proxy.audit_due(now) {
            self.audit(now);
        }
        if self.proxy.take_reregistration_due(now) {
            info!(
                master = self.port.sm_lid,
                "registering every subscription and membership again"
            );
            let again = self.proxy.register_all_again(now);
            self.carry_out(now, again, None);
        }
    }

    /// The port changed: a new LID, or a new master SM (SM change, client
    /// reregister). Refreshes everything and registers again with the
    /// master.
    pub fn handle_port_change(&mut self, now: Instant, port: PortIdentity) {
        let master_changed = port.sm_lid != self.port.sm_lid || port.sm_sl != self.port.sm_sl;
        let me_changed =
            port.lid != self.port.lid || port.lmc != self.port.lmc || port.gid != self.port.gid;
        info!(
            lid = port.lid,
            gid = %port.gid,
            sm_lid = port.sm_lid,
            master_changed, me_changed, "port changed; refreshing and registering again"
        );
        self.port = port;
        self.tables_know(now);
        self.proxy.set_port_gid(port.gid);
        if master_changed || me_changed {
            self.sa_class.master_moved();
        }
        if master_changed {
            // Requests in flight fail: their answers would come from the
            // old master. Their purposes ask again.
            for completion in self.master.cancel_all() {
                self.upstream_done(now, completion);
            }
        }
        if me_changed {
            self.tables.clear();
            self.master.forget_info();
            self.tables_know(now);
            self.abandon_fetches_into(|_| true);
        }
        self.answers.forget();
        // The refresh in progress is superseded by the one starting now.
        self.master
            .forget(|p| matches!(p, Purpose::Bulk { .. } | Purpose::Walk { .. }));
        // Paths from this port are needed at once when its own identity
        // changed (the store was emptied) or an administrator waits for
        // them; after a new master, what is held is served while the
        // fabric's ports take their turns.
        self.tables.restart_refresh(now, me_changed);
        self.naming
            .keep_after_next_refresh(master_changed && !me_changed);
        // A new identity registers at once. After a new master (or a
        // ClientReregister) its ClassPortInfo, the canary and this port's
        // directory record go at the port's phase of the re-registration
        // window, before its subscriptions: a fabric whose SM moved does
        // not send them all in the same second. Until then the cache
        // answers with what the old master said — its paths and its QoS
        // policy — as it does until the refresh.
        let at = if me_changed {
            now
        } else {
            now + self.reregister_delay()
        };
        self.proxy.register_at(Some(at));
        // Whatever the master held for this port may be gone.
        let again = now + self.reregister_delay();
        self.proxy.reregister_at(Some(again));
        self.handle_timeout(now);
    }

    /// What the node says of a subnet manager on this port (its IsSM
    /// capability, an SM's unit enabled or active): where one runs or is
    /// set to run, the SA class is its ([`crate::sa_class`]).
    pub fn handle_sm_signs(&mut self, now: Instant, signs: Vec<SmSign>) {
        let before = self.sa_class.wanted();
        if self.sa_class.handle_node(signs) {
            self.say_sa_class(before);
        }
        self.handle_timeout(now);
    }

    /// What the driver is to do about the SA class: hold it, leave it to
    /// a subnet manager, or wait (the master at this port's LID is being
    /// asked whether it answers).
    pub fn sa_class(&self) -> Wanted {
        self.sa_class.wanted()
    }

    /// The driver holds the SA class's methods now (`Ok`), or the kernel
    /// refused them (`Err`: why; another agent, an SM, holds them).
    pub fn handle_sa_class_held(&mut self, held: Result<(), RegistrationRefused>) {
        let before = self.sa_class.wanted();
        self.sa_class.handle_held(held);
        self.say_sa_class(before);
    }

    /// The driver let the SA class's methods go.
    pub fn handle_sa_class_left(&mut self) {
        self.sa_class.handle_left();
    }

    /// Says in the log what the SA class is now, if that changed since
    /// `before`.
    fn say_sa_class(&self, before: Wanted) {
        let now = self.sa_class.wanted();
        if now == before {
            return;
        }
        match now {
            Wanted::Leave(sign) => warn!(
                lid = self.port.lid,
                "a subnet manager runs, or is set to run, on this port ({sign}): local-sa leaves the SA \
                 class to it and answers no SA request on QP1 here; its other doors (the ibacm socket, \
                 the kernel's queries, the local API) serve on from the same cache"
            ),
            Wanted::Hold => info!(
                lid = self.port.lid,
                "no subnet manager on this port: local-sa answers the SA's requests here"
            ),
            Wanted::Wait => {}
        }
    }

    /// The port's P_Key table, as the port lists it (at start, and after
    /// every change): each partition it holds gets a table of its own,
    /// fetched after the default table at every refresh. The tables of
    /// partitions gone go at once; new partitions' tables are fetched at
    /// this port's phase of the refresh window (a P_Key change reaches
    /// many ports together).
    pub fn handle_pkeys(&mut self, now: Instant, pkeys: &[u16]) {
        if !self.tables.set_partitions_held(pkeys) {
            return;
        }
        info!(
            partitions = ?self.tables.partitions_held().iter().map(|p| TableKey::Partition(*p).to_string()).collect::<Vec<_>>(),
            "the port's partitions"
        );
        if self.is_ready() {
            self.tables.fetch_partitions_at_phase(now);
        }
        self.handle_timeout(now);
    }

    /// Withdraws every subscription, membership and the canary at the
    /// master (the caller gives their answers a moment to arrive before
    /// closing) and stops refreshing.
    pub fn begin_shutdown(&mut self, now: Instant) {
        self.shutting_down = true;
        self.tables_know(now);
        self.answer_refresh_waiters(MadStatus::BUSY);
        let withdrawals = self.proxy.withdraw_all(now);
        self.carry_out(now, withdrawals, None);
        self.withdraw_publication(now);
    }

    /// A request from local connection `conn`, numbered `id` (its answer
    /// comes from [`SaCore::poll_local`] under the same number).
    pub fn handle_local(&mut self, now: Instant, conn: ConnId, id: u32, request: Request) {
        let asker = Asker::Local {
            conn,
            id,
            kind: request.kind(),
            waited: false,
        };
        match request {
            Request::Hello => {
                let hello = Hello {
                    gid: self.port.gid,
                    lid: self.port.lid,
                    sm_lid: self.port.sm_lid,
                };
                self.reply()
                    .reply_local(&asker, MadStatus::OK, LocalBody::Hello(hello));
            }
            Request::PathQuery { query, lookup } => {
                if query.method == Method::GET || query.method == Method::GET_TABLE {
                    self.path_request(now, asker, query, lookup);
                } else {
                    self.reply()
                        .answer_status(&asker, MadStatus::METHOD_ATTR_UNSUPPORTED);
                }
            }
            Request::Inform(ii) => self.local_inform(now, asker, &ii),
            Request::Join { mask, record } => self.local_membership(now, asker, true, mask, record),
            Request::Leave { mask, record } => {
                self.local_membership(now, asker, false, mask, record)
            }
            Request::ListSubscriptions => {
                let records = self.proxy.subscription_records(true);
                self.reply().answer_local_records(&asker, &records);
            }
            Request::ListGroups => {
                let records = self.proxy.group_records();
                self.reply().answer_local_records(&asker, &records);
            }
            Request::Refresh => self.local_refresh(now, asker),
            Request::Flush => self.local_flush(now, &asker),
            Request::Dump {
                from,
                max,
                partition,
            } => self.local_dump(&asker, from, max, partition),
            Request::Status => {
                let status = self.status(now);
                self.reply()
                    .reply_local(&asker, MadStatus::OK, LocalBody::Status(status));
            }
        }
    }

    /// Local connection `conn` closed: everything it held goes.
    pub fn handle_local_closed(&mut self, now: Instant, conn: ConnId) {
        self.release_registrations(now, Subscriber::Local(conn), Member::Local(conn));
        self.forget_local_waiters(conn);
        self.tables.forget_refresh_waiters(conn);
        self.outbox.forget_conn(conn);
        self.proxy.forget_conn(conn);
    }

    /// Handles one MAD the port received.
    pub fn handle_mad(&mut self, now: Instant, received: Received) {
        let Received {
            from,
            status,
            mad,
            cut,
        } = received;
        let request = match Inbound::decode(from, status, mad) {
            Inbound::Malformed { len } => {
                self.telemetry.counters.malformed += 1;
                debug!(len, lid = from.lid, "dropping a MAD that is not an SA MAD");
                return;
            }
            Inbound::Answer { method, tid, mad } => {
                if method == Method::REPORT_RESP && self.proxy.report_resp(tid) {
                    return;
                }
                return self.answer_received(now, from, status, &mad, cut);
            }
            Inbound::RmppControl(control) => return self.transfer_control(now, &control),
            Inbound::Request(request) => request,
        };
        if request.header().mad.check_versions().is_err() {
            return self.reply().respond_error(&request, MadStatus::BAD_VERSION);
        }
        match (request.attribute(), request.method()) {
            (AttributeId::PATH_RECORD, Method::GET | Method::GET_TABLE) => {
                self.path_query(now, request)
            }
            (AttributeId::PATH_RECORD, Method::SET | Method::DELETE) => self.load(now, &request),
            // A distributor's names table; without the flag such a Set
            // (a service registration, say) is not local-sa's to take.
            (AttributeId::NODE_RECORD | AttributeId::SERVICE_RECORD, Method::SET)
                if request.header().mad.attribute_modifier() & NAMES_TABLE != 0 =>
            {
                self.names_load(now, &request)
            }
            (AttributeId::CLASS_PORT_INFO, Method::GET) => self.reply().class_port_info(&request),
            (AttributeId::NOTICE, Method::REPORT) => self.report(now, &request),
            (AttributeId::INFORM_INFO, Method::SET) => self.inform_info_set(now, request),
            (AttributeId::MC_MEMBER_RECORD, Method::SET | Method::DELETE) => {
                self.membership_mad(now, request)
            }
            (AttributeId::MC_MEMBER_RECORD, Method::GET | Method::GET_TABLE) => {
                self.member_records(now, request)
            }
            (AttributeId::INFORM_INFO_RECORD, Method::GET | Method::GET_TABLE) => {
                self.inform_info_records(now, request)
            }
            // Records this agent does not keep: the master's to answer,
            // as if the asker had asked it.
            (_, Method::GET | Method::GET_TABLE) => self.relay_upstream(now, request),
            (attr, method) => {
                debug!(
                    %attr,
                    %method,
                    lid = request.from.lid,
                    "unsupported method/attribute"
                );
                self.reply()
                    .respond_error(&request, MadStatus::METHOD_ATTR_UNSUPPORTED);
            }
        }
    }

    /// An answer to a request of ours to the master (or the request given
    /// back by the transport).
    fn answer_received(
        &mut self,
        now: Instant,
        from: Address,
        status: u32,
        mad: &[u8],
        cut: Option<usize>,
    ) {
        let reply_to = from.reply();
        let answer = (status, mad, cut);
        if let Handled::Done(completion) =
            (self.master).handle_answer(now, &reply_to, answer, &mut self.outbox.mads)
        {
            self.upstream_done(now, completion);
        }
    }

    /// An ACK, STOP or ABORT from a peer: for an answer we send, or (ABORT)
    /// a load we receive.
    fn transfer_control(&mut self, now: Instant, control: &SaRequest) {
        let peer = control.reply_to();
        let (tid, mad) = (control.tid(), control.mad());
        if self.transfers.is_sending(&peer, tid) {
            if let Some(e) = self
                .transfers
                .control(now, &peer, tid, mad, &mut self.outbox.mads)
            {
                self.reply().count_transfer(now, &e);
            }
        } else if self.transfers.is_receiving(&control.from, tid)
            && let Some(e) =
                self.transfers
                    .segment(now, &control.from, tid, mad, &mut self.outbox.mads)
        {
            self.reply().count_transfer(now, &e);
        }
    }
    /// Local connection `conn` is `user`'s (the door knows it from the
    /// socket's peer credentials). A connection never introduced counts
    /// as an unprivileged user of unknown ID.
    pub fn handle_local_opened(&mut self, conn: ConnId, user: LocalUser) {
        self.proxy.introduce(conn, user);
    }

    /// Every owner holding or refused registrations, the most first.
    pub fn registrants(&self) -> Vec<Registrant> {
        self.proxy.registrants()
    }

    /// What this agent asked the master to hold for the port, being asked
    /// included.
    pub fn registrations(&self) -> Registrations {
        self.proxy.record()
    }

    /// Changes whenever [`SaCore::registrations`] may have. A caller that
    /// keeps the record writes it again when this moves; before sending
    /// what [`SaCore::poll_transmit`] gives if it moved past the record
    /// by a change that may have added to it
    /// ([`SaCore::registrations_grown`]); a record that lists more than
    /// the master holds costs the next agent only a leave the master
    /// refuses, so removals may wait.
    pub fn registrations_generation(&self) -> u64 {
        self.proxy.generation()
    }

    /// The generation of the last change that may have added to
    /// [`SaCore::registrations`]: a record older than this must be
    /// written before the next request goes out.
    pub fn registrations_grown(&self) -> u64 {
        self.proxy.grown()
    }

    /// Removes at the master what a previous agent of this port left
    /// there (`previous`, its record), except what someone here holds by
    /// then. Call once, right after [`SaCore::new`].
    pub fn adopt(&mut self, now: Instant, previous: &Registrations) {
        if previous.port_gid != self.port.gid {
            warn!(
                recorded = %previous.port_gid,
                port = %self.port.gid,
                "the previous local-sa's registrations were for another port GID: left alone"
            );
            return;
        }
        if previous.is_empty() {
            return;
        }
        info!(
            subscriptions = previous.subscriptions.len(),
            groups = previous.groups.len(),
            "removing what a previous local-sa on this port left at the master"
        );
        let effects = self.proxy.adopt(now, previous);
        self.carry_out(now, effects, None);
    }

    /// The names and addresses learned from the master SA (shared: the
    /// table is replaced whole when it changes, never changed in place).
    pub fn names(&self) -> &Arc<Names> {
        self.naming.names()
    }

    /// A number that changes whenever [`SaCore::names`] does.
    pub fn names_generation(&self) -> u64 {
        self.naming.generation()
    }

    /// Publishes `publication` as this port's directory record (`None`
    /// withdraws it).
    pub fn publish(&mut self, now: Instant, publication: Option<Publication>) {
        let withdraw = publication.is_none();
        if !self.naming.set_publication(publication) {
            return;
        }
        if withdraw {
            self.withdraw_publication(now);
        } else if !self.shutting_down {
            self.send_publication(now);
        }
    }

    /// Moves whenever what [`SaCore::keep_tables`] gives may have changed
    /// (a refresh, a load or delete, a lease renewal, a change notice).
    pub fn tables_version(&self) -> u64 {
        let c = &self.telemetry.counters;
        [
            c.refreshes,
            c.refreshes_loaded,
            c.loaded,
            c.deleted,
            c.change_notices,
            c.lease_renewals,
            c.leases_lapsed,
            c.checks_failed,
            self.tables.default_records() as u64,
        ]
        .iter()
        .fold(0u64, |v, n| v.rotate_left(7) ^ n)
    }

    /// This port's tables as a successor may take them, stamped with the
    /// time `wall` (Unix seconds) that goes with `now`; `None` while they
    /// are not complete, or a fabric change awaits a refresh (a successor
    /// must then ask the master). (The rules: `agent/port_tables/kept.rs`.)
    pub fn keep_tables(&self, now: Instant, wall: u64) -> Option<Kept> {
        if !self.is_ready() {
            return None;
        }
        let (lease, tables) = self.tables.to_keep()?;
        Some(Kept {
            gid: self.port.gid,
            lid: self.port.lid,
            lmc: self.port.lmc,
            sm_lid: self.port.sm_lid,
            written: wall,
            master_qos: self.master.info().map(|m| m.qos),
            lease: lease.map(|l| {
                let left = l.until.saturating_duration_since(now).as_secs();
                let length = u16::try_from(l.length.as_secs()).unwrap_or(u16::MAX);
                (l.lid, wall + left, length)
            }),
            tables,
            names: self.naming.worth_keeping().then(|| {
                self.naming
                    .names()
                    .entries()
                    .map(|(a, g, s)| (a.clone(), g, s))
                    .collect()
            }),
        })
    }

    /// Takes the tables a predecessor kept, at start: called right after
    /// [`SaCore::new`] and [`SaCore::handle_pkeys`], before anything is
    /// sent (what the start queued for the master — its table, its
    /// ClassPortInfo — is dropped: the kept tables stand for them).
    /// `wall` is the Unix time that goes with `now`. Returns how many
    /// records were taken, or why none were. (The rules: `agent/port_tables/kept.rs`.)
    pub fn restore_tables(
        &mut self,
        now: Instant,
        wall: u64,
        kept: Kept,
    ) -> Result<usize, NotTaken> {
        let p = self.port;
        let lease = port_tables::kept::takes(&kept, &p, now, wall, self.config.refresh_interval)?;
        // What the start queued stands for nothing now.
        self.master.forget(|p| {
            matches!(
                p,
                Purpose::Bulk { .. } | Purpose::Walk { .. } | Purpose::MasterInfo
            )
        });
        self.outbox.mads.clear();
        let age = wall.saturating_sub(kept.written);
        let (epoch, records) = self.tables.restore(now, kept.tables, lease);
        if let Some(qos) = kept.master_qos {
            self.master.learned(MasterInfo {
                qos,
                sm_lid: p.sm_lid,
            });
            self.tables_know(now);
        }
        if let Some(kept_names) = kept.names {
            let mut names = Names::new();
            for (address, gid, source) in kept_names {
                names.insert(address, gid, source);
            }
            // No fetch of the names tables at start: these stand for it.
            self.naming.take_kept(names);
        }
        self.paths_fresh(now, epoch);
        info!(
            records,
            age_s = age,
            leased = lease.is_some(),
            "this port's tables were kept from before the restart: no table asked of the master; a \
             few paths are checked against it"
        );
        Ok(records)
    }

    /// This port's status now (`lsaquery --status`).
    fn status(&self, now: Instant) -> StatusReport {
        let inputs = StatusInputs {
            port: self.port,
            master: self.master.info(),
            ready: self.is_ready(),
            tables: &self.tables,
            naming: &self.naming,
            counters: self.counters(),
            last_minute: self.answers.last_minute(now),
            registration_rate: (self.config.pace)
                .port_registration_rate(self.tables.fabric_ports()),
            registrants: self.registrants(),
            sa_class: self.sa_class.wanted(),
        };
        status::report(&inputs, now)
    }

    /// Lends what answers askers (see [`Replies`]).
    fn reply(&mut self) -> Replies<'_> {
        Replies {
            outbox: &mut self.outbox,
            transfers: &mut self.transfers,
            telemetry: &mut self.telemetry,
            upstream_timeout: self.config.upstream_timeout,
        }
    }
}
