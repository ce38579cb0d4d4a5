//! How the agent answers: records or a status, to a port (MADs shaped as
//! OpenSM shapes them, tables through RMPP) or to a local program; and
//! ClassPortInfo, the one answer about the agent itself.
//!
//! [`Replies`] is the agent's outbox, its RMPP transfers and its counters
//! seen as one thing that answers: `SaCore::reply` lends it for one
//! answer at a time.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::attr::class_port_info::duration_to_resp_time_value;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{ClassPortInfo, ClassPortInfoRepr, MAD_LEN, MadStatus, Method, MgmtClass};

use tracing::warn;

use crate::address::{GSI_QKEY, Transmit};
use crate::agent::counterparts::Asker;
use crate::agent::outbox::Outbox;
use crate::agent::telemetry::Telemetry;
use crate::agent::telemetry::Warning;
use crate::inbound::SaRequest;
use crate::request::{LocalBody, LocalReply};
use crate::requester::Answer;
use crate::respond;
use crate::stats::AnswerKey;
use crate::transfers::{Event, TransferRefusal, Transfers};

/// What answers askers: the outbox, the RMPP transfers, the counters.
pub(in crate::agent) struct Replies<'a> {
    pub(in crate::agent) outbox: &'a mut Outbox,
    pub(in crate::agent) transfers: &'a mut Transfers,
    pub(in crate::agent) telemetry: &'a mut Telemetry,
    /// How long the agent may take to answer (its ClassPortInfo says).
    pub(in crate::agent) upstream_timeout: Duration,
}

impl Replies<'_> {
    /// Answers a Get with the first record of `data` or a GetTable with
    /// all of it (records every `offset` × 8 bytes), a table through RMPP;
    /// the callers have checked a Get's count.
    pub(in crate::agent) fn answer_data(
        &mut self,
        now: Instant,
        request: &SaRequest,
        data: Bytes,
        offset: u16,
    ) {
        let peer = request.reply_to();
        let h = request.header();
        if request.method() == Method::GET {
            let header = respond::success_header(h, offset);
            let one = data.get(..usize::from(offset) * 8).unwrap_or(&data[..]);
            self.outbox
                .mads
                .push_back(Transmit::reply(peer, respond::single(&header, one)));
            self.count_answer(request, MadStatus::OK);
        } else {
            let header = respond::success_header(h, if data.is_empty() { 0 } else { offset });
            let sent = self.transfers.send(
                now,
                peer,
                request.tid(),
                header,
                data,
                &mut self.outbox.mads,
            );
            if let Some(e) = sent {
                self.count_transfer(now, &e);
                if matches!(e, Event::Refused { .. } | Event::Aborted) {
                    // Not started: say so rather than leave the asker
                    // waiting, as OpenSM does when it cannot answer.
                    return self.respond_error(request, MadStatus::ERR_NO_RESOURCES);
                }
            }
            self.count_answer(request, MadStatus::OK);
        }
    }

    /// Answers a port's Get or GetTable with `records`: a Get needs exactly
    /// one (else ERR_NO_RECORDS or ERR_TOO_MANY_RECORDS); a GetTable gets
    /// all.
    pub(in crate::agent) fn answer_table<T: SaRecord>(
        &mut self,
        now: Instant,
        request: &SaRequest,
        records: &[T],
    ) {
        if request.method() == Method::GET && records.len() != 1 {
            let status = if records.is_empty() {
                MadStatus::ERR_NO_RECORDS
            } else {
                MadStatus::ERR_TOO_MANY_RECORDS
            };
            return self.respond_error(request, status);
        }
        self.answer_data(now, request, records_data(records), T::ATTRIBUTE_OFFSET);
    }

    /// Answers `asker` with one record: a port's Set or Delete with a
    /// GetResp/DeleteResp carrying it, a local program with it.
    pub(in crate::agent) fn answer_record<T: SaRecord>(&mut self, asker: &Asker, record: &T) {
        match asker {
            Asker::Mad(request) => {
                let header = respond::success_header(request.header(), T::ATTRIBUTE_OFFSET);
                self.outbox.mads.push_back(Transmit::reply(
                    request.reply_to(),
                    respond::single(&header, record.as_bytes()),
                ));
                self.count_answer(request, MadStatus::OK);
            }
            Asker::Local { .. } => self.answer_local_records(asker, std::slice::from_ref(record)),
        }
    }

    /// Answers a local program with `records`.
    pub(in crate::agent) fn answer_local_records<T: SaRecord>(
        &mut self,
        asker: &Asker,
        records: &[T],
    ) {
        let body = LocalBody::Records {
            attribute: T::ATTRIBUTE_ID,
            stride: T::STRIDE,
            data: records_data(records),
        };
        self.reply_local(asker, MadStatus::OK, body);
    }

    /// Answers `asker` with a bare status (an error, or success with
    /// nothing to carry).
    pub(in crate::agent) fn answer_status(&mut self, asker: &Asker, status: MadStatus) {
        match asker {
            Asker::Mad(request) => self.respond_error(request, status),
            Asker::Local { .. } => {
                if status != MadStatus::OK {
                    self.telemetry.counters.errors += 1;
                }
                self.reply_local(asker, status, LocalBody::Empty);
            }
        }
    }

    /// Answers a port's request with `status` and the request echoed.
    pub(in crate::agent) fn respond_error(&mut self, request: &SaRequest, status: MadStatus) {
        self.telemetry.counters.errors += 1;
        if let Some(mad) = respond::error(request.mad(), status) {
            self.outbox
                .mads
                .push_back(Transmit::reply(request.reply_to(), mad));
            self.count_answer(request, status);
        }
    }

    /// Queues `body` with `status` for a local asker.
    pub(in crate::agent) fn reply_local(
        &mut self,
        asker: &Asker,
        status: MadStatus,
        body: LocalBody,
    ) {
        if let Asker::Local {
            conn,
            id,
            kind,
            waited,
        } = *asker
        {
            self.outbox.local.push_back(LocalReply {
                conn,
                request: id,
                answers: Some(kind),
                status,
                from_master: waited,
                body,
            });
        }
    }

    /// Answers a load: its headers with `status`, the response method,
    /// SM_Key 0 and the count in AttributeModifier; no data.
    pub(in crate::agent) fn answer_load(
        &mut self,
        request: &SaRequest,
        header: &SaMadHeader,
        status: MadStatus,
        count: usize,
    ) {
        let mut header = respond::success_header(header, 0);
        header.mad.set_status(status);
        header
            .mad
            .set_attribute_modifier(u32::try_from(count).unwrap_or(u32::MAX));
        let answer = respond::single(&header, &[]);
        // A load that came through RMPP: its receiver lingers, and sends
        // this again if the loader, having missed it, repeats a segment.
        self.transfers
            .remember_answer(&request.from, request.tid(), answer.clone());
        self.outbox
            .mads
            .push_back(Transmit::reply(request.reply_to(), answer));
    }

    /// Counts an answer to a port's request in its series.
    pub(in crate::agent) fn count_answer(&mut self, request: &SaRequest, status: MadStatus) {
        self.telemetry.stats.answers.count(AnswerKey {
            attribute: request.attribute(),
            method: request.method(),
            status,
        });
    }

    /// Passes the master's `answer` to the port that asked `request`,
    /// unchanged but for the port's TransactionID.
    /// The master's answer to a relayed query, back to its asker: a
    /// table's records through an RMPP transfer of this agent's (the
    /// master's came as several MADs, or cut); anything else as it came.
    pub(in crate::agent) fn relay_answer(
        &mut self,
        now: Instant,
        request: &SaRequest,
        answer: &Answer,
    ) {
        if request.method() == Method::GET_TABLE && answer.status() == MadStatus::OK {
            let data = Bytes::copy_from_slice(answer.intact_data());
            let offset = answer.header().sa.attribute_offset();
            self.answer_data(now, request, data, offset);
        } else {
            self.relay_to(request, answer.mad());
        }
    }

    pub(in crate::agent) fn relay_to(&mut self, request: &SaRequest, answer: &[u8]) {
        if let Some((relayed, status)) = respond::relay(answer, request.header()) {
            self.outbox
                .mads
                .push_back(Transmit::reply(request.reply_to(), relayed));
            self.count_answer(request, status);
        }
    }

    pub(in crate::agent) fn count_transfer(&mut self, now: Instant, e: &Event) {
        match *e {
            Event::Sent | Event::Received(_) => self.telemetry.counters.rmpp_transfers += 1,
            Event::Aborted => self.telemetry.counters.rmpp_aborts += 1,
            Event::Refused { reason, lid } => {
                let counter = match reason {
                    TransferRefusal::Busy => &mut self.telemetry.counters.rmpp_refused_busy,
                    TransferRefusal::PerPeer => &mut self.telemetry.counters.rmpp_refused_per_peer,
                    TransferRefusal::Memory => &mut self.telemetry.counters.rmpp_refused_memory,
                };
                *counter += 1;
                if let Some(left_out) =
                    self.telemetry
                        .log_limit
                        .allow(now, Warning::RefusedTransfer, lid)
                {
                    warn!(
                        lid,
                        reason = reason.as_str(),
                        earlier_not_logged = left_out,
                        "RMPP transfer refused"
                    );
                }
            }
        }
    }

    /// ClassPortInfo of this agent: no redirect, GSI Q_Keys, and a response
    /// time that covers asking the master.
    pub(in crate::agent) fn class_port_info(&mut self, request: &SaRequest) {
        let cpi = ClassPortInfoRepr {
            base_version: 1,
            class_version: MgmtClass::SA_CLASS_VERSION,
            // None of the capability bits describes what this agent serves
            // (PathRecord queries and loads), so none is claimed.
            capability_mask: 0,
            capability_mask2: 0,
            resp_time_value: duration_to_resp_time_value(self.upstream_timeout),
            redirect_qp: 1,
            redirect_qkey: GSI_QKEY,
            trap_qkey: GSI_QKEY,
            ..ClassPortInfoRepr::default()
        }
        .to_wire();
        let h = request.header();
        let header = respond::success_header(h, h.sa.attribute_offset());
        let mut data = [0u8; MAD_LEN - SaMadHeader::LEN];
        data[..ClassPortInfo::LEN].copy_from_slice(cpi.as_bytes());
        self.outbox.mads.push_back(Transmit::reply(
            request.reply_to(),
            respond::single(&header, &data),
        ));
    }
}

/// `records` back to back at their SA stride.
pub(in crate::agent) fn records_data<T: SaRecord>(records: &[T]) -> Bytes {
    let mut data = BytesMut::with_capacity(records.len() * T::STRIDE);
    mad_codec::records::put_records(&mut data, records);
    data.freeze()
}
