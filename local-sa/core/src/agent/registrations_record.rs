//! This agent's registrations as a record for whoever serves the port
//! next, and the removal of what a previous agent left at the master (see
//! [`crate::registrations`]).

use std::time::Instant;

use tracing::{info, warn};

use super::SaCore;
use super::upstream_purpose::Purpose;
use crate::registrations::Registrations;

impl SaCore {
    /// What this agent asked the master to hold for the port, being asked
    /// included.
    pub fn registrations(&self) -> Registrations {
        Registrations {
            port_gid: self.port.gid,
            subscriptions: self
                .proxy
                .subscriptions
                .registry()
                .possibly_at_master()
                .collect(),
            groups: self.proxy.memberships.possibly_held(),
        }
    }

    /// Changes whenever [`SaCore::registrations`] may have: a caller that
    /// keeps the record writes it again when this moves, before sending
    /// what [`SaCore::poll_transmit`] gives.
    pub fn registrations_generation(&self) -> u64 {
        self.proxy.schedule.generation()
    }

    /// Removes at the master what a previous agent of this port left
    /// there (`previous`, its record), except what someone here holds by
    /// then. Call once, right after [`SaCore::new`].
    pub fn adopt(&mut self, now: Instant, previous: &Registrations) {
        if previous.port_gid != self.port.gid {
            warn!(
                recorded = %previous.port_gid,
                port = %self.port.gid,
                "the previous local-sa's registrations were for another port GID: left alone"
            );
            return;
        }
        if previous.is_empty() {
            return;
        }
        info!(
            subscriptions = previous.subscriptions.len(),
            groups = previous.groups.len(),
            "removing what a previous local-sa on this port left at the master"
        );
        let mut effects = Vec::new();
        for filter in &previous.subscriptions {
            self.proxy
                .subscriptions
                .registry_mut()
                .assume_held(*filter, &mut effects);
        }
        self.apply_inform_effects(now, effects);
        let mut effects = Vec::new();
        for (mgid, bits) in &previous.groups {
            self.proxy
                .memberships
                .adopt(now, *mgid, *bits, &mut effects);
        }
        self.apply_membership_effects(now, effects, None);
    }

    /// Counts a request or answer that may change the registrations.
    pub(super) fn note_registration_traffic(&mut self, purpose: &Purpose) {
        if matches!(purpose, Purpose::Inform { .. } | Purpose::Membership(_)) {
            self.proxy.schedule.registrations_changed();
        }
    }
}
