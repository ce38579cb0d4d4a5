//! What a request waiting for its agent becomes: the shape of the
//! client's reply, and how a RESOLVE reply's entries are put together.

use bytes::Bytes;
use mad_codec::PathRecord;

use crate::doors::acm::wire::{self, Entry, Header, Message, Status};
use crate::path_flags;
use crate::request::Lookup;

/// A request waiting for its agent's reply.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) endpoint: usize,
    pub(super) header: Header,
    pub(super) shape: ReplyShape,
}

/// How the agent's answer becomes the reply.
#[derive(Debug)]
pub(super) enum ReplyShape {
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
pub(super) enum AlternateFrom {
    /// Endpoint N, on another port of this node in the same partition:
    /// another rail, whatever the LMC.
    OtherPort(usize),
    /// The same port, to another of the destination's LIDs (LMC > 0).
    OtherLid,
}

/// A RESOLVE reply: the primary path, the alternate if there is one, then
/// the source entry ibacm echoes (PATH entries first and together, as
/// librdmacm copies them).
pub(super) fn resolve_entries(
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
