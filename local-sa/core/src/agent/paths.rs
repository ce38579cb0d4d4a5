//! Serving PathRecord Get/GetTable, to ports (MADs) and to local
//! connections alike: from the store when it can, else from the master
//! (one query per distinct question in flight, its answers kept a while).

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, ComponentMask, MadStatus, Method, PathRecord, SaMad};
use tracing::debug;

use super::forward::{Answer, QueryKey};
use super::local::{LocalBody, LocalReply};
use super::path_query::{self, Knowledge, Outcome};
use super::upstream::Purpose;
use super::{Asker, SaCore, Transmit, padded_record, records_data, respond};
use umad::MadAddress;

impl SaCore {
    /// A PathRecord Get/GetTable MAD.
    pub(super) fn path_query(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let (method, mask, template) = (
            m.mad().method(),
            m.sa().component_mask(),
            padded_record(m.data()),
        );
        let asker = Asker::Mad {
            address: *source,
            request: Bytes::copy_from_slice(mad),
        };
        self.path_request(now, asker, method, mask, template);
    }

    /// A PathRecord Get/GetTable from anyone.
    pub(super) fn path_request(
        &mut self,
        now: Instant,
        asker: Asker,
        method: Method,
        mask: ComponentMask,
        template: PathRecord,
    ) {
        let k = Knowledge {
            store: &self.store,
            subnet_prefix: self.port.gid.prefix(),
            complete_sources: &self.complete_sources,
            master_qos: self.master_qos.unwrap_or(true),
        };
        match path_query::evaluate(&k, method, mask, &template) {
            Outcome::Records(records) => {
                self.counters.hits += 1;
                self.answer_path_records(now, &asker, &records);
            }
            Outcome::Status(status) => {
                self.counters.hits += 1;
                self.answer_status(&asker, status);
            }
            Outcome::Forward(reason) => {
                self.counters.misses += 1;
                debug!(?reason, ?mask, "forwarding a PathRecord query");
                let key = QueryKey::new(method, mask, template);
                if let Some(answer) = self.forwarding.cached(now, &key).cloned() {
                    self.counters.answer_cache_hits += 1;
                    self.answer_waiter(now, &asker, &answer);
                    return;
                }
                if self.forwarding.wait(key, asker) {
                    self.send_upstream(now, Purpose::Forward(key), &key.to_request());
                } else {
                    self.counters.coalesced += 1;
                }
            }
        }
    }

    /// Answers a Get with its one record or a GetTable with all (through
    /// RMPP to a port).
    fn answer_path_records(&mut self, now: Instant, asker: &Asker, records: &[PathRecord]) {
        let Asker::Mad { address, request } = asker else {
            let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
            for r in records {
                data.extend_from_slice(r.as_bytes());
            }
            return self.answer_local_paths(asker, data.freeze(), false);
        };
        let Ok((h, _)) = SaMadHeader::parse(request) else {
            return;
        };
        let h = *h;
        if h.mad.method() == Method::GET {
            // One MAD, built in one allocation: the common case.
            let header = respond::success_header(&h, PathRecord::ATTRIBUTE_OFFSET);
            let one = records.first().map_or(&[][..], |r| r.as_bytes());
            self.out.push_back(Transmit::reply(
                address.reply(),
                respond::single(&header, one),
            ));
            return;
        }
        let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
        for r in records {
            data.extend_from_slice(r.as_bytes());
        }
        self.answer_data(
            now,
            address,
            &h,
            data.freeze(),
            PathRecord::ATTRIBUTE_OFFSET,
        );
    }

    fn answer_local_paths(&mut self, asker: &Asker, data: Bytes, truncated: bool) {
        let Asker::Local { conn, id } = *asker else {
            return;
        };
        let body = LocalBody::Records {
            attribute: AttributeId::PATH_RECORD,
            stride: PathRecord::LEN,
            data,
            truncated,
        };
        self.local_out.push_back(LocalReply {
            conn,
            request: id,
            status: MadStatus::OK,
            body,
        });
    }

    fn answer_waiter(&mut self, now: Instant, w: &Asker, answer: &Answer) {
        if answer.status != MadStatus::OK {
            return self.answer_status(w, answer.status);
        }
        match w {
            Asker::Mad { address, request } => {
                let Ok((h, _)) = SaMadHeader::parse(request) else {
                    return;
                };
                let h = *h;
                self.answer_data(
                    now,
                    address,
                    &h,
                    answer.data.clone(),
                    PathRecord::ATTRIBUTE_OFFSET,
                );
            }
            Asker::Local { .. } => self.answer_local_paths(w, answer.data.clone(), false),
        }
    }

    pub(super) fn forward_answered(
        &mut self,
        now: Instant,
        key: &QueryKey,
        mad: &[u8],
        truncated: bool,
    ) {
        let Ok(m) = SaMad::parse(mad) else { return };
        if truncated {
            // The master's table did not arrive whole (a transport without
            // RMPP): a port gets the answer as it came, so that it sees
            // exactly what the master sent; a local connection gets the
            // whole records, marked incomplete. Nothing is kept.
            let whole = records_data(&m, self.cut_at(true));
            for w in self.forwarding.release(key) {
                match &w {
                    Asker::Mad { address, request } => {
                        if let Some(relayed) = respond::relay(mad, request) {
                            self.out
                                .push_back(Transmit::reply(address.reply(), relayed));
                        }
                    }
                    Asker::Local { .. } => self.answer_local_paths(&w, whole.clone(), true),
                }
            }
            return;
        }
        let status = m.mad().status();
        let data = if status != MadStatus::OK {
            Bytes::new()
        } else if key.method() == Method::GET {
            Bytes::copy_from_slice(m.data().get(..PathRecord::LEN).unwrap_or_default())
        } else {
            records_data(&m, None)
        };
        let answer = Answer { status, data };
        for w in self.forwarding.answered(now, key, answer.clone()) {
            self.answer_waiter(now, &w, &answer);
        }
    }

    /// Everyone waiting for the master's answer to a forwarded query from
    /// local connection `conn` is forgotten (it closed).
    pub(super) fn forget_local_waiters(&mut self, conn: super::local::ConnId) {
        self.forwarding.forget_where(|w| w.conn() == Some(conn));
    }
}
