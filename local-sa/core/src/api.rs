//! The local API's wire format (version 1): how a program on this node
//! that cannot use the umad device asks local-sa for paths, notices and
//! multicast memberships over its Unix socket. docs/local-api.md is the
//! specification; this module is its one implementation, used by the
//! daemon's server and by lsaquery.
//!
//! Every frame, both ways, is a 16-byte header and a body. Integers are
//! big-endian; records are IBA wire records.
//!
//! ```text
//! 0   u32  length of what follows (12 + body), at most MAX_FRAME
//! 4   u8   version (1)
//! 5   u8   kind
//! 6   u8   flags (answers: bit 0 = records truncated)
//! 7   u8   reserved (0)
//! 8   u32  request number, chosen by the client, echoed; 0 in notices
//! 12  u16  status: MAD status of the answer, or an API error (0xFFxx)
//! 14  u16  reserved (0)
//! 16  ...  body
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{
    ComponentMask, Gid, InformInfo, MadStatus, McMemberRecord, Method, Notice, PathRecord,
};

/// The protocol version this module speaks.
pub const VERSION: u8 = 1;

/// Bytes of the header after the length field.
pub const HEADER_LEN: usize = 12;

/// Longest frame accepted (after the length field): a table of 16 384
/// PathRecords.
pub const MAX_FRAME: usize = HEADER_LEN + 64 * 16_384;

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
    /// An answer is the request's kind with this bit set.
    pub const ANSWER: u8 = 0x80;
    /// The answer to HELLO.
    pub const HELLO_ANSWER: u8 = HELLO | ANSWER;
    /// A notice the connection subscribed to (request number 0).
    pub const NOTICE: u8 = 0xC0;
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
}

/// Answer flag: only part of the master's answer arrived.
pub const FLAG_TRUNCATED: u8 = 0x01;

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its kind.
    pub kind: u8,
    /// Flags.
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

impl Frame {
    /// A frame with no flags.
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

/// What a request frame asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Who is serving.
    Hello,
    /// PathRecord Get or GetTable.
    PathQuery {
        /// Get or GetTable.
        method: Method,
        /// Component mask.
        mask: ComponentMask,
        /// Template.
        template: PathRecord,
    },
    /// Subscribe (InformInfo.Subscribe 1) or unsubscribe (0).
    Inform(InformInfo),
    /// Join (true) or leave.
    Membership {
        /// Join or leave.
        join: bool,
        /// Component mask.
        mask: ComponentMask,
        /// The member record.
        record: McMemberRecord,
    },
    /// This port's subscriptions.
    ListSubscriptions,
    /// This port's groups.
    ListGroups,
}

impl Request {
    /// The frame carrying this request under number `request`.
    pub fn to_frame(&self, request: u32) -> Frame {
        let (kind, body) = match self {
            Self::Hello => (kind::HELLO, Bytes::new()),
            Self::PathQuery {
                method,
                mask,
                template,
            } => {
                let mut b = BytesMut::with_capacity(80);
                b.put_u8(method.0);
                b.put_bytes(0, 7);
                b.put_u64(mask.0);
                b.put_slice(template.as_bytes());
                (kind::PATH_QUERY, b.freeze())
            }
            Self::Inform(ii) => (kind::INFORM, Bytes::copy_from_slice(ii.as_bytes())),
            Self::Membership { join, mask, record } => {
                let mut b = BytesMut::with_capacity(60);
                b.put_u64(mask.0);
                b.put_slice(record.as_bytes());
                (if *join { kind::JOIN } else { kind::LEAVE }, b.freeze())
            }
            Self::ListSubscriptions => (kind::LIST_SUBSCRIPTIONS, Bytes::new()),
            Self::ListGroups => (kind::LIST_GROUPS, Bytes::new()),
        };
        Frame::new(kind, request, 0, body)
    }

    /// The request a frame carries, or the API error to answer it with.
    pub fn from_frame(f: &Frame) -> Result<Self, u16> {
        let body = &f.body[..];
        let exact = |n: usize| {
            if body.len() == n {
                Ok(())
            } else {
                Err(api_error::BODY)
            }
        };
        Ok(match f.kind {
            kind::HELLO => Self::Hello,
            kind::PATH_QUERY => {
                exact(80)?;
                let method = Method(body[0]);
                if method != Method::GET && method != Method::GET_TABLE {
                    return Err(api_error::BODY);
                }
                let mask = ComponentMask(u64::from_be_bytes(
                    body[8..16].try_into().map_err(|_| api_error::BODY)?,
                ));
                let template =
                    PathRecord::read_from_bytes(&body[16..]).map_err(|_| api_error::BODY)?;
                Self::PathQuery {
                    method,
                    mask,
                    template,
                }
            }
            kind::INFORM => {
                exact(InformInfo::LEN)?;
                Self::Inform(InformInfo::read_from_bytes(body).map_err(|_| api_error::BODY)?)
            }
            kind::JOIN | kind::LEAVE => {
                exact(8 + McMemberRecord::LEN)?;
                let mask = ComponentMask(u64::from_be_bytes(
                    body[..8].try_into().map_err(|_| api_error::BODY)?,
                ));
                let record =
                    McMemberRecord::read_from_bytes(&body[8..]).map_err(|_| api_error::BODY)?;
                Self::Membership {
                    join: f.kind == kind::JOIN,
                    mask,
                    record,
                }
            }
            kind::LIST_SUBSCRIPTIONS => Self::ListSubscriptions,
            kind::LIST_GROUPS => Self::ListGroups,
            _ => return Err(api_error::KIND),
        })
    }
}

/// The answer to HELLO: this port as local-sa serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The port's GID.
    pub gid: Gid,
    /// Its base LID.
    pub lid: u16,
    /// The master SM's LID.
    pub sm_lid: u16,
}

impl Hello {
    /// The answer body: GID (16), LID (2), SM LID (2).
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(20);
        b.put_slice(self.gid.as_bytes());
        b.put_u16(self.lid);
        b.put_u16(self.sm_lid);
        b.freeze()
    }

    /// Reads an answer body.
    pub fn decode(body: &[u8]) -> Option<Self> {
        let (gid, rest) = Gid::read_from_prefix(body).ok()?;
        let lid = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?);
        let sm_lid = u16::from_be_bytes(rest.get(2..4)?.try_into().ok()?);
        Some(Self { gid, lid, sm_lid })
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
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{InformInfoRepr, TrapNumber};

    use super::*;

    fn roundtrip(r: &Request) {
        let wire = r.to_frame(42).encode();
        let n = Frame::announced(wire[..4].try_into().unwrap()).unwrap();
        assert_eq!(n, wire.len() - 4);
        let f = Frame::decode(&wire[4..]).unwrap();
        assert_eq!((f.request, f.status), (42, 0));
        assert_eq!(Request::from_frame(&f).as_ref(), Ok(r));
    }

    #[test]
    fn every_request_survives_the_wire() {
        let mut t = PathRecord::new_zeroed();
        t.set_dlid(9);
        roundtrip(&Request::Hello);
        roundtrip(&Request::PathQuery {
            method: Method::GET_TABLE,
            mask: ComponentMask(0x30),
            template: t,
        });
        roundtrip(&Request::Inform(
            InformInfoRepr::generic_subscription(TrapNumber(65), true, 1, 19).to_wire(),
        ));
        let mut m = McMemberRecord::new_zeroed();
        m.set_qkey(7);
        roundtrip(&Request::Membership {
            join: true,
            mask: ComponentMask(0x1_0003),
            record: m,
        });
        roundtrip(&Request::Membership {
            join: false,
            mask: ComponentMask(0x1_0003),
            record: m,
        });
        roundtrip(&Request::ListSubscriptions);
        roundtrip(&Request::ListGroups);
    }

    #[test]
    fn bad_frames_get_specific_errors() {
        let ok = Request::Hello.to_frame(1).encode();
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
        assert_eq!(Request::from_frame(&unknown), Err(api_error::KIND));
        let short = Frame::new(kind::INFORM, 1, 0, Bytes::from_static(&[0; 10]));
        assert_eq!(Request::from_frame(&short), Err(api_error::BODY));
        let mut q = Request::PathQuery {
            method: Method::GET,
            mask: ComponentMask(0),
            template: PathRecord::new_zeroed(),
        }
        .to_frame(1);
        let mut body = q.body.to_vec();
        body[0] = 0x02; // Set is not a query
        q.body = Bytes::from(body);
        assert_eq!(Request::from_frame(&q), Err(api_error::BODY));
    }

    #[test]
    fn hello_reads_back() {
        let h = Hello {
            gid: Gid::new(Gid::DEFAULT_PREFIX, 5),
            lid: 5,
            sm_lid: 1,
        };
        assert_eq!(Hello::decode(&h.encode()), Some(h));
        assert_eq!(Hello::decode(&[0; 3]), None);
    }
}
