//! Registrations let in, or refused, by their owner's limits
//! ([`crate::quota`]): a join of a group its owner does not hold yet, a
//! join that would create a group, a subscription to a filter its owner
//! does not hold yet. A refusal is answered ERR_NO_RESOURCES, counted,
//! remembered per owner and logged at most once a minute per owner.
//!
//! Owners: a local connection's user (root and local-sa's own user get
//! [`PRIVILEGED_FACTOR`](crate::quota::PRIVILEGED_FACTOR) times the
//! limits); for MADs, the requester port (members by MAD are on this
//! port; subscribers anywhere on the fabric). The agent's own
//! subscriptions count against nobody.

use std::time::Instant;

use informinfo::Filter;
use mad_codec::Gid;
use tracing::warn;

use crate::agent::counterparts::{Asker, Member, Subscriber};
use crate::agent::registration_proxy::quotas::Refused;
use crate::agent::registration_proxy::{RegistrationProxy, Warning};
use crate::memberships::Change;
use crate::quota::{LocalUser, Owner, RegistrationLimits};
use crate::request::ConnId;

/// The user a connection counts as until its door says whose it is.
const UNKNOWN_USER: LocalUser = LocalUser {
    uid: u32::MAX,
    privileged: false,
};

/// A registration past its owner's limit, for the agent to count and
/// log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct Refusal {
    pub(in crate::agent) owner: Owner,
    pub(in crate::agent) what: Refused,
    pub(in crate::agent) limit: usize,
}

/// Who the port's registrations count against: the port's GID (members
/// by MAD are on this port) and the configured limits.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct Owners {
    pub(in crate::agent) port_gid: Gid,
    pub(in crate::agent) limits: RegistrationLimits,
}

impl RegistrationProxy {
    /// Who `member` counts against, and the limits that apply.
    fn member_owner(&self, member: &Member, o: Owners) -> (Owner, RegistrationLimits) {
        match member {
            Member::Local(conn) => self.local_owner(*conn, o),
            Member::Mad { .. } => (Owner::Port(o.port_gid), o.limits),
        }
    }

    /// Who `subscriber` counts against, and the limits that apply; the
    /// agent itself counts against nobody.
    fn subscriber_owner(&self, s: &Subscriber, o: Owners) -> Option<(Owner, RegistrationLimits)> {
        match s {
            Subscriber::Core => None,
            Subscriber::Local(conn) => Some(self.local_owner(*conn, o)),
            Subscriber::Mad { gid, .. } => Some((Owner::Port(*gid), o.limits)),
        }
    }

    fn local_owner(&self, conn: ConnId, o: Owners) -> (Owner, RegistrationLimits) {
        let user = self.quotas.user_of(conn).unwrap_or(UNKNOWN_USER);
        let limits = if user.privileged {
            o.limits.privileged()
        } else {
            o.limits
        };
        (Owner::User(user.uid), limits)
    }

    /// Lets `change` (a join) in if its owner holds the group already or
    /// has groups left; the refusal otherwise (noted against its owner;
    /// the caller answers it). A join that may create the group takes one
    /// of its owner's creations at once, so that joins sent together
    /// cannot create more between them; it gives it back if the group
    /// turns out to exist ([`Self::settle_member`]). With none left it may
    /// still join a group that exists.
    pub(in crate::agent) fn admit_join(
        &mut self,
        change: &mut Change<Member, Asker>,
        o: Owners,
    ) -> Result<(), Refusal> {
        let (owner, limits) = self.member_owner(&change.member, o);
        let mgid = change.record.mgid();
        let can_create = change.can_create();
        match self
            .quotas
            .admit_join(owner, &limits, change.member, mgid, can_create)
        {
            Ok(may_create) => {
                change.may_create = may_create;
                Ok(())
            }
            Err((what, limit)) => Err(self.refused(owner, what, limit)),
        }
    }

    /// The master gave `member` group `mgid`: claimed (a group the master
    /// named is known only now), and counted as created if its join
    /// created it.
    pub(in crate::agent) fn join_granted(&mut self, member: Member, mgid: Gid, o: Owners) {
        let (owner, _) = self.member_owner(&member, o);
        let created = self.memberships.created_by(mgid) == Some(member);
        self.quotas.join_granted(owner, member, mgid, created);
    }

    /// A join was refused because it would have created a group past its
    /// owner's creations.
    pub(in crate::agent) fn creation_refused(&mut self, member: Member, o: Owners) -> Refusal {
        let (owner, limits) = self.member_owner(&member, o);
        self.refused(owner, Refused::Creation, limits.created_groups)
    }

    /// Gives up the groups `member` holds no more, and the creations it
    /// did not make: after a change to group `mgid` (and to a group the
    /// master assigns, [`Gid::ZERO`]), or to any (`None`). One group's
    /// change settles that group only: a connection holding a thousand
    /// groups must not cost a thousand lookups per answer.
    pub(in crate::agent) fn settle_member(&mut self, member: Member, mgid: Option<Gid>) {
        let memberships = &self.memberships;
        let only = mgid.map(|g| [g, Gid::ZERO]);
        self.quotas.settle_member(
            &member,
            only.as_ref().map(|k| &k[..]),
            |g| memberships.involves(*g, &member),
            |g| memberships.may_have_created(*g, &member),
        );
    }

    /// `member` holds nothing any more.
    pub(in crate::agent) fn release_member(&mut self, member: Member) {
        self.quotas.release_member(&member);
    }

    /// Lets a subscription to `filter` by `s` in if its owner holds the
    /// filter already or has subscriptions left; the refusal otherwise
    /// (noted; the caller answers it).
    pub(in crate::agent) fn admit_subscription(
        &mut self,
        s: Subscriber,
        filter: Filter,
        o: Owners,
    ) -> Result<(), Refusal> {
        let Some((owner, limits)) = self.subscriber_owner(&s, o) else {
            return Ok(());
        };
        self.quotas
            .admit_subscription(owner, &limits, s, filter)
            .map_err(|(what, limit)| self.refused(owner, what, limit))
    }

    /// Gives up the filters `s` holds no more: after a change to
    /// `filter`, that one only; else (`None`) any.
    pub(in crate::agent) fn settle_subscriber(&mut self, s: Subscriber, filter: Option<Filter>) {
        let registry = self.subscriptions.registry();
        let only = filter.map(|f| [f]);
        self.quotas
            .settle_subscriber(&s, only.as_ref().map(|f| &f[..]), |f| registry.holds(&s, f));
    }

    /// Who this port's registrations count against.
    pub(super) fn owners(&self) -> Owners {
        Owners {
            port_gid: self.port_gid,
            limits: self.config.limits,
        }
    }

    /// A registration refused by its owner's limit: counted, and logged at
    /// most once a minute per owner.
    pub(super) fn registration_refused(&mut self, now: Instant, refusal: Refusal) {
        let Refusal { owner, what, limit } = refusal;
        match what {
            Refused::Group => self.counts.refused_groups += 1,
            Refused::Creation => self.counts.refused_group_creations += 1,
            Refused::Subscription => self.counts.refused_subscriptions += 1,
        }
        let (kind, source) = match owner {
            Owner::User(uid) => (Warning::UserLimit, uid),
            Owner::Port(gid) => (Warning::PortLimit, gid.guid() as u32),
        };
        if let Some(earlier_not_logged) = self.log_limit.allow(now, kind, source) {
            warn!(
                %owner,
                refused = what.describe(),
                limit,
                earlier_not_logged,
                "a registration past its owner's limit: refused with ERR_NO_RESOURCES"
            );
        }
    }

    /// A refusal, noted against its owner.
    fn refused(&mut self, owner: Owner, what: Refused, limit: usize) -> Refusal {
        self.quotas.note_refusal(owner);
        Refusal { owner, what, limit }
    }
}
