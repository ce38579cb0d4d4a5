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

use crate::agent::SaCore;
use crate::agent::counterparts::{Asker, Member, Subscriber};
use crate::agent::registrations::quotas::{Refused, Registrant};
use crate::memberships::Change;
use crate::quota::{LocalUser, Owner, RegistrationLimits};
use crate::request::ConnId;

/// The user a connection counts as until its door says whose it is.
const UNKNOWN_USER: LocalUser = LocalUser {
    uid: u32::MAX,
    privileged: false,
};

impl SaCore {
    /// Local connection `conn` is `user`'s (the door knows it from the
    /// socket's peer credentials). A connection never introduced counts
    /// as an unprivileged user of unknown ID.
    pub fn handle_local_opened(&mut self, conn: ConnId, user: LocalUser) {
        self.proxy.quotas.introduce(conn, user);
    }

    /// Every owner holding or refused registrations, the most first.
    pub fn registrants(&self) -> Vec<Registrant> {
        self.proxy.quotas.registrants()
    }

    /// Who `member` counts against, and the limits that apply.
    fn member_owner(&self, member: &Member) -> (Owner, RegistrationLimits) {
        match member {
            Member::Local(conn) => self.local_owner(*conn),
            Member::Mad { .. } => (Owner::Port(self.port.gid), self.config.limits),
        }
    }

    /// Who `subscriber` counts against, and the limits that apply; the
    /// agent itself counts against nobody.
    fn subscriber_owner(&self, s: &Subscriber) -> Option<(Owner, RegistrationLimits)> {
        match s {
            Subscriber::Core => None,
            Subscriber::Local(conn) => Some(self.local_owner(*conn)),
            Subscriber::Mad { gid, .. } => Some((Owner::Port(*gid), self.config.limits)),
        }
    }

    fn local_owner(&self, conn: ConnId) -> (Owner, RegistrationLimits) {
        let user = self.proxy.quotas.user_of(conn).unwrap_or(UNKNOWN_USER);
        let limits = if user.privileged {
            self.config.limits.privileged()
        } else {
            self.config.limits
        };
        (Owner::User(user.uid), limits)
    }

    /// Lets `change` (a join) in if its owner holds the group already or
    /// has groups left; false if it is refused (counted and logged; the
    /// caller answers it). A join that may create the group takes one of
    /// its owner's creations at once, so that joins sent together cannot
    /// create more between them; it gives it back if the group turns out
    /// to exist ([`Self::settle_member`]). With none left it may still
    /// join a group that exists.
    pub(in crate::agent) fn admit_join(
        &mut self,
        now: Instant,
        change: &mut Change<Member, Asker>,
    ) -> bool {
        let (owner, limits) = self.member_owner(&change.member);
        let mgid = change.record.mgid();
        let can_create = change.can_create();
        match (self.proxy.quotas).admit_join(owner, &limits, change.member, mgid, can_create) {
            Ok(may_create) => {
                change.may_create = may_create;
                true
            }
            Err((what, limit)) => {
                self.registration_refused(now, owner, what, limit);
                false
            }
        }
    }

    /// The master gave `member` group `mgid`: claimed (a group the master
    /// named is known only now), and counted as created if its join
    /// created it.
    pub(in crate::agent) fn join_granted(&mut self, member: Member, mgid: Gid) {
        let (owner, _) = self.member_owner(&member);
        let created = self.proxy.memberships.created_by(mgid) == Some(member);
        self.proxy.quotas.join_granted(owner, member, mgid, created);
    }

    /// A join was refused because it would have created a group past its
    /// owner's creations.
    pub(in crate::agent) fn creation_refused(&mut self, now: Instant, member: Member) {
        let (owner, limits) = self.member_owner(&member);
        self.registration_refused(now, owner, Refused::Creation, limits.created_groups);
    }

    /// Gives up the groups `member` holds no more, and the creations it
    /// did not make: after a change to group `mgid` (and to a group the
    /// master assigns, [`Gid::ZERO`]), or to any (`None`). One group's
    /// change settles that group only: a connection holding a thousand
    /// groups must not cost a thousand lookups per answer.
    pub(in crate::agent) fn settle_member(&mut self, member: Member, mgid: Option<Gid>) {
        let memberships = &self.proxy.memberships;
        let only = mgid.map(|g| [g, Gid::ZERO]);
        self.proxy.quotas.settle_member(
            &member,
            only.as_ref().map(|k| &k[..]),
            |g| memberships.involves(*g, &member),
            |g| memberships.may_have_created(*g, &member),
        );
    }

    /// `member` holds nothing any more.
    pub(in crate::agent) fn release_member(&mut self, member: Member) {
        self.proxy.quotas.release_member(&member);
    }

    /// Lets a subscription to `filter` by `s` in if its owner holds the
    /// filter already or has subscriptions left; false if it is refused
    /// (counted and logged; the caller answers it).
    pub(in crate::agent) fn admit_subscription(
        &mut self,
        now: Instant,
        s: Subscriber,
        filter: Filter,
    ) -> bool {
        let Some((owner, limits)) = self.subscriber_owner(&s) else {
            return true;
        };
        match self
            .proxy
            .quotas
            .admit_subscription(owner, &limits, s, filter)
        {
            Ok(()) => true,
            Err((what, limit)) => {
                self.registration_refused(now, owner, what, limit);
                false
            }
        }
    }

    /// Gives up the filters `s` holds no more: after a change to
    /// `filter`, that one only; else (`None`) any.
    pub(in crate::agent) fn settle_subscriber(&mut self, s: Subscriber, filter: Option<Filter>) {
        let registry = self.proxy.subscriptions.registry();
        let only = filter.map(|f| [f]);
        self.proxy
            .quotas
            .settle_subscriber(&s, only.as_ref().map(|f| &f[..]), |f| registry.holds(&s, f));
    }

    fn registration_refused(&mut self, now: Instant, owner: Owner, what: Refused, limit: usize) {
        match what {
            Refused::Group => self.telemetry.counters.refused_groups += 1,
            Refused::Creation => self.telemetry.counters.refused_group_creations += 1,
            Refused::Subscription => self.telemetry.counters.refused_subscriptions += 1,
        }
        self.proxy.quotas.note_refusal(owner);
        let (kind, source) = match owner {
            Owner::User(uid) => ("registration limit of a user", uid),
            Owner::Port(gid) => ("registration limit of a port", gid.guid() as u32),
        };
        if let Some(earlier_not_logged) = self.telemetry.log_limit.allow(now, kind, source) {
            warn!(
                %owner,
                refused = what.describe(),
                limit,
                earlier_not_logged,
                "a registration past its owner's limit: refused with ERR_NO_RESOURCES"
            );
        }
    }
}
