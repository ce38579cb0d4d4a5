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
use mad_codec::{ComponentMask, Gid, MadStatus, Method, PathRecord};

use super::wire::{self, EndpointRecord, Entry, Header, Message, Opcode, Status, counter, flags};
use crate::config::PortIdentity;
use crate::doors::{Door, Framing, Input, Output};
use crate::naming::{Address, Names};
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
    pub addresses: Vec<Address>,
}

impl Endpoint {
    /// Whether `address` names this endpoint.
    fn is(&self, address: &Address) -> bool {
        match address {
            Address::Gid(gid) => *gid == self.port.gid,
            Address::Lid(lid) => self.port.lids().contains(lid),
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

/// A request waiting for its agent's reply.
#[derive(Debug)]
struct Pending {
    endpoint: usize,
    header: Header,
    shape: ReplyShape,
}

/// How the agent's answer becomes the reply.
#[derive(Debug)]
enum ReplyShape {
    /// A path, and the source entry ibacm echoes when it chose the source;
    /// with `alternate`, where to look next for an alternate path.
    Resolve {
        source: Option<Entry>,
        alternate: Option<AlternateFrom>,
        /// The question, to ask one way at a time when the pair has no
        /// reversible path (SOURCE/DEST requests that may reach the
        /// master).
        one_way: Option<(PathRecord, Lookup)>,
    },
    /// No reversible path: the path from the source, one way.
    Outbound {
        source: Option<Entry>,
        lookup: Lookup,
        counted: usize,
    },
    /// The way out is in; this is the way back (destination to source).
    Inbound {
        source: Option<Entry>,
        outbound: PathRecord,
        counted: usize,
    },
    /// The primary path is in (from endpoint `counted`); these are the
    /// known paths from where `from` says, one of which may be the
    /// alternate.
    Alternate {
        source: Option<Entry>,
        primary: PathRecord,
        from: AlternateFrom,
        counted: usize,
    },
    /// The request echoed with the master's record (QUERY_SA).
    QuerySa(Message),
}

/// Where an alternate path (for APM) can come from, looked up in what
/// the agents hold only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AlternateFrom {
    /// Endpoint N, on another port of this node in the same partition:
    /// another rail, whatever the LMC.
    OtherPort(usize),
    /// The same port, to another of the destination's LIDs (LMC > 0).
    OtherLid,
}

/// Counts of what the door refused for its own limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DoorCounters {
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
    door: DoorCounters,
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
            door: DoorCounters::default(),
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
    pub fn door_counters(&self) -> DoorCounters {
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

    /// The agent answered request `reply.request` of `reply.conn`: the
    /// reply for the client (or the door's next question for it), if the
    /// request was this door's.
    fn handle_answer(&mut self, reply: &LocalReply) -> Option<Output> {
        let conn = reply.conn;
        let pending = self.pending.remove(&(reply.conn, reply.request))?;
        if let Some(n) = self.per_conn.get_mut(&reply.conn) {
            *n = n.saturating_sub(1);
        }
        let records: Vec<PathRecord> = reply.body.path_records().collect();
        let record = records.first().copied();
        let status = match (reply.status, record) {
            (MadStatus::OK, Some(_)) => Status::SUCCESS,
            (MadStatus::OK | MadStatus::ERR_NO_RECORDS, _) => Status::ENODATA,
            (MadStatus::BUSY, _) => Status::ETIMEDOUT,
            (MadStatus::ERR_NO_RESOURCES, _) => Status::ENOMEM,
            _ => Status::EINVAL,
        };
        let route = if reply.from_master {
            counter::ROUTE_QUERY
        } else {
            counter::ROUTE_CACHE
        };
        let bytes = match pending.shape {
            ReplyShape::Resolve {
                source,
                alternate,
                one_way,
            } => {
                if status == Status::SUCCESS {
                    self.count(pending.endpoint, route);
                }
                if let (Some(from), Some(primary)) = (alternate, record) {
                    return Some(self.ask_alternate(reply.conn, pending, source, primary, from));
                }
                if let (Status::ENODATA, Some((template, lookup))) = (status, one_way)
                    && lookup != Lookup::CacheOnly
                {
                    return Some(self.ask_one_way(reply.conn, pending, source, template, lookup));
                }
                resolve_entries(&pending.header, status, record.as_ref(), None, source)
            }
            ReplyShape::Alternate {
                source,
                primary,
                from,
                counted,
            } => {
                // The primary stands whatever the lookup found.
                let alternate = match from {
                    // Another port is another route whatever its DLID.
                    AlternateFrom::OtherPort(_) => records.first().copied(),
                    AlternateFrom::OtherLid => pick_alternate(&primary, &records),
                };
                let header = pending.header;
                self.count_outcome(counted, Status::SUCCESS);
                return Some(Output::Send {
                    conn,
                    bytes: resolve_entries(
                        &header,
                        Status::SUCCESS,
                        Some(&primary),
                        alternate.as_ref(),
                        source,
                    ),
                });
            }
            ReplyShape::Outbound {
                source,
                lookup,
                counted,
            } => match record {
                Some(outbound) => {
                    return Some(
                        self.ask_inbound(reply.conn, pending, source, outbound, lookup, counted),
                    );
                }
                None => {
                    self.count_outcome(counted, status);
                    return Some(Output::Send {
                        conn,
                        bytes: resolve_entries(&pending.header, status, None, None, source),
                    });
                }
            },
            ReplyShape::Inbound {
                source,
                outbound,
                counted,
            } => {
                self.count_outcome(counted, Status::SUCCESS);
                let mut entries = vec![Entry::path(
                    path_flags::PRIMARY | path_flags::OUTBOUND,
                    &outbound,
                )];
                if let Some(inbound) = record {
                    entries.push(Entry::path(
                        path_flags::PRIMARY | path_flags::INBOUND,
                        &inbound,
                    ));
                }
                entries.extend(source);
                return Some(Output::Send {
                    conn,
                    bytes: wire::resolve_reply(&pending.header, Status::SUCCESS, &entries),
                });
            }
            ReplyShape::QuerySa(message) => wire::query_reply(&message, status, record.as_ref()),
        };
        self.count_outcome(pending.endpoint, status);
        Some(Output::Send { conn, bytes })
    }

    /// Asks for the known paths to the primary's destination port from
    /// where `from` says, for an alternate: from what that port's agent
    /// holds only, never from the master.
    fn ask_alternate(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        primary: PathRecord,
        from: AlternateFrom,
    ) -> Output {
        let endpoint = match from {
            AlternateFrom::OtherPort(other) => other,
            AlternateFrom::OtherLid => pending.endpoint,
        };
        let ep = &self.endpoints[endpoint];
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(ep.port.gid);
        t.set_dgid(primary.dgid());
        t.set_pkey(primary.pkey());
        t.set_reversible(true);
        let query = PathQuery {
            method: Method::GET_TABLE,
            mask: pr::SGID | pr::DGID | pr::PKEY | pr::REVERSIBLE,
            template: t,
        };
        self.ask(
            conn,
            endpoint,
            pending.header,
            ReplyShape::Alternate {
                source,
                primary,
                from,
                counted: pending.endpoint,
            },
            query,
            Lookup::KnownOnly,
        )
    }

    /// The pair has no reversible path: asks for the path from the source
    /// one way (Reversible not required), then the way back.
    fn ask_one_way(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        mut template: PathRecord,
        lookup: Lookup,
    ) -> Output {
        template.set_reversible(false);
        let query = get_selected_by_fields(template);
        self.ask(
            conn,
            pending.endpoint,
            pending.header,
            ReplyShape::Outbound {
                source,
                lookup,
                counted: pending.endpoint,
            },
            query,
            lookup,
        )
    }

    /// The way out (`outbound`) is in: asks for the way back, from its
    /// destination to its source.
    fn ask_inbound(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        outbound: PathRecord,
        lookup: Lookup,
        counted: usize,
    ) -> Output {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(outbound.dgid());
        t.set_dgid(outbound.sgid());
        t.set_slid(outbound.dlid());
        t.set_dlid(outbound.slid());
        t.set_pkey(outbound.pkey());
        t.set_numb_path(1);
        let query = get_selected_by_fields(t);
        self.ask(
            conn,
            pending.endpoint,
            pending.header,
            ReplyShape::Inbound {
                source,
                outbound,
                counted,
            },
            query,
            lookup,
        )
    }

    /// Where an alternate to a path from endpoint `ep` to a port (named by
    /// GID, name or address: a LID names one path) can come from: another
    /// active port of this node in the same partition, else another of
    /// the destination's LIDs when the subnet's LMC gives ports several.
    fn alternate_from(&self, ep: usize) -> Option<AlternateFrom> {
        let e = &self.endpoints[ep];
        let other_port = self.endpoints.iter().position(|o| {
            o.agent != e.agent && o.port.lid != 0 && o.pkey | 0x8000 == e.pkey | 0x8000
        });
        match other_port {
            Some(other) => Some(AlternateFrom::OtherPort(other)),
            None => (e.port.lmc > 0).then_some(AlternateFrom::OtherLid),
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

    fn resolve(&mut self, conn: ConnId, message: Message) -> Output {
        self.combined[counter::RESOLVE] += 1;
        let header = message.header;
        if self.per_conn.get(&conn).copied().unwrap_or(0) >= self.config.max_pending {
            self.door.refused_pending += 1;
            return self.refuse(conn, None, &header, Status::ENOMEM);
        }
        let first = message.entries.first().copied();
        match first.and_then(|e| e.path_record().map(|p| (e, p))) {
            Some((entry, path)) if entry.flags & flags::QUERY_SA != 0 => {
                self.query_sa(conn, message, path)
            }
            Some((entry, path)) => self.resolve_path(conn, header, entry.flags, &path),
            None => self.resolve_destination(conn, &message),
        }
    }

    /// QUERY_SA: the template to the master as it is.
    fn query_sa(&mut self, conn: ConnId, message: Message, path: PathRecord) -> Output {
        let header = message.header;
        let Some(ep) = self.endpoints.iter().position(|e| e.sources(&path)) else {
            return self.refuse(conn, None, &header, Status::ESRCADDR);
        };
        self.resolving(ep);
        self.count(ep, counter::ROUTE_QUERY);
        let query = get_selected_by_fields(path);
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::QuerySa(message),
            query,
            Lookup::Master,
        )
    }

    /// A PATH entry without QUERY_SA.
    fn resolve_path(
        &mut self,
        conn: ConnId,
        header: Header,
        entry_flags: u32,
        path: &PathRecord,
    ) -> Output {
        if path.dlid() == 0 && path.dgid().is_zero() {
            return self.refuse(conn, None, &header, Status::EDESTADDR);
        }
        let Some(ep) = self.endpoints.iter().position(|e| e.sources(path)) else {
            return self.refuse(conn, None, &header, Status::ESRCADDR);
        };
        self.resolving(ep);
        let e = &self.endpoints[ep];
        let mut t = PathRecord::new_zeroed();
        t.set_dgid(path.dgid());
        t.set_dlid(path.dlid());
        t.set_sgid(if path.sgid().is_zero() {
            e.port.gid
        } else {
            path.sgid()
        });
        t.set_slid(if path.slid() == 0 {
            e.port.lid
        } else {
            path.slid()
        });
        let query = acmp_get(t, e.pkey);
        let lookup = lookup_for(entry_flags);
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::Resolve {
                source: None,
                alternate: None,
                one_way: None,
            },
            query,
            lookup,
        )
    }

    /// SOURCE/DEST entries.
    fn resolve_destination(&mut self, conn: ConnId, message: &Message) -> Output {
        let header = message.header;
        let (source, dest) = match source_and_destination(&message.entries) {
            Ok(found) => found,
            Err(status) => return self.refuse(conn, None, &header, status),
        };
        let Ok(dest_address) = dest.address() else {
            return self.refuse(conn, None, &header, Status::EDESTTYPE);
        };
        let (ep, echo) = match source {
            Some(s) => match s.address() {
                Ok(a) => match self.source_endpoint(&a) {
                    Some(ep) => (ep, None),
                    None => return self.refuse(conn, None, &header, Status::ESRCADDR),
                },
                Err(_) => return self.refuse(conn, None, &header, Status::ESRCTYPE),
            },
            None => {
                let Some((ep, chosen)) = self.default_source(&dest_address) else {
                    return self.refuse(conn, None, &header, Status::ESRCADDR);
                };
                let echo = chosen
                    .as_ref()
                    .or_else(|| {
                        self.endpoints[ep]
                            .addresses
                            .iter()
                            .find(|a| same_kind(a, &dest_address))
                    })
                    .map(|a| Entry::for_address(flags::SOURCE, a));
                (ep, echo)
            }
        };
        self.resolving(ep);
        let mut t = PathRecord::new_zeroed();
        match &dest_address {
            Address::Lid(lid) => t.set_dlid(*lid),
            other => match self.gid_of(other) {
                Some(gid) => {
                    if !matches!(other, Address::Gid(_)) {
                        self.count(ep, counter::ADDR_CACHE);
                    }
                    t.set_dgid(gid);
                }
                None => return self.refuse(conn, Some(ep), &header, Status::EDESTADDR),
            },
        }
        let e = &self.endpoints[ep];
        t.set_sgid(e.port.gid);
        t.set_slid(e.port.lid);
        let query = acmp_get(t, e.pkey);
        let lookup = lookup_for(dest.flags);
        let one_way = Some((query.template, lookup));
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::Resolve {
                one_way,
                source: echo,
                // A LID names one path of one port.
                alternate: if matches!(dest_address, Address::Lid(_)) {
                    None
                } else {
                    self.alternate_from(ep)
                },
            },
            query,
            lookup,
        )
    }

    /// The endpoint a client's SOURCE names: the first that owns the
    /// address (its own names and IPs, its GID or LIDs); else, for a name
    /// or IP that the names tables map to one of this node's port GIDs
    /// (its NodeDescription's first word, an entry of the hosts file), the
    /// first endpoint of that port.
    fn source_endpoint(&self, address: &Address) -> Option<usize> {
        if let Some(ep) = self.endpoints.iter().position(|e| e.is(address)) {
            return Some(ep);
        }
        if !matches!(address, Address::Name(_) | Address::Ip(_)) {
            return None;
        }
        let gid = self.gid_of(address)?;
        self.endpoints.iter().position(|e| e.port.gid == gid)
    }

    /// The GID `address` names (a GID itself; a LID none): the operator's
    /// files first, then what the agents learned from the master, then
    /// this node's own endpoints (ibacm's loopback destinations: a node's
    /// own name or address resolves before the directory is read, as
    /// when the first client starts local-sa).
    fn gid_of(&self, address: &Address) -> Option<Gid> {
        self.names
            .resolve(address)
            .or_else(|| self.learned.resolve(address))
            .or_else(|| {
                self.endpoints
                    .iter()
                    .find(|e| e.is(address))
                    .map(|e| e.port.gid)
            })
    }

    /// The endpoint a destination is reached from when the client names
    /// no source, as ibacm chooses it, and the source address chosen:
    ///
    /// 1. for an IP, the kernel's route to it ([`SourceRoute`]) names the
    ///    source address, so the interface, so the port and P_Key
    ///    (ibacm's `acm_svr_select_src`) — when this node owns it;
    /// 2. for a GID (or a name the tables map to one), the first active
    ///    endpoint on its subnet (the same GID prefix): on a node with a
    ///    port on each of two subnets, the right rail;
    /// 3. else the first active endpoint with an address of the
    ///    destination's kind, else the first active one, else the first.
    fn default_source(&self, dest: &Address) -> Option<(usize, Option<Address>)> {
        if let (Address::Ip(ip), Some(route)) = (dest, &self.route)
            && let Some(source) = route.source_for(*ip).map(Address::Ip)
            && let Some(ep) = self
                .endpoints
                .iter()
                .position(|e| e.addresses.contains(&source))
        {
            return Some((ep, Some(source)));
        }
        let active = |e: &&Endpoint| e.port.lid != 0;
        let gid = self.gid_of(dest);
        let on_subnet = gid.and_then(|gid| {
            self.endpoints
                .iter()
                .position(|e| active(&e) && e.port.gid.prefix() == gid.prefix())
        });
        let ep = on_subnet
            .or_else(|| {
                self.endpoints
                    .iter()
                    .position(|e| active(&e) && e.addresses.iter().any(|a| same_kind(a, dest)))
            })
            .or_else(|| self.endpoints.iter().position(|e| active(&e)))
            .or((!self.endpoints.is_empty()).then_some(0))?;
        Some((ep, None))
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

/// The lookup an entry's flags ask for.
fn lookup_for(entry_flags: u32) -> Lookup {
    if entry_flags & flags::NODELAY != 0 {
        Lookup::CacheOnly
    } else {
        Lookup::Anywhere
    }
}

/// Whether two addresses are of one kind (a source echoed for a
/// destination must be).
fn same_kind(a: &Address, b: &Address) -> bool {
    match (a, b) {
        (Address::Ip(x), Address::Ip(y)) => x.is_ipv4() == y.is_ipv4(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The source (if any) and destination entries of a RESOLVE, checked as
/// ibacm's `acm_svr_verify_resolve` does.
fn source_and_destination(entries: &[Entry]) -> Result<(Option<Entry>, Entry), Status> {
    let mut source = None;
    let mut dest = None;
    for e in entries {
        if e.flags & flags::SOURCE != 0 {
            take_once(&mut source, e, Status::ESRCADDR, Status::ESRCTYPE)?;
        }
        if e.flags & flags::DEST != 0 {
            take_once(&mut dest, e, Status::EDESTADDR, Status::EDESTTYPE)?;
        }
    }
    dest.map(|d| (source, d)).ok_or(Status::EDESTTYPE)
}

/// Puts `e` in `slot`: `twice` if the slot is taken already, `bad_type`
/// if `e` is no address type a RESOLVE names (NAME … LID).
fn take_once(
    slot: &mut Option<Entry>,
    e: &Entry,
    twice: Status,
    bad_type: Status,
) -> Result<(), Status> {
    if slot.is_some() {
        return Err(twice);
    }
    if !(1..=5).contains(&e.kind.0) {
        return Err(bad_type);
    }
    *slot = Some(*e);
    Ok(())
}

/// A Get of `template`, selected by its non-zero fields (ibacm's
/// `acm_path_comp_mask`).
fn get_selected_by_fields(template: PathRecord) -> PathQuery {
    PathQuery {
        method: Method::GET,
        mask: path_mask(&template),
        template,
    }
}

/// The Get acmp asks for a template `t` from an endpoint in partition
/// `pkey`: one reversible path, selected by the template's non-zero fields.
fn acmp_get(mut t: PathRecord, pkey: u16) -> PathQuery {
    t.set_pkey(pkey);
    t.set_reversible(true);
    t.set_numb_path(1);
    get_selected_by_fields(t)
}

/// The bytes after the header a message's header announces.
fn body_len(header: &[u8]) -> Result<usize, String> {
    let header = header
        .first_chunk::<{ wire::HEADER_LEN }>()
        .ok_or_else(|| "a short header".to_owned())?;
    wire::message_len(header)
        .map(|n| n - wire::HEADER_LEN)
        .map_err(|e| e.to_string())
}

impl AcmService {
    /// How its messages are framed: ibacm's header, whose length field
    /// counts the whole message.
    pub const FRAMING: Framing = Framing {
        header_len: wire::HEADER_LEN,
        body_len,
    };
}

impl Door for AcmService {
    fn framing(&self) -> Option<Framing> {
        Some(Self::FRAMING)
    }

    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match input {
            Input::Message { conn, bytes } => {
                let output = self.handle_message(conn, bytes);
                self.out.push_back(output);
            }
            Input::Unframeable { conn } => {
                tracing::debug!(
                    conn,
                    "closing an ibacm connection whose message cannot be framed"
                );
                self.out.push_back(Output::Close { conn });
            }
            Input::Closed { conn } => self.handle_closed(conn),
            Input::Opened { .. } | Input::Datagram { .. } => {}
        }
    }

    fn handle_reply(&mut self, _now: Instant, reply: &LocalReply) {
        if let Some(output) = self.handle_answer(reply) {
            // A reply, or the door's next question (an alternate path) for
            // the same client.
            self.out.push_back(output);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn handle_port_change(&mut self, agent: usize, port: PortIdentity) {
        for ep in self.endpoints.iter_mut().filter(|e| e.agent == agent) {
            ep.port = port;
        }
    }

    fn set_names(&mut self, names: Names) {
        self.names = names;
    }

    fn is_waiting(&self, conn: ConnId) -> bool {
        self.per_conn.get(&conn).is_some_and(|n| *n > 0)
    }

    /// `owned[i]` is endpoint `i`'s; a list of another length is ignored:
    /// the endpoints are fixed at start.
    fn set_owned_addresses(&mut self, owned: &[Vec<Address>]) {
        if owned.len() != self.endpoints.len() {
            tracing::debug!(
                given = owned.len(),
                endpoints = self.endpoints.len(),
                "owned addresses for another set of endpoints ignored"
            );
            return;
        }
        for (ep, addresses) in self.endpoints.iter_mut().zip(owned) {
            ep.addresses.clone_from(addresses);
        }
    }

    /// The names learned from the master SA (NodeDescriptions and the
    /// local-sa directory); the files' names win over them.
    fn set_learned_names(&mut self, names: Arc<Names>) {
        self.learned = names;
    }
}

/// The component mask of a path template: its non-zero fields, as
/// ibacm's `acm_path_comp_mask` computes it.
pub fn path_mask(p: &PathRecord) -> ComponentMask {
    let mut m = ComponentMask(0);
    let mut set = |on: bool, bit: ComponentMask| {
        if on {
            m |= bit;
        }
    };
    set(p.service_id() != 0, pr::SERVICE_ID);
    set(!p.dgid().is_zero(), pr::DGID);
    set(!p.sgid().is_zero(), pr::SGID);
    set(p.dlid() != 0, pr::DLID);
    set(p.slid() != 0, pr::SLID);
    set(p.flow_label() != 0, pr::FLOW_LABEL);
    set(p.hop_limit() != 0, pr::HOP_LIMIT);
    set(p.tclass() != 0, pr::TCLASS);
    set(p.reversible(), pr::REVERSIBLE);
    set(p.pkey() != 0, pr::PKEY);
    set(p.qos_class() != 0, pr::QOS_CLASS);
    set(p.sl() != 0, pr::SL);
    set(p.mtu_selector().bits() != 0, pr::MTU_SELECTOR);
    set(u8::from(p.mtu()) != 0, pr::MTU);
    set(p.rate_selector().bits() != 0, pr::RATE_SELECTOR);
    set(u8::from(p.rate()) != 0, pr::RATE);
    set(
        p.packet_life_selector().bits() != 0,
        pr::PACKET_LIFE_TIME_SELECTOR,
    );
    set(p.packet_life() != 0, pr::PACKET_LIFE_TIME);
    m
}

#[cfg(test)]
mod tests;

/// A RESOLVE reply: the primary path, the alternate if there is one, then
/// the source entry ibacm echoes (PATH entries first and together, as
/// librdmacm copies them).
fn resolve_entries(
    header: &Header,
    status: Status,
    primary: Option<&PathRecord>,
    alternate: Option<&PathRecord>,
    source: Option<Entry>,
) -> Bytes {
    let mut entries = Vec::with_capacity(3);
    if let Some(r) = primary {
        entries.push(Entry::path(
            path_flags::GMP | path_flags::PRIMARY | path_flags::BIDIRECTIONAL,
            r,
        ));
    }
    if let Some(r) = alternate {
        entries.push(Entry::path(
            path_flags::GMP | path_flags::ALTERNATE | path_flags::BIDIRECTIONAL,
            r,
        ));
    }
    entries.extend(source);
    wire::resolve_reply(header, status, &entries)
}

/// The alternate to `primary` among `known` paths between the same ports:
/// one to another of the destination's LIDs (the switches route by DLID,
/// so another DLID is another route), from another of the source's LIDs
/// if there is one; `None` if every known path ends at the primary's DLID.
pub fn pick_alternate(primary: &PathRecord, known: &[PathRecord]) -> Option<PathRecord> {
    let other_dlid = |r: &&PathRecord| r.dlid() != primary.dlid();
    known
        .iter()
        .filter(other_dlid)
        .find(|r| r.slid() != primary.slid())
        .or_else(|| known.iter().find(other_dlid))
        .copied()
}
