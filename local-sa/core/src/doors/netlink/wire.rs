//! The kernel's RDMA_NL_LS ("local service") netlink messages, as the
//! uapi header `rdma/rdma_netlink.h` defines them and the kernel's
//! `drivers/infiniband/core/sa_query.c` (`ib_nl_*`: PathRecord RESOLVE and
//! SET_TIMEOUT) and `addr.c` (`ib_nl_ip_send_msg`, IP_RESOLVE) use them.
//! Views over bytes and owned values; nothing here panics on any input,
//! and every length is checked before it is used.
//!
//! Netlink headers and attribute headers are in the host's byte order:
//!
//! ```text
//! nlmsghdr (16)   0 u32 length of the message   4 u16 type   6 u16 flags
//!                 8 u32 sequence number        12 u32 sender's port ID
//! type            RDMA_NL_GET_TYPE(client, op) = client << 10 | op; client
//!                 RDMA_NL_LS = 4: RESOLVE 0x1000, SET_TIMEOUT 0x1001,
//!                 IP_RESOLVE 0x1002
//! RESOLVE         rdma_ls_resolve_header (64 B device name, u8 port,
//!                 u8 path_use; padded to 68), then attributes
//! IP_RESOLVE      rdma_ls_ip_resolve_header (u32 ifindex), then attributes
//! nlattr (4)      0 u16 length (header included)   2 u16 type; each
//!                 attribute padded to 4 bytes
//! ```
//!
//! Attribute values (the header's table): SERVICE_ID u64, PKEY u16,
//! QOS_CLASS u16 and TIMEOUT u32 in host order; DGID, SGID, IPV4 and IPV6
//! in network order; a PATH_RECORD is `ib_path_rec_data`: u32 flags (host
//! order), u32 reserved, and the 64-byte PathRecord as on the wire.
//!
//! Replies carry no family header: the kernel reads their attributes
//! right after the netlink header (`ib_nl_process_good_resolve_rsp`,
//! `ib_nl_process_good_ip_rsep`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::{BufMut, Bytes, BytesMut};
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, PathRecord};

/// Bytes of a netlink message header (`NLMSG_HDRLEN`).
pub const HEADER_LEN: usize = 16;
/// Bytes of an attribute header (`NLA_HDRLEN`).
pub const ATTR_HEADER_LEN: usize = 4;
/// Bytes of a device name in a RESOLVE (`LS_DEVICE_NAME_MAX`).
pub const DEVICE_NAME_LEN: usize = 64;
/// Bytes of `rdma_ls_resolve_header`, padded (`NLMSG_ALIGN(66)`).
pub const RESOLVE_HEADER_LEN: usize = 68;
/// Bytes of `rdma_ls_ip_resolve_header`.
pub const IP_RESOLVE_HEADER_LEN: usize = 4;
/// Bytes of `ib_path_rec_data`.
pub const PATH_REC_DATA_LEN: usize = 72;

/// `NLM_F_REQUEST`.
pub const F_REQUEST: u16 = 0x0001;
/// `RDMA_NL_LS_F_ERR`: the reply says the service failed.
pub const F_ERR: u16 = 0x0100;
/// `NLMSG_MIN_TYPE`: types below are netlink's own control messages.
const MIN_TYPE: u16 = 0x10;
/// `NLMSG_ERROR`: an error (or acknowledgement) from the kernel.
const NLMSG_ERROR: u16 = 2;
/// `RDMA_NL_LS`, the client number of the local service.
const CLIENT_LS: u16 = 4;
/// Attribute type flags (`NLA_F_NESTED`, `NLA_F_NET_BYTEORDER`) and
/// `RDMA_NLA_F_MANDATORY`.
const ATTR_FLAGS: u16 = 0x8000 | 0x4000 | RDMA_NLA_F_MANDATORY;
/// `RDMA_NLA_F_MANDATORY`: an attribute the listener must understand.
pub const RDMA_NLA_F_MANDATORY: u16 = 1 << 13;

/// Netlink header offsets.
mod field {
    use core::ops::Range;
    pub(super) const LEN: Range<usize> = 0..4;
    pub(super) const TYPE: Range<usize> = 4..6;
    pub(super) const FLAGS: Range<usize> = 6..8;
    pub(super) const SEQ: Range<usize> = 8..12;
    pub(super) const PID: Range<usize> = 12..16;
    /// In a RESOLVE's family header.
    pub(super) const PORT: usize = super::DEVICE_NAME_LEN;
    pub(super) const PATH_USE: usize = super::DEVICE_NAME_LEN + 1;
}

mad_codec::wire_code! {
    /// A local service operation (`RDMA_NL_LS_OP_*`).
    pub struct Operation(u16) {
        /// The kernel asks for a PathRecord.
        RESOLVE = 0,
        /// The listener tells the kernel how long to wait for replies.
        SET_TIMEOUT = 1,
        /// The kernel asks for the GID of an IP address.
        IP_RESOLVE = 2,
    }
}

impl Operation {
    /// The netlink message type of this operation.
    pub fn message_type(self) -> u16 {
        CLIENT_LS << 10 | (self.0 & 0x3FF)
    }
}

mad_codec::wire_code! {
    /// What the kernel will use a resolved path for (`LS_RESOLVE_PATH_USE_*`).
    pub struct PathUse(u8) {
        /// Connected CM (up to six records; the kernel takes the first
        /// bidirectional one).
        ALL = 0,
        /// Unidirectional UD: one record from here to there.
        UNIDIRECTIONAL = 1,
        /// GMP-like traffic: a reversible record.
        GMP = 2,
    }
}

impl PathUse {
    /// The `ib_path_rec_data` flags the kernel looks for in a reply for
    /// this use (`ib_nl_process_good_resolve_rsp`), which the record sent
    /// carries exactly (as ibacm's `acm_nl_send`).
    pub fn record_flags(self) -> u32 {
        if self == Self::UNIDIRECTIONAL {
            path_flags::PRIMARY | path_flags::OUTBOUND
        } else {
            path_flags::PRIMARY | path_flags::GMP | path_flags::BIDIRECTIONAL
        }
    }

    /// Whether the path must be reversible.
    pub fn reversible(self) -> bool {
        self != Self::UNIDIRECTIONAL
    }
}

use crate::path_flags;

mad_codec::wire_code! {
    /// An attribute type (`LS_NLA_TYPE_*`), without its flags.
    pub struct AttrType(u16) {
        /// `ib_path_rec_data`.
        PATH_RECORD = 1,
        /// u32, milliseconds.
        TIMEOUT = 2,
        /// u64.
        SERVICE_ID = 3,
        /// 16 bytes.
        DGID = 4,
        /// 16 bytes.
        SGID = 5,
        /// u8.
        TCLASS = 6,
        /// u16.
        PKEY = 7,
        /// u16.
        QOS_CLASS = 8,
        /// 4 bytes.
        IPV4 = 9,
        /// 16 bytes.
        IPV6 = 10,
    }
}

/// A netlink message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Bytes of the whole message.
    pub len: u32,
    /// Message type.
    pub kind: u16,
    /// Flags.
    pub flags: u16,
    /// Sequence number (the kernel matches replies by it).
    pub seq: u32,
    /// Sender's port ID.
    pub pid: u32,
}

impl Header {
    /// The header at the start of `bytes`, if there are 16 bytes.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let h = bytes.get(..HEADER_LEN)?;
        Some(Self {
            len: u32_at(h, field::LEN.start),
            kind: u16_at(h, field::TYPE.start),
            flags: u16_at(h, field::FLAGS.start),
            seq: u32_at(h, field::SEQ.start),
            pid: u32_at(h, field::PID.start),
        })
    }

    fn emit(&self, out: &mut BytesMut) {
        out.put_u32_ne(self.len);
        out.put_u16_ne(self.kind);
        out.put_u16_ne(self.flags);
        out.put_u32_ne(self.seq);
        out.put_u32_ne(self.pid);
    }

    /// Its local service operation, if it is a local service message.
    pub fn operation(&self) -> Option<Operation> {
        (self.kind >> 10 == CLIENT_LS).then_some(Operation(self.kind & 0x3FF))
    }
}

/// A RESOLVE: the kernel's PathRecord query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolve {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// Its port.
    pub port: u8,
    /// What the path is for.
    pub path_use: PathUse,
    /// ServiceID.
    pub service_id: Option<u64>,
    /// Destination GID.
    pub dgid: Option<Gid>,
    /// Source GID.
    pub sgid: Option<Gid>,
    /// TClass.
    pub tclass: Option<u8>,
    /// P_Key.
    pub pkey: Option<u16>,
    /// QoSClass.
    pub qos_class: Option<u16>,
}

/// An IP_RESOLVE: the kernel asks for the GID of an address (instead of
/// ARP over IPoIB through a gateway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpResolve {
    /// The interface the address is reached through.
    pub ifindex: u32,
    /// The address.
    pub address: IpAddr,
}

/// What one netlink message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A PathRecord query.
    Resolve(Resolve),
    /// An IP address to resolve.
    IpResolve(IpResolve),
    /// A SET_TIMEOUT (only listeners send these; one arriving is ignored).
    SetTimeout(Option<u32>),
    /// The kernel's error or acknowledgement of a message we sent:
    /// `errno` 0 for an acknowledgement.
    KernelError {
        /// The (positive) errno.
        errno: i32,
    },
}

/// One message of a datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its header.
    pub header: Header,
    /// What it says.
    pub body: Body,
}

/// Why a message was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The netlink header says a length the datagram does not hold, or
    /// one shorter than the header.
    Length(u32),
    /// A message of another netlink family or client (the type).
    NotLocalService(u16),
    /// A local service operation this listener does not serve.
    Operation(Operation),
    /// A request without `NLM_F_REQUEST` (a reply travelling the wrong
    /// way).
    NotRequest,
    /// The family header is cut short.
    FamilyHeader,
    /// An attribute's length is shorter than its header or runs past the
    /// message.
    AttrLength(u16),
    /// A known attribute with a value of the wrong size.
    AttrSize(AttrType, usize),
    /// An attribute marked mandatory that this listener does not know.
    Mandatory(u16),
    /// The device name is not NUL-terminated text.
    DeviceName,
    /// A path use the kernel does not define.
    PathUse(PathUse),
    /// An IP_RESOLVE without an address.
    NoAddress,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length(n) => write!(f, "message length {n} does not fit the datagram"),
            Self::NotLocalService(t) => write!(f, "type {t:#06x} is not RDMA_NL_LS"),
            Self::Operation(op) => write!(f, "local service operation {op} is not served"),
            Self::NotRequest => f.write_str("a message without NLM_F_REQUEST"),
            Self::FamilyHeader => f.write_str("the family header is cut short"),
            Self::AttrLength(n) => write!(f, "attribute length {n} does not fit the message"),
            Self::AttrSize(t, n) => write!(f, "attribute {t} has {n} bytes"),
            Self::Mandatory(t) => write!(f, "unknown mandatory attribute {t:#06x}"),
            Self::DeviceName => f.write_str("the device name is not NUL-terminated text"),
            Self::PathUse(u) => write!(f, "unknown path use {u}"),
            Self::NoAddress => f.write_str("an IP_RESOLVE without an address"),
        }
    }
}

/// The messages of one datagram, in order: each decoded, or why not
/// (with its header when there was one, so that a request can be refused
/// by sequence number). A length that does not fit ends the walk.
pub fn messages(datagram: &[u8]) -> Vec<(Option<Header>, Result<Message, WireError>)> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        let Some(header) = Header::parse(rest) else {
            out.push((None, Err(WireError::Length(rest.len() as u32))));
            break;
        };
        let len = header.len as usize;
        if len < HEADER_LEN || len > rest.len() {
            out.push((Some(header), Err(WireError::Length(header.len))));
            break;
        }
        let payload = &rest[HEADER_LEN..len];
        out.push((Some(header), decode(header, payload)));
        rest = rest.get(align(len)..).unwrap_or(&[]);
    }
    out
}

/// One message's body from its header and payload.
fn decode(header: Header, payload: &[u8]) -> Result<Message, WireError> {
    if header.kind < MIN_TYPE {
        if header.kind != NLMSG_ERROR {
            return Err(WireError::NotLocalService(header.kind));
        }
        let errno = payload
            .first_chunk::<4>()
            .map_or(0, |b| i32::from_ne_bytes(*b));
        return Ok(Message {
            header,
            body: Body::KernelError {
                errno: errno.saturating_neg(),
            },
        });
    }
    let op = header
        .operation()
        .ok_or(WireError::NotLocalService(header.kind))?;
    let body = match op {
        Operation::RESOLVE => {
            require_request(header)?;
            Body::Resolve(resolve(payload)?)
        }
        Operation::IP_RESOLVE => {
            require_request(header)?;
            Body::IpResolve(ip_resolve(payload)?)
        }
        Operation::SET_TIMEOUT => {
            let mut timeout = None;
            for attr in Attrs(payload) {
                let (t, value) = attr?;
                if t == AttrType::TIMEOUT {
                    timeout = Some(u32::from_ne_bytes(fixed(t, value)?));
                }
            }
            Body::SetTimeout(timeout)
        }
        other => return Err(WireError::Operation(other)),
    };
    Ok(Message { header, body })
}

fn require_request(header: Header) -> Result<(), WireError> {
    if header.flags & F_REQUEST == 0 {
        return Err(WireError::NotRequest);
    }
    Ok(())
}

fn resolve(payload: &[u8]) -> Result<Resolve, WireError> {
    let family = payload
        .get(..RESOLVE_HEADER_LEN)
        .ok_or(WireError::FamilyHeader)?;
    let name = &family[..DEVICE_NAME_LEN];
    let end = name
        .iter()
        .position(|&b| b == 0)
        .ok_or(WireError::DeviceName)?;
    let device = std::str::from_utf8(&name[..end])
        .map_err(|_| WireError::DeviceName)?
        .to_owned();
    let path_use = PathUse(family[field::PATH_USE]);
    if path_use.name().is_none() {
        return Err(WireError::PathUse(path_use));
    }
    let mut r = Resolve {
        device,
        port: family[field::PORT],
        path_use,
        service_id: None,
        dgid: None,
        sgid: None,
        tclass: None,
        pkey: None,
        qos_class: None,
    };
    for attr in Attrs(&payload[RESOLVE_HEADER_LEN..]) {
        let (t, value) = attr?;
        match t {
            AttrType::SERVICE_ID => r.service_id = Some(u64::from_ne_bytes(fixed(t, value)?)),
            AttrType::DGID => r.dgid = Some(Gid(fixed::<16>(t, value)?)),
            AttrType::SGID => r.sgid = Some(Gid(fixed::<16>(t, value)?)),
            AttrType::TCLASS => r.tclass = Some(u8::from_ne_bytes(fixed(t, value)?)),
            AttrType::PKEY => r.pkey = Some(u16::from_ne_bytes(fixed(t, value)?)),
            AttrType::QOS_CLASS => r.qos_class = Some(u16::from_ne_bytes(fixed(t, value)?)),
            _ => {}
        }
    }
    Ok(r)
}

fn ip_resolve(payload: &[u8]) -> Result<IpResolve, WireError> {
    let family = payload
        .first_chunk::<IP_RESOLVE_HEADER_LEN>()
        .ok_or(WireError::FamilyHeader)?;
    let mut address = None;
    for attr in Attrs(&payload[IP_RESOLVE_HEADER_LEN..]) {
        let (t, value) = attr?;
        match t {
            AttrType::IPV4 => address = Some(IpAddr::V4(Ipv4Addr::from(fixed::<4>(t, value)?))),
            AttrType::IPV6 => address = Some(IpAddr::V6(Ipv6Addr::from(fixed::<16>(t, value)?))),
            _ => {}
        }
    }
    Ok(IpResolve {
        ifindex: u32::from_ne_bytes(*family),
        address: address.ok_or(WireError::NoAddress)?,
    })
}

/// An attribute's value as exactly `N` bytes.
fn fixed<const N: usize>(t: AttrType, value: &[u8]) -> Result<[u8; N], WireError> {
    value
        .try_into()
        .map_err(|_| WireError::AttrSize(t, value.len()))
}

/// The attributes of a payload: each type (flags removed) and value. An
/// unknown attribute is skipped unless marked mandatory.
struct Attrs<'a>(&'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(AttrType, &'a [u8]), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.0.is_empty() {
                return None;
            }
            let Some(head) = self.0.first_chunk::<ATTR_HEADER_LEN>() else {
                let n = self.0.len() as u16;
                self.0 = &[];
                return Some(Err(WireError::AttrLength(n)));
            };
            let len = u16::from_ne_bytes([head[0], head[1]]);
            let raw_type = u16::from_ne_bytes([head[2], head[3]]);
            let l = usize::from(len);
            if l < ATTR_HEADER_LEN || l > self.0.len() {
                self.0 = &[];
                return Some(Err(WireError::AttrLength(len)));
            }
            let value = &self.0[ATTR_HEADER_LEN..l];
            self.0 = self.0.get(align(l)..).unwrap_or(&[]);
            let t = AttrType(raw_type & !ATTR_FLAGS);
            if t.name().is_some() {
                return Some(Ok((t, value)));
            }
            if raw_type & RDMA_NLA_F_MANDATORY != 0 {
                self.0 = &[];
                return Some(Err(WireError::Mandatory(raw_type)));
            }
        }
    }
}

/// A successful RESOLVE reply: `records`, each with the flags the kernel
/// looks for for `path_use`.
pub fn resolve_reply(request: &Header, path_use: PathUse, records: &[PathRecord]) -> Bytes {
    let attr_len = ATTR_HEADER_LEN + PATH_REC_DATA_LEN;
    let mut out = start_reply(request, 0, records.len() * align(attr_len));
    for r in records {
        put_attr_header(&mut out, attr_len, AttrType::PATH_RECORD);
        out.put_u32_ne(path_use.record_flags());
        out.put_u32_ne(0);
        out.put_slice(r.as_bytes());
    }
    out.freeze()
}

/// A successful IP_RESOLVE reply: the address's GID.
pub fn ip_resolve_reply(request: &Header, gid: Gid) -> Bytes {
    let attr_len = ATTR_HEADER_LEN + 16;
    let mut out = start_reply(request, 0, align(attr_len));
    put_attr_header(&mut out, attr_len, AttrType::DGID);
    out.put_slice(&gid.0);
    out.freeze()
}

/// A failure reply (`RDMA_NL_LS_F_ERR`): the kernel sends its query to
/// the SA itself at once.
pub fn error_reply(request: &Header) -> Bytes {
    start_reply(request, F_ERR, 0).freeze()
}

/// The SET_TIMEOUT message telling the kernel to wait `millis` for each
/// reply (it keeps the value within 40 ms to 200 s).
pub fn set_timeout(seq: u32, pid: u32, millis: u32) -> Bytes {
    let attr_len = ATTR_HEADER_LEN + 4;
    let len = HEADER_LEN + align(attr_len);
    let mut out = BytesMut::with_capacity(len);
    Header {
        len: len as u32,
        kind: Operation::SET_TIMEOUT.message_type(),
        flags: F_REQUEST,
        seq,
        pid,
    }
    .emit(&mut out);
    put_attr_header(&mut out, attr_len, AttrType::TIMEOUT);
    out.put_u32_ne(millis);
    out.freeze()
}

/// A RESOLVE as the kernel builds it (`ib_nl_set_path_rec_attrs`: every
/// attribute marked mandatory): for tests, benchmarks and fuzz seeds.
pub fn resolve_request(seq: u32, r: &Resolve) -> Bytes {
    let mut attrs = BytesMut::new();
    let mut put = |t: AttrType, value: &[u8]| {
        let len = ATTR_HEADER_LEN + value.len();
        attrs.put_u16_ne(len as u16);
        attrs.put_u16_ne(t.0 | RDMA_NLA_F_MANDATORY);
        attrs.put_slice(value);
        attrs.put_bytes(0, align(len) - len);
    };
    if let Some(v) = r.service_id {
        put(AttrType::SERVICE_ID, &v.to_ne_bytes());
    }
    if let Some(g) = r.dgid {
        put(AttrType::DGID, &g.0);
    }
    if let Some(g) = r.sgid {
        put(AttrType::SGID, &g.0);
    }
    if let Some(v) = r.tclass {
        put(AttrType::TCLASS, &[v]);
    }
    if let Some(v) = r.pkey {
        put(AttrType::PKEY, &v.to_ne_bytes());
    }
    if let Some(v) = r.qos_class {
        put(AttrType::QOS_CLASS, &v.to_ne_bytes());
    }
    let len = HEADER_LEN + RESOLVE_HEADER_LEN + attrs.len();
    let mut out = BytesMut::with_capacity(len);
    Header {
        len: len as u32,
        kind: Operation::RESOLVE.message_type(),
        flags: F_REQUEST,
        seq,
        pid: 0,
    }
    .emit(&mut out);
    let mut name = [0u8; DEVICE_NAME_LEN];
    let n = r.device.len().min(DEVICE_NAME_LEN - 1);
    name[..n].copy_from_slice(&r.device.as_bytes()[..n]);
    out.put_slice(&name);
    out.put_u8(r.port);
    out.put_u8(r.path_use.0);
    out.put_bytes(0, RESOLVE_HEADER_LEN - DEVICE_NAME_LEN - 2);
    out.put_slice(&attrs);
    out.freeze()
}

/// An IP_RESOLVE as the kernel builds it (`ib_nl_ip_send_msg`).
pub fn ip_resolve_request(seq: u32, r: &IpResolve) -> Bytes {
    let (t, value) = match r.address {
        IpAddr::V4(a) => (AttrType::IPV4, a.octets().to_vec()),
        IpAddr::V6(a) => (AttrType::IPV6, a.octets().to_vec()),
    };
    let attr_len = ATTR_HEADER_LEN + value.len();
    let len = HEADER_LEN + IP_RESOLVE_HEADER_LEN + attr_len;
    let mut out = BytesMut::with_capacity(len);
    Header {
        len: len as u32,
        kind: Operation::IP_RESOLVE.message_type(),
        flags: F_REQUEST,
        seq,
        pid: 0,
    }
    .emit(&mut out);
    out.put_u32_ne(r.ifindex);
    out.put_u16_ne(attr_len as u16);
    out.put_u16_ne(t.0 | RDMA_NLA_F_MANDATORY);
    out.put_slice(&value);
    out.freeze()
}

/// A reply's header (the request's type and sequence number; this
/// process's port ID as the request named it) and room for `body` bytes.
fn start_reply(request: &Header, flags: u16, body: usize) -> BytesMut {
    let len = HEADER_LEN + body;
    let mut out = BytesMut::with_capacity(len);
    Header {
        len: len as u32,
        kind: request.kind,
        flags,
        seq: request.seq,
        pid: 0,
    }
    .emit(&mut out);
    out
}

/// Writes an attribute header; the caller writes `len - 4` bytes of value,
/// a multiple of 4 here, so no padding follows.
fn put_attr_header(out: &mut BytesMut, len: usize, t: AttrType) {
    out.put_u16_ne(len as u16);
    out.put_u16_ne(t.0);
}

/// The record a PATH_RECORD attribute carries, and its flags.
pub fn path_record_of(value: &[u8]) -> Option<(u32, PathRecord)> {
    if value.len() != PATH_REC_DATA_LEN {
        return None;
    }
    let flags = u32::from_ne_bytes(value[..4].try_into().ok()?);
    let record = PathRecord::read_from_bytes(&value[8..]).ok()?;
    Some((flags, record))
}

/// The PATH_RECORD attributes of a reply (what the kernel would read).
pub fn reply_records(reply: &[u8]) -> Vec<(u32, PathRecord)> {
    let Some(payload) = reply.get(HEADER_LEN..) else {
        return Vec::new();
    };
    Attrs(payload)
        .filter_map(Result::ok)
        .filter(|(t, _)| *t == AttrType::PATH_RECORD)
        .filter_map(|(_, v)| path_record_of(v))
        .collect()
}

/// `NLMSG_ALIGN` / `NLA_ALIGN`.
fn align(n: usize) -> usize {
    n.saturating_add(3) & !3
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests;
