//! Requests from programs on this node and the agent's replies to them:
//! one type whatever door a request came through (the local API, the
//! ibacm door, the kernel door), so the agent never knows which. A door decodes its wire format
//! into a [`Request`] for [`SaCore::handle_local`] and encodes each
//! [`LocalReply`] from [`SaCore::poll_local`] back.
//!
//! [`SaCore::handle_local`]: crate::agent::SaCore::handle_local
//! [`SaCore::poll_local`]: crate::agent::SaCore::poll_local

use crate::memberships::GroupEvent;
use bytes::Bytes;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromBytes;
use mad_codec::{
    AttributeId, ComponentMask, Gid, InformInfo, MadStatus, McMemberRecord, Method, Notice,
    PathRecord,
};

/// A connection of a door (a local API client), as the daemon numbers it.
pub type ConnId = u64;

/// A PathRecord Get or GetTable, from a port or a local program: what
/// makes two queries the same query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathQuery {
    /// Get or GetTable.
    pub method: Method,
    /// Which template fields select.
    pub mask: ComponentMask,
    /// The template.
    pub template: PathRecord,
}

/// Where a PathRecord query may be answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Lookup {
    /// The store or a kept answer if they know, else the master SA.
    #[default]
    Anywhere,
    /// Only what is known now: a query the store cannot answer is answered
    /// ERR_NO_RECORDS at once, and goes to the master in the background
    /// so that a later lookup finds its answer (ibacm's NODELAY).
    CacheOnly,
    /// The master SA, whatever is known (ibacm's QUERY_SA, which `ib_acme
    /// -v` checks against); identical queries in flight still share one
    /// request.
    Master,
    /// Only what is known now, and nothing fetched on a miss
    /// (ERR_NO_RECORDS): for the ibacm door's alternate paths, which are
    /// worth having only when they cost the master nothing.
    KnownOnly,
}

/// What a local program asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Which port this agent serves.
    Hello,
    /// PathRecord Get or GetTable (any other method is refused with MAD
    /// status 0x000C).
    PathQuery {
        /// The query.
        query: PathQuery,
        /// Where it may be answered from.
        lookup: Lookup,
    },
    /// InformInfo Set: subscribe (Subscribe 1) or unsubscribe (0).
    Inform(InformInfo),
    /// MCMemberRecord Set: join a group with the record's JoinState.
    Join {
        /// Which record fields are given.
        mask: ComponentMask,
        /// The member record (PortGID is filled in by the agent).
        record: McMemberRecord,
    },
    /// MCMemberRecord Delete: leave the JoinState bits of the record.
    Leave {
        /// Which record fields are given.
        mask: ComponentMask,
        /// The member record.
        record: McMemberRecord,
    },
    /// This port's subscriptions, as InformInfoRecords.
    ListSubscriptions,
    /// The multicast groups this port holds, as MCMemberRecords.
    ListGroups,
    /// Fetch this port's paths from the master now (a full refresh);
    /// answered with [`LocalBody::CacheChange`] when it ends. For the
    /// node's administrators only ([`Request::is_admin`]).
    Refresh,
    /// Drop every cached PathRecord: queries go to the master until the
    /// next refresh or load. Answered with [`LocalBody::CacheChange`].
    /// Administrators only.
    Flush,
    /// A page of the cache: up to `max` PathRecords in (SLID, DLID) order,
    /// from the pair `from` (SLID << 16 | DLID) on, of the default table
    /// or of the partition table of `partition`'s P_Key. A record held
    /// throughout a dump is in exactly one page. Administrators only.
    Dump {
        /// The first pair of the page.
        from: u32,
        /// Records at most.
        max: u32,
        /// The P_Key whose partition table is dumped; `None`: the
        /// default table.
        partition: Option<u16>,
    },
    /// How the port's agent is doing ([`LocalBody::Status`]): anyone
    /// may ask.
    Status,
}

/// Records a [`Request::Dump`] page holds at most: 16,384, what one
/// local API frame holds (the agent and the door agree on it).
pub const DUMP_PAGE: u32 = 16_384;

/// Where the DUMP page after the one ending with `last` starts; `None`
/// after the last pair there can be.
pub fn dump_from_after(last: &PathRecord) -> Option<u32> {
    crate::store::pair_key(last.slid(), last.dlid()).checked_add(1)
}

/// Which kind of [`Request`] a reply answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// [`Request::Hello`].
    Hello,
    /// [`Request::PathQuery`].
    PathQuery,
    /// [`Request::Inform`].
    Inform,
    /// [`Request::Join`].
    Join,
    /// [`Request::Leave`].
    Leave,
    /// [`Request::ListSubscriptions`].
    ListSubscriptions,
    /// [`Request::ListGroups`].
    ListGroups,
    /// [`Request::Refresh`].
    Refresh,
    /// [`Request::Flush`].
    Flush,
    /// [`Request::Dump`].
    Dump,
    /// [`Request::Status`].
    Status,
}

impl Request {
    /// Its kind.
    pub fn kind(&self) -> RequestKind {
        match self {
            Self::Hello => RequestKind::Hello,
            Self::PathQuery { .. } => RequestKind::PathQuery,
            Self::Inform(_) => RequestKind::Inform,
            Self::Join { .. } => RequestKind::Join,
            Self::Leave { .. } => RequestKind::Leave,
            Self::ListSubscriptions => RequestKind::ListSubscriptions,
            Self::ListGroups => RequestKind::ListGroups,
            Self::Refresh => RequestKind::Refresh,
            Self::Flush => RequestKind::Flush,
            Self::Dump { .. } => RequestKind::Dump,
            Self::Status => RequestKind::Status,
        }
    }

    /// Whether only the node's administrators (root and the daemon's own
    /// user) may make it: it controls or shows the whole cache.
    pub fn is_admin(&self) -> bool {
        matches!(self, Self::Refresh | Self::Flush | Self::Dump { .. })
    }
}

/// The port an agent serves, as [`Request::Hello`] is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The port's GID.
    pub gid: Gid,
    /// Its base LID.
    pub lid: u16,
    /// The master SM's LID.
    pub sm_lid: u16,
}

/// What the agent tells a local program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    /// To whom.
    pub conn: ConnId,
    /// The number of the request it answers; 0 for a notice.
    pub request: u32,
    /// The kind of request it answers; `None` for a notice.
    pub answers: Option<RequestKind>,
    /// The SA status of the answer (0 for a notice).
    pub status: MadStatus,
    /// Whether the answer waited for the master SA (false: it came from
    /// the store or a kept answer, or is a notice).
    pub from_master: bool,
    /// What it carries.
    pub body: LocalBody,
}

/// The payload of a [`LocalReply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalBody {
    /// Nothing beyond the status.
    Empty,
    /// Records of one attribute, back to back at `stride` bytes.
    Records {
        /// Their attribute.
        attribute: AttributeId,
        /// Bytes from one record to the next.
        stride: usize,
        /// The records.
        data: Bytes,
    },
    /// A notice the program subscribed to.
    Notice(Notice),
    /// News of a multicast group the program is a member of.
    GroupEvent(GroupEvent),
    /// The port served.
    Hello(Hello),
    /// PathRecords cached before and after a refresh or flush.
    CacheChange {
        /// Before.
        before: u64,
        /// After.
        after: u64,
    },
    /// How the agent (and the daemon around it) is doing.
    Status(StatusReport),
}

/// Named values, in order: a status report. Names are snake_case words;
/// values are text on one line (a name may repeat: `recent_warning`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusReport(pub Vec<(String, String)>);

impl StatusReport {
    /// Adds `name` with `value` (line breaks become spaces).
    pub fn push(&mut self, name: &str, value: impl std::fmt::Display) {
        let value = value.to_string().replace(['\n', '\r'], " ");
        self.0.push((name.to_owned(), value));
    }

    /// The first value named `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value named `name`, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `name value` lines: the wire form.
    pub fn to_text(&self) -> String {
        self.0.iter().map(|(n, v)| format!("{n} {v}\n")).collect()
    }

    /// Reads [`StatusReport::to_text`]'s lines back.
    pub fn from_text(text: &str) -> Self {
        Self(
            text.lines()
                .filter_map(|l| {
                    let (n, v) = l.split_once(' ').unwrap_or((l, ""));
                    (!n.is_empty()).then(|| (n.to_owned(), v.to_owned()))
                })
                .collect(),
        )
    }
}

impl LocalBody {
    /// The PathRecords a records body holds (the first 64 bytes of each
    /// record), in order; none for any other body.
    pub fn path_records(&self) -> impl Iterator<Item = PathRecord> + '_ {
        let (data, stride) = match self {
            Self::Records { data, stride, .. } if *stride >= PathRecord::LEN => {
                (&data[..], *stride)
            }
            _ => (&[][..], PathRecord::LEN),
        };
        data.chunks_exact(stride)
            .filter_map(|b| PathRecord::read_from_bytes(&b[..PathRecord::LEN]).ok())
    }
}
