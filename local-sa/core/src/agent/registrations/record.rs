//! This agent's registrations as a record for whoever serves the port
//! next, and the removal of what a previous agent left at the master (see
//! [`crate::registrations`]).

use std::time::Instant;

use tracing::{info, warn};

use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
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

    /// Changes whenever [`SaCore::registrations`] may have. A caller that
    /// keeps the record writes it again when this moves; before sending
    /// what [`SaCore::poll_transmit`] gives if it moved past the record
    /// by a change that may have added to it
    /// ([`SaCore::registrations_grown`]); a record that lists more than
    /// the master holds costs the next agent only a leave the master
    /// refuses, so removals may wait.
    pub fn registrations_generation(&self) -> u64 {
        self.proxy.schedule.generation()
    }

    /// The generation of the last change that may have added to
    /// [`SaCore::registrations`]: a record older than this must be
    /// written before the next request goes out.
    pub fn registrations_grown(&self) -> u64 {
        self.proxy.schedule.grown()
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

    /// Counts a request (`sending`) or its end that may change the
    /// registrations: a subscription or a join may add to them (a join's
    /// answer too, when it names the group the master created for it);
    /// unsubscribing and leaving only take away.
    pub(in crate::agent) fn note_registration_traffic(&mut self, purpose: &Purpose, sending: bool) {
        let may_add = match purpose {
            Purpose::Inform { subscribe, .. } => *subscribe,
            Purpose::Membership(op) => self.proxy.memberships.may_add(*op, sending),
            _ => return,
        };
        self.proxy.schedule.registrations_changed(may_add);
    }
}
