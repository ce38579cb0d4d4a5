//! What the agent registers at the master, for its consumers and for
//! itself, held together: consumers' subscriptions (one upstream per
//! filter) and memberships (one upstream per group), who holds which
//! against the per-owner limits, and when the agent's own registrations
//! and the canary are due. Each member owns its state behind its own
//! methods.

pub(in crate::agent) mod admission;
pub(in crate::agent) mod canary;
pub(in crate::agent) mod multicast;
pub(in crate::agent) mod notices;
pub(in crate::agent) mod own_schedule;
pub(in crate::agent) mod quotas;
pub(in crate::agent) mod record;
pub(in crate::agent) mod subscriptions;

use crate::agent::counterparts::{Asker, Member};
use crate::agent::registrations::own_schedule::RegistrationSchedule;
use crate::agent::registrations::quotas::Quotas;
use crate::agent::registrations::subscriptions::Subscriptions;
use crate::config::{AgentConfig, PortIdentity};
use crate::memberships::{MembershipConfig, Memberships};

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
}

fn membership_config(config: &AgentConfig) -> MembershipConfig {
    MembershipConfig {
        member_lease: config.member_lease,
        retry_backoff: config.retry_backoff,
    }
}
