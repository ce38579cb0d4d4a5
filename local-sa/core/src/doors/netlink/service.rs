//! The kernel door's logic, without I/O: each RESOLVE becomes a PathRecord
//! [`Request`] for the SA agent of the port the kernel names (device and
//! port number), answered from the same cache, with the same forwarding
//! and coalescing, as a MAD; each IP_RESOLVE is answered at once from the
//! names tables. The daemon moves datagrams.
//!
//! Semantics follow the kernel (`sa_query.c`, `addr.c`) and ibacm
//! (`acm_nl_process_resolve`, `acm_nl_send`):
//!
//! * RESOLVE: a Get with the attributes the kernel sent (SGID — this
//!   port's GID if absent —, DGID, ServiceID, TClass, P_Key, QoSClass) and
//!   Reversible for the GMP and ALL uses; the reply is the one record,
//!   flagged as the kernel looks for it. A RESOLVE without a DGID, for a
//!   port not served, or whose query fails (no path, the master silent)
//!   gets `RDMA_NL_LS_F_ERR`, and the kernel sends its own MAD at once.
//! * IP_RESOLVE: the address's GID from the names tables (the files'
//!   first, then the local-sa directory and NodeDescriptions); an unknown
//!   address gets ERR (the kernel then times out its lookup, as without a
//!   listener).
//! * A message that cannot be decoded gets ERR when its header can be
//!   read, else is dropped; both are counted. Nothing the kernel or a peer
//!   sends makes the door hold more than [`NetlinkConfig::max_pending`]
//!   requests: past that, ERR at once.
//! * Only the kernel is answered. The daemon says who sent each datagram
//!   from the socket's source address (not the header's port ID, which the
//!   sender writes); a message from anyone else could carry the sequence
//!   number of one of the kernel's pending queries and have the kernel
//!   take our reply for the answer to it, so it is dropped unread,
//!   counted and logged once a minute per sender. An empty datagram is
//!   counted and ignored: it is not the end of anything.
//! * Time: the kernel waits [`NetlinkConfig::kernel_timeout`] for each
//!   reply (the door tells it so with SET_TIMEOUT,
//!   [`NetlinkService::set_timeout_message`]), then sends its own MAD. A
//!   RESOLVE the agent has not answered by
//!   [`NetlinkConfig::answer_within`] gets ERR, so that the kernel falls
//!   back at once rather than at its time-out; the agent's answer, when it
//!   comes, still fills the cache for the next query.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{MadStatus, Method, PathRecord};

use super::wire::{self, Body, Header, IpResolve, PathUse, Resolve};
use crate::config::PortIdentity;
use crate::doors::{DatagramSender, Door, Framing, Input, Output};
use crate::log_limit::LogLimit;
use crate::names::hosts::{HostAddress, Names};
use crate::request::{ConnId, LocalReply, Lookup, PathQuery, Request};

/// A port the kernel may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPort {
    /// Which SA agent serves it (the daemon's numbering).
    pub agent: usize,
    /// The RDMA device's name, as the kernel sends it (`mlx5_0`).
    pub device: String,
    /// The port's number on the device.
    pub port_num: u8,
    /// The port.
    pub port: PortIdentity,
}

/// The time-outs the kernel accepts in a SET_TIMEOUT
/// (`IB_SA_LOCAL_SVC_TIMEOUT_MIN` and `_MAX` in `sa_query.c`).
pub const KERNEL_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(40)..=Duration::from_millis(200_000);

/// The kernel's time-out until a listener sets one
/// (`IB_SA_LOCAL_SVC_TIMEOUT_DEFAULT`).
pub const KERNEL_DEFAULT_TIMEOUT: Duration = Duration::from_millis(2000);

/// Limits and times of the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetlinkConfig {
    /// RESOLVEs waiting for an agent at once.
    pub max_pending: usize,
    /// How long the kernel waits for each reply: what the door tells it
    /// at start, within [`KERNEL_TIMEOUT_RANGE`].
    pub kernel_timeout: Duration,
}

impl Default for NetlinkConfig {
    fn default() -> Self {
        Self {
            max_pending: 4096,
            kernel_timeout: KERNEL_DEFAULT_TIMEOUT,
        }
    }
}

impl NetlinkConfig {
    /// The kernel time-out that covers an agent's worst case: `attempts`
    /// requests to the master of `per_attempt` each, and half a second for
    /// the rest, within [`KERNEL_TIMEOUT_RANGE`].
    pub fn worst_case(per_attempt: Duration, attempts: u32) -> Duration {
        let worst = per_attempt.saturating_mul(attempts.max(1)) + Duration::from_millis(500);
        clamp_kernel_timeout(worst)
    }

    /// When an unanswered RESOLVE gets ERR: the kernel's time-out less a
    /// tenth (20 ms to 500 ms) for the reply's way to the kernel, so that
    /// the ERR is there before the kernel stops waiting.
    pub fn answer_within(&self) -> Duration {
        let timeout = clamp_kernel_timeout(self.kernel_timeout);
        let margin = (timeout / 10).clamp(Duration::from_millis(20), Duration::from_millis(500));
        timeout - margin
    }
}

/// `timeout` within the range the kernel accepts.
pub fn clamp_kernel_timeout(timeout: Duration) -> Duration {
    timeout.clamp(*KERNEL_TIMEOUT_RANGE.start(), *KERNEL_TIMEOUT_RANGE.end())
}

/// What the door has seen and done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetlinkCounters {
    /// RESOLVEs received.
    pub resolves: u64,
    /// IP_RESOLVEs received.
    pub ip_resolves: u64,
    /// Replies with a record or a GID.
    pub answered: u64,
    /// Of those, RESOLVEs answered from the cache without the master.
    pub from_cache: u64,
    /// Replies with `RDMA_NL_LS_F_ERR`.
    pub failed: u64,
    /// Messages that could not be decoded (answered ERR or dropped).
    pub malformed: u64,
    /// RESOLVEs for a device or port this daemon does not serve.
    pub unknown_port: u64,
    /// RESOLVEs refused because [`NetlinkConfig::max_pending`] were waiting.
    pub refused_pending: u64,
    /// RESOLVEs answered ERR because the agent had not answered within
    /// [`NetlinkConfig::answer_within`] (counted in `failed` too).
    pub past_deadline: u64,
    /// Errors the kernel sent back for messages of ours.
    pub kernel_errors: u64,
    /// Datagrams from a sender other than the kernel, dropped unread.
    pub not_from_kernel: u64,
    /// Empty datagrams, ignored.
    pub empty: u64,
}

impl NetlinkCounters {
    /// The counters as `name value` fields for the counters file.
    pub fn fields(&self) -> [(&'static str, u64); 12] {
        [
            ("netlink_resolves", self.resolves),
            ("netlink_ip_resolves", self.ip_resolves),
            ("netlink_answered", self.answered),
            ("netlink_from_cache", self.from_cache),
            ("netlink_failed", self.failed),
            ("netlink_malformed", self.malformed),
            ("netlink_unknown_port", self.unknown_port),
            ("netlink_refused_pending", self.refused_pending),
            ("netlink_past_deadline", self.past_deadline),
            ("netlink_kernel_errors", self.kernel_errors),
            ("netlink_not_from_kernel", self.not_from_kernel),
            ("netlink_empty", self.empty),
        ]
    }
}

/// The warnings the kernel, or another sender, can cause the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Warning {
    /// The kernel sent back an error for one of local-sa's messages.
    KernelRefusal,
    /// A datagram from a sender other than the kernel.
    NotFromKernel,
}

/// A RESOLVE waiting for its agent.
#[derive(Debug)]
struct Pending {
    header: Header,
    path_use: PathUse,
}

/// Past this many deadlines per pending RESOLVE, the deadline queue drops
/// those of answered RESOLVEs at once rather than when they come due.
const DEADLINES_PER_PENDING: usize = 4;

/// The kernel door.
#[derive(Debug)]
pub struct NetlinkService {
    config: NetlinkConfig,
    /// The connection number the door's requests carry.
    conn: ConnId,
    ports: Vec<KernelPort>,
    /// Names from the files (the operator's word: they win).
    names: Names,
    /// Names the SA agents learned from the master SA.
    learned: Arc<Names>,
    pending: HashMap<u32, Pending>,
    /// When each asked RESOLVE is due, in the order asked (the deadlines
    /// grow with it); entries of answered RESOLVEs are dropped as they
    /// reach the front.
    deadlines: VecDeque<(Instant, u32)>,
    next_id: u32,
    counters: NetlinkCounters,
    /// Lines about datagrams not from the kernel (one a minute per sender)
    /// and the kernel's refusals (one a minute per errno).
    log: LogLimit<Warning>,
    /// What the daemon is to do, in order.
    out: VecDeque<Output>,
}

impl NetlinkService {
    /// A door for `ports`, whose requests to the agents carry connection
    /// number `conn` (one no local connection uses).
    pub fn new(config: NetlinkConfig, conn: ConnId, ports: Vec<KernelPort>, names: Names) -> Self {
        Self {
            config,
            conn,
            ports,
            names,
            learned: Arc::default(),
            pending: HashMap::new(),
            deadlines: VecDeque::new(),
            next_id: 1,
            counters: NetlinkCounters::default(),
            log: LogLimit::new(Duration::from_secs(60)),
            out: VecDeque::new(),
        }
    }

    /// The connection number of the door's requests.
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// What the door has seen and done.
    pub fn counters(&self) -> NetlinkCounters {
        self.counters
    }

    /// RESOLVEs waiting for an agent.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The kernel refused a message of ours with `errno`: logged once a
    /// minute per errno (a daemon without CAP_NET_ADMIN is refused every
    /// reply).
    fn log_kernel_refusal(&mut self, now: Instant, errno: i32) {
        if let Some(earlier_not_logged) =
            self.log
                .allow(now, Warning::KernelRefusal, errno.unsigned_abs())
        {
            // The kernel sends the errno negated.
            let error = std::io::Error::from_raw_os_error(errno.saturating_abs());
            tracing::warn!(
                %error,
                earlier_not_logged,
                "the kernel refused a netlink message of ours (EPERM: local-sa needs CAP_NET_ADMIN to answer the kernel)"
            );
        }
    }

    /// The SET_TIMEOUT to send the kernel at start, from process `pid`.
    pub fn set_timeout_message(&self, pid: u32) -> Bytes {
        let timeout = clamp_kernel_timeout(self.config.kernel_timeout);
        let millis = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        wire::set_timeout(1, pid, millis)
    }

    /// One datagram from `from`, received at `now`: what to send and ask
    /// is queued, in order (nothing, for one not from the kernel).
    fn handle_datagram(&mut self, now: Instant, from: DatagramSender, datagram: &[u8]) {
        if from != DatagramSender::Kernel {
            self.counters.not_from_kernel += 1;
            let port = match from {
                DatagramSender::Process(port) => port,
                _ => u32::MAX,
            };
            if let Some(earlier_not_logged) = self.log.allow(now, Warning::NotFromKernel, port) {
                tracing::warn!(
                    sender_port = ?(port != u32::MAX).then_some(port),
                    earlier_not_logged,
                    "a netlink message not from the kernel was dropped unread (only the kernel's queries are answered)"
                );
            }
            return;
        }
        if datagram.is_empty() {
            self.counters.empty += 1;
            return;
        }
        for (header, message) in wire::messages(datagram) {
            let output = match message {
                Ok(m) => self.handle_message(now, m.header, m.body),
                Err(e) => {
                    tracing::debug!(error = %e, "a malformed netlink message");
                    self.counters.malformed += 1;
                    match header {
                        // Only a request is worth a reply; the kernel
                        // would take anything else for one.
                        Some(h) if h.flags & wire::F_REQUEST != 0 => self.fail(&h),
                        _ => None,
                    }
                }
            };
            self.out.extend(output);
        }
    }

    fn handle_message(&mut self, now: Instant, header: Header, body: Body) -> Option<Output> {
        match body {
            Body::Resolve(r) => {
                self.counters.resolves += 1;
                self.resolve(now, header, r)
            }
            Body::IpResolve(r) => {
                self.counters.ip_resolves += 1;
                self.ip_resolve(&header, r)
            }
            Body::KernelError { errno } => {
                if errno != 0 {
                    self.counters.kernel_errors += 1;
                    self.log_kernel_refusal(now, errno);
                }
                None
            }
            // Only listeners send SET_TIMEOUT; another one's is no question.
            Body::SetTimeout(_) => None,
        }
    }

    fn resolve(&mut self, now: Instant, header: Header, r: Resolve) -> Option<Output> {
        let Some(port) = self
            .ports
            .iter()
            .find(|p| p.device == r.device && p.port_num == r.port)
        else {
            self.counters.unknown_port += 1;
            tracing::debug!(
                device = r.device,
                port = r.port,
                "a RESOLVE for a port not served"
            );
            return self.fail(&header);
        };
        let Some(dgid) = r.dgid else {
            return self.fail(&header);
        };
        if self.pending.len() >= self.config.max_pending {
            self.counters.refused_pending += 1;
            return self.fail(&header);
        }
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(r.sgid.unwrap_or(port.port.gid));
        t.set_dgid(dgid);
        let mut mask = pr::SGID | pr::DGID;
        if let Some(v) = r.service_id {
            t.set_service_id(v);
            mask |= pr::SERVICE_ID;
        }
        if let Some(v) = r.tclass {
            t.set_tclass(v);
            mask |= pr::TCLASS;
        }
        if let Some(v) = r.pkey {
            t.set_pkey(v);
            mask |= pr::PKEY;
        }
        if let Some(v) = r.qos_class {
            t.set_qos_class(v);
            mask |= pr::QOS_CLASS;
        }
        if r.path_use.reversible() {
            t.set_reversible(true);
            mask |= pr::REVERSIBLE;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.pending.insert(
            id,
            Pending {
                header,
                path_use: r.path_use,
            },
        );
        self.deadlines
            .push_back((now + self.config.answer_within(), id));
        Some(Output::Ask {
            agent: port.agent,
            conn: self.conn,
            id,
            request: Request::PathQuery {
                query: PathQuery {
                    method: Method::GET,
                    mask,
                    template: t,
                },
                lookup: Lookup::Anywhere,
            },
        })
    }

    fn ip_resolve(&mut self, header: &Header, r: IpResolve) -> Option<Output> {
        let address = HostAddress::Ip(r.address);
        let gid = self
            .names
            .resolve(&address)
            .or_else(|| self.learned.resolve(&address));
        match gid {
            Some(gid) => {
                self.counters.answered += 1;
                Some(self.send(wire::ip_resolve_reply(header, gid)))
            }
            None => self.fail(header),
        }
    }

    fn fail(&mut self, header: &Header) -> Option<Output> {
        self.counters.failed += 1;
        Some(self.send(wire::error_reply(header)))
    }

    /// `bytes` for the kernel.
    fn send(&self, bytes: Bytes) -> Output {
        Output::Send {
            conn: self.conn,
            bytes,
        }
    }

    /// When [`Self::handle_timeout`] has an ERR to send, if ever.
    fn next_deadline(&mut self) -> Option<Instant> {
        self.drop_answered_deadlines();
        self.deadlines.front().map(|(due, _)| *due)
    }

    /// ERR for every RESOLVE whose agent has not answered by now: the
    /// kernel asks the SA itself at once.
    fn expire(&mut self, now: Instant) -> Vec<Bytes> {
        let mut replies = Vec::new();
        while let Some(&(due, id)) = self.deadlines.front() {
            if due > now {
                break;
            }
            self.deadlines.pop_front();
            if let Some(pending) = self.pending.remove(&id) {
                self.counters.past_deadline += 1;
                self.counters.failed += 1;
                replies.push(wire::error_reply(&pending.header));
            }
        }
        if !replies.is_empty() {
            tracing::debug!(
                count = replies.len(),
                "RESOLVEs not answered in time: ERR, the kernel asks the SA itself"
            );
        }
        replies
    }

    /// Drops the deadlines of answered RESOLVEs from the front, and from
    /// everywhere when answered ones pile up behind a slow one.
    fn drop_answered_deadlines(&mut self) {
        while let Some((_, id)) = self.deadlines.front()
            && !self.pending.contains_key(id)
        {
            self.deadlines.pop_front();
        }
        if self.deadlines.len() > DEADLINES_PER_PENDING * self.config.max_pending.max(1) {
            let pending = &self.pending;
            self.deadlines.retain(|(_, id)| pending.contains_key(id));
        }
    }

    /// An agent answered: the reply for the kernel, if the request was
    /// this door's and is still waiting (not past its deadline).
    fn reply_to(&mut self, reply: &LocalReply) -> Option<Bytes> {
        if reply.conn != self.conn {
            return None;
        }
        let pending = self.pending.remove(&reply.request)?;
        let record = reply.body.path_records().next();
        match (reply.status, record) {
            (MadStatus::OK, Some(record)) => {
                self.counters.answered += 1;
                if !reply.from_master {
                    self.counters.from_cache += 1;
                }
                Some(wire::resolve_reply(
                    &pending.header,
                    pending.path_use,
                    &[record],
                ))
            }
            _ => {
                self.counters.failed += 1;
                Some(wire::error_reply(&pending.header))
            }
        }
    }
}

#[cfg(test)]
mod tests;

impl Door for NetlinkService {
    fn framing(&self) -> Option<Framing> {
        None
    }

    fn datagram_conn(&self) -> Option<ConnId> {
        Some(self.conn)
    }

    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        if let Input::Datagram { from, bytes } = input {
            self.handle_datagram(now, from, bytes);
        }
    }

    fn handle_reply(&mut self, _now: Instant, reply: &LocalReply) {
        if let Some(bytes) = self.reply_to(reply) {
            let output = self.send(bytes);
            self.out.push_back(output);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.next_deadline()
    }

    fn handle_timeout(&mut self, now: Instant) {
        for bytes in self.expire(now) {
            let output = self.send(bytes);
            self.out.push_back(output);
        }
    }

    fn handle_port_change(&mut self, agent: usize, port: PortIdentity) {
        for p in self.ports.iter_mut().filter(|p| p.agent == agent) {
            p.port = port;
        }
    }

    fn set_names(&mut self, names: Names) {
        self.names = names;
    }

    fn set_learned_names(&mut self, names: Arc<Names>) {
        self.learned = names;
    }

    fn counter_fields(&self) -> Vec<(&'static str, u64)> {
        self.counters.fields().to_vec()
    }
}
