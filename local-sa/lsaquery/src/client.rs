//! Requests to an SA over umad: the core's [`Requester`] (TransactionIDs,
//! retries, RMPP — the same one the daemon uses towards the master) driven
//! by the umad transport's channels and a timer, on one task.
//!
//! MADs that answer no request of ours and are not answers themselves
//! (the SA's Reports, for a subscriber) are kept for
//! [`Client::next_unsolicited`], at most [`UNSOLICITED_KEPT`]; a Report is
//! answered (ReportResp) the moment it comes. A Get or Set this agent
//! serves no answer to (the simulator hands a port's requests to the one
//! process that takes Reports there) is answered as the kernel answers a
//! request no agent is registered for: method/attribute unsupported.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use local_sa_core::address::Transmit;
use local_sa_core::requester::{
    Attempts, Completion, Failure, Handled, Requester, RequesterConfig,
};
use mad_codec::header::SaMadHeader;
use mad_codec::zerocopy::FromBytes;
use mad_codec::{MadHeader, MadStatus, Method};
use smol::channel::{Receiver, Sender};
use smol::future::FutureExt as _;
use tracing::trace;
use umad::port::PortFacts;
use umad::{Address, AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice, UmadTransport};

/// Unsolicited MADs kept for [`Client::next_unsolicited`]; past this the
/// oldest are dropped (a subscriber that never reads them holds no more).
const UNSOLICITED_KEPT: usize = 1024;

/// Names one request of this client's.
pub(crate) type Token = u64;

/// The transport is gone.
#[derive(Debug)]
pub(crate) struct Closed;

/// One agent's requests and the MADs that come back.
pub(crate) struct Client {
    requester: Requester<Address, Token>,
    agent: AgentId,
    outgoing: Sender<OutgoingMad>,
    incoming: Receiver<IncomingMad>,
    out: VecDeque<Transmit<Address>>,
    done: VecDeque<Completion<Token>>,
    unsolicited: VecDeque<IncomingMad>,
    next_token: Token,
    /// The agent receives the SA's Reports.
    takes_reports: bool,
}

impl Client {
    /// A client sending as `agent` over `transport`.
    pub(crate) fn new(agent: AgentId, transport: &UmadTransport, config: RequesterConfig) -> Self {
        Self {
            requester: Requester::new(config, umad::transaction_id_seed()),
            agent,
            outgoing: transport.outgoing(),
            incoming: transport.incoming(),
            out: VecDeque::new(),
            done: VecDeque::new(),
            unsolicited: VecDeque::new(),
            next_token: 1,
            takes_reports: false,
        }
    }

    /// A client on `port`'s umad device: an SA agent (receiving
    /// `methods` as requests too), its transport threads, and requests
    /// that wait `timeout` per attempt with `retries` more attempts. The
    /// transport is the caller's to shut down once the client is dropped.
    pub(crate) fn on_port(
        port: &PortFacts,
        methods: &[Method],
        timeout: Duration,
        retries: u32,
    ) -> Result<(UmadTransport, Self), String> {
        let umad_path = port
            .umad_path()
            .ok_or_else(|| format!("{port} has no umad device"))?;
        let device = UmadDevice::open(&umad_path).map_err(|e| e.to_string())?;
        let agent = device
            .register_agent(&AgentSpec::sa(methods))
            .map_err(|e| e.to_string())?;
        let mut config = RequesterConfig {
            timeout,
            retries,
            ..RequesterConfig::default()
        };
        // RMPP segments as big as the transport carries intact.
        config.rmpp.segment_data_len = device.transport().segment_data_len();
        let transport = UmadTransport::start(device, 256).map_err(|e| e.to_string())?;
        let mut client = Self::new(agent, &transport, config);
        client.takes_reports = methods.contains(&Method::REPORT);
        Ok((transport, client))
    }

    /// Whether the agent receives the SA's Reports (it was registered for
    /// them).
    pub(crate) fn takes_reports(&self) -> bool {
        self.takes_reports
    }

    fn token(&mut self) -> Token {
        let t = self.next_token;
        self.next_token += 1;
        t
    }

    /// Sends `request` (a whole MAD) to `dest`; its end comes from
    /// [`Client::next_completion`] under the returned token.
    pub(crate) fn start(&mut self, dest: Address, request: &[u8]) -> Token {
        let attempts = self.attempts();
        self.start_with(dest, request, attempts)
    }

    /// The time-out and retries a request gets unless told otherwise.
    pub(crate) fn attempts(&self) -> Attempts {
        self.requester.config().attempts()
    }

    /// As [`Client::start`], with `attempts` rather than the configured
    /// ones.
    pub(crate) fn start_with(
        &mut self,
        dest: Address,
        request: &[u8],
        attempts: Attempts,
    ) -> Token {
        let token = self.token();
        self.requester.send_with(
            Instant::now(),
            dest,
            token,
            request,
            attempts,
            &mut self.out,
        );
        token
    }

    /// Sends `data` under `header` through RMPP; its end comes from
    /// [`Client::next_completion`] under the returned token. Fails if the
    /// data is too long for RMPP.
    pub(crate) fn start_rmpp(
        &mut self,
        dest: Address,
        header: SaMadHeader,
        data: Bytes,
    ) -> Result<Token, Failure> {
        let token = self.token();
        self.requester
            .send_rmpp(Instant::now(), dest, token, header, data, &mut self.out)?;
        Ok(token)
    }

    /// Sends `request` and waits for its end.
    pub(crate) async fn request(
        &mut self,
        dest: Address,
        request: &[u8],
    ) -> Result<Completion<Token>, Closed> {
        let token = self.start(dest, request);
        self.completion_of(token).await
    }

    /// Sends `data` under `header` through RMPP and waits for the answer,
    /// telling `progress` (segments acknowledged, segments in all) as the
    /// receiver acknowledges them.
    pub(crate) async fn request_rmpp(
        &mut self,
        dest: Address,
        header: SaMadHeader,
        data: Bytes,
        mut progress: impl FnMut(u32, u32),
    ) -> Result<Result<Completion<Token>, Failure>, Closed> {
        let token = self.token();
        let tid =
            match self
                .requester
                .send_rmpp(Instant::now(), dest, token, header, data, &mut self.out)
            {
                Ok(tid) => tid,
                Err(f) => return Ok(Err(f)),
            };
        loop {
            self.flush().await?;
            while let Some(c) = self.done.pop_front() {
                if c.token == token {
                    return Ok(Ok(c));
                }
            }
            if let Some((acked, all)) = self.requester.send_progress(tid) {
                progress(acked, all);
            }
            self.step().await?;
        }
    }

    async fn completion_of(&mut self, token: Token) -> Result<Completion<Token>, Closed> {
        loop {
            let c = self.next_completion().await?;
            if c.token == token {
                return Ok(c);
            }
        }
    }

    /// The next request to end. What ending it queued (the final ACK of
    /// an RMPP answer) is sent first: a sender that never gets it sends
    /// its segments again, to whatever runs on this port by then.
    pub(crate) async fn next_completion(&mut self) -> Result<Completion<Token>, Closed> {
        loop {
            self.flush().await?;
            if let Some(c) = self.done.pop_front() {
                return Ok(c);
            }
            self.step().await?;
        }
    }

    /// The next MAD that is neither about one of our requests nor an
    /// answer (a Report, for a subscriber).
    pub(crate) async fn next_unsolicited(&mut self) -> Result<IncomingMad, Closed> {
        loop {
            self.flush().await?;
            if let Some(m) = self.unsolicited.pop_front() {
                return Ok(m);
            }
            self.step().await?;
        }
    }

    /// Lets go of the unsolicited MADs kept so far; how many.
    pub(crate) fn drop_unsolicited(&mut self) -> usize {
        std::mem::take(&mut self.unsolicited).len()
    }

    /// Puts out what is queued, then waits for one MAD or the requester's
    /// timer and hands it to the requester.
    async fn step(&mut self) -> Result<(), Closed> {
        self.flush().await?;
        let deadline = self.requester.poll_timeout();
        let mad = async { self.incoming.recv().await.map(Some).map_err(|_| Closed) };
        let timer = async {
            match deadline {
                Some(t) => smol::Timer::at(t).await,
                None => smol::Timer::never().await,
            };
            Ok(None)
        };
        let now = Instant::now;
        match mad.or(timer).await? {
            Some(m) => self.received(now(), m),
            None => {
                let ended = self.requester.handle_timeout(now(), &mut self.out);
                self.done.extend(ended);
            }
        }
        Ok(())
    }

    fn received(&mut self, now: Instant, m: IncomingMad) {
        let handled = self.requester.handle(
            now,
            &m.source.reply(),
            m.status,
            &m.mad,
            m.cut,
            &mut self.out,
        );
        match handled {
            Handled::Done(c) => self.done.push_back(c),
            Handled::Taken => {}
            Handled::NotOurs => {
                let is_answer = m.status != 0
                    || MadHeader::parse(&m.mad).is_ok_and(|(h, _)| h.method().is_response());
                if is_answer {
                    trace!("an answer to no request in flight (late or duplicate)");
                } else {
                    if let Some(resp) = report_response(&m.mad) {
                        self.out.push_back(Transmit::reply(m.source.reply(), resp));
                    }
                    if self.unsolicited.len() == UNSOLICITED_KEPT {
                        self.unsolicited.pop_front();
                    }
                    self.unsolicited.push_back(m);
                }
            }
        }
    }

    async fn flush(&mut self) -> Result<(), Closed> {
        while let Some(t) = self.out.pop_front() {
            let m = OutgoingMad {
                agent: self.agent,
                dest: t.dest,
                mad: t.mad,
                timeout_ms: t.timeout_ms,
                retries: 0,
            };
            self.outgoing.send(m).await.map_err(|_| Closed)?;
        }
        Ok(())
    }
}

/// The ReportResp to `mad` if it is a Report: the Report with the
/// response method and status OK, sent back to where it came from as soon
/// as it is received, whatever the client is doing then (the SA retries a
/// Report for only about a second).
fn report_response(mad: &[u8]) -> Option<Bytes> {
    let (h, _) = MadHeader::parse(mad).ok()?;
    if h.method() != Method::REPORT {
        return None;
    }
    let mut resp = BytesMut::from(mad);
    let (h, _) = MadHeader::mut_from_prefix(&mut resp[..]).ok()?;
    h.set_method(Method::REPORT_RESP);
    h.set_status(MadStatus::OK);
    Some(resp.freeze())
}

#[cfg(test)]
mod tests {
    use mad_codec::{AttributeId, SaMadBuilder};

    use super::*;

    #[test]
    fn a_report_is_answered_with_its_own_transaction_and_a_get_is_not() {
        let report =
            SaMadBuilder::request(Method::REPORT, 0x02DA_B001, AttributeId::NOTICE).into_bytes();
        let resp = report_response(&report).expect("a ReportResp");
        let (h, _) = MadHeader::parse(&resp).unwrap();
        assert_eq!(h.method(), Method::REPORT_RESP);
        assert_eq!(h.status(), MadStatus::OK);
        assert_eq!(h.transaction_id(), 0x02DA_B001);
        assert_eq!(resp.len(), report.len());
        let get = SaMadBuilder::request(Method::GET, 7, AttributeId::PATH_RECORD).into_bytes();
        assert!(report_response(&get).is_none());
    }
}
