//! Multicast groups this port belongs to, and who on this node wants it
//! in them, as a state machine without I/O: per (port, MGID) the JoinState
//! bits the master holds, the bits this agent added there, the group record
//! it last returned, and each local member's bits.
//!
//! The rules (the kernel's multicast.c, improved): a join whose bits the
//! master already holds for this port, with fields that match the group,
//! completes here without SA traffic; any other join goes upstream once and
//! the group record is taken from the answer. A leave keeps every bit some
//! member still holds; the master is asked to delete only bits nobody here
//! holds any more **and that this agent's own Sets added**. The master
//! keeps one JoinState per port, shared with every other agent on it (the
//! kernel's IPoIB and rdma_cm join through their own SA client): before
//! its first join of a group, the agent asks the master whether the port
//! is already in it, and bits someone else held are never deleted. One
//! upstream request per group is in flight at a time; requests that arrive
//! meanwhile wait their turn. Members that must renew (those that joined
//! by MAD) lose what they hold when their lease ends; after a new master,
//! every group is joined again with the bits its members hold. When the
//! master deletes a group (trap 67) its members are told, and it is joined
//! again — at once, or once it exists again (trap 66); members are told
//! when it is back, and when a new master gives it another MLID.
//!
//! Like [`informinfo::Registry`] it returns [`Effect`]s for its caller to
//! carry out — requests to send the master, answers to give, members whose
//! lease ended, group events — and is generic over how members (`M`) and
//! the askers waiting for answers (`A`) are identified. The invariant it
//! keeps, and that its fuzz target checks: once the master has answered
//! everything, the bits it holds for this port in each group are the union
//! of what the group's members and the port's other agents hold, and no
//! Delete ever names a bit some member or another agent still holds.

mod answers;
mod change;
mod group;
mod master_changes;
#[cfg(test)]
mod tests;

pub use self::change::{Change, OpId};
use self::group::{ALL_BITS, Group};
use crate::log_limit::{LogLimit, answer_status};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{ComponentMask, Gid, JoinState, MadStatus, McMemberRecord, Method, Selector};
use tracing::{debug, info, warn};

/// What the caller must do, or be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<M, A> {
    /// Send `method` (Set: join, Delete: leave) of `record` with component
    /// mask `mask` to the master, and report its answer with
    /// [`Memberships::answered`] under `op`.
    Send {
        /// The request's name.
        op: OpId,
        /// Set or Delete.
        method: Method,
        /// Its component mask.
        mask: ComponentMask,
        /// Its record.
        record: McMemberRecord,
    },
    /// Answer `asker`.
    Answer {
        /// Who waits.
        asker: A,
        /// What to tell it.
        answer: JoinAnswer,
    },
    /// `member` did not join again within its lease: it holds nothing any
    /// more, and its requests still waiting are dropped unanswered.
    LeaseEnded {
        /// Who.
        member: M,
    },
    /// Tell `member` what happened to a group it is in.
    Event {
        /// Who.
        member: M,
        /// What happened.
        event: GroupEvent,
    },
}

/// Something that happened to a group, that its members should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupEvent {
    /// The master deleted the group (trap 67): the port is in it no more.
    /// The member keeps its bits here; the group is joined again as soon
    /// as it can be.
    Lost(Gid),
    /// The group is back after it was lost, or a new master gave it
    /// another MLID: its record, with the JoinState the port holds.
    Recreated(McMemberRecord),
}

/// The answer to a join or a leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinAnswer {
    /// Joined here, the master holding the bits already: the group's
    /// record with the JoinState the port holds.
    Joined(McMemberRecord),
    /// Left: the request's record as OpenSM answers a Delete (selectors 2)
    /// with the JoinState the port still holds.
    Left(McMemberRecord),
    /// The master's own answer to this asker's request, to pass on as it
    /// came: `status` (BUSY when the master did not answer) and, on
    /// success, the record it returned.
    Master {
        /// The status to answer with.
        status: MadStatus,
        /// The master's record, on success.
        record: Option<McMemberRecord>,
    },
    /// Refused here with this status: OpenSM's checks, or
    /// ERR_NO_RESOURCES for a join that would have created the group
    /// without [`Change::may_create`].
    Refused(MadStatus),
}

/// How long memberships last and failures wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MembershipConfig {
    /// How long a member that renews stays without joining again.
    pub member_lease: Duration,
    /// How long a request the master did not answer waits to be tried
    /// again.
    pub retry_backoff: Duration,
}

/// What happened since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MembershipCounts {
    /// Joins completed here (the master held the bits).
    pub joins_local: u64,
    /// Joins sent to the master.
    pub joins_upstream: u64,
    /// Leaves.
    pub leaves: u64,
    /// Members dropped because their lease ended.
    pub leases_ended: u64,
    /// Groups whose leave the master never answered, given up after
    /// [`MAX_LEAVE_TRIES`] tries (the next agent on the port deletes
    /// them, from its record).
    pub leaves_given_up: u64,
    /// Groups forgotten because the master, asked before a leave was
    /// tried again, no longer held the port in them.
    pub groups_gone_at_master: u64,
}

/// Joins and leaves of one group that may wait while a request for it is
/// out; more are answered BUSY (a client pipelining them gets no more of
/// the agent's memory).
pub const MAX_WAITING_PER_GROUP: usize = 256;

/// Tries of one leave the master does not answer, before it is given up.
pub const MAX_LEAVE_TRIES: u32 = 8;

/// The longest wait between two tries of an unanswered leave.
const MAX_LEAVE_BACKOFF: Duration = Duration::from_secs(300);

/// A member's join, out at the master.
#[derive(Debug, Clone)]
struct PendingJoin<M, A> {
    member: M,
    renews: bool,
    asker: A,
    bits: JoinState,
    /// The member went away meanwhile: its bits are then not kept, and
    /// nobody is answered.
    gone: bool,
    /// The group did not exist: this join creates it.
    creates: bool,
}

/// A request to the master about a group.
#[derive(Debug, Clone)]
enum Op<M, A> {
    /// A member's join.
    Join(PendingJoin<M, A>),
    /// Asking whether the port is in the group before the agent's first
    /// join of it (or, `group`, whether the group exists, before a join
    /// that would create it); the join that waits for the answer (`gone`
    /// as in [`PendingJoin`]).
    Probe {
        change: Change<M, A>,
        gone: bool,
        group: bool,
    },
    /// Deleting `bits`, which nobody holds any more; the leaver, if one
    /// waits.
    Leave {
        asker: Option<(A, McMemberRecord)>,
        bits: JoinState,
    },
    /// Joining again with `bits` (a new master, a lost group).
    Rejoin { bits: JoinState },
    /// Asking whether the port is still in the group before trying again
    /// a leave the master did not answer.
    Verify,
}

/// A probe's answer, and the join waiting for it.
struct Probe<M, A> {
    change: Change<M, A>,
    gone: bool,
    /// Whether the group exists (else: whether the port is in it).
    group: bool,
}

/// The components of the question whether the port is in a group.
const PROBE_MASK: ComponentMask = ComponentMask(mc::MGID.0 | mc::PORT_GID.0);

/// The components of the question whether a group exists (OpenSM answers
/// an untrusted asker one record per group).
const EXISTS_MASK: ComponentMask = mc::MGID;

impl<M, A> Op<M, A> {
    /// The member whose request waits for this one, if it is still there.
    fn waiting_member(&self) -> Option<&M> {
        match self {
            Self::Join(j) if !j.gone => Some(&j.member),
            Self::Probe {
                change,
                gone: false,
                ..
            } => Some(&change.member),
            _ => None,
        }
    }
}

/// The components of a re-join: enough to create the group again.
const REJOIN_MASK: ComponentMask = ComponentMask(
    mc::CREATE.0 | mc::MLID.0 | mc::MTU_SELECTOR.0 | mc::MTU.0 | mc::RATE_SELECTOR.0 | mc::RATE.0,
);

/// Every group of one port.
#[derive(Debug)]
pub struct Memberships<M, A> {
    config: MembershipConfig,
    port_gid: Gid,
    groups: BTreeMap<Gid, Group<M, A>>,
    /// Groups given up on at shutdown, and the bits of ours the master may
    /// still hold there.
    abandoned: BTreeMap<Gid, JoinState>,
    ops: HashMap<OpId, (Option<Gid>, Op<M, A>)>,
    next_op: OpId,
    shutting_down: bool,
    counts: MembershipCounts,
    /// Lines about groups and members, which a local user or a peer can
    /// cause by the thousand: at most one a minute per kind.
    log: LogLimit<Warning>,
}

/// The lines about groups and members the log limits, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Warning {
    /// A group another agent of the port holds.
    HeldByAnother,
    /// A group lost at the master, waiting to be joined again.
    LostGroupWaits,
    /// A join again that failed.
    RejoinFailed,
    /// A leave given up after its retries, and one unanswered.
    LeaveGivenUp,
    LeaveUnanswered,
    /// A group back at the master, and one the master deleted.
    GroupBack,
    GroupDeleted,
    /// A MAD member whose lease ran out.
    MemberLease,
}

impl<M, A> Memberships<M, A>
where
    M: Copy + Eq + Hash + Debug + std::fmt::Display,
    A: Clone + Debug,
{
    /// No groups yet, for the port with GID `port_gid`.
    pub fn new(config: MembershipConfig, port_gid: Gid) -> Self {
        Self {
            config,
            port_gid,
            groups: BTreeMap::new(),
            abandoned: BTreeMap::new(),
            ops: HashMap::new(),
            next_op: 0,
            shutting_down: false,
            counts: MembershipCounts::default(),
            log: LogLimit::new(Duration::from_secs(60)),
        }
    }

    /// New lease and back-off for what happens from now on.
    pub fn set_config(&mut self, config: MembershipConfig) {
        self.config = config;
    }

    /// The port's GID changed: requests from now on carry the new one.
    pub fn set_port_gid(&mut self, gid: Gid) {
        self.port_gid = gid;
    }

    /// What happened since start.
    pub fn counts(&self) -> MembershipCounts {
        self.counts
    }

    /// Groups this port belongs to or is joining.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Memberships (member × group).
    pub fn members(&self) -> usize {
        self.groups.values().map(|g| g.members.len()).sum()
    }

    /// True when `mgid` is known here: some member, request or bits of
    /// this agent's at the master.
    pub fn knows(&self, mgid: Gid) -> bool {
        self.groups.contains_key(&mgid)
    }

    /// The bits `member` holds in `mgid`.
    pub fn member_bits(&self, mgid: Gid, member: &M) -> JoinState {
        self.groups
            .get(&mgid)
            .and_then(|g| g.members.get(member).copied())
            .unwrap_or(JoinState::NONE)
    }

    /// The group record and the bits the master holds for this port in
    /// `mgid`, if it holds any.
    pub fn held(&self, mgid: Gid) -> Option<(McMemberRecord, JoinState)> {
        self.groups
            .get(&mgid)
            .filter(|g| !g.held.is_empty())
            .and_then(|g| g.record.map(|r| (r, g.held)))
    }

    /// Every group this port holds, as MCMemberRecords with this port's
    /// GID and the JoinState the master holds.
    pub fn group_records(&self) -> Vec<McMemberRecord> {
        self.groups
            .values()
            .filter(|g| !g.held.is_empty())
            .filter_map(|g| {
                let mut r = g.record?;
                r.set_port_gid(self.port_gid);
                r.set_join_state(g.held);
                Some(r)
            })
            .collect()
    }

    /// True when a request for some group is out to the master.
    pub fn is_busy(&self) -> bool {
        !self.ops.is_empty()
    }

    /// True when `member` holds bits in `mgid`, or has a join or leave of
    /// it waiting or out (for [`Gid::ZERO`]: a join asking the master to
    /// assign a group).
    pub fn involves(&self, mgid: Gid, member: &M) -> bool {
        if mgid == Gid::ZERO {
            return self
                .ops
                .values()
                .any(|(g, op)| g.is_none() && op.waiting_member() == Some(member));
        }
        let Some(g) = self.groups.get(&mgid) else {
            return false;
        };
        g.members.contains_key(member)
            || g.queue.iter().any(|c| c.member == *member)
            || g.op
                .and_then(|id| self.ops.get(&id))
                .is_some_and(|(_, op)| op.waiting_member() == Some(member))
    }

    /// Whether request `op` (`sending` it, else its answer or failure)
    /// may make the master hold more for the port than
    /// [`Memberships::possibly_held`] listed before: sending a join; the
    /// answer to one whose group the master names (a join that asked it
    /// to assign one).
    pub fn may_add(&self, op: OpId, sending: bool) -> bool {
        match self.ops.get(&op) {
            Some((_, Op::Join(_) | Op::Rejoin { .. })) if sending => true,
            Some((None, Op::Join(_))) => true,
            _ => false,
        }
    }

    /// The member whose join created `mgid` at the master, if one here did.
    pub fn created_by(&self, mgid: Gid) -> Option<M> {
        self.groups.get(&mgid).and_then(|g| g.creator)
    }

    /// True when `member` created `mgid` at the master, or its join of it
    /// is still out and may yet (whether the group exists is not known);
    /// false once it is known that it did not. For [`Gid::ZERO`]: a join
    /// asking the master to assign a group is out.
    pub fn may_have_created(&self, mgid: Gid, member: &M) -> bool {
        if mgid == Gid::ZERO {
            return self.involves(mgid, member);
        }
        let Some(g) = self.groups.get(&mgid) else {
            return false;
        };
        if g.creator.is_some() {
            return g.creator.as_ref() == Some(member);
        }
        g.record.is_none() && g.exists != Some(true) && self.involves(mgid, member)
    }

    /// A member joins or leaves.
    pub fn request(&mut self, now: Instant, change: Change<M, A>, out: &mut Vec<Effect<M, A>>) {
        let refuse = |out: &mut Vec<Effect<M, A>>, asker: A, status| {
            out.push(Effect::Answer {
                asker,
                answer: JoinAnswer::Refused(status),
            });
        };
        // OpenSM's first checks.
        if !change.mask.contains(mc::JOIN) {
            return refuse(
                out,
                change.asker,
                MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS,
            );
        }
        if change.join && self.shutting_down {
            // Joined now, it would outlive the agent at the master.
            return refuse(out, change.asker, MadStatus::BUSY);
        }
        let bits = change.record.join_state();
        let gid = change.record.port_gid();
        let ours =
            gid == self.port_gid || (gid.is_link_local() && gid.guid() == self.port_gid.guid());
        if bits.is_empty() || !ours {
            return refuse(out, change.asker, MadStatus::ERR_REQ_INVALID);
        }
        let mgid = change.record.mgid();
        if mgid == Gid::ZERO {
            if !change.join {
                return refuse(out, change.asker, MadStatus::ERR_REQ_INVALID);
            }
            // The master assigns the MGID, creating a group: nothing
            // here to share.
            if !change.may_create {
                return refuse(out, change.asker, MadStatus::ERR_NO_RESOURCES);
            }
            let op = Op::Join(PendingJoin {
                member: change.member,
                renews: change.renews,
                asker: change.asker,
                bits,
                gone: false,
                creates: true,
            });
            return self.send(None, Method::SET, change.mask, change.record, op, out);
        }
        let group = self.groups.entry(mgid).or_default();
        if group.busy {
            if group.queue.len() >= MAX_WAITING_PER_GROUP {
                return refuse(out, change.asker, MadStatus::BUSY);
            }
            group.queue.push_back(change);
            return;
        }
        if change.join {
            self.join(now, mgid, change, out);
        } else {
            self.leave(mgid, change, out);
        }
        self.drop_if_empty(mgid);
    }

    fn join(&mut self, now: Instant, mgid: Gid, c: Change<M, A>, out: &mut Vec<Effect<M, A>>) {
        let bits = c.record.join_state();
        let lease = now + self.config.member_lease;
        let group = self.groups.entry(mgid).or_default();
        let local = group
            .record
            .filter(|r| group.held.contains(bits) && compatible(r, c.mask, &c.record));
        if let Some(group_record) = local {
            *group.members.entry(c.member).or_default() |= bits;
            if c.renews {
                group.leases.insert(c.member, lease);
            }
            let mut answer = group_record;
            answer.set_join_state(group.held);
            self.counts.joins_local += 1;
            debug!(%mgid, %bits, "join completed here: the master holds these bits already");
            return out.push(Effect::Answer {
                asker: c.asker,
                answer: JoinAnswer::Joined(answer),
            });
        }
        if group.record.is_none() && !group.probed {
            // Whether the port is in the group already, through another
            // agent: the bits that agent holds must never be deleted.
            group.busy = true;
            let probe = port_record(mgid, self.port_gid, JoinState::NONE);
            let op = Op::Probe {
                change: c,
                gone: false,
                group: false,
            };
            return self.send(Some(mgid), Method::GET, PROBE_MASK, probe, op, out);
        }
        if group.record.is_none() && group.exists.is_none() && c.can_create() {
            // Whether this join creates the group: creating one costs
            // the fabric a multicast LID, and its member's owner may
            // create only so many.
            group.busy = true;
            let probe = port_record(mgid, Gid::ZERO, JoinState::NONE);
            let op = Op::Probe {
                change: c,
                gone: false,
                group: true,
            };
            return self.send(Some(mgid), Method::GET, EXISTS_MASK, probe, op, out);
        }
        let creates = group.record.is_none() && group.exists == Some(false) && c.can_create();
        if creates && !c.may_create {
            debug!(%mgid, "a join that would create a group, past its owner's limit: refused");
            return out.push(Effect::Answer {
                asker: c.asker,
                answer: JoinAnswer::Refused(MadStatus::ERR_NO_RESOURCES),
            });
        }
        group.busy = true;
        self.counts.joins_upstream += 1;
        let op = Op::Join(PendingJoin {
            member: c.member,
            renews: c.renews,
            asker: c.asker,
            bits,
            gone: false,
            creates,
        });
        self.send(Some(mgid), Method::SET, c.mask, c.record, op, out);
    }

    fn leave(&mut self, mgid: Gid, c: Change<M, A>, out: &mut Vec<Effect<M, A>>) {
        let bits = c.record.join_state();
        let Some(group) = self.groups.get_mut(&mgid) else {
            return out.push(Effect::Answer {
                asker: c.asker,
                answer: JoinAnswer::Refused(MadStatus::ERR_REQ_INVALID),
            });
        };
        let held = group
            .members
            .get(&c.member)
            .copied()
            .unwrap_or(JoinState::NONE);
        if !held.contains(bits) {
            // OpenSM: the bits must be a subset of the member's.
            self.drop_if_empty(mgid);
            return out.push(Effect::Answer {
                asker: c.asker,
                answer: JoinAnswer::Refused(MadStatus::ERR_REQ_INVALID),
            });
        }
        let left = held.minus(bits);
        if left.is_empty() {
            group.members.remove(&c.member);
            group.leases.remove(&c.member);
        } else {
            group.members.insert(c.member, left);
        }
        self.counts.leaves += 1;
        debug!(
            %mgid,
            full = group.count(JoinState::FULL_MEMBER),
            non = group.count(JoinState::NON_MEMBER),
            send_only = group.count(JoinState::SEND_ONLY_NON_MEMBER),
            send_only_full = group.count(JoinState::SEND_ONLY_FULL_MEMBER),
            "a member left; members per JoinState bit"
        );
        let unneeded = group.unneeded();
        if unneeded.is_empty() {
            let mut answer = c.record;
            answer.set_join_state(group.held);
            out.push(Effect::Answer {
                asker: c.asker,
                answer: JoinAnswer::Left(left_record(answer)),
            });
            return self.drop_if_empty(mgid);
        }
        group.busy = true;
        let delete = port_record(mgid, self.port_gid, unneeded);
        let op = Op::Leave {
            asker: Some((c.asker, c.record)),
            bits: unneeded,
        };
        self.send(Some(mgid), Method::DELETE, mc::JOIN, delete, op, out);
    }

    /// Asks the master for `record` (a Set or Delete about `mgid`).
    fn send(
        &mut self,
        mgid: Option<Gid>,
        method: Method,
        mask: ComponentMask,
        record: McMemberRecord,
        op: Op<M, A>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let id = self.next_op;
        self.next_op += 1;
        if let Some(group) = mgid.and_then(|g| self.groups.get_mut(&g)) {
            group.op = Some(id);
        }
        self.ops.insert(id, (mgid, op));
        out.push(Effect::Send {
            op: id,
            method,
            mask,
            record,
        });
    }

    /// The group `mgid`, which the caller knows exists.
    fn group_mut(&mut self, mgid: Gid) -> &mut Group<M, A> {
        self.groups.entry(mgid).or_default()
    }

    /// After a request for `mgid` ends: bits nobody needs are deleted, or
    /// the next waiting request goes, or the group is forgotten.
    fn next_in_group(&mut self, now: Instant, mgid: Gid, out: &mut Vec<Effect<M, A>>) {
        // Waiting requests are taken one by one until one goes to the
        // master (they may complete here, or be refused).
        loop {
            let Some(group) = self.groups.get_mut(&mgid) else {
                return;
            };
            if group.busy {
                return;
            }
            if group.retry_at.is_none_or(|t| t <= now) {
                group.retry_at = None;
                let unneeded = group.unneeded();
                if !unneeded.is_empty() && group.leave_failures > 0 && !group.leave_verified {
                    // The last Delete went unanswered: is there still
                    // anything to delete?
                    group.busy = true;
                    let probe = port_record(mgid, self.port_gid, JoinState::NONE);
                    return self.send(Some(mgid), Method::GET, PROBE_MASK, probe, Op::Verify, out);
                }
                if !unneeded.is_empty() {
                    group.busy = true;
                    group.leave_verified = false;
                    let delete = port_record(mgid, self.port_gid, unneeded);
                    let op = Op::Leave {
                        asker: None,
                        bits: unneeded,
                    };
                    return self.send(Some(mgid), Method::DELETE, mc::JOIN, delete, op, out);
                }
                let missing = group.needed().minus(group.held);
                let stay = missing.is_empty() || self.shutting_down || group.wait_for_creation;
                if let (false, Some(record)) = (stay, group.record) {
                    // Members hold bits the master lost (a failed re-join).
                    group.busy = true;
                    let needed = group.needed();
                    return self.rejoin(mgid, record, needed, out);
                }
            }
            let Some(next) = group.queue.pop_front() else {
                break;
            };
            self.request(now, next, out);
        }
        self.drop_if_empty(mgid);
    }

    fn drop_if_empty(&mut self, mgid: Gid) {
        if self.groups.get(&mgid).is_some_and(Group::is_empty)
            && let Some(group) = self.groups.remove(&mgid)
            && group.abandoned
            && !group.ours.is_empty()
        {
            self.abandoned.insert(mgid, group.ours);
        }
    }

    /// Everything `member` holds goes (its connection closed, its lease
    /// ended): bits nobody else holds are deleted at the master, and
    /// nobody is answered for its requests still waiting.
    pub fn remove_member(&mut self, now: Instant, member: M, out: &mut Vec<Effect<M, A>>) {
        for (_, op) in self.ops.values_mut() {
            match op {
                Op::Join(join) => join.gone |= join.member == member,
                Op::Probe { change, gone, .. } => *gone |= change.member == member,
                Op::Leave { .. } | Op::Rejoin { .. } | Op::Verify => {}
            }
        }
        let mgids: Vec<Gid> = self
            .groups
            .iter()
            .filter(|(_, g)| {
                g.members.contains_key(&member) || g.queue.iter().any(|q| q.member == member)
            })
            .map(|(m, _)| *m)
            .collect();
        for mgid in mgids {
            if let Some(group) = self.groups.get_mut(&mgid) {
                group.members.remove(&member);
                group.leases.remove(&member);
                group.queue.retain(|q| q.member != member);
            }
            self.next_in_group(now, mgid, out);
        }
    }

    /// When [`Memberships::handle_timeout`] must next be called: the next
    /// lease end or group retry.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.groups
            .values()
            .flat_map(|g| g.leases.values().copied().chain(g.retry_at))
            .min()
    }

    /// Ends the leases of members that did not renew, and brings groups
    /// whose retry is due in line with the master.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Effect<M, A>>) {
        let mut expired: Vec<M> = Vec::new();
        for g in self.groups.values() {
            for (m, _) in g.leases.iter().filter(|(_, t)| **t <= now) {
                // A member with leases in several groups ends once.
                if !expired.contains(m) {
                    expired.push(*m);
                }
            }
        }
        for member in expired {
            if let Some(earlier_not_logged) = self.log.allow(now, Warning::MemberLease, 0u32) {
                info!(%member, earlier_not_logged, "a multicast member's lease ended");
            }
            self.counts.leases_ended += 1;
            out.push(Effect::LeaseEnded { member });
            self.remove_member(now, member, out);
        }
        let due: Vec<Gid> = self
            .groups
            .iter()
            .filter(|(_, g)| g.retry_at.is_some_and(|t| t <= now))
            .map(|(m, _)| *m)
            .collect();
        for mgid in due {
            self.next_in_group(now, mgid, out);
        }
    }

    /// Leaves every group (shutdown): one last try for each, backoff or
    /// not; nothing is tried again afterwards. Groups no member holds any
    /// more but whose bits the master still has (an earlier Delete went
    /// unanswered) get their last try too, and joins that come after it are
    /// refused with BUSY.
    pub fn leave_all(&mut self, now: Instant, out: &mut Vec<Effect<M, A>>) {
        self.shutting_down = true;
        for group in self.groups.values_mut() {
            // One last try each, at once and straight to the Delete.
            group.retry_at = None;
            group.leave_verified = true;
        }
        // Every member goes: those holding bits, those waiting for their
        // turn, and those whose join is out (its answer must not make
        // them members again).
        let mut members: Vec<M> = self
            .groups
            .values()
            .flat_map(|g| g.members.keys().chain(g.queue.iter().map(|q| &q.member)))
            .copied()
            .collect();
        members.extend(self.ops.values().filter_map(|(_, op)| match op {
            Op::Join(join) => Some(join.member),
            Op::Probe { change, .. } => Some(change.member),
            Op::Leave { .. } | Op::Rejoin { .. } | Op::Verify => None,
        }));
        for m in members {
            self.remove_member(now, m, out);
        }
        let rest: Vec<Gid> = self.groups.keys().copied().collect();
        for mgid in rest {
            self.next_in_group(now, mgid, out);
        }
    }
}

/// True when a join of `request` (fields per `mask`) can be completed from
/// `group`'s record: every value the member gives equals the group's (the
/// master's compatibility rules, conservatively: where in doubt, the master
/// decides). Selectors other than "exactly" go to the master.
pub fn compatible(group: &McMemberRecord, mask: ComponentMask, request: &McMemberRecord) -> bool {
    let given = |bit| mask.contains(bit);
    let exact = |sel_bit, val_bit, sel: Selector, same: bool| {
        if !given(sel_bit) && !given(val_bit) {
            return true;
        }
        given(sel_bit) && given(val_bit) && sel == Selector::Exactly && same
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

/// A record naming this port in `mgid` with `bits`: a Delete's, or (no
/// bits) the question whether the port is in the group.
fn port_record(mgid: Gid, port_gid: Gid, bits: JoinState) -> McMemberRecord {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_port_gid(port_gid);
    r.set_join_state(bits);
    r
}

/// A leave's answer, shaped as OpenSM's DeleteResp: the request with its
/// MTU/Rate/PacketLifeTime selectors 2.
fn left_record(mut r: McMemberRecord) -> McMemberRecord {
    r.set_mtu_selector(Selector::Exactly);
    r.set_rate_selector(Selector::Exactly);
    r.set_packet_life_selector(Selector::Exactly);
    r
}
