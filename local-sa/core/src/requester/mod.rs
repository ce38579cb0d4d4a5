//! Requests to an SA and their answers, without I/O: the one client that
//! both the agent (asking the master SA) and lsaquery (asking any SA) use.
//!
//! * Each request gets a fresh TransactionID; answers are matched on its
//!   low 32 bits (the kernel and the simulator rewrite the upper ones).
//! * A request is a whole MAD (padded to 256 bytes), sent again after each
//!   time-out up to `retries` times; one the transport hands back
//!   undelivered (its own time-out ran out, or under the simulator nobody
//!   serves the class there) is sent again at once.
//! * An answer that arrives as RMPP DATA is reassembled and acknowledged
//!   segment by segment; each segment restarts the attempt's clock.
//! * A request too long for one MAD (a PathRecord load) goes out through an
//!   RMPP sender and then waits for its answer; it is not sent again.
//!
//! The caller feeds it every MAD that may be an answer
//! ([`Requester::handle`]) and its timer ([`Requester::handle_timeout`]),
//! and puts on the wire what it queues. Each request carries a token of the
//! caller's (`T`: why it was asked) and goes to an address of the caller's
//! type (`A`); the requester never looks inside either.

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppFlags, RmppStatus, RmppType, SaMadHeader};
use mad_codec::records::SaRecord;
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{MAD_LEN, MadStatus, Records};

use crate::address::Transmit;

/// Time limit, retries and RMPP settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequesterConfig {
    /// How long each attempt waits for its answer (or, while an answer
    /// arrives through RMPP, for its next segment).
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
    /// RMPP timers, limits and segment size.
    pub rmpp: RmppConfig,
}

impl RequesterConfig {
    /// The attempts a request gets unless it is sent with its own.
    pub fn attempts(&self) -> Attempts {
        Attempts {
            timeout: self.timeout,
            retries: self.retries,
        }
    }
}

impl Default for RequesterConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_millis(1000),
            retries: 3,
            rmpp: RmppConfig::default(),
        }
    }
}

/// How long each attempt of one request waits, and how many more follow
/// the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Each attempt's wait.
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
}

/// An SA's answer: one MAD, or a reassembled RMPP transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    header: SaMadHeader,
    mad: Bytes,
    cut: Option<usize>,
    segments: u32,
}

impl Answer {
    /// A reassembled transfer: `None` if it is shorter than the headers.
    fn reassembled(mad: Bytes, segments: u32) -> Option<Self> {
        let (header, _) = SaMadHeader::parse(&mad).ok()?;
        Some(Self {
            header: *header,
            mad,
            cut: None,
            segments,
        })
    }

    /// An answer that came whole in `mad` (one MAD, or a transfer put
    /// together): what a fake SA in a test answers. `None` if it is
    /// shorter than the headers.
    pub fn whole(mad: Bytes) -> Option<Self> {
        Self::reassembled(mad, 1)
    }

    /// A one-MAD answer of which the transport delivered only the first
    /// `intact` bytes whole (the simulator's cut answers), for a test.
    pub fn cut(mad: Bytes, intact: usize) -> Option<Self> {
        Some(Self {
            cut: Some(intact),
            ..Self::reassembled(mad, 1)?
        })
    }

    /// Its headers.
    pub fn header(&self) -> &SaMadHeader {
        &self.header
    }

    /// Its MAD status.
    pub fn status(&self) -> MadStatus {
        self.header.mad.status()
    }

    /// The whole answer as it arrived or was reassembled.
    pub fn mad(&self) -> &Bytes {
        &self.mad
    }

    /// The SA data after the headers.
    pub fn data(&self) -> &[u8] {
        self.mad.get(SaMadHeader::LEN..).unwrap_or_default()
    }

    /// How many MADs it took.
    pub fn segments(&self) -> u32 {
        self.segments
    }

    /// True for a one-MAD answer the transport did not deliver whole (see
    /// [`crate::address::Received::cut`]) that may have lost records: only
    /// the records wholly within its real bytes count. An error answer is
    /// never cut: it carries no records, and its status is in the headers,
    /// which always arrive (OpenSM's error answers come RMPP-framed through
    /// the simulator all the same).
    pub fn is_cut(&self) -> bool {
        self.cut.is_some() && self.status() == MadStatus::OK
    }

    /// Its records at its AttributeOffset; of a cut answer only those
    /// wholly within its real bytes.
    pub fn records<'a, T: SaRecord + 'a>(&'a self) -> impl Iterator<Item = &'a T> {
        let records = Records::<T>::new(self.data(), self.header.sa.attribute_offset()).ok();
        let whole = match (&records, self.cut) {
            (Some(r), Some(intact)) => intact.saturating_sub(SaMadHeader::LEN) / r.stride().max(1),
            _ => usize::MAX,
        };
        records.into_iter().flatten().take(whole)
    }

    /// The SA data as records at its AttributeOffset: all of it, or of a
    /// cut answer only the records wholly within its real bytes.
    pub fn intact_data(&self) -> &[u8] {
        let data = self.data();
        let stride = usize::from(self.header.sa.attribute_offset()) * 8;
        match self.cut {
            Some(intact) if stride > 0 => {
                let whole = intact.saturating_sub(SaMadHeader::LEN) / stride;
                &data[..(whole * stride).min(data.len())]
            }
            Some(intact) => &data[..intact.saturating_sub(SaMadHeader::LEN).min(data.len())],
            None => data,
        }
    }

    /// The one record of a Get's answer, padded with zeros if the answer is
    /// shorter than a record.
    pub fn record<T: SaRecord>(&self) -> T {
        let mut r = T::new_zeroed();
        let data = self.data();
        let n = data.len().min(T::LEN);
        r.as_mut_bytes()[..n].copy_from_slice(&data[..n]);
        r
    }
}

/// Why a request got no usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Nothing answered, on any attempt.
    Timeout {
        /// Attempts made.
        attempts: u32,
        /// How long each waited.
        per_attempt: Duration,
        /// The SM_Key the request carried (0: none, or not an SA MAD):
        /// OpenSM answers no SA request whose key is neither 0 nor its
        /// own, so a key is the likeliest cause of its silence.
        sm_key: u64,
    },
    /// The transport handed the request back undelivered, last with this
    /// status (an errno).
    Undeliverable {
        /// The transport's status.
        status: u32,
    },
    /// An RMPP transfer, of the request or of its answer, was aborted.
    Rmpp {
        /// The status of the ABORT or STOP.
        status: RmppStatus,
        /// True when the SA ended it.
        by_peer: bool,
    },
    /// The caller withdrew the request (its answer would no longer mean
    /// anything, e.g. after the master changed).
    Cancelled,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout {
                attempts,
                per_attempt,
                sm_key: 0,
            } => write!(
                f,
                "no answer after {attempts} attempts of {per_attempt:?} each"
            ),
            Self::Timeout {
                attempts,
                per_attempt,
                sm_key,
            } => write!(
                f,
                "no answer after {attempts} attempts of {per_attempt:?} each to a request with SM_Key \
                 {sm_key:#x}: {OPENSM_KEY_RULE}; is {sm_key:#x} the master's sa_key?"
            ),
            Self::Undeliverable { status } => {
                write!(f, "the request came back undelivered with status {status}")
            }
            Self::Rmpp { status, by_peer } => write!(
                f,
                "RMPP transfer aborted by {} with status {status}",
                if *by_peer { "the SA" } else { "us" }
            ),
            Self::Cancelled => write!(f, "the request was withdrawn"),
        }
    }
}

impl std::error::Error for Failure {}

/// Why a request with an SM_Key may get no answer at all from OpenSM: it
/// does not refuse a request with another key, it drops it (its log says
/// `ERR 1A04: Non-Zero MAD SM_Key ... SA MAD ignored`).
pub const OPENSM_KEY_RULE: &str = "OpenSM ignores, without an answer, every SA request whose \
     SM_Key is neither 0 nor its own sa_key (opensm.conf)";

/// The SM_Key in `request`'s SA header; 0 if it is not an SA MAD.
fn sm_key_of(request: &[u8]) -> u64 {
    match SaMadHeader::parse(request) {
        Ok((h, _)) if h.mad.mgmt_class() == mad_codec::MgmtClass::SUBN_ADM => h.sa.sm_key(),
        _ => 0,
    }
}

/// A request that ended.
#[derive(Debug, Clone)]
pub struct Completion<T> {
    /// What the caller said it was for.
    pub token: T,
    /// The request as it was sent, TransactionID included (for an RMPP
    /// request: its headers).
    pub request: Bytes,
    /// Its answer, or why there is none.
    pub outcome: Result<Answer, Failure>,
    /// When its first attempt was sent (with the `now` of the answer, how
    /// long the answer took).
    pub sent: Instant,
}

/// What [`Requester::handle`] made of a MAD.
#[derive(Debug)]
pub enum Handled<T> {
    /// Not about any request in flight: the caller's to deal with.
    NotOurs,
    /// Part of a request in flight (a segment, an ACK, a retry).
    Taken,
    /// A request ended.
    Done(Completion<T>),
}

#[derive(Debug)]
enum Phase {
    /// The request is out; no answer yet.
    Waiting,
    /// An RMPP request still being sent.
    Sending(Sender),
    /// An answer arriving through RMPP, and how many segments came.
    Receiving(Receiver, u32),
}

#[derive(Debug)]
struct Pending<A, T> {
    token: T,
    /// When the first attempt went.
    sent: Instant,
    dest: A,
    request: Bytes,
    attempts: u32,
    attempts_left: u32,
    /// How long each of its attempts waits.
    timeout: Duration,
    deadline: Instant,
    phase: Phase,
    /// The transport's status the last time it handed the request back.
    undelivered: Option<u32>,
    /// An RMPP request's last segment: what is sent again when the answer
    /// does not come once every segment is acknowledged (the answer was
    /// lost; the receiver answers a repeated last segment again).
    last_segment: Option<Bytes>,
    /// Resends of the last segment left.
    retries_left: u32,
}

/// Requests in flight.
#[derive(Debug)]
pub struct Requester<A, T> {
    config: RequesterConfig,
    next_tid: u32,
    pending: HashMap<u32, Pending<A, T>>,
}

impl<A: Clone, T> Requester<A, T> {
    /// A requester whose first TransactionID is `first_tid`.
    pub fn new(config: RequesterConfig, first_tid: u32) -> Self {
        Self {
            config,
            next_tid: first_tid,
            pending: HashMap::new(),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &RequesterConfig {
        &self.config
    }

    /// New time-outs and retries for requests from now on (those in
    /// flight keep theirs).
    pub fn set_config(&mut self, config: RequesterConfig) {
        self.config = config;
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// True if a request whose token `wanted` picks is in flight.
    pub fn any_pending(&self, wanted: impl Fn(&T) -> bool) -> bool {
        self.pending.values().any(|p| wanted(&p.token))
    }

    fn take_tid(&mut self) -> u32 {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        tid
    }

    /// Sends `request` (a whole MAD; padded to 256 bytes if shorter) to
    /// `dest` under a fresh TransactionID, which it returns.
    pub fn send(
        &mut self,
        now: Instant,
        dest: A,
        token: T,
        request: &[u8],
        out: &mut VecDeque<Transmit<A>>,
    ) -> u32 {
        let attempts = self.config.attempts();
        self.send_with(now, dest, token, request, attempts, out)
    }

    /// As [`Self::send`], with `attempts` rather than the configured ones:
    /// for a request the SA may take long over (a whole table), which
    /// sending again too soon would have it do twice.
    pub fn send_with(
        &mut self,
        now: Instant,
        dest: A,
        token: T,
        request: &[u8],
        attempts: Attempts,
        out: &mut VecDeque<Transmit<A>>,
    ) -> u32 {
        let Attempts { timeout, retries } = attempts;
        let tid = self.take_tid();
        let mut mad = BytesMut::from(request);
        if mad.len() < MAD_LEN {
            // A request is a whole MAD, as libibumad clients send it; only
            // answers carry their exact length.
            mad.resize(MAD_LEN, 0);
        }
        if let Ok((h, _)) = SaMadHeader::parse_mut(&mut mad) {
            h.mad.set_transaction_id(u64::from(tid));
        }
        let request = mad.freeze();
        out.push_back(Transmit {
            dest: dest.clone(),
            mad: request.clone(),
            timeout_ms: millis(timeout),
        });
        self.pending.insert(
            tid,
            Pending {
                token,
                sent: now,
                dest,
                request,
                attempts: 1,
                attempts_left: retries,
                timeout,
                deadline: now + timeout,
                phase: Phase::Waiting,
                undelivered: None,
                last_segment: None,
                retries_left: 0,
            },
        );
        tid
    }

    /// How far RMPP request `tid` has gone: segments acknowledged and in
    /// all (all of them once the transfer is done and the answer awaited).
    /// `None` for a request not in flight or not sent through RMPP.
    pub fn send_progress(&self, tid: u32) -> Option<(u32, u32)> {
        let p = self.pending.get(&tid)?;
        match &p.phase {
            Phase::Sending(s) => Some((s.acknowledged(), s.segment_count())),
            _ => p.last_segment.as_ref().and_then(|last| {
                let (h, _) = SaMadHeader::parse(last).ok()?;
                let n = h.rmpp.segment_number();
                Some((n, n))
            }),
        }
    }

    /// Sends `data` under `header` to `dest` as an RMPP transfer, whatever
    /// its length, under a fresh TransactionID, which it returns; fails if
    /// the data is too long for RMPP.
    pub fn send_rmpp(
        &mut self,
        now: Instant,
        dest: A,
        token: T,
        mut header: SaMadHeader,
        data: Bytes,
        out: &mut VecDeque<Transmit<A>>,
    ) -> Result<u32, Failure> {
        let tid = self.take_tid();
        header.mad.set_transaction_id(u64::from(tid));
        let sender =
            Sender::new(header, data, self.config.rmpp, now).map_err(|_| Failure::Rmpp {
                status: RmppStatus::RESX,
                by_peer: false,
            })?;
        let mut p = Pending {
            token,
            sent: now,
            dest,
            request: Bytes::copy_from_slice(header.as_bytes()),
            attempts: 1,
            attempts_left: 0,
            timeout: self.config.timeout,
            deadline: now + self.config.timeout,
            phase: Phase::Sending(sender),
            undelivered: None,
            last_segment: None,
            retries_left: self.config.retries,
        };
        flush_sender(&mut p, now, self.config.timeout, out);
        self.pending.insert(tid, p);
        Ok(tid)
    }

    /// A MAD that may answer a request in flight: an answer, an RMPP
    /// segment or control MAD of one, or one of our requests that the
    /// transport gave back with `status`. `ack_to` is where ACKs for its
    /// sender go; `cut` is what the transport said of its integrity.
    pub fn handle(
        &mut self,
        now: Instant,
        ack_to: &A,
        status: u32,
        mad: &[u8],
        cut: Option<usize>,
        out: &mut VecDeque<Transmit<A>>,
    ) -> Handled<T> {
        let Ok((h, _)) = SaMadHeader::parse(mad) else {
            return Handled::NotOurs;
        };
        let tid = h.mad.transaction_id_low();
        let Some(p) = self.pending.get_mut(&tid) else {
            return Handled::NotOurs;
        };
        let timeout = p.timeout;
        if status != 0 {
            return self.undelivered(now, tid, status, out);
        }
        let rmpp = &h.rmpp;
        let control = rmpp.is_active()
            && matches!(
                rmpp.rmpp_type(),
                RmppType::ACK | RmppType::STOP | RmppType::ABORT
            );
        let data_segment =
            rmpp.is_active() && rmpp.rmpp_type() == RmppType::DATA && rmpp.version() == 1;
        if control {
            match &mut p.phase {
                Phase::Sending(sender) => {
                    sender.handle_control(now, mad);
                    flush_sender(p, now, timeout, out);
                }
                Phase::Receiving(receiver, _) => receiver.handle_segment(now, mad),
                // A late ACK of a request sent whole: nothing to do.
                Phase::Waiting => {}
            }
            return self.settle(tid);
        }
        if !h.mad.method().is_response() {
            // A request of the same TID is not its answer: our own
            // request to our own port, handed back to this agent (the
            // simulator gives a port's requests to its only agent that
            // serves them; on hardware a registered responder gets them).
            return Handled::NotOurs;
        }
        if !data_segment {
            // A one-MAD answer, possibly before the last ACK of our RMPP
            // request.
            let answer = Answer {
                header: *h,
                mad: Bytes::copy_from_slice(mad),
                cut,
                segments: 1,
            };
            return match self.pending.remove(&tid) {
                Some(p) => Handled::Done(Completion {
                    token: p.token,
                    request: p.request,
                    outcome: Ok(answer),
                    sent: p.sent,
                }),
                None => Handled::NotOurs,
            };
        }
        if !matches!(p.phase, Phase::Receiving(..)) {
            // The answer's first segment (perhaps before our request's
            // last ACK): the request is done being sent.
            p.phase = Phase::Receiving(Receiver::new(self.config.rmpp, now), 0);
        }
        if let Phase::Receiving(receiver, segments) = &mut p.phase {
            receiver.handle_segment(now, mad);
            *segments += 1;
            while let Some(ack) = receiver.poll_transmit() {
                out.push_back(Transmit::reply(
                    ack_to.clone(),
                    Bytes::copy_from_slice(&ack),
                ));
            }
        }
        // Segments are progress: the attempt's clock restarts.
        p.deadline = now + timeout;
        self.settle(tid)
    }

    /// Ends the request `tid` if its transfer completed or aborted.
    fn settle(&mut self, tid: u32) -> Handled<T> {
        let Some(p) = self.pending.get_mut(&tid) else {
            return Handled::NotOurs;
        };
        let outcome = match &mut p.phase {
            Phase::Waiting => return Handled::Taken,
            Phase::Sending(sender) => match sender.state() {
                TransferState::Aborted { status, by_peer } => {
                    Err(Failure::Rmpp { status, by_peer })
                }
                _ => return Handled::Taken,
            },
            Phase::Receiving(receiver, segments) => match receiver.state() {
                TransferState::Active => return Handled::Taken,
                TransferState::Complete => {
                    let segments = *segments;
                    match receiver
                        .take_message()
                        .map(|m| Answer::reassembled(m, segments))
                    {
                        Some(Some(answer)) => Ok(answer),
                        // A reassembled message always holds the headers
                        // of its first segment.
                        Some(None) => Err(Failure::Rmpp {
                            status: RmppStatus::UNSPECIFIED,
                            by_peer: true,
                        }),
                        None => return Handled::Taken,
                    }
                }
                TransferState::Aborted { status, by_peer } => {
                    Err(Failure::Rmpp { status, by_peer })
                }
            },
        };
        match self.pending.remove(&tid) {
            Some(p) => Handled::Done(Completion {
                token: p.token,
                request: p.request,
                outcome,
                sent: p.sent,
            }),
            None => Handled::NotOurs,
        }
    }

    /// The transport gave request `tid` back: its attempt is over (the
    /// kernel reports this when its own time-out, ours, ran out), so the
    /// next one goes at once; an RMPP request fails.
    fn undelivered(
        &mut self,
        now: Instant,
        tid: u32,
        status: u32,
        out: &mut VecDeque<Transmit<A>>,
    ) -> Handled<T> {
        let Some(p) = self.pending.get_mut(&tid) else {
            return Handled::NotOurs;
        };
        let (timeout, timeout_ms) = (p.timeout, millis(p.timeout));
        p.undelivered = Some(status);
        let sent_whole = !matches!(p.phase, Phase::Sending(_)) && p.attempts_left > 0;
        if sent_whole {
            p.attempts_left -= 1;
            p.attempts += 1;
            p.phase = Phase::Waiting;
            p.deadline = now + timeout;
            out.push_back(Transmit {
                dest: p.dest.clone(),
                mad: p.request.clone(),
                timeout_ms,
            });
            return Handled::Taken;
        }
        match self.pending.remove(&tid) {
            Some(p) => Handled::Done(Completion {
                token: p.token,
                request: p.request,
                outcome: Err(Failure::Undeliverable { status }),
                sent: p.sent,
            }),
            None => Handled::NotOurs,
        }
    }

    /// When [`Requester::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// Retries overdue requests and resends overdue RMPP segments; returns
    /// the requests that ran out of attempts.
    pub fn handle_timeout(
        &mut self,
        now: Instant,
        out: &mut VecDeque<Transmit<A>>,
    ) -> Vec<Completion<T>> {
        let mut ended = Vec::new();
        for (tid, p) in &mut self.pending {
            if now < p.deadline {
                continue;
            }
            let (timeout, timeout_ms) = (p.timeout, millis(p.timeout));
            if let Phase::Sending(sender) = &mut p.phase {
                sender.handle_timeout(now);
                flush_sender(p, now, timeout, out);
                if let Phase::Sending(s) = &p.phase
                    && matches!(s.state(), TransferState::Aborted { .. })
                {
                    ended.push(*tid);
                }
                continue;
            }
            if let Phase::Receiving(receiver, _) = &mut p.phase {
                // The answer is arriving and no segment came for a whole
                // attempt. Its sender resends what was not acknowledged;
                // asking again would start a second transfer beside the
                // first. The silence counts as an attempt; past the last,
                // the transfer is aborted so that the sender stops.
                if p.attempts_left > 0 {
                    p.attempts_left -= 1;
                    p.attempts += 1;
                    p.deadline = now + timeout;
                } else {
                    receiver.give_up();
                    while let Some(abort) = receiver.poll_transmit() {
                        out.push_back(Transmit::reply(
                            p.dest.clone(),
                            Bytes::copy_from_slice(&abort),
                        ));
                    }
                    ended.push(*tid);
                }
                continue;
            }
            if let Some(last) = &p.last_segment
                && p.retries_left > 0
                && matches!(p.phase, Phase::Waiting)
            {
                // Every segment is acknowledged but no answer came: ask
                // again with the last segment.
                p.retries_left -= 1;
                p.attempts += 1;
                p.deadline = now + timeout;
                out.push_back(Transmit::reply(p.dest.clone(), last.clone()));
                continue;
            }
            if p.attempts_left == 0 {
                ended.push(*tid);
                continue;
            }
            p.attempts_left -= 1;
            p.attempts += 1;
            p.deadline = now + timeout;
            p.phase = Phase::Waiting;
            out.push_back(Transmit {
                dest: p.dest.clone(),
                mad: p.request.clone(),
                timeout_ms,
            });
        }
        let mut done = Vec::with_capacity(ended.len());
        for tid in ended {
            let Some(p) = self.pending.remove(&tid) else {
                continue;
            };
            let outcome = match (&p.phase, p.undelivered) {
                (Phase::Sending(s), _) => match s.state() {
                    TransferState::Aborted { status, by_peer } => Failure::Rmpp { status, by_peer },
                    _ => Failure::Cancelled,
                },
                (_, Some(status)) => Failure::Undeliverable { status },
                (_, None) => Failure::Timeout {
                    attempts: p.attempts,
                    per_attempt: p.timeout,
                    sm_key: sm_key_of(&p.request),
                },
            };
            done.push(Completion {
                token: p.token,
                request: p.request,
                outcome: Err(outcome),
                sent: p.sent,
            });
        }
        done
    }

    /// Ends every request in flight as [`Failure::Cancelled`].
    pub fn cancel_all(&mut self) -> Vec<Completion<T>> {
        self.pending
            .drain()
            .map(|(_, p)| Completion {
                token: p.token,
                request: p.request,
                outcome: Err(Failure::Cancelled),
                sent: p.sent,
            })
            .collect()
    }

    /// Forgets the requests whose token `stale` picks, without completing
    /// them: their answers would no longer be used.
    pub fn forget(&mut self, stale: impl Fn(&T) -> bool) {
        self.pending.retain(|_, p| !stale(&p.token));
    }
}

/// A time-out as the transport takes it, in milliseconds.
fn millis(timeout: Duration) -> u32 {
    u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX)
}

/// Puts out what an RMPP request's sender has to send; once it is done,
/// the request waits one time-out for its answer.
fn flush_sender<A: Clone, T>(
    p: &mut Pending<A, T>,
    now: Instant,
    timeout: Duration,
    out: &mut VecDeque<Transmit<A>>,
) {
    let Phase::Sending(sender) = &mut p.phase else {
        return;
    };
    while let Some(segment) = sender.poll_transmit(now) {
        let segment = Bytes::copy_from_slice(&segment);
        let is_last = SaMadHeader::parse(&segment)
            .is_ok_and(|(h, _)| h.rmpp.flags().contains(RmppFlags::LAST));
        if is_last {
            p.last_segment = Some(segment.clone());
        }
        out.push_back(Transmit::reply(p.dest.clone(), segment));
    }
    match sender.state() {
        TransferState::Active => {
            p.deadline = sender.poll_timeout().unwrap_or(now + timeout);
        }
        TransferState::Complete => {
            p.phase = Phase::Waiting;
            p.deadline = now + timeout;
        }
        TransferState::Aborted { .. } => {}
    }
}
