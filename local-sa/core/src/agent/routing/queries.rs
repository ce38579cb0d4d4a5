//! `SaCore`'s side of queries: PathRecord Get/GetTable from ports and
//! local programs, served from the store when it can, else from the QoS
//! cache or the master (one query per distinct question in flight, its
//! answers kept a while); queries relayed to the master; and every
//! request to the master — handed to the [`MasterLink`], its answer (or
//! its absence) routed by the request's [`Purpose`] to whoever asked.
//!
//! [`MasterLink`]: crate::agent::master::MasterLink

use std::collections::HashMap;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord};
use tracing::{debug, warn};

use crate::address::Transmit;
use crate::agent::SaCore;
use crate::agent::answers::forward::{self, PathAnswer};
use crate::agent::answers::qos_cache::{Fetch, Origin, Waited, by_destination};
use crate::agent::counterparts::Asker;
use crate::agent::master::purpose::Purpose;
use crate::agent::master::queue::MAX_QUERIES_WAITING;
use crate::agent::master::sending::Handed;
use crate::agent::master::waiters::Join;
use crate::agent::telemetry::Warning;
use crate::inbound::SaRequest;
use crate::path_query::{self, ForwardReason, Knowledge, Outcome, PairKey, SourceKey};
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
    /// allows.
    pub(in crate::agent) fn path_request(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
    ) {
        if lookup == Lookup::Master {
            self.count_miss(now);
            return self.forward(now, asker, query);
        }
        let knowledge = self.knowledge();
        let in_doubt = knowledge.in_doubt;
        let outcome = path_query::evaluate(&knowledge, query.method, query.mask, &query.template);
        if in_doubt && matches!(outcome, Outcome::Pair(_) | Outcome::Forward(_)) {
            self.telemetry.counters.doubt_queries += 1;
        }
        self.settle(now, asker, query, lookup, outcome);
    }

    /// Counts a path query answered from the cache.
    fn count_hit(&mut self, now: Instant) {
        self.telemetry.counters.hits += 1;
        self.telemetry.stats.last_minute.hit(now);
    }

    /// Counts a path query the cache could not answer.
    fn count_miss(&mut self, now: Instant) {
        self.telemetry.counters.misses += 1;
        self.telemetry.stats.last_minute.miss(now);
    }

    /// What the store and the master's ClassPortInfo tell path queries.
    fn knowledge(&self) -> Knowledge<'_> {
        let master_qos = self.master.info().is_none_or(|m| m.qos);
        self.tables.knowledge(self.port.gid.prefix(), master_qos)
    }

    /// Acts on what evaluating `query` came to.
    fn settle(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        outcome: Outcome,
    ) {
        match outcome {
            Outcome::Records(records) => {
                self.count_hit(now);
                self.answer_path_records(now, &asker, &records);
            }
            Outcome::Status(status) => {
                self.count_hit(now);
                self.reply().answer_status(&asker, status);
            }
            Outcome::Forward(ForwardReason::MasterQos) | Outcome::Pair(_)
                if lookup == Lookup::Anywhere && self.master.awaiting_info() =>
            {
                // Whether the master applies QoS is being asked: wait for
                // that one small answer rather than ask the master this.
                self.telemetry.counters.coalesced += 1;
                self.master.wait_for_info(asker, query);
            }
            Outcome::Pair(key) => self.pair_request(now, asker, query, lookup, key),
            Outcome::Forward(reason) => {
                self.count_miss(now);
                debug!(%reason, mask = %query.mask, "forwarding a PathRecord query");
                if let Some(answer) = self.answers.forwarded_answer(now, &query).cloned() {
                    self.telemetry.counters.answer_cache_hits += 1;
                    self.answer_waiter(now, &asker, &answer);
                    return;
                }
                match lookup {
                    Lookup::CacheOnly => {
                        self.reply()
                            .answer_status(&asker, MadStatus::ERR_NO_RECORDS);
                        if self.answers.prefetch_forward(query) {
                            self.send_forward(now, query);
                        }
                        return;
                    }
                    Lookup::KnownOnly => {
                        return self
                            .reply()
                            .answer_status(&asker, MadStatus::ERR_NO_RECORDS);
                    }
                    Lookup::Anywhere | Lookup::Master => {}
                }
                self.forward(now, asker, query);
            }
        }
    }

    /// A query whose answer follows from one port pair's records for the
    /// fields the master's QoS policy matches on (or for another
    /// partition): from the QoS cache, else the pair is asked once for
    /// everyone who needs it.
    fn pair_request(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        key: PairKey,
    ) {
        if let Some(outcome) = self.held_pair_outcome(&key, &query) {
            self.telemetry.counters.qos_cache_hits += 1;
            return self.settle(now, asker, query, lookup, outcome);
        }
        self.count_miss(now);
        self.ask_pair(now, asker, query, lookup, key);
    }

    /// An asker already counted needs `key`'s records after all: a
    /// destination its source's table did not hold, or an SL the master
    /// must judge. Answered from the QoS cache, else the pair is asked.
    fn pair_again(&mut self, now: Instant, asker: Asker, query: PathQuery, key: PairKey) {
        match self.held_pair_outcome(&key, &query) {
            Some(outcome) => {
                self.telemetry.counters.qos_cache_hits += 1;
                self.act_on_pair(now, asker, query, outcome);
            }
            None => self.ask_pair(now, asker, query, Lookup::Anywhere, key),
        }
    }

    /// Waits for `key`'s records from the master, or answers at once
    /// where `lookup` does not wait for the master.
    fn ask_pair(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        lookup: Lookup,
        key: PairKey,
    ) {
        match lookup {
            Lookup::CacheOnly => {
                self.reply()
                    .answer_status(&asker, MadStatus::ERR_NO_RECORDS);
                let fetch = self.answers.prefetch_pair(key);
                self.send_fetch(now, fetch);
            }
            Lookup::KnownOnly => self
                .reply()
                .answer_status(&asker, MadStatus::ERR_NO_RECORDS),
            Lookup::Anywhere | Lookup::Master => {
                match self.answers.wait_for_pair(key, asker, query) {
                    Waited::For(Fetch::Nothing) => self.telemetry.counters.coalesced += 1,
                    Waited::For(fetch) => self.send_fetch(now, fetch),
                    Waited::Full(asker) => {
                        self.telemetry.counters.upstream_refused += 1;
                        self.reply().answer_status(&asker, MadStatus::BUSY);
                    }
                }
            }
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
                self.telemetry.counters.qos_cache_fetches += 1;
                let request = get_table(key.query(prefix));
                self.send_upstream(now, Purpose::Pair(key), &request);
            }
            // Every port of a job asks its own at the job's start: a
            // whole table's wait, not a pair's.
            Fetch::Table(key) => {
                self.telemetry.counters.qos_cache_tables += 1;
                let request = get_table(key.query(prefix));
                self.send_table_upstream(now, Purpose::QosTable(key), &request);
            }
            Fetch::Nothing => {}
        }
    }

    /// The master answered a pair's query: its records are kept (unless
    /// the fabric changed since it was asked) and everyone waiting is
    /// answered from them. An answer that cannot be used so (cut, or an
    /// error other than "none") sends each waiter's own query to the
    /// master instead.
    pub(in crate::agent) fn pair_answered(&mut self, now: Instant, key: &PairKey, answer: &Answer) {
        let (waiters, keep) = self.answers.release_pair(key);
        let records: Vec<PathRecord> = match answer.status() {
            _ if answer.is_cut() => return self.forward_each(now, waiters),
            MadStatus::OK => answer.records::<PathRecord>().copied().collect(),
            MadStatus::ERR_NO_RECORDS => Vec::new(),
            _ => return self.forward_each(now, waiters),
        };
        for (asker, query) in waiters {
            self.answer_from_pair(now, asker.waited(), query, key, &records);
        }
        if keep {
            self.answers.insert_pair(*key, records, Origin::Master);
        }
    }

    /// Answers one who waited for `key`'s records, the master's `records`.
    fn answer_from_pair(
        &mut self,
        now: Instant,
        asker: Asker,
        query: PathQuery,
        key: &PairKey,
        records: &[PathRecord],
    ) {
        let outcome = self.pair_outcome(records, key, &query);
        self.act_on_pair(now, asker, query, outcome);
    }

    /// What `query` comes to from `key`'s records, `records`.
    fn pair_outcome(&self, records: &[PathRecord], key: &PairKey, query: &PathQuery) -> Outcome {
        path_query::evaluate_pair(
            &self.knowledge(),
            records,
            key,
            query.method,
            query.mask,
            &query.template,
        )
    }

    /// What `query` comes to from `key`'s records in the QoS cache, if
    /// they are there.
    fn held_pair_outcome(&self, key: &PairKey, query: &PathQuery) -> Option<Outcome> {
        let records = self.answers.pair(key)?;
        Some(self.pair_outcome(records, key, query))
    }

    /// Acts on what a pair's records came to for an asker already
    /// counted as a hit or a miss.
    fn act_on_pair(&mut self, now: Instant, asker: Asker, query: PathQuery, outcome: Outcome) {
        match outcome {
            Outcome::Records(records) => self.answer_path_records(now, &asker, &records),
            Outcome::Status(status) => self.reply().answer_status(&asker, status),
            // An SL the master must judge.
            Outcome::Pair(key) => self.pair_again(now, asker, query, key),
            // A port gone meanwhile.
            Outcome::Forward(_) => self.forward(now, asker, query),
        }
    }

    /// The master answered a source's table at a key: each destination's
    /// records are kept as its pair's (unless the fabric changed since it
    /// was asked), and each waiter is answered from its pair's. A
    /// destination the table does not hold, or an answer that cannot be
    /// used so (cut, or an error other than "none"), has its waiters'
    /// pairs asked on their own.
    pub(in crate::agent) fn qos_table_answered(
        &mut self,
        now: Instant,
        key: &SourceKey,
        answer: &Answer,
    ) {
        let (waiters, keep) = self.answers.release_qos_table(key, false);
        let by_dst = match answer.status() {
            _ if answer.is_cut() => {
                self.answers.qos_tables_come_cut();
                HashMap::new()
            }
            MadStatus::OK => by_destination(answer.records::<PathRecord>().copied()),
            _ => HashMap::new(),
        };
        for (dst, asker, query) in waiters {
            let pair = key.pair(dst);
            match by_dst.get(&dst) {
                Some(records) => self.answer_from_pair(now, asker.waited(), query, &pair, records),
                None => self.pair_again(now, asker, query, pair),
            }
        }
        if keep {
            self.answers.insert_qos_table(key, by_dst, Origin::Master);
        }
    }

    /// A source's table got no answer, or could not be sent: its waiters
    /// are answered BUSY, as for any query the master left unanswered.
    pub(in crate::agent) fn qos_table_failed(&mut self, key: &SourceKey) {
        for (_, asker, _) in self.answers.release_qos_table(key, true).0 {
            self.reply().answer_status(&asker.waited(), MadStatus::BUSY);
        }
    }

    /// A pair's query got no answer, or could not be sent: its waiters
    /// are answered BUSY, as for any query the master left unanswered.
    pub(in crate::agent) fn pair_failed(&mut self, key: &PairKey) {
        for (asker, _) in self.answers.release_pair(key).0 {
            self.reply().answer_status(&asker.waited(), MadStatus::BUSY);
        }
    }

    fn forward_each(&mut self, now: Instant, waiters: Vec<(Asker, PathQuery)>) {
        for (asker, query) in waiters {
            self.forward(now, asker.waited(), query);
        }
    }

    /// The master's ClassPortInfo came, or did not: the queries that
    /// waited for it are answered now, from the cache if they may be.
    pub(in crate::agent) fn release_qos_waiters(&mut self, now: Instant) {
        for (asker, query) in self.master.take_info_waiters() {
            self.path_request(now, asker, query, Lookup::Anywhere);
        }
    }

    /// Asks the master for `asker` (with whoever asks the same).
    fn forward(&mut self, now: Instant, asker: Asker, query: PathQuery) {
        match self.answers.wait_for_forward(query, asker) {
            Join::First => self.send_forward(now, query),
            Join::Joined => self.telemetry.counters.coalesced += 1,
            Join::Full(asker) => {
                self.telemetry.counters.upstream_refused += 1;
                self.reply().answer_status(&asker, MadStatus::BUSY);
            }
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
        for w in self.answers.forward_answered(now, query, answer.clone()) {
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
            Handed::Sent => self.telemetry.counters.upstream_queries += 1,
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
        let sent = (self.master).release_registrations(now, (rate, most), to, out);
        self.telemetry.counters.upstream_queries += sent;
        for gone in self.master.take_given_up_queries(now) {
            self.refuse_query(now, gone);
        }
        let sent = (self.master).release_queries(now, to, &mut self.outbox.mads);
        self.telemetry.counters.upstream_queries += sent;
    }

    /// A query for someone finds [`MAX_QUERIES_WAITING`] waiting already,
    /// or waited until its asker gave up: answered BUSY, counted, logged
    /// once a minute.
    fn refuse_query(&mut self, now: Instant, purpose: Purpose) {
        self.telemetry.counters.upstream_refused += 1;
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
        self.answer_busy(purpose);
    }

    /// Whoever waits for a query the master left unanswered (or that was
    /// never sent) is answered BUSY, as OpenSM's silence would leave them
    /// to retry; other purposes have nobody waiting.
    fn answer_busy(&mut self, purpose: Purpose) {
        match purpose {
            Purpose::Forward(query) => {
                for w in self.answers.release_forward(&query) {
                    self.reply().answer_status(&w.waited(), MadStatus::BUSY);
                }
            }
            Purpose::Pair(key) => self.pair_failed(&key),
            Purpose::QosTable(key) => self.qos_table_failed(&key),
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
            | Purpose::Relay(_)) => self.answer_busy(p),
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
