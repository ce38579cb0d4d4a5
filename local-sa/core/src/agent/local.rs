//! Consumers on this node that reach the agent through the local API (see
//! `daemon::api` and docs/local-api.md) instead of MADs: what they may ask
//! and what they are told. The daemon turns socket frames into
//! [`LocalRequest`]s for [`SaCore::handle_local`](super::SaCore::handle_local)
//! and hands each [`LocalReply`] from
//! [`SaCore::poll_local`](super::SaCore::poll_local) to its connection.

use bytes::Bytes;
use mad_codec::{
    AttributeId, ComponentMask, InformInfo, MadStatus, McMemberRecord, Method, Notice, PathRecord,
};

/// A local API connection.
pub type ConnId = u64;

/// A request from a local consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalRequest {
    /// PathRecord Get or GetTable: the method, the component mask and the
    /// template.
    PathQuery {
        /// Get or GetTable.
        method: Method,
        /// Which template fields select.
        mask: ComponentMask,
        /// The template.
        template: PathRecord,
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
    Subscriptions,
    /// The multicast groups this port holds, as MCMemberRecords.
    Groups,
}

/// What the agent tells a local consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    /// To whom.
    pub conn: ConnId,
    /// The request it answers; 0 for a notice.
    pub request: u32,
    /// The SA status of the answer (0 for a notice).
    pub status: MadStatus,
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
        /// Only part of the master's answer arrived (a transport without
        /// RMPP cut it): these are its whole records.
        truncated: bool,
    },
    /// A notice the consumer subscribed to.
    Notice(Notice),
}
