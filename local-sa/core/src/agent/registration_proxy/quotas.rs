//! Who on this node (or which port of the fabric) holds which of this
//! port's registrations, against [`RegistrationLimits`]: the users of the
//! local connections, the groups, created groups and subscription filters
//! each owner's members and subscribers claim, and what was refused to
//! whom (see [`crate::quota`]).

use std::collections::{BTreeMap, HashMap};

use informinfo::Filter;
use mad_codec::Gid;

use crate::agent::counterparts::{Member, Subscriber};
use crate::quota::{Claims, LocalUser, Owner, RegistrationLimits};
use crate::request::ConnId;

/// Owners whose refusals are remembered one by one; past it, only in the
/// totals.
const MAX_OWNERS_REMEMBERED: usize = 4096;

/// What each owner holds and was refused.
#[derive(Debug, Default)]
pub(in crate::agent) struct Quotas {
    /// The user of each local connection the door told of.
    users: HashMap<ConnId, LocalUser>,
    /// Groups, by the members that joined them (or are joining).
    groups: Claims<Gid, Member>,
    /// Groups a member's join created at the master.
    created: Claims<Gid, Member>,
    /// Subscription filters, by their subscribers.
    filters: Claims<Filter, Subscriber>,
    /// Registrations refused, per owner.
    refused: BTreeMap<Owner, u64>,
}

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Refused {
    /// A group past the owner's groups.
    Group,
    /// A group creation past the owner's creations.
    Creation,
    /// A subscription past the owner's subscriptions.
    Subscription,
}

impl Refused {
    /// For logs.
    pub(in crate::agent) fn describe(self) -> &'static str {
        match self {
            Self::Group => "a join of one more group",
            Self::Creation => "a join that would create one more group",
            Self::Subscription => "one more subscription",
        }
    }
}

/// One owner's usage and refusals, for the status and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registrant {
    /// Who.
    pub owner: Owner,
    /// Distinct groups its members hold or are joining.
    pub groups: usize,
    /// Of them, created by their joins.
    pub created: usize,
    /// Distinct subscription filters its subscribers hold or asked for.
    pub subscriptions: usize,
    /// Registrations refused to it for its limits, since start.
    pub refused: u64,
}

/// Why a registration past its owner's limit was refused, and the limit.
pub(in crate::agent) type QuotaRefusal = (Refused, usize);

impl Quotas {
    /// Local connection `conn` is `user`'s.
    pub(in crate::agent) fn introduce(&mut self, conn: ConnId, user: LocalUser) {
        self.users.insert(conn, user);
    }

    /// Local connection `conn` closed.
    pub(in crate::agent) fn forget_conn(&mut self, conn: ConnId) {
        self.users.remove(&conn);
    }

    /// The user of local connection `conn`, if its door said.
    pub(in crate::agent) fn user_of(&self, conn: ConnId) -> Option<LocalUser> {
        self.users.get(&conn).copied()
    }

    /// Lets `member`'s join of `mgid` (ZERO: one the master names) in for
    /// `owner` under `limits`, if it holds the group already or has groups
    /// left: whether it may create the group (it takes one of the owner's
    /// creations at once, so that joins sent together cannot create more
    /// between them). `can_create`: the join asks for a creation.
    pub(in crate::agent) fn admit_join(
        &mut self,
        owner: Owner,
        limits: &RegistrationLimits,
        member: Member,
        mgid: Gid,
        can_create: bool,
    ) -> Result<bool, QuotaRefusal> {
        let another = mgid == Gid::ZERO || !self.groups.holds(&owner, &mgid);
        if another && self.groups.count(&owner) >= limits.groups {
            return Err((Refused::Group, limits.groups));
        }
        let may_create = another
            && (mgid == Gid::ZERO || can_create)
            && self.created.count(&owner) < limits.created_groups;
        if may_create {
            self.created.claim(owner, member, mgid);
        }
        self.groups.claim(owner, member, mgid);
        Ok(may_create)
    }

    /// `member` holds group `mgid` (the master named it), and created it
    /// if `created`.
    pub(in crate::agent) fn join_granted(
        &mut self,
        owner: Owner,
        member: Member,
        mgid: Gid,
        created: bool,
    ) {
        self.groups.claim(owner, member, mgid);
        if created {
            self.created.claim(owner, member, mgid);
        }
    }

    /// Gives up the groups `member` holds no more (`holds`) and the
    /// creations it did not make (`created`): among `only`, or all.
    pub(in crate::agent) fn settle_member(
        &mut self,
        member: &Member,
        only: Option<&[Gid]>,
        holds: impl Fn(&Gid) -> bool,
        created: impl Fn(&Gid) -> bool,
    ) {
        self.groups.settle(member, only, &holds);
        self.created
            .settle(member, only, |g| holds(g) && created(g));
    }

    /// `member` holds nothing any more.
    pub(in crate::agent) fn release_member(&mut self, member: &Member) {
        self.groups.release(member);
        self.created.release(member);
    }

    /// Lets `s`'s subscription to `filter` in for `owner` under `limits`,
    /// if it holds the filter already or has subscriptions left.
    pub(in crate::agent) fn admit_subscription(
        &mut self,
        owner: Owner,
        limits: &RegistrationLimits,
        s: Subscriber,
        filter: Filter,
    ) -> Result<(), QuotaRefusal> {
        let another = !self.filters.holds(&owner, &filter);
        if another && self.filters.count(&owner) >= limits.subscriptions {
            return Err((Refused::Subscription, limits.subscriptions));
        }
        self.filters.claim(owner, s, filter);
        Ok(())
    }

    /// Gives up the filters `s` holds no more (`holds`): among `only`,
    /// or all.
    pub(in crate::agent) fn settle_subscriber(
        &mut self,
        s: &Subscriber,
        only: Option<&[Filter]>,
        holds: impl Fn(&Filter) -> bool,
    ) {
        self.filters.settle(s, only, holds);
    }

    /// Counts a refusal against `owner`.
    pub(in crate::agent) fn note_refusal(&mut self, owner: Owner) {
        if self.refused.len() < MAX_OWNERS_REMEMBERED || self.refused.contains_key(&owner) {
            *self.refused.entry(owner).or_default() += 1;
        }
    }

    /// Every owner holding something or refused something: the most
    /// registrations first.
    pub(in crate::agent) fn registrants(&self) -> Vec<Registrant> {
        let mut owners: BTreeMap<Owner, Registrant> = BTreeMap::new();
        for (owner, n) in self.groups.usage() {
            owners_entry(&mut owners, owner).groups = n;
        }
        for (owner, n) in self.created.usage() {
            owners_entry(&mut owners, owner).created = n;
        }
        for (owner, n) in self.filters.usage() {
            owners_entry(&mut owners, owner).subscriptions = n;
        }
        for (owner, n) in &self.refused {
            owners_entry(&mut owners, *owner).refused = *n;
        }
        let mut all: Vec<Registrant> = owners.into_values().collect();
        all.sort_by_key(|r| std::cmp::Reverse((r.groups + r.subscriptions, r.refused)));
        all
    }
}

fn owners_entry(owners: &mut BTreeMap<Owner, Registrant>, owner: Owner) -> &mut Registrant {
    owners.entry(owner).or_insert(Registrant {
        owner,
        groups: 0,
        created: 0,
        subscriptions: 0,
        refused: 0,
    })
}
