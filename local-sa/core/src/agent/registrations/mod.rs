//! What the agent registers at the master, for its consumers and for
//! itself, held together: consumers' subscriptions (one upstream per
//! filter) and memberships (one upstream per group), who holds which
//! against the per-owner limits, and when the agent's own registrations
//! and the canary are due. Each member owns its state behind its own
//! methods. The record of what the master holds for the next agent of
//! the port, and taking over what a previous one left, are the group's.

pub(in crate::agent) mod admission;
pub(in crate::agent) mod canary;
pub(in crate::agent) mod multicast;
pub(in crate::agent) mod notices;
pub(in crate::agent) mod own_schedule;
pub(in crate::agent) mod quotas;
pub(in crate::agent) mod subscriptions;

use std::time::Instant;

use crate::agent::counterparts::{Asker, Member, Subscriber};
use crate::agent::master::purpose::Purpose;
use crate::agent::registrations::own_schedule::RegistrationSchedule;
use crate::agent::registrations::quotas::Quotas;
use crate::agent::registrations::subscriptions::Subscriptions;
use crate::config::{AgentConfig, PortIdentity};
use crate::memberships::{Effect as MembershipEffect, MembershipConfig, Memberships};
use crate::registrations::Registrations;

/// Subscriptions, memberships, their quotas and the agent's own schedule.
#[derive(Debug)]
pub(in crate::agent) struct RegistrationProxy {
    /// Notice subscriptions: consumers' filters and the upstream ones.
    pub(in crate::agent) subscriptions: Subscriptions,
    /// Multicast groups: consumers' joins and the upstream ones.
    pub(in crate::agent) memberships: Memberships<Member, Asker>,
    /// Who holds which registrations, against the per-owner limits.
    pub(in crate::agent) quotas: Quotas,
    /// When the agent's own registrations are due, and the canary.
    pub(in crate::agent) schedule: RegistrationSchedule,
}

impl RegistrationProxy {
    /// Nothing registered, for `port`.
    pub(in crate::agent) fn new(config: &AgentConfig, port: &PortIdentity) -> Self {
        Self {
            subscriptions: Subscriptions::new(config.delivery),
            memberships: Memberships::new(membership_config(config), port.gid),
            quotas: Quotas::default(),
            schedule: RegistrationSchedule::default(),
        }
    }

    /// Takes a reloaded configuration's lease and back-off.
    pub(in crate::agent) fn reconfigure(&mut self, config: &AgentConfig) {
        self.memberships.set_config(membership_config(config));
    }

    /// What this agent asked the master to hold for the port at
    /// `port_gid`, being asked included: the record for whoever serves
    /// the port next ([`crate::registrations`]).
    pub(in crate::agent) fn record(&self, port_gid: mad_codec::Gid) -> Registrations {
        Registrations {
            port_gid,
            subscriptions: self.subscriptions.registry().possibly_at_master().collect(),
            groups: self.memberships.possibly_held(),
        }
    }

    /// Takes over what a previous agent of this port left at the master
    /// (`previous`, its record) so that it is removed, except what
    /// someone here holds by then: the subscriptions' and the
    /// memberships' effects, for the agent to carry out.
    pub(in crate::agent) fn adopt(
        &mut self,
        now: Instant,
        previous: &Registrations,
    ) -> (
        Vec<informinfo::Effect<Subscriber>>,
        Vec<MembershipEffect<Member, Asker>>,
    ) {
        let mut informs = Vec::new();
        for filter in &previous.subscriptions {
            self.subscriptions
                .registry_mut()
                .assume_held(*filter, &mut informs);
        }
        let mut joins = Vec::new();
        for (mgid, bits) in &previous.groups {
            self.memberships.adopt(now, *mgid, *bits, &mut joins);
        }
        (informs, joins)
    }

    /// Counts a request (`sending`) or its end that may change the
    /// registrations: a subscription or a join may add to them (a join's
    /// answer too, when it names the group the master created for it);
    /// unsubscribing and leaving only take away.
    pub(in crate::agent) fn note_traffic(&mut self, purpose: &Purpose, sending: bool) {
        let may_add = match purpose {
            Purpose::Inform { subscribe, .. } => *subscribe,
            Purpose::Membership(op) => self.memberships.may_add(*op, sending),
            _ => return,
        };
        self.schedule.registrations_changed(may_add);
    }
}

fn membership_config(config: &AgentConfig) -> MembershipConfig {
    MembershipConfig {
        member_lease: config.member_lease,
        retry_backoff: config.retry_backoff,
    }
}
