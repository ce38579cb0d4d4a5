//! Who on this node (or which port of the fabric) holds which of this
//! port's registrations, against [`RegistrationLimits`]: the users of the
//! local connections, the groups, created groups and subscription filters
//! each owner's members and subscribers claim, and what was refused to
//! whom (see [`crate::quota`]).

use std::collections::{BTreeMap, HashMap};

use informinfo::Filter;
use mad_codec::Gid;

use super::counterparts::{Member, Subscriber};
use crate::quota::{Claims, LocalUser, Owner};
use crate::request::ConnId;

/// Owners whose refusals are remembered one by one; past it, only in the
/// totals.
const MAX_OWNERS_REMEMBERED: usize = 4096;

/// What each owner holds and was refused.
#[derive(Debug, Default)]
pub(super) struct Quotas {
    /// The user of each local connection the door told of.
    pub(super) users: HashMap<ConnId, LocalUser>,
    /// Groups, by the members that joined them (or are joining).
    pub(super) groups: Claims<Gid, Member>,
    /// Groups a member's join created at the master.
    pub(super) created: Claims<Gid, Member>,
    /// Subscription filters, by their subscribers.
    pub(super) filters: Claims<Filter, Subscriber>,
    /// Registrations refused, per owner.
    refused: BTreeMap<Owner, u64>,
}

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// A group past the owner's groups.
    Group,
    /// A group creation past the owner's creations.
    Creation,
    /// A subscription past the owner's subscriptions.
    Subscription,
}

impl Refused {
    /// For logs.
    pub(super) fn describe(self) -> &'static str {
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

impl Quotas {
    /// Counts a refusal against `owner`.
    pub(super) fn note_refusal(&mut self, owner: Owner) {
        if self.refused.len() < MAX_OWNERS_REMEMBERED || self.refused.contains_key(&owner) {
            *self.refused.entry(owner).or_default() += 1;
        }
    }

    /// Every owner holding something or refused something: the most
    /// registrations first.
    pub(super) fn registrants(&self) -> Vec<Registrant> {
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
