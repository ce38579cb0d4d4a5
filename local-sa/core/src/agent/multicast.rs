//! Multicast groups this port belongs to, and who on this node wants it
//! in them: per (port, MGID) the JoinState bits the master holds, the
//! group record it last returned, and each local member's bits.
//!
//! The rules (the kernel's multicast.c, improved): a join whose bits the
//! master already holds for this port, with fields that match the group,
//! completes here without SA traffic; any other join goes upstream once and
//! the group record is taken from the answer. A leave keeps every bit some
//! member still holds; the master is asked to delete only the bits nobody
//! holds any more. One upstream request per group is in flight at a time;
//! requests that arrive meanwhile wait their turn.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::{ComponentMask, Gid, JoinState, McMemberRecord};

use super::Asker;
use super::local::ConnId;

/// A member of a group on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Member {
    /// A process on this port that joined with a MAD (its QP).
    Mad {
        /// The port LID it sent from (one of this port's).
        lid: u16,
        /// Its QP.
        qpn: u32,
    },
    /// A local API connection.
    Local(ConnId),
}

/// A request waiting for its group's turn.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub(crate) join: bool,
    pub(crate) member: Member,
    pub(crate) asker: Asker,
    pub(crate) mask: ComponentMask,
    pub(crate) record: McMemberRecord,
}

/// One group.
#[derive(Debug, Default)]
pub(crate) struct Group {
    /// The record the master last returned for this port.
    pub(crate) record: Option<McMemberRecord>,
    /// The JoinState bits the master holds for this port.
    pub(crate) held: JoinState,
    /// Each local member's bits.
    pub(crate) members: HashMap<Member, JoinState>,
    /// A request to the master is out for this group.
    pub(crate) busy: bool,
    /// Requests waiting for it.
    pub(crate) queue: VecDeque<Queued>,
    /// When each MAD member's lease ends (it renews by joining again).
    pub(crate) leases: HashMap<Member, Instant>,
    /// After a request the master did not answer (or refused while
    /// re-joining): when to bring the master in line again.
    pub(crate) retry_at: Option<Instant>,
}

impl Group {
    /// The bits some member holds.
    pub(crate) fn needed(&self) -> JoinState {
        self.members
            .values()
            .fold(JoinState::NONE, |acc, b| acc | *b)
    }

    /// Local members holding `bit`.
    pub(crate) fn count(&self, bit: JoinState) -> usize {
        self.members.values().filter(|b| b.contains(bit)).count()
    }

    /// True when nothing is left of it here.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.held.is_empty() && !self.busy && self.queue.is_empty()
    }
}

/// Every group of this port, by MGID.
pub(crate) type Groups = BTreeMap<Gid, Group>;

/// True when a join of `request` (fields per `mask`) can be completed from
/// `group`'s record: every value the member gives equals the group's (the
/// master's compatibility rules, conservatively: where in doubt, the master
/// decides). Selectors other than "exactly" go to the master.
pub(crate) fn compatible(
    group: &McMemberRecord,
    mask: ComponentMask,
    request: &McMemberRecord,
) -> bool {
    let given = |bit| mask.contains(bit);
    let exact = |sel_bit, val_bit, sel: mad_codec::Selector, same: bool| {
        if !given(sel_bit) && !given(val_bit) {
            return true;
        }
        given(sel_bit) && given(val_bit) && sel == mad_codec::Selector::Exactly && same
    };
    (!given(mc::QKEY) || request.qkey() == group.qkey())
        && (!given(mc::MLID) || request.mlid() == 0 || request.mlid() == group.mlid())
        && (!given(mc::TCLASS) || request.tclass() == group.tclass())
        && (!given(mc::PKEY) || request.pkey() & 0x7FFF == group.pkey() & 0x7FFF)
        && (!given(mc::SL) || request.sl() == group.sl())
        && (!given(mc::FLOW_LABEL) || request.flow_label() == group.flow_label())
        && (!given(mc::HOP_LIMIT) || request.hop_limit() == group.hop_limit())
        && (!given(mc::SCOPE) || request.scope() == group.scope())
        && exact(
            mc::MTU_SELECTOR,
            mc::MTU,
            request.mtu_selector(),
            request.mtu() == group.mtu(),
        )
        && exact(
            mc::RATE_SELECTOR,
            mc::RATE,
            request.rate_selector(),
            request.rate() == group.rate(),
        )
        && exact(
            mc::PACKET_LIFE_TIME_SELECTOR,
            mc::PACKET_LIFE_TIME,
            request.packet_life_selector(),
            request.packet_life() == group.packet_life(),
        )
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;
    use mad_codec::{Mtu, Selector};

    use super::*;

    fn group() -> McMemberRecord {
        let mut g = McMemberRecord::new_zeroed();
        g.set_qkey(0x1234);
        g.set_pkey(0xFFFF);
        g.set_mtu_selector(Selector::Exactly);
        g.set_mtu(Mtu::MTU_2048);
        g.set_mlid(0xC001);
        g
    }

    #[test]
    fn given_fields_must_equal_the_groups() {
        let mut r = McMemberRecord::new_zeroed();
        assert!(compatible(&group(), mc::JOIN, &r), "nothing given");
        r.set_qkey(0x1234);
        assert!(compatible(&group(), mc::JOIN | mc::QKEY, &r));
        r.set_qkey(0x9);
        assert!(!compatible(&group(), mc::JOIN | mc::QKEY, &r));
        let mut r = McMemberRecord::new_zeroed();
        r.set_pkey(0x7FFF);
        assert!(
            compatible(&group(), mc::JOIN | mc::PKEY, &r),
            "the same partition, limited"
        );
        r.set_mtu_selector(Selector::Exactly);
        r.set_mtu(Mtu::MTU_2048);
        assert!(compatible(
            &group(),
            mc::JOIN | mc::MTU_SELECTOR | mc::MTU,
            &r
        ));
        r.set_mtu_selector(Selector::LessThan);
        assert!(
            !compatible(&group(), mc::JOIN | mc::MTU_SELECTOR | mc::MTU, &r),
            "the master decides"
        );
    }

    #[test]
    fn needed_bits_are_the_union_of_the_members() {
        let mut g = Group::default();
        g.members.insert(Member::Local(1), JoinState::FULL_MEMBER);
        g.members.insert(Member::Local(2), JoinState::NON_MEMBER);
        g.members.insert(
            Member::Local(3),
            JoinState::FULL_MEMBER | JoinState::NON_MEMBER,
        );
        assert_eq!(g.needed(), JoinState::FULL_MEMBER | JoinState::NON_MEMBER);
        assert_eq!(
            (
                g.count(JoinState::FULL_MEMBER),
                g.count(JoinState::SEND_ONLY_NON_MEMBER)
            ),
            (2, 0)
        );
        assert!(!g.is_empty());
    }
}
