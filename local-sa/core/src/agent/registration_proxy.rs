//! What the agent registers at the master, for its consumers and for
//! itself, held together: consumers' subscriptions (one upstream per
//! filter) and memberships (one upstream per group), who holds which
//! against the per-owner limits, and when the agent's own registrations
//! and the canary are due. Each member owns its state behind its own
//! methods.

use super::counterparts::{Asker, Member};
use super::quotas::Quotas;
use super::registration_schedule::RegistrationSchedule;
use super::subscriptions::Subscriptions;
use crate::config::{AgentConfig, PortIdentity};
use crate::memberships::{MembershipConfig, Memberships};

/// Subscriptions, memberships, their quotas and the agent's own schedule.
#[derive(Debug)]
pub(super) struct RegistrationProxy {
    /// Notice subscriptions: consumers' filters and the upstream ones.
    pub(super) subscriptions: Subscriptions,
    /// Multicast groups: consumers' joins and the upstream ones.
    pub(super) memberships: Memberships<Member, Asker>,
    /// Who holds which registrations, against the per-owner limits.
    pub(super) quotas: Quotas,
    /// When the agent's own registrations are due, and the canary.
    pub(super) schedule: RegistrationSchedule,
}

impl RegistrationProxy {
    /// Nothing registered, for `port`.
    pub(super) fn new(config: &AgentConfig, port: &PortIdentity) -> Self {
        Self {
            subscriptions: Subscriptions::new(config.delivery),
            memberships: Memberships::new(membership_config(config), port.gid),
            quotas: Quotas::default(),
            schedule: RegistrationSchedule::default(),
        }
    }

    /// Takes a reloaded configuration's lease and back-off.
    pub(super) fn reconfigure(&mut self, config: &AgentConfig) {
        self.memberships.set_config(membership_config(config));
    }
}

fn membership_config(config: &AgentConfig) -> MembershipConfig {
    MembershipConfig {
        member_lease: config.member_lease,
        retry_backoff: config.retry_backoff,
    }
}
