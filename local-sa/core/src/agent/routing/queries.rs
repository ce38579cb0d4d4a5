//! `SaCore`'s side of queries: PathRecord Get/GetTable from ports and
//! local programs, carried out as the reused answers decide
//! ([`crate::agent::answers::decide`]: the store, the QoS cache, a kept
//! answer, or the master, one query per distinct question in flight);
//! queries relayed to the master; and every
//! request to the master — handed to the [`MasterLink`], its answer (or
//! its absence) routed by the request's [`Purpose`] to whoever asked.
//!
//! [`MasterLink`]: crate::agent::master::MasterLink

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord};
use tracing::{debug, warn};

use crate::address::Transmit;
use crate::agent::SaCore;
use crate::agent::answers::decide::{Decision, Question};
use crate::agent::answers::forward::{self, PathAnswer};
use crate::agent::answers::qos_cache::Fetch;
use crate::agent::counterparts::Asker;
use crate::agent::master::purpose::Purpose;
use crate::agent::master::queue::MAX_QUERIES_WAITING;
use crate::agent::master::sending::Handed;
use crate::agent::telemetry::Warning;
use crate::inbound::SaRequest;
use crate::path_query::{PairKey, SourceKey};
use crate::request::{ConnId, LocalBody, Lookup, PathQuery};
use crate::requester::{Answer, Attempts, Completion, Failure};
use crate::respond;

impl SaCore {
    /// A PathRecord Get/GetTable MAD.
    pub(in crate::agent) fn path_query(&mut self, now: Instant, request: SaRequest) {
        let query = PathQuery {
            method: request.method(),
            mask: request.mask(),
            template: request.template(),
        };
        self.path_request(now, Asker::Mad(request), query, Lookup::Anywhere);
    }

    /// A PathRecord Get/GetTable from anyone, answered from where `lookup`
    /// allows: the reused answers decide where from, this carries it out.
    #[inline]
    pub(in crate::agent) fn path_request(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
    ) {
        let awaiting_info = self.master.awaiting_info();
        let k = self
            .tables
            .knowledge(self.port.gid.prefix(), self.master_qos());
        let decision = (self.answers).decide(now, (&k, awaiting_info), asker, query, lookup);
        self.answer_as_decided(now, decision);
    }

    /// Whether the master applies QoS, as its ClassPortInfo said (yes
    /// until it says).
    fn master_qos(&self) -> bool {
        self.master.info().is_none_or(|m| m.qos)
    }

    /// Carries out what the reused answers decided.
    #[inline]
    fn answer_as_decided(&mut self, now: Instant, decision: Decision) {
        match decision {
            Decision::Records(asker, records) => self.answer_path_records(now, &asker, &records),
            Decision::Status(asker, status) => self.reply().answer_status(&asker, status),
            Decision::Kept(asker, answer) => self.answer_waiter(now, &asker, &answer),
            Decision::AwaitMasterInfo(asker, query) => self.master.wait_for_info(asker, query),
            Decision::Ask(question) => self.ask_master(now, question),
            Decision::NoRecordsThenAsk(asker, question) => {
                self.reply()
                    .answer_status(&asker, MadStatus::ERR_NO_RECORDS);
                self.ask_master(now, question);
            }
            Decision::Joined => {}
            Decision::Busy(asker) => self.reply().answer_status(&asker, MadStatus::BUSY),
        }
    }

    /// Sends the master a question the reused answers decided on.
    fn ask_master(&mut self, now: Instant, question: Question) {
        match question {
            Question::Forward(query) => self.send_forward(now, query),
            Question::Fetch(fetch) => self.send_fetch(now, fetch),
        }
    }

    /// Asks the master what the QoS cache misses: one pair, or a source's
    /// whole table at a key.
    fn send_fetch(&mut self, now: Instant, fetch: Fetch) {
        let prefix = self.port.gid.prefix();
        let get_table = |(mask, template)| {
            forward::upstream_request(&PathQuery {
                method: Method::GET_TABLE,
                mask,
                template,
            })
        };
        match fetch {
            Fetch::Pair(key) => {
                let request = get_table(key.query(prefix));
                self.send_upstream(now, Purpose::Pair(key), &request);
            }
            // Every port of a job asks its own at the job's start: a
            // whole table's wait, not a pair's.
            Fetch::Table(key) => {
                let request = get_table(key.query(prefix));
                self.send_table_upstream(now, Purpose::QosTable(key), &request);
            }
            Fetch::Nothing => {}
        }
    }

    /// The master answered a pair's query: the reused answers keep its
    /// records and decide for everyone waiting.
    pub(in crate::agent) fn pair_answered(&mut self, now: Instant, key: &PairKey, answer: &Answer) {
        let k = self
            .tables
            .knowledge(self.port.gid.prefix(), self.master_qos());
        for d in self.answers.handle_pair_answer(&k, key, answer) {
            self.answer_as_decided(now, d);
        }
    }

    /// The master answered a source's table at a key: the reused answers
    /// keep it and decide for everyone waiting.
    pub(in crate::agent) fn qos_table_answered(
        &mut self,
        now: Instant,
        key: &SourceKey,
        answer: &Answer,
    ) {
        let k = self
            .tables
            .knowledge(self.port.gid.prefix(), self.master_qos());
        for d in self.answers.handle_qos_table_answer(&k, key, answer) {
            self.answer_as_decided(now, d);
        }
    }

    /// The master's ClassPortInfo came, or did not: the queries that
    /// waited for it are answered now, from the cache if they may be.
    pub(in crate::agent) fn release_qos_waiters(&mut self, now: Instant) {
        for (asker, query) in self.master.take_info_waiters() {
            self.path_request(now, asker, query, Lookup::Anywhere);
        }
    }

    fn send_forward(&mut self, now: Instant, query: PathQuery) {
        let request = forward::upstream_request(&query);
        self.send_upstream(now, Purpose::Forward(query), &request);
    }

    /// Answers a Get with its one record or a GetTable with all (through
    /// RMPP to a port).
    fn answer_path_records(&mut self, now: Instant, asker: &Asker, records: &[PathRecord]) {
        let Asker::Mad(request) = asker else {
            return self.answer_local_paths(asker, packed(records.iter()));
        };
        if request.method() == Method::GET {
            // One MAD, built in one allocation: the common case.
            let header = respond::success_header(request.header(), PathRecord::ATTRIBUTE_OFFSET);
            let one = records.first().map_or(&[][..], |r| r.as_bytes());
            self.outbox.mads.push_back(Transmit::reply(
                request.reply_to(),
                respond::single(&header, one),
            ));
            return;
        }
        self.reply().answer_data(
            now,
            request,
            packed(records.iter()),
            PathRecord::ATTRIBUTE_OFFSET,
        );
    }

    fn answer_local_paths(&mut self, asker: &Asker, data: Bytes) {
        let body = LocalBody::Records {
            attribute: AttributeId::PATH_RECORD,
            stride: PathRecord::LEN,
            data,
        };
        self.reply().reply_local(asker, MadStatus::OK, body);
    }

    fn answer_waiter(&mut self, now: Instant, w: &Asker, answer: &PathAnswer) {
        if answer.status != MadStatus::OK {
            return self.reply().answer_status(w, answer.status);
        }
        match w {
            Asker::Mad(request) => self.reply().answer_data(
                now,
                request,
                answer.data.clone(),
                PathRecord::ATTRIBUTE_OFFSET,
            ),
            Asker::Local { .. } => self.answer_local_paths(w, answer.data.clone()),
        }
    }

    /// The master answered a forwarded query.
    pub(in crate::agent) fn forward_answered(
        &mut self,
        now: Instant,
        query: &PathQuery,
        answer: &Answer,
    ) {
        // Only a table can lose records to a cut: a Get's one record is
        // whole in the bytes that arrive.
        let lost_records = answer.is_cut() && query.method == Method::GET_TABLE;
        if lost_records {
            // The master's table did not arrive whole (a transport without
            // RMPP): a port gets the answer as it came, so that it sees
            // exactly what the master sent; a local program cannot be given
            // a table with an unknown part missing, so it is told the
            // answer could not be had. Nothing is kept.
            let waiters: Vec<Asker> = self
                .answers
                .release_forward(query)
                .into_iter()
                .map(Asker::waited)
                .collect();
            if let Some(left_out) =
                self.telemetry
                    .log_limit
                    .allow(now, Warning::CutAnswer, self.port.sm_lid)
            {
                warn!(
                    waiters = waiters.len(),
                    earlier_not_logged = left_out,
                    "the master's answer to a forwarded query arrived cut; local askers get ERR_NO_RESOURCES"
                );
            }
            for w in waiters {
                match &w {
                    Asker::Mad(request) => self.reply().relay_to(request, answer.mad()),
                    Asker::Local { .. } => {
                        self.reply().answer_status(&w, MadStatus::ERR_NO_RESOURCES)
                    }
                }
            }
            return;
        }
        let status = answer.status();
        let data = if status != MadStatus::OK {
            Bytes::new()
        } else if query.method == Method::GET {
            Bytes::copy_from_slice(answer.data().get(..PathRecord::LEN).unwrap_or_default())
        } else {
            packed(answer.records::<PathRecord>())
        };
        let answer = PathAnswer { status, data };
        for w in self
            .answers
            .handle_forward_answer(now, query, answer.clone())
        {
            self.answer_waiter(now, &w.waited(), &answer);
        }
    }

    /// Everyone waiting for the master's answer to a forwarded query from
    /// local connection `conn` is forgotten (it closed).
    pub(in crate::agent) fn forget_local_waiters(&mut self, conn: ConnId) {
        self.answers.forget_waiters(|w| w.conn() == Some(conn));
        self.master.forget_waiters_of(conn);
    }

    /// Sends `request` (a whole MAD) to the master for `purpose`.
    pub(in crate::agent) fn send_upstream(
        &mut self,
        now: Instant,
        purpose: Purpose,
        request: &[u8],
    ) {
        let attempts = self.master.attempts();
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
        let to = self.port.master();
        let request = (purpose, request, attempts);
        match self.master.send(now, request, to, &mut self.outbox.mads) {
            Handed::Sent => {}
            Handed::Queued => self.release_queued(now),
            Handed::Refused(purpose) => self.refuse_query(now, purpose),
        }
    }

    /// Sends the waiting requests whose turn has come: registrations at
    /// this port's share of the fabric's pace, a bounded number out in
    /// each lane; the queries whose askers gave up are refused.
    pub(in crate::agent) fn release_queued(&mut self, now: Instant) {
        let rate = (self.config.pace).port_registration_rate(self.tables.fabric_ports());
        let most = self.config.pace.registrations_in_flight;
        let to = self.port.master();
        let out = &mut self.outbox.mads;
        (self.master).release_registrations(now, (rate, most), to, out);
        for gone in self.master.take_given_up_queries(now) {
            self.refuse_query(now, gone);
        }
        (self.master).release_queries(now, to, &mut self.outbox.mads);
    }

    /// A query for someone finds [`MAX_QUERIES_WAITING`] waiting already,
    /// or waited until its asker gave up: answered BUSY, counted, logged
    /// once a minute.
    fn refuse_query(&mut self, now: Instant, purpose: Purpose) {
        if let Some(earlier_not_logged) =
            self.telemetry
                .log_limit
                .allow(now, Warning::QueriesWaiting, 0u32)
        {
            warn!(
                most = MAX_QUERIES_WAITING,
                earlier_not_logged,
                "more queries for the master than it gets through in time: answered BUSY"
            );
        }
        self.answer_busy(now, purpose);
    }

    /// Whoever waits for a query the master left unanswered (or that was
    /// never sent) is answered BUSY, as OpenSM's silence would leave them
    /// to retry; other purposes have nobody waiting.
    fn answer_busy(&mut self, now: Instant, purpose: Purpose) {
        match purpose {
            Purpose::Forward(query) => {
                for d in self.answers.handle_forward_failed(&query) {
                    self.answer_as_decided(now, d);
                }
            }
            Purpose::Pair(key) => {
                for d in self.answers.handle_pair_failed(&key) {
                    self.answer_as_decided(now, d);
                }
            }
            Purpose::QosTable(key) => {
                for d in self.answers.handle_qos_table_failed(&key) {
                    self.answer_as_decided(now, d);
                }
            }
            Purpose::Relay(request) => {
                self.master.relay_done();
                self.reply().respond_error(&request, MadStatus::BUSY);
            }
            _ => {}
        }
    }

    /// Passes a port's query to the master; its answer goes back as it
    /// came (a table through RMPP of local-sa's own). At most
    /// [`MAX_RELAYS`](crate::agent::master::lanes::MAX_RELAYS) wait at once: more are answered BUSY.
    pub(in crate::agent) fn relay_upstream(&mut self, now: Instant, request: SaRequest) {
        if !self.master.relay_out() {
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
            self.master.done(lane);
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
                self.master.relay_done();
                self.reply().relay_answer(now, &request, answer);
            }
            Purpose::MasterInfo => self.master_info_answered(now, answer),
            Purpose::SweepPoll => self.sweeps_polled(now, answer),
            Purpose::MasterHere => self.master_here_answered(Some(answer)),
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
        if matches!(purpose, Purpose::SweepPoll | Purpose::MasterHere) {
            // A poll in the background: the next one asks again, and what
            // the master leaves unanswered for its consumers is what the
            // log tells.
            debug!(%failure, master, "the master SA did not answer a poll of its activity");
        } else if let Some(left_out) = self.telemetry.log_limit.allow(
            now,
            Warning::Unanswered(std::mem::discriminant(&purpose)),
            master,
        ) {
            warn!(
                request = purpose.kind(),
                %failure,
                master,
                earlier_not_logged = left_out,
                "the master SA did not answer"
            );
        }
        match purpose {
            p @ (Purpose::Forward(_)
            | Purpose::Pair(_)
            | Purpose::QosTable(_)
            | Purpose::Relay(_)) => self.answer_busy(now, p),
            Purpose::Bulk { .. } | Purpose::Walk { .. } => self.refresh_failed(now),
            Purpose::GidInService { guid, table } => {
                (self.tables).port_paths_answered(self.port.gid.guid(), guid, table, None)
            }
            Purpose::Inform { filter, subscribe } => {
                self.inform_answered(now, filter, subscribe, None)
            }
            // The next poll asks again.
            Purpose::SweepPoll => {}
            Purpose::MasterHere => self.master_here_answered(None),
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

/// PathRecords back to back.
fn packed<'a>(records: impl Iterator<Item = &'a PathRecord>) -> Bytes {
    let mut data = BytesMut::with_capacity(records.size_hint().0 * PathRecord::LEN);
    for r in records {
        data.extend_from_slice(r.as_bytes());
    }
    data.freeze()
}
