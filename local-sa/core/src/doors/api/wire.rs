//! The local API's wire format (version 1): how a program on this node
//! that cannot use the umad device asks local-sa for paths, notices and
//! multicast memberships over its Unix socket. docs/local-api.md is the
//! specification; this module is its one implementation, used by the
//! daemon's server and by lsaquery. Requests decode into the agent's own
//! [`Request`]; its [`LocalReply`]s encode into answer and notice frames.
//!
//! Every frame, both ways, is a 16-byte header and a body. Integers are
//! big-endian; records are IBA wire records.
//!
//! ```text
//! 0   u32  length of what follows (12 + body), at most MAX_FRAME
//! 4   u8   version (1)
//! 5   u8   kind
//! 6   u8   flags: MORE (1) on every frame of a split answer but its last
//! 7   u8   reserved (0)
//! 8   u32  request number, chosen by the client, echoed; 0 in notices
//! 12  u16  status: MAD status of the answer, or an API error (0xFFxx)
//! 14  u16  reserved (0)
//! 16  ...  body
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{
    ComponentMask, Gid, InformInfo, MadStatus, McMemberRecord, Method, Notice, PathRecord,
};

use crate::memberships::GroupEvent;
use crate::request::{Hello, LocalBody, LocalReply, Lookup, PathQuery, Request, RequestKind};

/// The protocol version this module speaks.
pub const VERSION: u8 = 1;

/// Bytes of the header after the length field.
pub const HEADER_LEN: usize = 12;

/// Longest frame accepted (after the length field): a table of 16 384
/// PathRecords.
pub const MAX_FRAME: usize = HEADER_LEN + 64 * 16_384;

/// Body bytes one frame carries at most.
pub const MAX_BODY: usize = MAX_FRAME - HEADER_LEN;

/// Frame flags.
pub mod flags {
    /// More of this answer follows in the next frame with the same
    /// request number: an answer longer than [`super::MAX_BODY`] is sent
    /// as several frames, cut between records.
    pub const MORE: u8 = 0x01;
}

/// Frame kinds.
pub mod kind {
    /// Who is serving: answered with [`HELLO_ANSWER`].
    pub const HELLO: u8 = 0x01;
    /// PathRecord Get/GetTable.
    pub const PATH_QUERY: u8 = 0x02;
    /// InformInfo: subscribe or unsubscribe.
    pub const INFORM: u8 = 0x03;
    /// MCMemberRecord join.
    pub const JOIN: u8 = 0x04;
    /// MCMemberRecord leave.
    pub const LEAVE: u8 = 0x05;
    /// This port's subscriptions.
    pub const LIST_SUBSCRIPTIONS: u8 = 0x06;
    /// This port's multicast groups.
    pub const LIST_GROUPS: u8 = 0x07;
    /// Refresh this port's paths now (administrators only).
    pub const REFRESH: u8 = 0x08;
    /// Drop the cached paths (administrators only).
    pub const FLUSH: u8 = 0x09;
    /// A page of the cached paths (administrators only).
    pub const DUMP: u8 = 0x0A;
    /// How the port's agent is doing: `name value` lines.
    pub const STATUS: u8 = 0x0B;
    /// An answer is the request's kind with this bit set.
    pub const ANSWER: u8 = 0x80;
    /// The answer to HELLO.
    pub const HELLO_ANSWER: u8 = HELLO | ANSWER;
    /// A notice the connection subscribed to (request number 0).
    pub const NOTICE: u8 = 0xC0;
    /// News of a multicast group the connection is a member of (request
    /// number 0): see [`super::group_event()`].
    pub const GROUP_EVENT: u8 = 0xC1;
    /// A request the daemon could not take (see [`super::api_error`]).
    pub const ERROR: u8 = 0xFF;
}

/// API errors, in the status field of an [`kind::ERROR`] frame.
pub mod api_error {
    /// The frame's version is not one the daemon speaks.
    pub const VERSION: u16 = 0xFF01;
    /// Unknown kind.
    pub const KIND: u16 = 0xFF02;
    /// The body does not have the kind's length or contents.
    pub const BODY: u16 = 0xFF03;
    /// The length field is below [`super::HEADER_LEN`] or above
    /// [`super::MAX_FRAME`]: framing is lost, so the connection is
    /// closed after this error.
    pub const LENGTH: u16 = 0xFF04;
    /// The request is for the node's administrators (root and the
    /// daemon's own user) and the connection's peer is neither.
    pub const DENIED: u16 = 0xFF05;
}

pub use crate::request::{DUMP_PAGE, dump_from_after};

// A page is one frame's worth.
const _: () = assert!(DUMP_PAGE as usize * PathRecord::LEN == MAX_BODY);

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its kind.
    pub kind: u8,
    /// Its flags ([`flags`]).
    pub flags: u8,
    /// The request number.
    pub request: u32,
    /// Status.
    pub status: u16,
    /// Body.
    pub body: Bytes,
}

/// Why a frame was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Longer than [`MAX_FRAME`] or shorter than the header.
    Length(usize),
    /// Another protocol version.
    Version(u8),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Length(n) => write!(f, "length {n} (at most {MAX_FRAME})"),
            Self::Version(v) => write!(f, "protocol version {v}"),
        }
    }
}

impl Frame {
    /// A frame.
    pub fn new(kind: u8, request: u32, status: u16, body: Bytes) -> Self {
        Self {
            kind,
            flags: 0,
            request,
            status,
            body,
        }
    }

    /// The frame on the wire, length field included.
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(4 + HEADER_LEN + self.body.len());
        out.put_u32((HEADER_LEN + self.body.len()) as u32);
        out.put_u8(VERSION);
        out.put_u8(self.kind);
        out.put_u8(self.flags);
        out.put_u8(0);
        out.put_u32(self.request);
        out.put_u16(self.status);
        out.put_u16(0);
        out.put_slice(&self.body);
        out.freeze()
    }

    /// The length a frame's length field announces, if acceptable.
    pub fn announced(len_field: [u8; 4]) -> Result<usize, FrameError> {
        let n = u32::from_be_bytes(len_field) as usize;
        if (HEADER_LEN..=MAX_FRAME).contains(&n) {
            Ok(n)
        } else {
            Err(FrameError::Length(n))
        }
    }

    /// Decodes the `rest` of a frame (everything after the length field).
    pub fn decode(rest: &[u8]) -> Result<Self, FrameError> {
        let Some((h, body)) = rest.split_at_checked(HEADER_LEN) else {
            return Err(FrameError::Length(rest.len()));
        };
        if h[0] != VERSION {
            return Err(FrameError::Version(h[0]));
        }
        Ok(Self {
            kind: h[1],
            flags: h[2],
            request: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            status: u16::from_be_bytes([h[8], h[9]]),
            body: Bytes::copy_from_slice(body),
        })
    }
}

/// The frame kind of a request of `kind`.
pub fn request_kind_code(kind: RequestKind) -> u8 {
    match kind {
        RequestKind::Hello => kind::HELLO,
        RequestKind::PathQuery => kind::PATH_QUERY,
        RequestKind::Inform => kind::INFORM,
        RequestKind::Join => kind::JOIN,
        RequestKind::Leave => kind::LEAVE,
        RequestKind::ListSubscriptions => kind::LIST_SUBSCRIPTIONS,
        RequestKind::ListGroups => kind::LIST_GROUPS,
        RequestKind::Refresh => kind::REFRESH,
        RequestKind::Flush => kind::FLUSH,
        RequestKind::Dump => kind::DUMP,
        RequestKind::Status => kind::STATUS,
    }
}

/// The PATH_QUERY body's code for `lookup`.
fn lookup_code(lookup: Lookup) -> u8 {
    match lookup {
        Lookup::Anywhere => 0,
        Lookup::CacheOnly => 1,
        Lookup::Master => 2,
        Lookup::KnownOnly => 3,
    }
}

/// The frame carrying `request` under number `id`.
pub fn request_frame(request: &Request, id: u32) -> Frame {
    let body = match request {
        Request::Hello
        | Request::ListSubscriptions
        | Request::ListGroups
        | Request::Refresh
        | Request::Flush
        | Request::Status => Bytes::new(),
        Request::Dump {
            from,
            max,
            partition,
        } => {
            let mut b = BytesMut::with_capacity(10);
            b.put_u32(*from);
            b.put_u32(*max);
            if let Some(pkey) = partition {
                b.put_u16(*pkey);
            }
            b.freeze()
        }
        Request::PathQuery { query: q, lookup } => {
            let mut b = BytesMut::with_capacity(80);
            b.put_u8(q.method.0);
            b.put_u8(lookup_code(*lookup));
            b.put_bytes(0, 6);
            b.put_u64(q.mask.0);
            b.put_slice(q.template.as_bytes());
            b.freeze()
        }
        Request::Inform(ii) => Bytes::copy_from_slice(ii.as_bytes()),
        Request::Join { mask, record } | Request::Leave { mask, record } => {
            let mut b = BytesMut::with_capacity(60);
            b.put_u64(mask.0);
            b.put_slice(record.as_bytes());
            b.freeze()
        }
    };
    Frame::new(request_kind_code(request.kind()), id, 0, body)
}

/// The request a frame carries, or the API error to answer it with.
pub fn decode_request(f: &Frame) -> Result<Request, u16> {
    let body = &f.body[..];
    let exact = |n: usize| {
        if body.len() == n {
            Ok(())
        } else {
            Err(api_error::BODY)
        }
    };
    let mask_at = |at: usize| {
        body.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(|b| ComponentMask(u64::from_be_bytes(b)))
            .ok_or(api_error::BODY)
    };
    Ok(match f.kind {
        kind::HELLO => Request::Hello,
        kind::PATH_QUERY => {
            exact(80)?;
            let method = Method(body[0]);
            if method != Method::GET && method != Method::GET_TABLE {
                return Err(api_error::BODY);
            }
            let lookup = match body[1] {
                0 => Lookup::Anywhere,
                1 => Lookup::CacheOnly,
                2 => Lookup::Master,
                3 => Lookup::KnownOnly,
                _ => return Err(api_error::BODY),
            };
            let template = PathRecord::read_from_bytes(&body[16..]).map_err(|_| api_error::BODY)?;
            Request::PathQuery {
                query: PathQuery {
                    method,
                    mask: mask_at(8)?,
                    template,
                },
                lookup,
            }
        }
        kind::INFORM => {
            exact(InformInfo::LEN)?;
            Request::Inform(InformInfo::read_from_bytes(body).map_err(|_| api_error::BODY)?)
        }
        kind::JOIN | kind::LEAVE => {
            exact(8 + McMemberRecord::LEN)?;
            let mask = mask_at(0)?;
            let record =
                McMemberRecord::read_from_bytes(&body[8..]).map_err(|_| api_error::BODY)?;
            if f.kind == kind::JOIN {
                Request::Join { mask, record }
            } else {
                Request::Leave { mask, record }
            }
        }
        kind::LIST_SUBSCRIPTIONS => Request::ListSubscriptions,
        kind::LIST_GROUPS => Request::ListGroups,
        kind::REFRESH => Request::Refresh,
        kind::FLUSH => Request::Flush,
        kind::STATUS => Request::Status,
        kind::DUMP => {
            if body.len() != 10 {
                exact(8)?;
            }
            let word = |at: usize| {
                u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]])
            };
            Request::Dump {
                from: word(0),
                max: word(4),
                partition: (body.len() == 10).then(|| u16::from_be_bytes([body[8], body[9]])),
            }
        }
        _ => return Err(api_error::KIND),
    })
}

/// The frames carrying a reply: one, or for records longer than
/// [`MAX_BODY`] several, cut between records, each but the last flagged
/// [`flags::MORE`].
pub fn reply_frames(reply: &LocalReply) -> Vec<Frame> {
    let whole = reply_frame(reply);
    let LocalBody::Records { stride, .. } = &reply.body else {
        return vec![whole];
    };
    if whole.body.len() <= MAX_BODY {
        return vec![whole];
    }
    let stride = (*stride).max(1);
    let part = MAX_BODY - MAX_BODY % stride;
    let mut frames: Vec<Frame> = (0..whole.body.len())
        .step_by(part)
        .map(|at| Frame {
            flags: flags::MORE,
            body: whole.body.slice(at..(at + part).min(whole.body.len())),
            ..whole.clone()
        })
        .collect();
    if let Some(last) = frames.last_mut() {
        last.flags = 0;
    }
    frames
}

/// Puts split answers back together on the client side: give it every
/// answer frame; it returns each answer whole, once its last frame has
/// arrived.
#[derive(Debug, Default)]
pub struct Reassembly {
    parts: std::collections::HashMap<u32, BytesMut>,
}

impl Reassembly {
    /// Takes `frame`; returns the whole answer when `frame` ends one.
    pub fn push(&mut self, frame: Frame) -> Option<Frame> {
        let more = frame.flags & flags::MORE != 0;
        if !more && !self.parts.contains_key(&frame.request) {
            return Some(frame);
        }
        let body = self.parts.entry(frame.request).or_default();
        body.put_slice(&frame.body);
        if more {
            return None;
        }
        let body = self
            .parts
            .remove(&frame.request)
            .unwrap_or_default()
            .freeze();
        Some(Frame {
            flags: 0,
            body,
            ..frame
        })
    }
}

/// The frame carrying a reply: an answer (the request's kind with
/// [`kind::ANSWER`] set) or a notice, whole (see [`reply_frames`]).
pub fn reply_frame(reply: &LocalReply) -> Frame {
    let kind = match (reply.answers, &reply.body) {
        (Some(k), _) => request_kind_code(k) | kind::ANSWER,
        (None, LocalBody::GroupEvent(_)) => kind::GROUP_EVENT,
        (None, _) => kind::NOTICE,
    };
    let body = match &reply.body {
        LocalBody::Empty => Bytes::new(),
        LocalBody::Records { data, .. } => data.clone(),
        LocalBody::Notice(n) => Bytes::copy_from_slice(n.as_bytes()),
        LocalBody::Hello(h) => hello_body(h),
        LocalBody::GroupEvent(e) => group_event_body(e),
        LocalBody::CacheChange { before, after } => {
            let mut b = BytesMut::with_capacity(16);
            b.put_u64(*before);
            b.put_u64(*after);
            b.freeze()
        }
        LocalBody::Status(report) => Bytes::from(report.to_text()),
    };
    Frame::new(kind, reply.request, reply.status.0, body)
}

/// Reads the body of REFRESH's and FLUSH's answers: PathRecords cached
/// before and after.
pub fn decode_cache_change(body: &[u8]) -> Option<(u64, u64)> {
    let before = u64::from_be_bytes(body.get(..8)?.try_into().ok()?);
    let after = u64::from_be_bytes(body.get(8..16)?.try_into().ok()?);
    Some((before, after))
}

/// The body of HELLO's answer: GID (16), LID (2), SM LID (2).
fn hello_body(h: &Hello) -> Bytes {
    let mut b = BytesMut::with_capacity(20);
    b.put_slice(h.gid.as_bytes());
    b.put_u16(h.lid);
    b.put_u16(h.sm_lid);
    b.freeze()
}

/// Reads the body of HELLO's answer.
pub fn decode_hello(body: &[u8]) -> Option<Hello> {
    let (gid, rest) = Gid::read_from_prefix(body).ok()?;
    let lid = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?);
    let sm_lid = u16::from_be_bytes(rest.get(2..4)?.try_into().ok()?);
    Some(Hello { gid, lid, sm_lid })
}

/// What a group event says: lost (the master deleted the group) or back.
pub mod group_event {
    /// The master deleted the group: the port is in it no more.
    pub const LOST: u8 = 0x01;
    /// The group exists again (or has a new MLID): the record follows.
    pub const BACK: u8 = 0x02;
}

/// Bytes of a group event's body: event (1), 7 reserved, MCMemberRecord
/// (52, padded to its SA stride of 56).
pub const GROUP_EVENT_LEN: usize = 8 + McMemberRecord::STRIDE;

/// The body of a group event: the event byte, and the group's record
/// (only its MGID when it is lost).
fn group_event_body(e: &GroupEvent) -> Bytes {
    let (code, record) = match e {
        GroupEvent::Lost(mgid) => {
            let mut r = McMemberRecord::new_zeroed();
            r.set_mgid(*mgid);
            (group_event::LOST, r)
        }
        GroupEvent::Recreated(r) => (group_event::BACK, *r),
    };
    let mut b = BytesMut::with_capacity(GROUP_EVENT_LEN);
    b.put_u8(code);
    b.put_bytes(0, 7);
    b.put_slice(record.as_bytes());
    b.put_bytes(0, McMemberRecord::STRIDE - McMemberRecord::LEN);
    b.freeze()
}

/// A group event frame's event, if it is one local-sa sends.
pub fn group_event(f: &Frame) -> Option<GroupEvent> {
    if f.kind != kind::GROUP_EVENT || f.body.len() < GROUP_EVENT_LEN {
        return None;
    }
    let record = McMemberRecord::read_from_bytes(f.body.get(8..8 + McMemberRecord::LEN)?).ok()?;
    match f.body[0] {
        group_event::LOST => Some(GroupEvent::Lost(record.mgid())),
        group_event::BACK => Some(GroupEvent::Recreated(record)),
        _ => None,
    }
}

/// A notice frame's Notice.
pub fn notice(f: &Frame) -> Option<Notice> {
    (f.kind == kind::NOTICE)
        .then(|| Notice::read_from_bytes(&f.body).ok())
        .flatten()
}

/// The status of an answer frame as a MAD status.
pub fn status(f: &Frame) -> MadStatus {
    MadStatus(f.status)
}

/// A short description of an API error status.
pub fn describe_error(status: u16) -> &'static str {
    match status {
        api_error::VERSION => "unsupported protocol version",
        api_error::KIND => "unknown request kind",
        api_error::BODY => "malformed request body",
        api_error::LENGTH => "frame length out of range",
        api_error::DENIED => "only root and local-sa's own user may do this",
        _ => "error",
    }
}

/// An API error frame for request `id`.
pub fn error_frame(id: u32, status: u16) -> Frame {
    Frame::new(kind::ERROR, id, status, Bytes::new())
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{InformInfoRepr, TrapNumber};

    use super::*;

    fn roundtrip(r: &Request) {
        let wire = request_frame(r, 42).encode();
        let n = Frame::announced(wire[..4].try_into().unwrap()).unwrap();
        assert_eq!(n, wire.len() - 4);
        let f = Frame::decode(&wire[4..]).unwrap();
        assert_eq!((f.request, f.status), (42, 0));
        assert_eq!(decode_request(&f).as_ref(), Ok(r));
    }

    #[test]
    fn every_request_survives_the_wire() {
        let mut t = PathRecord::new_zeroed();
        t.set_dlid(9);
        roundtrip(&Request::Hello);
        for lookup in [
            Lookup::Anywhere,
            Lookup::CacheOnly,
            Lookup::Master,
            Lookup::KnownOnly,
        ] {
            roundtrip(&Request::PathQuery {
                query: PathQuery {
                    method: Method::GET_TABLE,
                    mask: ComponentMask(0x30),
                    template: t,
                },
                lookup,
            });
        }
        roundtrip(&Request::Inform(
            InformInfoRepr::generic_subscription(TrapNumber(65), true, 1, 19).to_wire(),
        ));
        let mut m = McMemberRecord::new_zeroed();
        m.set_qkey(7);
        let mask = ComponentMask(0x1_0003);
        roundtrip(&Request::Join { mask, record: m });
        roundtrip(&Request::Leave { mask, record: m });
        roundtrip(&Request::ListSubscriptions);
        roundtrip(&Request::ListGroups);
        roundtrip(&Request::Refresh);
        roundtrip(&Request::Flush);
        roundtrip(&Request::Status);
        roundtrip(&Request::Dump {
            from: 0x0004_0009,
            max: DUMP_PAGE,
            partition: None,
        });
        roundtrip(&Request::Dump {
            from: 0,
            max: 7,
            partition: Some(0x8001),
        });
    }

    #[test]
    fn cache_changes_survive_the_wire() {
        let reply = LocalReply {
            conn: 1,
            request: 3,
            answers: Some(RequestKind::Flush),
            status: MadStatus::OK,
            from_master: false,
            body: LocalBody::CacheChange {
                before: 1_000_000,
                after: 0,
            },
        };
        let f = reply_frame(&reply);
        assert_eq!(f.kind, kind::FLUSH | kind::ANSWER);
        assert_eq!(decode_cache_change(&f.body), Some((1_000_000, 0)));
        assert_eq!(decode_cache_change(&f.body[..15]), None);
        // A dump page's body is two words.
        let short = Frame::new(kind::DUMP, 1, 0, Bytes::from_static(&[0; 7]));
        assert_eq!(decode_request(&short), Err(api_error::BODY));
    }

    #[test]
    fn bad_frames_get_specific_errors() {
        let ok = request_frame(&Request::Hello, 1).encode();
        let mut other_version = ok.to_vec();
        other_version[4] = 9;
        assert_eq!(
            Frame::decode(&other_version[4..]),
            Err(FrameError::Version(9))
        );
        assert_eq!(Frame::announced([0, 0, 0, 3]), Err(FrameError::Length(3)));
        assert_eq!(
            Frame::announced(u32::MAX.to_be_bytes()),
            Err(FrameError::Length(u32::MAX as usize))
        );
        let unknown = Frame::new(0x33, 1, 0, Bytes::new());
        assert_eq!(decode_request(&unknown), Err(api_error::KIND));
        let short = Frame::new(kind::INFORM, 1, 0, Bytes::from_static(&[0; 10]));
        assert_eq!(decode_request(&short), Err(api_error::BODY));
        let query = Request::PathQuery {
            query: PathQuery {
                method: Method::GET,
                mask: ComponentMask(0),
                template: PathRecord::new_zeroed(),
            },
            lookup: Lookup::Anywhere,
        };
        let mut q = request_frame(&query, 1);
        let mut body = q.body.to_vec();
        body[0] = 0x02; // Set is not a query
        q.body = Bytes::from(body.clone());
        assert_eq!(decode_request(&q), Err(api_error::BODY));
        body[0] = Method::GET.0;
        body[1] = 4; // no such lookup
        q.body = Bytes::from(body);
        assert_eq!(decode_request(&q), Err(api_error::BODY));
    }

    #[test]
    fn replies_carry_the_kind_they_answer() {
        let hello = Hello {
            gid: Gid::new(Gid::DEFAULT_PREFIX, 5),
            lid: 5,
            sm_lid: 1,
        };
        let reply = LocalReply {
            conn: 3,
            request: 9,
            answers: Some(RequestKind::Hello),
            status: MadStatus::OK,
            from_master: false,
            body: LocalBody::Hello(hello),
        };
        let f = reply_frame(&reply);
        assert_eq!((f.kind, f.request, f.status), (kind::HELLO_ANSWER, 9, 0));
        assert_eq!(decode_hello(&f.body), Some(hello));
        assert_eq!(decode_hello(&[0; 3]), None);
        let notice = LocalReply {
            request: 0,
            answers: None,
            body: LocalBody::Notice(Notice::new_zeroed()),
            ..reply
        };
        let f = reply_frame(&notice);
        assert_eq!((f.kind, f.body.len()), (kind::NOTICE, 80));
        assert!(super::notice(&f).is_some());
    }

    #[test]
    fn a_table_over_the_frame_limit_goes_as_several_frames_and_comes_back_whole() {
        // 40,000 PathRecords: 2.56 MB, more than two frames' worth.
        let data: Bytes = (0..40_000u32)
            .flat_map(|i| {
                let mut r = [0u8; 64];
                r[..4].copy_from_slice(&i.to_be_bytes());
                r
            })
            .collect();
        let reply = LocalReply {
            conn: 3,
            request: 7,
            answers: Some(RequestKind::PathQuery),
            status: MadStatus::OK,
            from_master: false,
            body: LocalBody::Records {
                attribute: mad_codec::AttributeId::PATH_RECORD,
                stride: 64,
                data: data.clone(),
            },
        };
        let frames = reply_frames(&reply);
        assert_eq!(frames.len(), 3);
        let mut whole = None;
        let mut reassembly = Reassembly::default();
        for (i, f) in frames.iter().enumerate() {
            let wire = f.encode();
            assert!(
                wire.len() - 4 <= MAX_FRAME,
                "frame {i} is {} bytes",
                wire.len()
            );
            assert_eq!(f.body.len() % 64, 0, "cut between records");
            let decoded = Frame::decode(&wire[4..]).unwrap();
            assert_eq!(decoded.flags & flags::MORE != 0, i < 2);
            whole = reassembly.push(decoded);
            assert_eq!(whole.is_some(), i == 2);
        }
        let whole = whole.unwrap();
        assert_eq!((whole.request, whole.flags, whole.body), (7, 0, data));
        // A short answer is one frame, passed straight through.
        let short = LocalReply {
            body: LocalBody::Empty,
            ..reply
        };
        let frames = reply_frames(&short);
        assert_eq!(frames.len(), 1);
        assert_eq!(reassembly.push(frames[0].clone()), Some(frames[0].clone()));
    }
}
