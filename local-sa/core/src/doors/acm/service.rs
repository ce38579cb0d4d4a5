//! The ibacm door's logic, without I/O: each client message becomes either
//! a reply at once or a PathRecord [`Request`] for the SA agent of the
//! endpoint's port; each of the agent's [`LocalReply`]s becomes the
//! client's reply. The daemon moves bytes; the agent answers from the same
//! cache, with the same forwarding and coalescing, as it does MADs.
//!
//! Semantics follow ibacm (`ibacm/src/acm.c`, `prov/acmp/src/acmp.c`):
//!
//! * RESOLVE with a PATH entry: the path's non-zero fields select
//!   (`acm_path_comp_mask`). With QUERY_SA the template goes to the master
//!   as it is and the reply is the request with the master's record in
//!   place; otherwise, like acmp, the template is the destination (DGID
//!   or DLID) from the source endpoint (its SGID, SLID, P_Key), reversible.
//! * RESOLVE with SOURCE/DEST entries: the destination (NAME, IP, IP6 via
//!   the [`Names`] tables: the files' first, then what the agents learned
//!   from the master SA; GID and LID as they are) from the source
//!   endpoint (named by an address, GID or LID; the first endpoint if
//!   none is given), as a Get with SGID, SLID, DGID or DLID, P_Key and
//!   Reversible.
//! * NODELAY answers from the cache only (ENODATA on a miss; the query
//!   goes to the master meanwhile, so that a retry finds it).
//! * PERF_QUERY: the combined counters, an endpoint's by index (from 1)
//!   or by source address. EP_QUERY: endpoint N (from 1) of port P (0:
//!   any).
//!
//! Every message gets exactly one reply; a client may pipeline up to
//! [`AcmConfig::max_pending`] requests, and more are refused with ENOMEM.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, MadStatus, Method, PathRecord};

use super::wire::{self, EndpointRecord, Entry, Header, Message, Opcode, Status, counter, flags};
use crate::config::PortIdentity;
use crate::doors::{Door, Framing, Input, Output, Unframeable};
use crate::names::hosts::{HostAddress, Names};
use crate::path_flags;
use crate::request::{ConnId, LocalReply, Lookup, PathQuery, Request};

/// One endpoint: a port and one of its P_Keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Which SA agent serves its port (the daemon's numbering).
    pub agent: usize,
    /// The port.
    pub port: PortIdentity,
    /// The adapter's node GUID.
    pub dev_guid: u64,
    /// The port's number.
    pub port_num: u8,
    /// The adapter's number of ports.
    pub phys_port_cnt: u8,
    /// The P_Key.
    pub pkey: u16,
    /// Names and addresses of this endpoint.
    pub addresses: Vec<HostAddress>,
}

impl Endpoint {
    /// Whether `address` names this endpoint.
    fn is(&self, address: &HostAddress) -> bool {
        match address {
            HostAddress::Gid(gid) => *gid == self.port.gid,
            HostAddress::Lid(lid) => self.port.lids().contains(lid),
            other => self.addresses.contains(other),
        }
    }

    /// Whether a path template can start here (ibacm's
    /// `acm_is_path_from_port` and `acm_same_partition`).
    fn sources(&self, path: &PathRecord) -> bool {
        let from_port = if !path.sgid().is_zero() {
            path.sgid() == self.port.gid
        } else if path.slid() != 0 {
            self.port.lids().contains(&path.slid())
        } else {
            path.dgid().is_zero()
                || path.dgid() == self.port.gid
                || path.dgid().prefix() == self.port.gid.prefix()
        };
        from_port && (path.pkey() == 0 || (path.pkey() | 0x8000) == (self.pkey | 0x8000))
    }
}

/// Limits of the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcmConfig {
    /// Requests one connection may have waiting for the master.
    pub max_pending: usize,
}

impl Default for AcmConfig {
    fn default() -> Self {
        Self { max_pending: 64 }
    }
}

/// Counts of what the door refused for its own limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcmDoorCounters {
    /// Requests refused because their connection had too many waiting.
    pub refused_pending: u64,
    /// Messages that could not be decoded.
    pub malformed: u64,
}

/// The ibacm door.
#[derive(Debug)]
pub struct AcmService {
    config: AcmConfig,
    endpoints: Vec<Endpoint>,
    /// Names from the files (the operator's word: they win).
    names: Names,
    /// Names the SA agents learned from the master SA.
    learned: Arc<Names>,
    /// ACM counters per endpoint.
    counters: Vec<[u64; counter::COUNT]>,
    /// ACM counters of the whole service.
    combined: [u64; counter::COUNT],
    pending: HashMap<(ConnId, u32), Pending>,
    per_conn: HashMap<ConnId, usize>,
    next_id: u32,
    door: AcmDoorCounters,
    /// The kernel's routing, for a source the client does not name.
    route: Option<Box<dyn SourceRoute>>,
    /// What the daemon is to do, in order.
    out: VecDeque<Output>,
}

/// Which local address the kernel would send from to reach an IP address
/// (the daemon asks the kernel's routing table; tests give a table).
pub trait SourceRoute: std::fmt::Debug {
    /// The source address of the kernel's route to `destination`, if it
    /// has one.
    fn source_for(&self, destination: IpAddr) -> Option<IpAddr>;
}

impl AcmService {
    /// A door serving `endpoints` (the first is the default source),
    /// resolving names with `names`.
    pub fn new(config: AcmConfig, endpoints: Vec<Endpoint>, names: Names) -> Self {
        Self {
            config,
            counters: vec![[0; counter::COUNT]; endpoints.len()],
            endpoints,
            names,
            learned: Arc::default(),
            combined: [0; counter::COUNT],
            pending: HashMap::new(),
            per_conn: HashMap::new(),
            next_id: 1,
            door: AcmDoorCounters::default(),
            route: None,
            out: VecDeque::new(),
        }
    }

    /// Chooses sources the client does not name by the kernel's routes
    /// to IP destinations, as ibacm does.
    pub fn set_source_route(&mut self, route: Box<dyn SourceRoute>) {
        self.route = Some(route);
    }

    /// The endpoints served.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The combined ACM counters.
    pub fn counters(&self) -> [u64; counter::COUNT] {
        self.combined
    }

    /// What the door refused.
    pub fn door_counters(&self) -> AcmDoorCounters {
        self.door
    }

    /// Requests waiting for an agent.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// One whole message from connection `conn` (framed by
    /// [`wire::message_len`], so at least a header long): the reply, or
    /// the question for an agent.
    fn handle_message(&mut self, conn: ConnId, bytes: &[u8]) -> Output {
        let Some(head) = bytes.first_chunk::<{ wire::HEADER_LEN }>() else {
            self.door.malformed += 1;
            return Output::Send {
                conn,
                bytes: wire::error_reply(&Header::parse(&[0; wire::HEADER_LEN]), Status::EINVAL),
            };
        };
        let header = Header::parse(head);
        let message = match wire::decode(bytes) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(conn, error = %e, "a malformed ACM message");
                self.door.malformed += 1;
                self.combined[counter::ERROR] += 1;
                return Output::Send {
                    conn,
                    bytes: wire::error_reply(&header, e.status()),
                };
            }
        };
        match header.op() {
            Opcode::RESOLVE => self.resolve(conn, message),
            Opcode::PERF_QUERY => Output::Send {
                conn,
                bytes: self.perf_query(&message),
            },
            _ => Output::Send {
                conn,
                bytes: self.endpoint_query(&header),
            },
        }
    }

    /// Connection `conn` closed: its waiting requests are forgotten (the
    /// agent is told separately).
    fn handle_closed(&mut self, conn: ConnId) {
        self.pending.retain(|(c, _), _| *c != conn);
        self.per_conn.remove(&conn);
    }

    fn count(&mut self, endpoint: usize, which: usize) {
        self.combined[which] += 1;
        if let Some(c) = self.counters.get_mut(endpoint) {
            c[which] += 1;
        }
    }

    /// A RESOLVE is served by `endpoint` (the combined count was taken
    /// when it arrived).
    fn resolving(&mut self, endpoint: usize) {
        if let Some(c) = self.counters.get_mut(endpoint) {
            c[counter::RESOLVE] += 1;
        }
    }

    fn count_outcome(&mut self, endpoint: usize, status: Status) {
        match status {
            Status::SUCCESS => {}
            Status::ENODATA => self.count(endpoint, counter::NODATA),
            _ => self.count(endpoint, counter::ERROR),
        }
    }

    /// An error reply to a RESOLVE, counted.
    fn refuse(
        &mut self,
        conn: ConnId,
        endpoint: Option<usize>,
        header: &Header,
        status: Status,
    ) -> Output {
        match endpoint {
            Some(ep) => self.count_outcome(ep, status),
            None if status == Status::ENODATA => self.combined[counter::NODATA] += 1,
            None => self.combined[counter::ERROR] += 1,
        }
        Output::Send {
            conn,
            bytes: wire::resolve_reply(header, status, &[]),
        }
    }

    fn ask(
        &mut self,
        conn: ConnId,
        endpoint: usize,
        header: Header,
        shape: ReplyShape,
        query: PathQuery,
        lookup: Lookup,
    ) -> Output {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.pending.insert(
            (conn, id),
            Pending {
                endpoint,
                header,
                shape,
            },
        );
        *self.per_conn.entry(conn).or_default() += 1;
        Output::Ask {
            agent: self.endpoints[endpoint].agent,
            conn,
            id,
            request: Request::PathQuery { query, lookup },
        }
    }

    fn perf_query(&self, message: &Message) -> Bytes {
        let header = &message.header;
        let index = header.data[1];
        let by_source = message
            .entries
            .first()
            .filter(|e| e.flags & flags::SOURCE != 0);
        let endpoint = match (index, by_source) {
            (0, None) => return wire::perf_reply(header, Status::SUCCESS, &self.combined),
            (_, Some(entry)) => entry.address().ok().and_then(|a| self.source_endpoint(&a)),
            (n, None) => Some(usize::from(n) - 1).filter(|i| *i < self.endpoints.len()),
        };
        match endpoint {
            Some(ep) => wire::perf_reply(header, Status::SUCCESS, &self.counters[ep]),
            None => wire::perf_reply(header, Status::ESRCADDR, &[]),
        }
    }

    fn endpoint_query(&self, header: &Header) -> Bytes {
        let index = usize::from(header.data[0]);
        let port = header.data[1];
        let ep = index.checked_sub(1).and_then(|i| {
            self.endpoints
                .iter()
                .filter(|e| port == 0 || e.port_num == port)
                .nth(i)
        });
        let record = ep.map(|e| EndpointRecord {
            dev_guid: e.dev_guid,
            port_num: e.port_num,
            phys_port_cnt: e.phys_port_cnt,
            pkey: e.pkey,
            provider: "local-sa".to_owned(),
            addresses: e.addresses.iter().map(ToString::to_string).collect(),
        });
        wire::endpoint_reply(header, record.as_ref())
    }
}

mod door;
mod queries;
mod replies;
mod selection;
mod shapes;
#[cfg(test)]
mod tests;

pub use queries::path_mask;
use queries::{acmp_get, get_selected_by_fields, lookup_for};
pub use shapes::pick_alternate;
use shapes::{AlternateFrom, Pending, ReplyShape, resolve_entries};
