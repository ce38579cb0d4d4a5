//! The registration proxy: what the agent registers at the master for
//! its consumers and for itself — consumers' subscriptions (one upstream
//! per filter) and memberships (one upstream per group), who holds which
//! against the per-owner limits, the agent's own subscriptions and
//! canary, and when each is due.
//!
//! It decides for itself: each call takes an event (a request, the
//! master's answer, a notice, the time) and returns [`ProxyEffect`]s —
//! requests for the master, answers, Reports, local events — which
//! `SaCore` carries out in order. Its members are reached only through
//! its own methods. The record of what the master holds for the next
//! agent of the port, and taking over what a previous one left, are the
//! group's too.
//!
//! * `notices`, `subscriptions`: consumers' subscriptions and the
//!   notices fanned out to them;
//! * `multicast`: memberships, over `crate::memberships`;
//! * `quotas`, `admission`: owners' limits, and what they admit;
//! * `own_schedule`, `canary`: the agent's own registrations;
//! * `effect`: the [`ProxyEffect`]s it returns.

pub(in crate::agent) mod admission;
pub(in crate::agent) mod canary;
pub(in crate::agent) mod effect;
pub(in crate::agent) mod multicast;
pub(in crate::agent) mod notices;
pub(in crate::agent) mod own_schedule;
pub(in crate::agent) mod quotas;
pub(in crate::agent) mod subscriptions;

use std::time::{Duration, Instant};

use mad_codec::Gid;

use crate::agent::counterparts::{Asker, Member};
use crate::agent::master::purpose::Purpose;
use crate::agent::registration_proxy::effect::{ProxyCounts, ProxyEffect};
use crate::agent::registration_proxy::own_schedule::RegistrationSchedule;
use crate::agent::registration_proxy::quotas::{Quotas, Registrant};
use crate::agent::registration_proxy::subscriptions::Subscriptions;
use crate::config::{AgentConfig, PortIdentity};
use crate::counters::Counters;
use crate::log_limit::LogLimit;
use crate::memberships::{MembershipConfig, Memberships};
use crate::quota::LocalUser;
use crate::registrations_record::Registrations;
use crate::request::ConnId;

/// Subscriptions, memberships, their quotas and the agent's own schedule.
#[derive(Debug)]
pub(in crate::agent) struct RegistrationProxy {
    /// The limits, back-offs and intervals it registers by.
    config: AgentConfig,
    /// The port's GID: who this port's members and the agent's own
    /// subscriptions are.
    port_gid: Gid,
    /// Notice subscriptions: consumers' filters and the upstream ones.
    subscriptions: Subscriptions,
    /// Multicast groups: consumers' joins and the upstream ones.
    memberships: Memberships<Member, Asker>,
    /// Who holds which registrations, against the per-owner limits.
    quotas: Quotas,
    /// When the agent's own registrations are due, and the canary.
    schedule: RegistrationSchedule,
    /// Withdrawing everything: nothing is registered again.
    withdrawing: bool,
    /// What it counted.
    counts: ProxyCounts,
    /// Warnings a peer can cause, limited.
    log_limit: LogLimit<Warning>,
}

/// The warnings registrations can cause the log, counted per kind and
/// source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Warning {
    /// The master refused a subscription.
    SubscriptionRefused,
    /// A MAD subscriber removed (it did not answer its Reports).
    SubscriberRemoved,
    /// A MAD subscriber that stopped answering.
    SubscriberSilent,
    /// A registration past a local user's limit, or a port's.
    UserLimit,
    PortLimit,
}

impl RegistrationProxy {
    /// Nothing registered, for `port`.
    pub(in crate::agent) fn new(config: &AgentConfig, port: &PortIdentity) -> Self {
        Self {
            config: *config,
            port_gid: port.gid,
            subscriptions: Subscriptions::new(config.delivery),
            memberships: Memberships::new(membership_config(config), port.gid),
            quotas: Quotas::default(),
            schedule: RegistrationSchedule::default(),
            withdrawing: false,
            counts: ProxyCounts::default(),
            log_limit: LogLimit::new(Duration::from_secs(60)),
        }
    }

    /// Takes a reloaded configuration's limits, lease and back-off.
    pub(in crate::agent) fn reconfigure(&mut self, config: &AgentConfig) {
        self.config = *config;
        self.memberships.set_config(membership_config(config));
    }

    /// The port's GID changed.
    pub(in crate::agent) fn set_port_gid(&mut self, gid: Gid) {
        self.port_gid = gid;
        self.memberships.set_port_gid(gid);
    }

    /// Adds what it counts, and its gauges read now, to `c`.
    pub(in crate::agent) fn add_counts(&self, c: &mut Counters) {
        let m = self.memberships.counts();
        c.joins_local = m.joins_local;
        c.joins_upstream = m.joins_upstream;
        c.leaves = m.leaves;
        c.leaves_given_up = m.leaves_given_up;
        c.groups_gone_at_master = m.groups_gone_at_master;
        c.leases_ended += self.counts.leases_ended + m.leases_ended;
        c.notices += self.counts.notices;
        c.reports_sent += self.counts.reports_sent;
        c.refused_groups += self.counts.refused_groups;
        c.reregistrations += self.counts.reregistrations;
        c.refused_group_creations += self.counts.refused_group_creations;
        c.refused_subscriptions += self.counts.refused_subscriptions;
        c.subscriptions = self.subscriptions.registry().filters() as u64;
        c.subscribers = self.subscriptions.registry().subscribers() as u64;
        c.groups = self.memberships.groups() as u64;
        c.members = self.memberships.members() as u64;
        c.reports_in_flight = self.subscriptions.reports_in_flight() as u64;
    }

    /// How many registrations it holds upstream: a filter per
    /// subscription, a group per membership.
    pub(in crate::agent) fn upstream_registrations(&self) -> usize {
        self.subscriptions.registry().filters() + self.memberships.groups()
    }

    /// When [`Self::handle_timeout`] or one of the schedule's deadlines
    /// is next due.
    pub(in crate::agent) fn poll_timeout(&self) -> Option<Instant> {
        [
            self.subscriptions.poll_timeout(),
            self.memberships.poll_timeout(),
        ]
        .into_iter()
        .chain(self.schedule.deadlines())
        .flatten()
        .min()
    }

    /// Report resends, lease ends, and subscription and membership
    /// retries that are due.
    pub(in crate::agent) fn handle_timeout(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut out = self.notices_due(now);
        out.extend(self.memberships_due(now));
        out
    }

    /// Local connection `conn` is `user`'s.
    pub(in crate::agent) fn introduce(&mut self, conn: ConnId, user: LocalUser) {
        self.quotas.introduce(conn, user);
    }

    /// Local connection `conn` closed: its user is forgotten.
    pub(in crate::agent) fn forget_conn(&mut self, conn: ConnId) {
        self.quotas.forget_conn(conn);
    }

    /// Every owner holding or refused registrations, the most first.
    pub(in crate::agent) fn registrants(&self) -> Vec<Registrant> {
        self.quotas.registrants()
    }

    /// What this agent asked the master to hold for the port, being
    /// asked included: the record for whoever serves the port next
    /// ([`crate::registrations_record`]).
    pub(in crate::agent) fn record(&self) -> Registrations {
        Registrations {
            port_gid: self.port_gid,
            subscriptions: self.subscriptions.registry().possibly_at_master().collect(),
            groups: self.memberships.possibly_held(),
        }
    }

    /// Takes over what a previous agent of this port left at the master
    /// (`previous`, its record) so that it is removed, except what
    /// someone here holds by then.
    pub(in crate::agent) fn adopt(
        &mut self,
        now: Instant,
        previous: &Registrations,
    ) -> Vec<ProxyEffect> {
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
        let mut out = self.inform_effects(informs);
        out.extend(self.membership_effects(now, joins));
        out
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

    /// Changes whenever [`Self::record`] may have.
    pub(in crate::agent) fn generation(&self) -> u64 {
        self.schedule.generation()
    }

    /// The generation of the last change that may have added to
    /// [`Self::record`].
    pub(in crate::agent) fn grown(&self) -> u64 {
        self.schedule.grown()
    }

    /// The agent's own registrations go at `at` (`None`: not planned).
    pub(in crate::agent) fn register_at(&mut self, at: Option<Instant>) {
        self.schedule.register_at(at);
    }

    /// The agent's own registrations go by `at` at the latest.
    pub(in crate::agent) fn register_by(&mut self, at: Instant) {
        self.schedule.register_by(at);
    }

    /// Everything is registered again at `at`, or not (`None`).
    pub(in crate::agent) fn reregister_at(&mut self, at: Option<Instant>) {
        self.schedule.reregister_at(at);
    }

    /// The first audit of the canary is at `at`.
    pub(in crate::agent) fn audit_at(&mut self, at: Instant) {
        self.schedule.audit_at(Some(at));
    }

    /// The next audit comes by `at` at the latest (a shorter interval).
    pub(in crate::agent) fn audit_by(&mut self, at: Instant) {
        self.schedule.audit_by(at);
    }

    /// True once (and then not again until planned anew) when the
    /// agent's own registrations are due.
    pub(in crate::agent) fn take_registration_due(&mut self, now: Instant) -> bool {
        self.schedule.take_registration_due(now)
    }

    /// True once when everything is to be registered again.
    pub(in crate::agent) fn take_reregistration_due(&mut self, now: Instant) -> bool {
        let due = self.schedule.take_reregistration_due(now);
        self.counts.reregistrations += u64::from(due);
        due
    }

    /// Withdraws every subscription, membership and the canary at the
    /// master (shutdown): nothing is registered again.
    pub(in crate::agent) fn withdraw_all(&mut self, now: Instant) -> Vec<ProxyEffect> {
        self.withdrawing = true;
        self.schedule.stop();
        let mut out = self.unsubscribe_all();
        out.extend(self.leave_all(now));
        out.extend(self.withdraw_canary());
        out
    }
}

fn membership_config(config: &AgentConfig) -> MembershipConfig {
    MembershipConfig {
        member_lease: config.member_lease,
        retry_backoff: config.retry_backoff,
    }
}
