//! ibacm's client protocol on the wire, as rdma-core's `infiniband/acm.h`
//! defines it and `ibacm/src/acm.c`, `libacm.c` and librdmacm's `acm.c`
//! use it. Views over bytes and owned values; nothing here panics on any
//! input, and every length is checked before it is used.
//!
//! Every message is a 16-byte header and a body:
//!
//! ```text
//! 0   u8   version (1)
//! 1   u8   opcode: RESOLVE 1, PERF_QUERY 2, EP_QUERY 3; ACK (0x80) on replies
//! 2   u8   status (ACM_STATUS_*)
//! 3   u8   data[0]  src_out    (RESOLVE: unused by clients; PERF: counter count in
//!                               replies; EP_QUERY: endpoint index, from 1)
//! 4   u8   data[1]  src_index  (PERF: endpoint index, from 1; EP_QUERY: port, 0 = any)
//! 5   u8   data[2]  dst_index
//! 6   u16  length of the whole message
//! 8   u64  tid, the client's, echoed
//! 16  ...  body
//! ```
//!
//! Byte order is the protocol's oddity: RESOLVE messages are "not byte
//! swapped" (the header's length and each entry's flags and type are in
//! the host's order), while PERF_QUERY and EP_QUERY carry their length and
//! their payload (counters, endpoint records) in network order. Entries
//! (`acm_ep_addr_data`, 72 bytes) are host-order flags and type with 64
//! bytes of network-order address information (a name, an IPv4/IPv6
//! address, a GID, a LID, or an `ibv_path_record`, which is the IBA
//! PathRecord's wire layout) in every opcode.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{Gid, PathRecord};

use crate::names::hosts::HostAddress;

/// The protocol version.
pub const VERSION: u8 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 16;
/// Bytes of one address entry.
pub const ENTRY_LEN: usize = 72;
/// Bytes of an entry's address information.
pub const ADDRESS_LEN: usize = 64;
/// Entries a message may carry (`ACM_MSG_DATA_LENGTH` / 72).
pub const MAX_ENTRIES: usize = 8;
/// The longest request accepted: a header and eight entries.
pub const MAX_REQUEST_LEN: usize = HEADER_LEN + MAX_ENTRIES * ENTRY_LEN;
/// Bytes of an endpoint record before its addresses.
pub const EP_RECORD_LEN: usize = 80;
/// Bytes of a provider name in an endpoint record.
pub const PROVIDER_NAME_LEN: usize = 64;
/// The `ACM_OP_MASK` of an opcode.
const OP_MASK: u8 = 0x0F;
/// Header offsets.
mod field {
    use core::ops::Range;
    pub(super) const VERSION: usize = 0;
    pub(super) const OPCODE: usize = 1;
    pub(super) const STATUS: usize = 2;
    pub(super) const DATA: Range<usize> = 3..6;
    pub(super) const LENGTH: Range<usize> = 6..8;
    pub(super) const TID: Range<usize> = 8..16;
}

mad_codec::wire_code! {
    /// An opcode without its ACK bit.
    pub struct Opcode(u8) {
        /// Resolve a destination to a path.
        RESOLVE = 0x01,
        /// Performance counters.
        PERF_QUERY = 0x02,
        /// Endpoint enumeration.
        EP_QUERY = 0x03,
    }
}

impl Opcode {
    /// The bit a reply sets.
    pub const ACK: u8 = 0x80;

    /// The opcode of a raw opcode byte (the ACK bit and bits 4–6 dropped).
    pub const fn of(raw: u8) -> Self {
        Self(raw & OP_MASK)
    }

    /// Whether this opcode's header length and payload are in network
    /// order (all but RESOLVE).
    pub const fn is_network_order(self) -> bool {
        self.0 != Self::RESOLVE.0
    }
}

mad_codec::wire_code! {
    /// An `ACM_STATUS_*` code (its name in `acm.h` from `name()`).
    pub struct Status(u8) {
        /// Success.
        SUCCESS = 0,
        /// Out of resources.
        ENOMEM = 1,
        /// A malformed or unsupported request.
        EINVAL = 2,
        /// No path to the destination.
        ENODATA = 3,
        /// Not connected.
        ENOTCONN = 5,
        /// The SA did not answer.
        ETIMEDOUT = 6,
        /// The source is not a local endpoint.
        ESRCADDR = 7,
        /// The source's address type is unsupported.
        ESRCTYPE = 8,
        /// The destination is unknown.
        EDESTADDR = 9,
        /// The destination's address type is unsupported.
        EDESTTYPE = 10,
    }
}

mad_codec::wire_code! {
    /// What an entry's 64 bytes of information hold.
    pub struct AddressType(u16) {
        /// No address (an empty entry).
        INVALID = 0x00,
        /// A NUL-terminated name.
        NAME = 0x01,
        /// An IPv4 address (4 bytes).
        IP = 0x02,
        /// An IPv6 address (16 bytes).
        IP6 = 0x03,
        /// A GID (16 bytes; `ACM_ADDRESS_GID` of `acm_prov.h`, accepted by
        /// ibacm from clients).
        GID = 0x04,
        /// A LID (2 bytes, network order; `ACM_ADDRESS_LID`).
        LID = 0x05,
        /// A path record.
        PATH = 0x10,
    }
}

/// Request flags of an entry, and of the message. Replies flag each PATH
/// entry with [`crate::path_flags`] instead, in the same bits: a flags
/// field is read by what the entry is (`SOURCE` and `GMP` are both bit 0).
pub mod flags {
    /// The entry is the source.
    pub const SOURCE: u32 = 1 << 0;
    /// The entry is the destination.
    pub const DEST: u32 = 1 << 1;
    /// Ask the master SA, not the cache (PATH requests).
    pub const QUERY_SA: u32 = 1 << 31;
    /// Answer from the cache only; do not wait for a query.
    pub const NODELAY: u32 = 1 << 30;
}

/// The ACM counters, in `ACM_CNTR_*` order.
pub mod counter {
    /// Replies with an error other than ENODATA.
    pub const ERROR: usize = 0;
    /// RESOLVE requests.
    pub const RESOLVE: usize = 1;
    /// Replies with ENODATA.
    pub const NODATA: usize = 2;
    /// Destination addresses that had to be looked up.
    pub const ADDR_QUERY: usize = 3;
    /// Destination addresses known already.
    pub const ADDR_CACHE: usize = 4;
    /// Paths that needed the master SA.
    pub const ROUTE_QUERY: usize = 5;
    /// Paths answered from the cache.
    pub const ROUTE_CACHE: usize = 6;
    /// How many there are (`ACM_MAX_COUNTER`).
    pub const COUNT: usize = 7;
}

/// A message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Protocol version.
    pub version: u8,
    /// The opcode byte as sent, ACK bit included.
    pub opcode: u8,
    /// Status.
    pub status: Status,
    /// `data[0..3]`: src_out, src_index, dst_index.
    pub data: [u8; 3],
    /// Length of the whole message, already in host order.
    pub length: u16,
    /// The client's transaction id, opaque (echoed byte for byte).
    pub tid: [u8; 8],
}

impl Header {
    /// The opcode without the ACK bit.
    pub fn op(&self) -> Opcode {
        Opcode::of(self.opcode)
    }

    /// Reads a header (its length in the order its opcode implies).
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Self {
        let opcode = bytes[field::OPCODE];
        let raw_len = [bytes[field::LENGTH.start], bytes[field::LENGTH.start + 1]];
        let length = if Opcode::of(opcode).is_network_order() {
            u16::from_be_bytes(raw_len)
        } else {
            u16::from_ne_bytes(raw_len)
        };
        let mut data = [0; 3];
        data.copy_from_slice(&bytes[field::DATA]);
        let mut tid = [0; 8];
        tid.copy_from_slice(&bytes[field::TID]);
        Self {
            version: bytes[field::VERSION],
            opcode,
            status: Status(bytes[field::STATUS]),
            data,
            length,
            tid,
        }
    }

    /// Writes it, with `length` in the order its opcode implies.
    pub fn emit(&self, out: &mut BytesMut) {
        out.put_u8(self.version);
        out.put_u8(self.opcode);
        out.put_u8(self.status.0);
        out.put_slice(&self.data);
        if self.op().is_network_order() {
            out.put_u16(self.length);
        } else {
            out.put_u16_ne(self.length);
        }
        out.put_slice(&self.tid);
    }

    /// The reply header to this request: ACK set, `status`, `length`.
    pub fn reply(&self, status: Status, data: [u8; 3], length: usize) -> Self {
        Self {
            version: VERSION,
            opcode: self.opcode | Opcode::ACK,
            status,
            data,
            length: u16::try_from(length).unwrap_or(u16::MAX),
            tid: self.tid,
        }
    }
}

/// Why a message could not be framed: the connection cannot be read
/// further and is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The announced length is shorter than a header.
    TooShort(u16),
    /// The announced length is over [`MAX_REQUEST_LEN`].
    TooLong(u16),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooShort(n) => write!(f, "message length {n} is shorter than the header"),
            Self::TooLong(n) => write!(f, "message length {n} is over {MAX_REQUEST_LEN}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// How many bytes the message that starts with `header` has in all.
pub fn message_len(header: &[u8; HEADER_LEN]) -> Result<usize, FrameError> {
    let n = Header::parse(header).length;
    match usize::from(n) {
        len if len < HEADER_LEN => Err(FrameError::TooShort(n)),
        len if len > MAX_REQUEST_LEN => Err(FrameError::TooLong(n)),
        len => Ok(len),
    }
}

/// One `acm_ep_addr_data`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// SOURCE/DEST and request flags, or path flags in a reply.
    pub flags: u32,
    /// What `info` holds.
    pub kind: AddressType,
    /// The address information.
    pub info: [u8; ADDRESS_LEN],
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("flags", &format_args!("{:#x}", self.flags))
            .field("kind", &self.kind)
            .field("address", &self.address())
            .finish()
    }
}

impl Entry {
    /// Reads one from exactly [`ENTRY_LEN`] bytes (`None` otherwise).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; ENTRY_LEN] = bytes.try_into().ok()?;
        let flags = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let kind = AddressType(u16::from_ne_bytes([bytes[4], bytes[5]]));
        let mut info = [0; ADDRESS_LEN];
        info.copy_from_slice(&bytes[8..]);
        Some(Self { flags, kind, info })
    }

    /// Writes it.
    pub fn emit(&self, out: &mut BytesMut) {
        out.put_u32_ne(self.flags);
        out.put_u16_ne(self.kind.0);
        out.put_u16_ne(0);
        out.put_slice(&self.info);
    }

    /// A PATH entry.
    pub fn path(flags: u32, record: &PathRecord) -> Self {
        let mut info = [0; ADDRESS_LEN];
        info.copy_from_slice(record.as_bytes());
        Self {
            flags,
            kind: AddressType::PATH,
            info,
        }
    }

    /// An entry for `address`.
    pub fn for_address(flags: u32, address: &HostAddress) -> Self {
        let mut info = [0; ADDRESS_LEN];
        let kind = match address {
            HostAddress::Name(name) => {
                let n = name.len().min(ADDRESS_LEN - 1);
                info[..n].copy_from_slice(&name.as_bytes()[..n]);
                AddressType::NAME
            }
            HostAddress::Ip(std::net::IpAddr::V4(ip)) => {
                info[..4].copy_from_slice(&ip.octets());
                AddressType::IP
            }
            HostAddress::Ip(std::net::IpAddr::V6(ip)) => {
                info[..16].copy_from_slice(&ip.octets());
                AddressType::IP6
            }
            HostAddress::Gid(gid) => {
                info[..16].copy_from_slice(&gid.0);
                AddressType::GID
            }
            HostAddress::Lid(lid) => {
                info[..2].copy_from_slice(&lid.to_be_bytes());
                AddressType::LID
            }
        };
        Self { flags, kind, info }
    }

    /// Its path record, if it is a PATH entry.
    pub fn path_record(&self) -> Option<PathRecord> {
        (self.kind == AddressType::PATH)
            .then(|| PathRecord::read_from_bytes(&self.info).ok())
            .flatten()
    }

    /// The address it names, if it is a NAME, IP, IP6, GID or LID entry
    /// and well formed (a name must be NUL-terminated UTF-8, not empty).
    pub fn address(&self) -> Result<HostAddress, AddressError> {
        match self.kind {
            AddressType::NAME => {
                let end = self
                    .info
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or(AddressError::Unterminated)?;
                let name =
                    std::str::from_utf8(&self.info[..end]).map_err(|_| AddressError::NotUtf8)?;
                if name.is_empty() {
                    return Err(AddressError::Empty);
                }
                Ok(HostAddress::Name(name.to_owned()))
            }
            AddressType::IP => {
                let mut o = [0; 4];
                o.copy_from_slice(&self.info[..4]);
                Ok(HostAddress::Ip(std::net::Ipv4Addr::from(o).into()))
            }
            AddressType::IP6 => {
                let mut o = [0; 16];
                o.copy_from_slice(&self.info[..16]);
                Ok(HostAddress::Ip(std::net::Ipv6Addr::from(o).into()))
            }
            AddressType::GID => {
                let mut o = [0; 16];
                o.copy_from_slice(&self.info[..16]);
                Ok(HostAddress::Gid(Gid(o)))
            }
            AddressType::LID => Ok(HostAddress::Lid(u16::from_be_bytes([
                self.info[0],
                self.info[1],
            ]))),
            other => Err(AddressError::Type(other)),
        }
    }
}

/// Why an entry's address could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressError {
    /// Not an address type (PATH, or unknown).
    Type(AddressType),
    /// A name without its terminating NUL in 64 bytes.
    Unterminated,
    /// A name that is not UTF-8.
    NotUtf8,
    /// An empty name.
    Empty,
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Type(t) => write!(f, "address type {t:?} is not an address"),
            Self::Unterminated => f.write_str("the name is not NUL-terminated within 64 bytes"),
            Self::NotUtf8 => f.write_str("the name is not UTF-8"),
            Self::Empty => f.write_str("the name is empty"),
        }
    }
}

/// A request, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its header.
    pub header: Header,
    /// Its entries (RESOLVE, PERF_QUERY by address); none for the others.
    pub entries: Vec<Entry>,
}

/// Why a framed message cannot be taken: answered with this status, the
/// connection kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Not version 1.
    Version(u8),
    /// An opcode this protocol does not have.
    Opcode(Opcode),
    /// The body is not a whole number of entries.
    Ragged(u16),
    /// A request with the ACK bit set (a reply sent to the server).
    Ack,
}

impl DecodeError {
    /// The status the request is answered with.
    pub fn status(self) -> Status {
        Status::EINVAL
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Version(v) => write!(f, "protocol version {v}, not {VERSION}"),
            Self::Opcode(op) => write!(f, "unknown opcode {op:?}"),
            Self::Ragged(n) => write!(
                f,
                "length {n} is not a header and whole {ENTRY_LEN}-byte entries"
            ),
            Self::Ack => f.write_str("a reply (ACK set) sent as a request"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one framed message (`bytes.len()` is the header's length, as
/// [`message_len`] gave it).
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    let Some((head, body)) = bytes.split_first_chunk::<HEADER_LEN>() else {
        // Framing guarantees a header; a caller that did not is answered
        // as a message that lies about its length.
        return Err(DecodeError::Ragged(
            u16::try_from(bytes.len()).unwrap_or(u16::MAX),
        ));
    };
    let header = Header::parse(head);
    if header.version != VERSION {
        return Err(DecodeError::Version(header.version));
    }
    if header.opcode & Opcode::ACK != 0 {
        return Err(DecodeError::Ack);
    }
    let op = header.op();
    if ![Opcode::RESOLVE, Opcode::PERF_QUERY, Opcode::EP_QUERY].contains(&op) {
        return Err(DecodeError::Opcode(op));
    }
    if body.len() % ENTRY_LEN != 0 {
        return Err(DecodeError::Ragged(header.length));
    }
    let entries = body
        .chunks_exact(ENTRY_LEN)
        .filter_map(Entry::parse)
        .collect();
    Ok(Message { header, entries })
}

/// A header-only reply with `status` to a request that cannot be served
/// (its length in the order its opcode implies).
pub fn error_reply(request: &Header, status: Status) -> Bytes {
    let mut out = BytesMut::with_capacity(HEADER_LEN);
    request.reply(status, [0; 3], HEADER_LEN).emit(&mut out);
    out.freeze()
}

/// A client's request: `opcode` with `data` and `entries`, TransactionID
/// `tid` (kept in the host's order, as clients keep it).
pub fn request(opcode: Opcode, data: [u8; 3], entries: &[Entry], tid: u64) -> Bytes {
    let len = HEADER_LEN + entries.len() * ENTRY_LEN;
    let mut out = BytesMut::with_capacity(len);
    Header {
        version: VERSION,
        opcode: opcode.0,
        status: Status::SUCCESS,
        data,
        length: len as u16,
        tid: tid.to_ne_bytes(),
    }
    .emit(&mut out);
    for e in entries {
        e.emit(&mut out);
    }
    out.freeze()
}

/// A RESOLVE reply: `status` and, on success, `entries`.
pub fn resolve_reply(request: &Header, status: Status, entries: &[Entry]) -> Bytes {
    let entries = if status == Status::SUCCESS {
        entries
    } else {
        &[]
    };
    let len = HEADER_LEN + entries.len() * ENTRY_LEN;
    let mut out = BytesMut::with_capacity(len);
    request.reply(status, [0; 3], len).emit(&mut out);
    for e in entries {
        e.emit(&mut out);
    }
    out.freeze()
}

/// A RESOLVE reply with QUERY_SA: the request echoed with the master's
/// record in its first entry.
pub fn query_reply(request: &Message, status: Status, record: Option<&PathRecord>) -> Bytes {
    let mut entries = request.entries.clone();
    if let (Some(first), Some(record)) = (entries.first_mut(), record) {
        first.info.copy_from_slice(record.as_bytes());
    }
    let len = HEADER_LEN + entries.len() * ENTRY_LEN;
    let mut out = BytesMut::with_capacity(len);
    request
        .header
        .reply(status, request.header.data, len)
        .emit(&mut out);
    for e in &entries {
        e.emit(&mut out);
    }
    out.freeze()
}

/// A PERF_QUERY reply: the counters (none with an error status).
pub fn perf_reply(request: &Header, status: Status, counters: &[u64]) -> Bytes {
    let counters = if status == Status::SUCCESS {
        counters
    } else {
        &[]
    };
    let len = HEADER_LEN + counters.len() * 8;
    let count = u8::try_from(counters.len()).unwrap_or(u8::MAX);
    let mut out = BytesMut::with_capacity(len);
    request
        .reply(status, [count, request.data[1], 0], len)
        .emit(&mut out);
    for c in counters {
        out.put_u64(*c);
    }
    out.freeze()
}

/// One endpoint, as EP_QUERY describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRecord {
    /// The adapter's node GUID.
    pub dev_guid: u64,
    /// The port number.
    pub port_num: u8,
    /// The adapter's number of ports.
    pub phys_port_cnt: u8,
    /// The endpoint's P_Key.
    pub pkey: u16,
    /// The provider's name (at most 63 bytes are sent).
    pub provider: String,
    /// The endpoint's addresses as text (at most 63 bytes each).
    pub addresses: Vec<String>,
}

/// An EP_QUERY reply: the endpoint, or an error status.
pub fn endpoint_reply(request: &Header, endpoint: Option<&EndpointRecord>) -> Bytes {
    let Some(ep) = endpoint else {
        let mut out = BytesMut::with_capacity(HEADER_LEN);
        request
            .reply(Status::EINVAL, [request.data[0], 0, 0], HEADER_LEN)
            .emit(&mut out);
        return out.freeze();
    };
    // The whole reply must fit the 16-bit length.
    let fit = (usize::from(u16::MAX) - HEADER_LEN - EP_RECORD_LEN) / ADDRESS_LEN;
    let addresses = &ep.addresses[..ep.addresses.len().min(fit)];
    let len = HEADER_LEN + EP_RECORD_LEN + addresses.len() * ADDRESS_LEN;
    let mut out = BytesMut::with_capacity(len);
    request
        .reply(Status::SUCCESS, [request.data[0], 0, 0], len)
        .emit(&mut out);
    out.put_u64(ep.dev_guid);
    out.put_u8(ep.port_num);
    out.put_u8(ep.phys_port_cnt);
    out.put_u16(0);
    out.put_u16(ep.pkey);
    out.put_u16(u16::try_from(addresses.len()).unwrap_or(u16::MAX));
    put_text(&mut out, &ep.provider);
    for a in addresses {
        put_text(&mut out, a);
    }
    out.freeze()
}

/// `text` in a 64-byte NUL-terminated field, cut to 63 bytes.
fn put_text(out: &mut BytesMut, text: &str) {
    let mut field = [0u8; ADDRESS_LEN];
    let n = text.len().min(ADDRESS_LEN - 1);
    field[..n].copy_from_slice(&text.as_bytes()[..n]);
    out.put_slice(&field);
}

#[cfg(test)]
mod tests;
