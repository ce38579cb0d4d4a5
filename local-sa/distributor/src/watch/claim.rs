//! One active watch among several, as OpenSM's standby SMs: the nodes
//! themselves referee.
//!
//! A node's lease names its owner, and while the owner renews it the node
//! refuses every other sender's loads, naming the owner
//! (docs/wire-contract.md, "Leases"); an owner silent for two of its
//! renewal intervals is taken as gone. So a watch that starts, or stands
//! by, claims one node's lease with a renewal — the node of lowest LID
//! among those running local-sa, the same for every watch of the same
//! nodes — before it pushes anything:
//!
//! * taken: no other watch is active (none ever was, or the active one
//!   went silent long enough for the node to take it as gone): this one
//!   fills and watches;
//! * held by another: that one is active; this one stands by and claims
//!   again after a while;
//! * no answer, or a refusal that names nobody: the next node is asked.
//!   When no node answers, nothing referees; the watch goes ahead (its
//!   fill says which nodes took its tables).
//!
//! Two watches claiming at once ask the same node, which takes the first
//! and refuses the second. A watch that comes back after another took
//! over is refused by the referee at its next renewal: fenced off, it
//! stands by ([`super::Watch::handle_renewed`]). Other nodes' refusals do
//! not fence: a node cut off with the old watch may still name it.

use local_sa_core::requester::Answer;
use mad_codec::{Gid, MadStatus};

/// How a node answered a lease: a push, a renewal or a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseAnswer {
    /// It took the lease.
    Taken,
    /// Another distributor, at this LID, holds the node's lease.
    HeldBy(u16),
    /// It refused, naming nobody (a wrong SM_Key, a local-sa that takes
    /// no lease).
    Refused(MadStatus),
    /// No answer came.
    Unanswered,
}

impl LeaseAnswer {
    /// What the node's answer (`None`: none came) says.
    pub fn of(answer: Option<&Answer>) -> Self {
        let Some(a) = answer else {
            return Self::Unanswered;
        };
        let owner = a.header().mad.attribute_modifier();
        match a.status() {
            MadStatus::OK => Self::Taken,
            MadStatus::ERR_REQ_DENIED if owner != 0 => {
                Self::HeldBy(u16::try_from(owner).unwrap_or(u16::MAX))
            }
            other => Self::Refused(other),
        }
    }
}

/// Where a claim ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claimed {
    /// This watch is the active one: the node at this LID took its lease
    /// (`None`: no node answered, nothing referees).
    Active(Option<u16>),
    /// Another is active: `owner` holds the lease of the node at
    /// `referee`.
    StandBy {
        /// The active distributor's LID.
        owner: u16,
        /// The node that said so.
        referee: u16,
    },
}

/// A claim under way: the nodes to ask, lowest LID first.
#[derive(Debug, Clone)]
pub struct Claim {
    nodes: Vec<(Gid, u16)>,
    next: usize,
}

impl Claim {
    /// A claim of the lease of the first of `nodes` (GID, LID) to answer,
    /// lowest LID first.
    pub fn new(mut nodes: Vec<(Gid, u16)>) -> Self {
        nodes.sort_by_key(|(_, lid)| *lid);
        nodes.dedup_by_key(|(_, lid)| *lid);
        Self { nodes, next: 0 }
    }

    /// The node to ask now, unless the claim is over.
    pub fn node(&self) -> Option<(Gid, u16)> {
        self.nodes.get(self.next).copied()
    }

    /// How the node asked answered: where the claim ended, or `None` to
    /// ask the next ([`Claim::node`]).
    pub fn handle(&mut self, answer: LeaseAnswer) -> Option<Claimed> {
        let (_, lid) = self.node()?;
        match answer {
            LeaseAnswer::Taken => Some(Claimed::Active(Some(lid))),
            LeaseAnswer::HeldBy(owner) => Some(Claimed::StandBy {
                owner,
                referee: lid,
            }),
            LeaseAnswer::Refused(_) | LeaseAnswer::Unanswered => {
                self.next += 1;
                self.node().is_none().then_some(Claimed::Active(None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::{AttributeId, Method, SaMadBuilder};

    use super::*;

    fn gid(lid: u16) -> Gid {
        Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + u64::from(lid))
    }

    fn answer(status: MadStatus, modifier: u32) -> Answer {
        let mut b = SaMadBuilder::request(Method::GET_RESP, 1, AttributeId::PATH_RECORD);
        b.header_mut().mad.set_status(status);
        b.header_mut().mad.set_attribute_modifier(modifier);
        Answer::whole(b.into_bytes()).unwrap()
    }

    #[test]
    fn a_refusal_naming_an_owner_is_that_owner_s_lease_any_other_is_a_refusal() {
        let held = answer(MadStatus::ERR_REQ_DENIED, 14);
        assert_eq!(LeaseAnswer::of(Some(&held)), LeaseAnswer::HeldBy(14));
        let no_key = answer(MadStatus::ERR_REQ_DENIED, 0);
        assert_eq!(
            LeaseAnswer::of(Some(&no_key)),
            LeaseAnswer::Refused(MadStatus::ERR_REQ_DENIED)
        );
        assert_eq!(
            LeaseAnswer::of(Some(&answer(MadStatus::OK, 0))),
            LeaseAnswer::Taken
        );
        assert_eq!(LeaseAnswer::of(None), LeaseAnswer::Unanswered);
    }

    #[test]
    fn the_lowest_lid_that_answers_referees() {
        let mut c = Claim::new(vec![(gid(9), 9), (gid(4), 4), (gid(6), 6)]);
        assert_eq!(c.node(), Some((gid(4), 4)), "every watch asks the same");
        assert_eq!(c.handle(LeaseAnswer::Unanswered), None);
        assert_eq!(c.node(), Some((gid(6), 6)));
        assert_eq!(
            c.handle(LeaseAnswer::HeldBy(21)),
            Some(Claimed::StandBy {
                owner: 21,
                referee: 6
            })
        );
        let mut c = Claim::new(vec![(gid(4), 4), (gid(6), 6)]);
        assert_eq!(c.handle(LeaseAnswer::Taken), Some(Claimed::Active(Some(4))));
    }

    #[test]
    fn with_no_referee_the_watch_goes_ahead() {
        let mut c = Claim::new(vec![(gid(4), 4), (gid(6), 6)]);
        assert_eq!(c.handle(LeaseAnswer::Unanswered), None);
        assert_eq!(
            c.handle(LeaseAnswer::Refused(MadStatus::ERR_REQ_INVALID)),
            Some(Claimed::Active(None))
        );
        assert_eq!(Claim::new(Vec::new()).node(), None);
    }
}
