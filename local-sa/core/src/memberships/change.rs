//! A member's request: a join or a leave.

use mad_codec::{ComponentMask, McMemberRecord};

/// A join or a leave by a member.
#[derive(Debug, Clone)]
pub struct Change<M, A> {
    /// Join (true) or leave.
    pub join: bool,
    /// Who.
    pub member: M,
    /// True for a member that keeps a membership only by joining again
    /// within the lease (one that joined by MAD).
    pub renews: bool,
    /// Who waits for the answer.
    pub asker: A,
    /// The request's component mask.
    pub mask: ComponentMask,
    /// The request's record.
    pub record: McMemberRecord,
}
