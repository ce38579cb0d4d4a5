//! Request/response over a [`UmadTransport`](super::UmadTransport): match
//! answers to requests by the low 32 bits of the TransactionID (the kernel
//! and the simulator rewrite the upper bits of requests), time out and
//! retry, reassemble RMPP answers and send RMPP requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{Receiver as RmppReceiver, RmppConfig, Sender as RmppSender, TransferState};
use mad_codec::{MAD_LEN, MadHeader, header::RmppStatus};
use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use tracing::{debug, trace};
use zerocopy::{FromBytes, IntoBytes};

use super::address::MadAddress;
use super::device::{AgentId, IncomingMad, OutgoingMad};

/// Time limit and retries of a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestOptions {
    /// How long each attempt waits for the answer (or, for RMPP, for the
    /// next segment or ACK).
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
    /// RMPP timers and limits.
    pub rmpp: RmppConfig,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_millis(1000),
            retries: 3,
            rmpp: RmppConfig::default(),
        }
    }
}

/// Why a request got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// Nothing answered in time, on any attempt.
    Timeout {
        /// Attempts made.
        attempts: u32,
        /// Time limit of each.
        per_attempt: Duration,
    },
    /// The kernel or simulator gave the request back with an error status.
    Undeliverable {
        /// The umad status (an errno).
        status: u32,
        /// Where it was going.
        dest_lid: u16,
    },
    /// An RMPP transfer was aborted.
    Rmpp {
        /// The RMPP status of the ABORT or STOP.
        status: RmppStatus,
        /// True when the peer ended it.
        by_peer: bool,
    },
    /// The transport is shut down.
    Closed,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout {
                attempts,
                per_attempt,
            } => {
                write!(
                    f,
                    "no answer after {attempts} attempts of {per_attempt:?} each"
                )
            }
            Self::Undeliverable { status, dest_lid } => {
                write!(
                    f,
                    "request to LID {dest_lid} came back with umad status {status}"
                )?;
                if *status == libc::ETIMEDOUT as u32 {
                    write!(
                        f,
                        " (ETIMEDOUT: no response in time; under ibsim, no process on that node serves this class \
                         — servers need SIM_SET_ISSM=1)"
                    )?;
                }
                Ok(())
            }
            Self::Rmpp { status, by_peer } => {
                write!(
                    f,
                    "RMPP transfer aborted by {} with status {status}",
                    if *by_peer { "the peer" } else { "us" }
                )
            }
            Self::Closed => write!(f, "the MAD transport is shut down"),
        }
    }
}

impl std::error::Error for RequestError {}

/// An answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// The request as it was sent, TransactionID included.
    pub request: Bytes,
    /// Who answered.
    pub source: MadAddress,
    /// The whole answer: one MAD, or a reassembled RMPP transfer.
    pub mad: Bytes,
    /// How many MADs the answer took.
    pub segments: u32,
}

impl Response {
    /// True for a one-MAD answer that is not whole (see
    /// [`answer_is_cut`](super::simulator::answer_is_cut)): what OpenSM's
    /// multi-MAD answers look like through the simulator. Only the records
    /// in its first [`Response::intact_data_len`] data bytes are real.
    pub fn looks_truncated(&self) -> bool {
        self.segments == 1
            && super::simulator::answer_is_cut(&self.mad, super::simulator::intact_mad_len())
    }

    /// Data bytes of a truncated answer that are real.
    pub fn intact_data_len() -> usize {
        super::simulator::intact_mad_len() - SaMadHeader::LEN
    }
}

#[derive(Debug)]
struct Inner {
    agent: AgentId,
    outgoing: Sender<OutgoingMad>,
    routes: Mutex<HashMap<u32, Sender<IncomingMad>>>,
    unsolicited: Sender<IncomingMad>,
    next_tid: AtomicU32,
}

/// A client for one agent: cheap to clone, usable from many tasks at once.
#[derive(Debug, Clone)]
pub struct MadClient {
    inner: Arc<Inner>,
}

/// Mailbox size per request: one window of RMPP segments and then some.
const MAILBOX: usize = 256;

impl MadClient {
    /// A client sending as `agent` through `outgoing`, and the dispatcher
    /// future that must run (spawned) for answers to arrive. MADs that are
    /// not answers to our requests go to the returned receiver.
    pub fn new(
        agent: AgentId,
        outgoing: Sender<OutgoingMad>,
        incoming: Receiver<IncomingMad>,
    ) -> (
        Self,
        impl Future<Output = ()> + Send + 'static,
        Receiver<IncomingMad>,
    ) {
        let (unsolicited_tx, unsolicited_rx) = channel::bounded(1024);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ std::process::id().rotate_left(16);
        let inner = Arc::new(Inner {
            agent,
            outgoing,
            routes: Mutex::new(HashMap::new()),
            unsolicited: unsolicited_tx,
            next_tid: AtomicU32::new(seed),
        });
        let dispatcher = dispatch(Arc::clone(&inner), incoming);
        (Self { inner }, dispatcher, unsolicited_rx)
    }

    /// The agent this client sends as.
    pub fn agent(&self) -> AgentId {
        self.inner.agent
    }

    /// Sends a MAD that expects no answer (a response, a ReportResp, ...).
    pub async fn send(&self, dest: MadAddress, mad: Bytes) -> Result<(), RequestError> {
        self.put(dest, mad, None).await
    }

    /// Sends `request` (a MAD, padded to 256 bytes if shorter; longer than
    /// 256 bytes goes as RMPP) to `dest` under a fresh TransactionID and
    /// returns the answer.
    pub async fn request(
        &self,
        dest: MadAddress,
        request: &[u8],
        opts: &RequestOptions,
    ) -> Result<Response, RequestError> {
        let tid = self.inner.next_tid.fetch_add(1, Ordering::Relaxed);
        let mut mad = BytesMut::from(request);
        if mad.len() < MAD_LEN {
            // A request is a whole MAD, as libibumad clients send it; only
            // responses carry their exact length.
            mad.resize(MAD_LEN, 0);
        }
        if let Ok((h, _)) = MadHeader::mut_from_prefix(&mut mad[..]) {
            h.set_transaction_id(u64::from(tid));
        }
        let mad = mad.freeze();
        let (tx, mailbox) = channel::bounded(MAILBOX);
        let _route = Route::new(&self.inner, tid, tx);
        if mad.len() <= MAD_LEN {
            return self.single(dest, mad, &mailbox, opts).await;
        }
        let Ok((header, _)) = SaMadHeader::parse(&mad) else {
            return Err(RequestError::Rmpp {
                status: RmppStatus::UNSPECIFIED,
                by_peer: false,
            });
        };
        let (header, data) = (*header, mad.slice(SaMadHeader::LEN..));
        self.rmpp_request(dest, header, data, &mailbox, opts).await
    }

    /// Sends `data` under `header` as an RMPP transfer, whatever its length
    /// (a load of one record goes as one segment), under a fresh
    /// TransactionID, and returns the answer.
    pub async fn request_rmpp(
        &self,
        dest: MadAddress,
        mut header: SaMadHeader,
        data: Bytes,
        opts: &RequestOptions,
    ) -> Result<Response, RequestError> {
        let tid = self.inner.next_tid.fetch_add(1, Ordering::Relaxed);
        header.mad.set_transaction_id(u64::from(tid));
        let (tx, mailbox) = channel::bounded(MAILBOX);
        let _route = Route::new(&self.inner, tid, tx);
        self.rmpp_request(dest, header, data, &mailbox, opts).await
    }

    async fn put(
        &self,
        dest: MadAddress,
        mad: Bytes,
        timeout: Option<Duration>,
    ) -> Result<(), RequestError> {
        let timeout_ms = timeout.map_or(0, |t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX));
        let out = OutgoingMad {
            agent: self.inner.agent,
            dest,
            mad,
            timeout_ms,
            retries: 0,
        };
        self.inner
            .outgoing
            .send(out)
            .await
            .map_err(|_| RequestError::Closed)
    }

    /// A one-MAD request: send, wait, retry.
    async fn single(
        &self,
        dest: MadAddress,
        mad: Bytes,
        mailbox: &Receiver<IncomingMad>,
        opts: &RequestOptions,
    ) -> Result<Response, RequestError> {
        let attempts = opts.retries + 1;
        let mut last_error = None;
        for attempt in 1..=attempts {
            self.put(dest, mad.clone(), Some(opts.timeout)).await?;
            // A little slack past the kernel's own time-out, which answers
            // first with an ETIMEDOUT status when it fires.
            match recv_until(
                mailbox,
                Instant::now() + opts.timeout + Duration::from_millis(50),
            )
            .await
            {
                Some(reply) if reply.status != 0 => {
                    debug!(
                        attempt,
                        status = reply.status,
                        "request returned undeliverable"
                    );
                    last_error = Some(RequestError::Undeliverable {
                        status: reply.status,
                        dest_lid: dest.lid,
                    });
                }
                Some(reply) => return self.answer(mad, reply, mailbox, opts).await,
                None => trace!(attempt, "request timed out"),
            }
        }
        Err(last_error.unwrap_or(RequestError::Timeout {
            attempts,
            per_attempt: opts.timeout,
        }))
    }

    /// Turns the first reply into the answer, reassembling it if it is the
    /// first segment of an RMPP transfer.
    async fn answer(
        &self,
        request: Bytes,
        first: IncomingMad,
        mailbox: &Receiver<IncomingMad>,
        opts: &RequestOptions,
    ) -> Result<Response, RequestError> {
        let is_rmpp_data = SaMadHeader::parse(&first.mad).is_ok_and(|(h, _)| {
            h.rmpp.is_active() && h.rmpp.rmpp_type() == RmppType::DATA && h.rmpp.version() == 1
        });
        if !is_rmpp_data {
            return Ok(Response {
                request,
                source: first.source,
                mad: first.mad,
                segments: 1,
            });
        }
        let source = first.source;
        let mut receiver = RmppReceiver::new(opts.rmpp, Instant::now());
        let mut next = Some(first);
        let mut segments = 0;
        loop {
            if let Some(m) = next.take() {
                segments += 1;
                receiver.handle_segment(Instant::now(), &m.mad);
            }
            while let Some(ack) = receiver.poll_transmit() {
                self.put(source.reply(), Bytes::copy_from_slice(&ack), None)
                    .await?;
            }
            if let Some(msg) = receiver.take_message() {
                return Ok(Response {
                    request,
                    source,
                    mad: msg,
                    segments,
                });
            }
            if let TransferState::Aborted { status, by_peer } = receiver.state() {
                return Err(RequestError::Rmpp { status, by_peer });
            }
            let deadline = (Instant::now() + opts.timeout)
                .min(receiver.poll_timeout().unwrap_or(Instant::now()));
            match recv_until(mailbox, deadline).await {
                Some(m) => next = Some(m),
                None => {
                    receiver.handle_timeout(Instant::now());
                    if receiver.state() == TransferState::Active {
                        // No segment within one attempt's time: the sender
                        // is gone or the path dropped everything.
                        return Err(RequestError::Timeout {
                            attempts: 1,
                            per_attempt: opts.timeout,
                        });
                    }
                }
            }
        }
    }

    /// A request too long for one MAD: send it through RMPP, then wait for
    /// the answer.
    async fn rmpp_request(
        &self,
        dest: MadAddress,
        header: SaMadHeader,
        data: Bytes,
        mailbox: &Receiver<IncomingMad>,
        opts: &RequestOptions,
    ) -> Result<Response, RequestError> {
        let mut whole = BytesMut::with_capacity(SaMadHeader::LEN + data.len());
        whole.extend_from_slice(header.as_bytes());
        whole.extend_from_slice(&data);
        let mad = whole.freeze();
        let mut sender =
            RmppSender::new(header, data, opts.rmpp, Instant::now()).map_err(|_| {
                RequestError::Rmpp {
                    status: RmppStatus::RESX,
                    by_peer: false,
                }
            })?;
        loop {
            let now = Instant::now();
            while let Some(seg) = sender.poll_transmit(now) {
                self.put(dest, Bytes::copy_from_slice(&seg), None).await?;
            }
            match sender.state() {
                TransferState::Complete => break,
                TransferState::Aborted { status, by_peer } => {
                    return Err(RequestError::Rmpp { status, by_peer });
                }
                TransferState::Active => {}
            }
            let deadline = sender.poll_timeout().unwrap_or(now);
            match recv_until(mailbox, deadline).await {
                Some(m) if m.status != 0 => {
                    return Err(RequestError::Undeliverable {
                        status: m.status,
                        dest_lid: dest.lid,
                    });
                }
                Some(m) => {
                    let is_control = SaMadHeader::parse(&m.mad).is_ok_and(|(h, _)| {
                        h.rmpp.is_active() && h.rmpp.rmpp_type() != RmppType::DATA
                    });
                    if is_control {
                        sender.handle_control(Instant::now(), &m.mad);
                    } else {
                        // The answer came before the last ACK: take it.
                        return self.answer(mad, m, mailbox, opts).await;
                    }
                }
                None => sender.handle_timeout(Instant::now()),
            }
        }
        match recv_until(mailbox, Instant::now() + opts.timeout).await {
            Some(m) if m.status != 0 => Err(RequestError::Undeliverable {
                status: m.status,
                dest_lid: dest.lid,
            }),
            Some(m) => self.answer(mad, m, mailbox, opts).await,
            None => Err(RequestError::Timeout {
                attempts: 1,
                per_attempt: opts.timeout,
            }),
        }
    }
}

/// Receives from `mailbox` until `deadline`.
async fn recv_until(mailbox: &Receiver<IncomingMad>, deadline: Instant) -> Option<IncomingMad> {
    let recv = async { mailbox.recv().await.ok() };
    let timer = async {
        smol::Timer::at(deadline).await;
        None
    };
    recv.or(timer).await
}

/// A request's entry in the routing table, removed when the request ends
/// (or is dropped half way).
struct Route<'a> {
    inner: &'a Inner,
    tid: u32,
}

impl<'a> Route<'a> {
    fn new(inner: &'a Inner, tid: u32, tx: Sender<IncomingMad>) -> Self {
        inner
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tid, tx);
        Self { inner, tid }
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.inner
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.tid);
    }
}

/// Routes every incoming MAD: answers (response methods, RMPP control
/// MADs, and our own requests handed back with an error status) to the
/// request with their TransactionID, everything else to the unsolicited
/// channel.
async fn dispatch(inner: Arc<Inner>, incoming: Receiver<IncomingMad>) {
    while let Ok(m) = incoming.recv().await {
        let Ok((h, _)) = MadHeader::parse(&m.mad) else {
            debug!(len = m.mad.len(), "ignoring a runt MAD");
            continue;
        };
        let tid = h.transaction_id_low();
        let route = inner
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&tid)
            .cloned();
        let is_answer = m.status != 0 || h.method().is_response();
        match route {
            Some(tx) if is_answer || is_rmpp_control(&m.mad) => {
                if tx.try_send(m).is_err() {
                    debug!(tid, "request mailbox full; MAD dropped");
                }
            }
            _ if is_answer => {
                trace!(tid, method = ?h.method(), "answer to no pending request (late or duplicate)")
            }
            _ => {
                if inner.unsolicited.try_send(m).is_err() {
                    debug!(tid, "unsolicited queue full; MAD dropped");
                }
            }
        }
    }
}

fn is_rmpp_control(mad: &[u8]) -> bool {
    SaMadHeader::parse(mad)
        .is_ok_and(|(h, _)| h.rmpp.is_active() && h.rmpp.rmpp_type() != RmppType::DATA)
}
