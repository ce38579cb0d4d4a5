//! One multicast group as this port's agent sees it: what the master holds
//! for the port, which of those bits this agent added (and may delete),
//! which belong to someone else on the port, and each local member's bits.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Instant;

use mad_codec::{JoinState, McMemberRecord};

use super::change::{Change, OpId};

/// Every JoinState bit: what "someone else may hold any of them" looks
/// like.
pub(super) const ALL_BITS: JoinState = JoinState(0xF);

/// One group.
#[derive(Debug)]
pub(super) struct Group<M, A> {
    /// The group's record as the master last returned it for this port:
    /// kept while the group is known here, even when the master holds no
    /// bits any more, as the template to join it again.
    pub(super) record: Option<McMemberRecord>,
    /// The JoinState bits the master holds for this port, whoever on the
    /// port asked for them.
    pub(super) held: JoinState,
    /// The bits of `held` this agent's own Sets added: the only ones it
    /// ever deletes. The master keeps one JoinState per port, so a bit
    /// another agent on the port (the kernel's IPoIB or rdma_cm) held
    /// before this agent's first join stays out of this set.
    pub(super) ours: JoinState,
    /// Bits another agent on the port may hold: what the port held before
    /// this agent's first join (all bits when the master would not say
    /// which), and bits the master's answers show that this agent never
    /// asked for.
    pub(super) foreign: JoinState,
    /// The master was asked whether the port was in the group before this
    /// agent's first join.
    pub(super) probed: bool,
    /// Whether the group exists at the master, as far as a join that
    /// would create it needed to know (`None`: not asked).
    pub(super) exists: Option<bool>,
    /// The member whose join created the group at the master.
    pub(super) creator: Option<M>,
    /// The master deleted the group (trap 67) since members were last told
    /// its record: they hear again once it is back.
    pub(super) lost: bool,
    /// Joining the lost group again failed (it needs a full member to be
    /// created): the next try waits for trap 66 or a new master.
    pub(super) wait_for_creation: bool,
    /// The master never answered the last Delete (after every try, or
    /// the one try at shutdown): nothing more is tried, and `ours` stays
    /// listed for the next agent on the port
    /// ([`super::Memberships::possibly_held`]), until the master is known
    /// to hold nothing for the port ([`Group::forget_held`]).
    pub(super) abandoned: bool,
    /// Each local member's bits.
    pub(super) members: HashMap<M, JoinState>,
    /// A request to the master is out for this group.
    pub(super) busy: bool,
    /// Which one, once sent.
    pub(super) op: Option<OpId>,
    /// Requests waiting for it.
    pub(super) queue: VecDeque<Change<M, A>>,
    /// When each renewing member's lease ends.
    pub(super) leases: HashMap<M, Instant>,
    /// After a request the master did not answer (or refused while
    /// re-joining): when to bring the master in line again.
    pub(super) retry_at: Option<Instant>,
    /// Leaves of this group the master did not answer, in a row: the next
    /// try first asks whether the port is still in the group.
    pub(super) leave_failures: u32,
    /// After such a failure, the master said the port is still in the
    /// group: the next try is the Delete itself.
    pub(super) leave_verified: bool,
}

impl<M, A> Default for Group<M, A> {
    fn default() -> Self {
        Self {
            record: None,
            held: JoinState::NONE,
            ours: JoinState::NONE,
            foreign: JoinState::NONE,
            probed: false,
            exists: None,
            creator: None,
            lost: false,
            wait_for_creation: false,
            abandoned: false,
            members: HashMap::new(),
            busy: false,
            op: None,
            queue: VecDeque::new(),
            leases: HashMap::new(),
            retry_at: None,
            leave_failures: 0,
            leave_verified: false,
        }
    }
}

impl<M: Eq + Hash, A> Group<M, A> {
    /// The bits some member holds.
    pub(super) fn needed(&self) -> JoinState {
        self.members
            .values()
            .fold(JoinState::NONE, |acc, b| acc | *b)
    }

    /// Bits this agent added that no member holds any more (none once the
    /// group is abandoned).
    pub(super) fn unneeded(&self) -> JoinState {
        if self.abandoned {
            return JoinState::NONE;
        }
        self.ours.minus(self.needed())
    }

    /// Local members holding `bit`.
    pub(super) fn count(&self, bit: JoinState) -> usize {
        self.members.values().filter(|b| b.contains(bit)).count()
    }

    /// The master answered a Set of `asked` with the port's JoinState
    /// `now_held`: what it added that nobody else held is this agent's;
    /// what it shows that this agent never asked for is someone else's.
    pub(super) fn set_answered(&mut self, asked: JoinState, now_held: JoinState) {
        self.held = now_held;
        self.ours = (self.ours | asked.minus(self.foreign)) & now_held;
        self.foreign |= now_held.minus(self.ours);
        self.probed = true;
    }

    /// The master answered a Delete of `deleted` leaving the port
    /// `now_held`.
    pub(super) fn delete_answered(&mut self, deleted: JoinState, now_held: JoinState) {
        self.held = now_held;
        self.ours = self.ours.minus(deleted) & now_held;
        self.foreign |= now_held.minus(self.ours);
    }

    /// The master holds nothing for the port any more: nor anything a
    /// leave was given up on, so the next bits added are deleted as any.
    pub(super) fn forget_held(&mut self) {
        self.held = JoinState::NONE;
        self.ours = JoinState::NONE;
        self.abandoned = false;
        self.leave_failures = 0;
        self.leave_verified = false;
    }

    /// True when nothing is left of it here: no member, nothing of ours at
    /// the master (or given up on at shutdown), nothing asked or waiting.
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
            && (self.ours.is_empty() || self.abandoned)
            && !self.busy
            && self.queue.is_empty()
    }
}
