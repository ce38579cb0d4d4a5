//! A member's request: a join or a leave.

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::{ComponentMask, JoinState, McMemberRecord};

/// Names a request to the master, so that its answer finds its way back.
pub type OpId = u64;

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
    /// Whether this join may create the group at the master if it does
    /// not exist (the member's owner has group creations left); a join
    /// that would create one without it is refused with
    /// ERR_NO_RESOURCES.
    pub may_create: bool,
}

impl<M, A> Change<M, A> {
    /// True for a join that creates the group at the master if it does not
    /// exist: it gives what OpenSM needs to create one and asks to be a
    /// full member or send-only full member.
    pub fn can_create(&self) -> bool {
        let bits = self.record.join_state();
        self.join
            && self.mask.contains(mc::CREATE)
            && (bits.contains(JoinState::FULL_MEMBER)
                || bits.contains(JoinState::SEND_ONLY_FULL_MEMBER))
    }
}
