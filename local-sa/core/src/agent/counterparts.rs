//! Who the agent deals with: askers, who wait for an answer; subscribers,
//! who hold notice subscriptions; members, who hold multicast memberships;
//! refresh waiters, who wait for the port's paths to be fetched again.

use mad_codec::Gid;

use crate::inbound::SaRequest;
use crate::request::{ConnId, RequestKind};

/// Who asked something, and how the answer goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asker {
    /// A port, by MAD: answers echo its request's headers.
    Mad(SaRequest),
    /// A local program, by request number.
    Local {
        /// Its connection.
        conn: ConnId,
        /// Its request number.
        id: u32,
        /// What it asked.
        kind: RequestKind,
        /// Whether its answer waited for the master.
        waited: bool,
    },
}

impl Asker {
    /// True for the same request sent again (a client's retry: same
    /// port, QP and TransactionID, or the same local request).
    pub(crate) fn same_request(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Mad(a), Self::Mad(b)) => a.same_request(b),
            (Self::Local { conn: a, id: i, .. }, Self::Local { conn: b, id: j, .. }) => {
                a == b && i == j
            }
            _ => false,
        }
    }

    /// The same asker, its answer having waited for the master.
    pub(crate) fn waited(self) -> Self {
        match self {
            Self::Local { conn, id, kind, .. } => Self::Local {
                conn,
                id,
                kind,
                waited: true,
            },
            mad => mad,
        }
    }

    /// The local connection, if that is who asked.
    pub(crate) fn conn(&self) -> Option<ConnId> {
        match self {
            Self::Local { conn, .. } => Some(*conn),
            Self::Mad(_) => None,
        }
    }

    /// The multicast member that asks: a local connection, or the QP of
    /// this port a MAD came from.
    pub(crate) fn member(&self) -> Member {
        match self {
            Self::Local { conn, .. } => Member::Local(*conn),
            Self::Mad(request) => Member::Mad {
                lid: request.from.lid,
                qpn: request.from.qpn,
            },
        }
    }
}

/// Who holds a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Subscriber {
    /// The agent itself.
    Core,
    /// A port that subscribed with a MAD, known by its GID and QP.
    Mad {
        /// The subscriber port's GID.
        gid: Gid,
        /// The QP its Set came from (where its Reports go).
        qpn: u32,
    },
    /// A local connection.
    Local(ConnId),
}

/// A member of a multicast group on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Member {
    /// A process on this port that joined with a MAD (its QP); it keeps
    /// its membership by joining again within the member lease.
    Mad {
        /// The port LID it sent from (one of this port's).
        lid: u16,
        /// Its QP.
        qpn: u32,
    },
    /// A local connection; its membership lasts while it is open.
    Local(ConnId),
}

/// How logs show a subscriber.
impl std::fmt::Display for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Core => write!(f, "local-sa itself"),
            Self::Mad { gid, qpn } => write!(f, "port {gid} QP {qpn}"),
            Self::Local(conn) => write!(f, "local connection {conn}"),
        }
    }
}

/// How logs show a multicast member.
impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Mad { lid, qpn } => write!(f, "LID {lid} QP {qpn}"),
            Self::Local(conn) => write!(f, "local connection {conn}"),
        }
    }
}

/// Someone waiting for a refresh of the port's paths to end.
#[derive(Debug)]
pub(crate) struct RefreshWaiter {
    pub(crate) asker: Asker,
    /// PathRecords cached when it asked.
    pub(crate) before: usize,
}
