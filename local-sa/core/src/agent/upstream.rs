//! The agent's requests to the master SA: matched by the low 32 bits of
//! the TransactionID, retried on time-out, table answers reassembled from
//! RMPP segments (ACKing them), and each answer handed back with the
//! purpose it was asked for.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::MAD_LEN;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{Receiver, RmppConfig, TransferState};

use super::Transmit;
use super::forward::QueryKey;
use crate::store::Epoch;
use umad::MadAddress;

/// Why a request went to the master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Every path from this port (GetTable, SGID = ours).
    Bulk { epoch: Epoch },
    /// The paths from this port to one LID, when the bulk table came back
    /// cut (a transport without RMPP).
    Walk { epoch: Epoch, dlid: u16 },
    /// The paths from this port to a port that came into service.
    GidInService { guid: u64 },
    /// A query the cache could not answer.
    Forward(QueryKey),
    /// InformInfo Set for a filter (subscribe or unsubscribe).
    Inform {
        filter: informinfo::Filter,
        subscribe: bool,
    },
    /// A query passed on for a port: the master's answer goes back to it.
    Relay { to: MadAddress, request: Bytes },
    /// A Set or Delete of MCMemberRecord (see `joins`).
    Membership { op: u64 },
    /// The canary ServiceRecord (see `canary`).
    Canary(super::canary::CanaryStep),
    /// The master's ClassPortInfo.
    MasterInfo,
}

/// What came of a request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// The master answered (the whole answer, reassembled).
    Answer {
        purpose: Purpose,
        mad: Bytes,
        /// The answer claims RMPP but arrived as one cut MAD: only whole
        /// records at its start are real.
        truncated: bool,
    },
    /// No answer after every attempt.
    Failed { purpose: Purpose },
}

/// Time limit, retries and RMPP settings for requests to the master.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UpstreamConfig {
    pub(crate) timeout: Duration,
    pub(crate) retries: u32,
    pub(crate) rmpp: RmppConfig,
}

#[derive(Debug)]
struct Pending {
    purpose: Purpose,
    request: Bytes,
    attempts_left: u32,
    deadline: Instant,
    receiver: Option<Receiver>,
}

/// Requests in flight to the master SA.
#[derive(Debug)]
pub(crate) struct Upstream {
    config: UpstreamConfig,
    master: MadAddress,
    next_tid: u32,
    pending: HashMap<u32, Pending>,
}

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, master: MadAddress, first_tid: u32) -> Self {
        Self {
            config,
            master,
            next_tid: first_tid,
            pending: HashMap::new(),
        }
    }

    /// The master SA's address.
    pub(crate) fn master(&self) -> MadAddress {
        self.master
    }

    /// Points at a new master. Requests in flight fail (their answers
    /// would come from the old one); the caller asks again.
    pub(crate) fn set_master(&mut self, master: MadAddress) -> Vec<Reply> {
        self.master = master;
        self.pending
            .drain()
            .map(|(_, p)| Reply::Failed { purpose: p.purpose })
            .collect()
    }

    /// Forgets the requests in flight whose purpose `stale` picks: their
    /// answers would no longer be used.
    pub(crate) fn cancel(&mut self, stale: impl Fn(&Purpose) -> bool) {
        self.pending.retain(|_, p| !stale(&p.purpose));
    }

    /// Requests in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// True if a request for `purpose` is in flight.
    pub(crate) fn is_pending(&self, purpose: &Purpose) -> bool {
        self.pending.values().any(|p| p.purpose == *purpose)
    }

    /// Sends `request` (a whole MAD) for `purpose` under a fresh
    /// TransactionID.
    pub(crate) fn send(
        &mut self,
        now: Instant,
        purpose: Purpose,
        request: &[u8],
        out: &mut VecDeque<Transmit>,
    ) {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        let mut mad = BytesMut::from(request);
        if mad.len() < MAD_LEN {
            mad.resize(MAD_LEN, 0);
        }
        if let Ok((h, _)) = SaMadHeader::parse_mut(&mut mad) {
            h.mad.set_transaction_id(u64::from(tid));
        }
        let request = mad.freeze();
        out.push_back(self.transmit(&request));
        self.pending.insert(
            tid,
            Pending {
                purpose,
                request,
                attempts_left: self.config.retries,
                deadline: now + self.config.timeout,
                receiver: None,
            },
        );
    }

    fn transmit(&self, request: &Bytes) -> Transmit {
        let timeout_ms = u32::try_from(self.config.timeout.as_millis()).unwrap_or(u32::MAX);
        Transmit {
            dest: self.master,
            mad: request.clone(),
            timeout_ms,
        }
    }

    /// An answer (or our request given back with an error status).
    pub(crate) fn handle(
        &mut self,
        now: Instant,
        source: &MadAddress,
        status: u32,
        mad: &[u8],
        out: &mut VecDeque<Transmit>,
    ) -> Option<Reply> {
        let (h, _) = SaMadHeader::parse(mad).ok()?;
        let tid = h.mad.transaction_id_low();
        let p = self.pending.get_mut(&tid)?;
        if status != 0 {
            // Undeliverable: the next attempt comes at the deadline.
            return None;
        }
        let rmpp = &h.rmpp;
        let is_data = rmpp.is_active() && rmpp.rmpp_type() == RmppType::DATA && rmpp.version() == 1;
        if !is_data {
            let p = self.pending.remove(&tid)?;
            let intact = SaMadHeader::LEN + self.config.rmpp.segment_data();
            let truncated = umad::simulator::answer_is_cut(mad, intact);
            return Some(Reply::Answer {
                purpose: p.purpose,
                mad: Bytes::copy_from_slice(mad),
                truncated,
            });
        }
        let receiver = p
            .receiver
            .get_or_insert_with(|| Receiver::new(self.config.rmpp, now));
        receiver.handle_segment(now, mad);
        while let Some(ack) = receiver.poll_transmit() {
            out.push_back(Transmit::reply(
                source.reply(),
                Bytes::copy_from_slice(&ack),
            ));
        }
        // Segments are progress: the attempt's clock restarts.
        p.deadline = now + self.config.timeout;
        match receiver.state() {
            TransferState::Active => None,
            TransferState::Complete => {
                let mut p = self.pending.remove(&tid)?;
                let message = p.receiver.as_mut()?.take_message()?;
                Some(Reply::Answer {
                    purpose: p.purpose,
                    mad: message,
                    truncated: false,
                })
            }
            TransferState::Aborted { .. } => {
                let p = self.pending.remove(&tid)?;
                Some(Reply::Failed { purpose: p.purpose })
            }
        }
    }

    /// When [`Upstream::handle_timeout`] must next be called.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// Retries overdue requests; returns those that ran out of attempts.
    pub(crate) fn handle_timeout(
        &mut self,
        now: Instant,
        out: &mut VecDeque<Transmit>,
    ) -> Vec<Reply> {
        let mut failed = Vec::new();
        let mut resend = Vec::new();
        self.pending.retain(|_, p| {
            if now < p.deadline {
                return true;
            }
            if p.attempts_left == 0 {
                failed.push(Reply::Failed {
                    purpose: p.purpose.clone(),
                });
                return false;
            }
            p.attempts_left -= 1;
            p.deadline = now + self.config.timeout;
            p.receiver = None;
            resend.push(p.request.clone());
            true
        });
        for request in resend {
            out.push_back(self.transmit(&request));
        }
        failed
    }
}
