//! When the agent's own registrations at the master are due, and what it
//! knows of them: ClassPortInfo and its subscriptions (sent at start and
//! after every new master), every subscription again after a port change,
//! the canary ServiceRecord by which a master that lost its state is
//! noticed (held or not, when its lease is renewed, when it is audited),
//! and the generation of the registrations record. [`SaCore`](crate::agent::SaCore)
//! sends the requests; only these methods change this state.

use std::time::Instant;

/// The agent's own registrations' schedule and the canary's state.
#[derive(Debug, Default)]
pub(in crate::agent) struct RegistrationSchedule {
    /// When ClassPortInfo and the agent's own subscriptions are (re)sent.
    registration: Option<Instant>,
    /// When every subscription is sent again after a port change.
    reregistration: Option<Instant>,
    /// When the master is next asked whether it still has the canary.
    audit: Option<Instant>,
    /// The master holds the canary ServiceRecord.
    canary_held: bool,
    /// When the canary's lease is renewed, at the first audit from then.
    canary_renewal: Option<Instant>,
    /// Moves with every request and answer that may change what the
    /// master holds for this agent (see `registrations_record`).
    generation: u64,
    /// The generation of the last change that may have added to it.
    grown: u64,
}

/// True (once) if `slot` is due at `now`.
fn take_due(slot: &mut Option<Instant>, now: Instant) -> bool {
    let due = slot.is_some_and(|t| t <= now);
    if due {
        *slot = None;
    }
    due
}

impl RegistrationSchedule {
    /// The deadlines it holds, for the agent's next timeout.
    pub(in crate::agent) fn deadlines(&self) -> [Option<Instant>; 3] {
        [self.registration, self.reregistration, self.audit]
    }

    /// ClassPortInfo and the subscriptions go at `at` (or not: `None`).
    pub(in crate::agent) fn register_at(&mut self, at: Option<Instant>) {
        self.registration = at;
    }

    /// ClassPortInfo and the subscriptions go at `at` at the latest.
    pub(in crate::agent) fn register_by(&mut self, at: Instant) {
        self.registration = Some(self.registration.map_or(at, |t| t.min(at)));
    }

    /// True (once) if the registration is due at `now`.
    pub(in crate::agent) fn take_registration_due(&mut self, now: Instant) -> bool {
        take_due(&mut self.registration, now)
    }

    /// Every subscription goes again at `at` (or not: `None`).
    pub(in crate::agent) fn reregister_at(&mut self, at: Option<Instant>) {
        self.reregistration = at;
    }

    /// True (once) if the re-registration is due at `now`.
    pub(in crate::agent) fn take_reregistration_due(&mut self, now: Instant) -> bool {
        take_due(&mut self.reregistration, now)
    }

    /// The canary is audited at `at` (or not: `None`).
    pub(in crate::agent) fn audit_at(&mut self, at: Option<Instant>) {
        self.audit = at;
    }

    /// An audit already scheduled comes no later than `at`.
    pub(in crate::agent) fn audit_by(&mut self, at: Instant) {
        self.audit = self.audit.map(|t| t.min(at));
    }

    /// True if the audit is due at `now` (it schedules the next itself).
    pub(in crate::agent) fn audit_due(&self, now: Instant) -> bool {
        self.audit.is_some_and(|t| t <= now)
    }

    /// Nothing more is scheduled (shutdown).
    pub(in crate::agent) fn stop(&mut self) {
        self.registration = None;
        self.reregistration = None;
        self.audit = None;
    }

    /// The master holds the canary.
    pub(in crate::agent) fn canary_held(&self) -> bool {
        self.canary_held
    }

    /// The master took the canary; its lease is renewed from `renew_at`.
    pub(in crate::agent) fn canary_taken(&mut self, renew_at: Instant) {
        self.canary_held = true;
        self.canary_renewal = Some(renew_at);
    }

    /// The master no longer holds the canary (it lost it, or it is being
    /// withdrawn): true if it held it.
    pub(in crate::agent) fn canary_gone(&mut self) -> bool {
        std::mem::take(&mut self.canary_held)
    }

    /// True (once) if the canary's lease is due for renewal at `now`.
    pub(in crate::agent) fn take_canary_renewal_due(&mut self, now: Instant) -> bool {
        take_due(&mut self.canary_renewal, now)
    }

    /// The registrations record's generation.
    pub(in crate::agent) fn generation(&self) -> u64 {
        self.generation
    }

    /// The generation of the last change that may have added to what the
    /// master holds for the agent.
    pub(in crate::agent) fn grown(&self) -> u64 {
        self.grown
    }

    /// What the master holds for the agent may have changed; `may_add`:
    /// it may hold more than before.
    pub(in crate::agent) fn registrations_changed(&mut self, may_add: bool) {
        self.generation += 1;
        if may_add {
            self.grown = self.generation;
        }
    }
}
