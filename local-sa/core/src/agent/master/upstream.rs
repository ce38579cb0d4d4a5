//! The agent's requests to the master SA, and where each answer (or its
//! absence) goes: to the code that asked, by the request's [`Purpose`].

use std::time::Instant;

use bytes::Bytes;
use mad_codec::MadStatus;
use tracing::warn;

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::agent::master::queue::{Lane, MAX_QUERIES_WAITING, Queued};
use crate::inbound::SaRequest;
use crate::requester::{Answer, Attempts, Completion, Failure};

impl SaCore {
    /// Sends `request` (a whole MAD) to the master for `purpose`.
    pub(in crate::agent) fn send_upstream(
        &mut self,
        now: Instant,
        purpose: Purpose,
        request: &[u8],
    ) {
        let attempts = self.master.requester.config().attempts();
        self.send_upstream_with(now, purpose, request, attempts);
    }

    /// Sends a request for a whole table to the master. Each attempt
    /// waits [`AgentConfig::table_timeout`](crate::AgentConfig) and this
    /// port's share of half as long again: when a whole fabric asks at
    /// once, the attempts after the first (the same request, which an
    /// answer to any of them ends) then reach the master spread, not
    /// together the moment its queue empties.
    pub(in crate::agent) fn send_table_upstream(
        &mut self,
        now: Instant,
        purpose: Purpose,
        request: &[u8],
    ) {
        let timeout = self.config.table_timeout;
        let attempts = Attempts {
            timeout: timeout + self.port.spread(timeout / 2),
            retries: self.config.upstream_retries,
        };
        self.send_upstream_with(now, purpose, request, attempts);
    }

    fn send_upstream_with(
        &mut self,
        now: Instant,
        purpose: Purpose,
        request: &[u8],
        attempts: Attempts,
    ) {
        self.proxy.note_traffic(&purpose, true);
        let Some(lane) = purpose.lane() else {
            return self.send_now(now, purpose, request, attempts);
        };
        if lane == Lane::Query && self.master.lanes.queries_full() {
            return self.refuse_query(now, purpose);
        }
        let queued = Queued {
            purpose,
            request: Bytes::copy_from_slice(request),
            attempts,
            asked: now,
        };
        self.master.lanes.push(lane, queued);
        self.release_queued(now);
    }

    fn send_now(&mut self, now: Instant, purpose: Purpose, request: &[u8], attempts: Attempts) {
        self.telemetry.counters.upstream_queries += 1;
        let master = self.port.master();
        self.master.requester.send_with(
            now,
            master,
            purpose,
            request,
            attempts,
            &mut self.outbox.mads,
        );
    }

    /// Sends the waiting requests whose turn has come: registrations at
    /// this port's share of the fabric's pace, a bounded number out in
    /// each lane.
    pub(in crate::agent) fn release_queued(&mut self, now: Instant) {
        let rate = self
            .config
            .pace
            .port_registration_rate(self.tables.refresh.fabric_ports());
        let most = self.config.pace.registrations_in_flight;
        while let Some(next) = self.master.lanes.release_registration(now, rate, most) {
            self.send_now(now, next.purpose, &next.request, next.attempts);
        }
        while let Some(gone) = self.master.lanes.take_given_up_query(now) {
            self.refuse_query(now, gone.purpose);
        }
        while let Some(next) = self.master.lanes.release_query(now) {
            self.send_now(now, next.purpose, &next.request, next.attempts);
        }
    }

    /// When the next waiting registration may go, or the oldest waiting
    /// query's asker gives up (queries go as soon as a place frees up,
    /// when an answer comes).
    pub(in crate::agent) fn queues_timeout(&self) -> Option<Instant> {
        (self.master.lanes).next_timeout(self.config.pace.registrations_in_flight)
    }

    /// A query for someone finds [`MAX_QUERIES_WAITING`] waiting already,
    /// or waited until its asker gave up: answered BUSY, counted, logged
    /// once a minute.
    fn refuse_query(&mut self, now: Instant, purpose: Purpose) {
        self.telemetry.counters.upstream_refused += 1;
        if let Some(earlier_not_logged) =
            self.telemetry.log_limit.allow(now, "queries waiting", 0u32)
        {
            warn!(
                most = MAX_QUERIES_WAITING,
                earlier_not_logged,
                "more queries for the master than it gets through in time: answered BUSY"
            );
        }
        match purpose {
            Purpose::Forward(query) => {
                for w in self.answers.forwarding.release(&query) {
                    self.reply().answer_status(&w.waited(), MadStatus::BUSY);
                }
            }
            Purpose::Pair(key) => self.pair_failed(&key),
            Purpose::QosTable(key) => self.qos_table_failed(&key),
            Purpose::Relay(request) => {
                self.master.lanes.relay_done();
                self.reply().respond_error(&request, MadStatus::BUSY);
            }
            _ => {}
        }
    }

    /// Passes a port's query to the master; its answer goes back as it
    /// came (a table through RMPP of local-sa's own). At most
    /// [`MAX_RELAYS`](crate::agent::master::lanes::MAX_RELAYS) wait at once: more are answered BUSY.
    pub(in crate::agent) fn relay_upstream(&mut self, now: Instant, request: SaRequest) {
        if !self.master.lanes.relay_out() {
            self.telemetry.counters.relays_refused += 1;
            return self.reply().respond_error(&request, MadStatus::BUSY);
        }
        self.telemetry.counters.relayed += 1;
        let mad = request.mad().clone();
        self.send_upstream(now, Purpose::Relay(request), &mad);
    }

    /// A request to the master ended.
    pub(in crate::agent) fn upstream_done(
        &mut self,
        now: Instant,
        completion: Completion<Purpose>,
    ) {
        self.proxy.note_traffic(&completion.token, false);
        let lane = completion.token.lane();
        if completion.outcome.is_ok() {
            self.telemetry
                .stats
                .upstream_latency
                .observe(now.saturating_duration_since(completion.sent));
        }
        match completion.outcome {
            Ok(answer) => self.upstream_answered(now, completion.token, &answer),
            Err(failure) => self.upstream_failed(now, completion.token, failure),
        }
        if let Some(lane) = lane {
            self.master.lanes.done(lane);
            self.release_queued(now);
        }
    }

    fn upstream_answered(&mut self, now: Instant, purpose: Purpose, answer: &Answer) {
        match purpose {
            Purpose::Forward(query) => self.forward_answered(now, &query, answer),
            Purpose::Pair(key) => self.pair_answered(now, &key, answer),
            Purpose::QosTable(key) => self.qos_table_answered(now, &key, answer),
            Purpose::Bulk { epoch, table } => self.bulk_answered(now, epoch, table, answer),
            Purpose::Walk { epoch, table, dlid } => {
                self.walk_answered(now, epoch, table, dlid, answer)
            }
            Purpose::GidInService { guid, table } => {
                (self.tables).port_paths_answered(self.port.gid.guid(), guid, table, Some(answer))
            }
            Purpose::Inform { filter, subscribe } => {
                self.inform_answered(now, filter, subscribe, Some(answer.status()))
            }
            Purpose::Relay(request) => {
                self.master.lanes.relay_done();
                self.reply().relay_answer(now, &request, answer);
            }
            Purpose::MasterInfo => self.master_info_answered(now, answer),
            Purpose::Membership(op) => self.membership_answered(now, op, Some(answer)),
            Purpose::Canary(step) => self.canary_answered(now, step, Some(answer.status())),
            Purpose::Names { epoch, table, key } => {
                self.names_answered(now, epoch, (table, key), answer)
            }
            Purpose::Publish { register } => {
                (self.naming).publication_answered(register, Some(answer.status()))
            }
            Purpose::Check { round, question } => {
                self.check_answered(now, round, question, Some(answer))
            }
        }
    }

    fn upstream_failed(&mut self, now: Instant, purpose: Purpose, failure: Failure) {
        self.telemetry.counters.upstream_failures += 1;
        let master = self.port.sm_lid;
        if let Some(left_out) = self.telemetry.log_limit.allow(now, purpose.kind(), master) {
            warn!(
                request = purpose.kind(),
                %failure,
                master,
                earlier_not_logged = left_out,
                "the master SA did not answer"
            );
        }
        match purpose {
            Purpose::Forward(query) => {
                for w in self.answers.forwarding.release(&query) {
                    self.reply().answer_status(&w.waited(), MadStatus::BUSY);
                }
            }
            Purpose::Pair(key) => self.pair_failed(&key),
            Purpose::QosTable(key) => self.qos_table_failed(&key),
            Purpose::Bulk { .. } | Purpose::Walk { .. } => self.refresh_failed(now),
            Purpose::GidInService { guid, table } => {
                (self.tables).port_paths_answered(self.port.gid.guid(), guid, table, None)
            }
            Purpose::Inform { filter, subscribe } => {
                self.inform_answered(now, filter, subscribe, None)
            }
            Purpose::Relay(request) => {
                self.master.lanes.relay_done();
                self.reply().respond_error(&request, MadStatus::BUSY);
            }
            Purpose::MasterInfo => {
                self.retry_registration(now);
                self.release_qos_waiters(now);
            }
            Purpose::Membership(op) => self.membership_answered(now, op, None),
            Purpose::Canary(step) => self.canary_answered(now, step, None),
            Purpose::Names { epoch, .. } => self.names_failed(epoch),
            Purpose::Publish { register } => self.naming.publication_answered(register, None),
            Purpose::Check { round, question } => self.check_answered(now, round, question, None),
        }
    }
}
