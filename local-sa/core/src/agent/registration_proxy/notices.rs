//! Notices and the subscriptions that bring them: the master's Reports,
//! and everyone on this port who wants them — the agent itself (traps
//! 64/65 keep its store current), ports that subscribe with InformInfo
//! MADs, and local API connections.
//!
//! The master holds one subscription per distinct filter of this port
//! ([`informinfo::Registry`]), whoever and however many hold it here. Each
//! Report is passed only once however many held filters match it
//! ([`informinfo::Duplicates`]), and handed to every holder whose filter
//! matches: to the agent, as a Report of their own to MAD subscribers
//! (resent until answered; a subscriber that stops answering loses its
//! subscriptions), to local connections.

use std::collections::BTreeSet;
use std::time::Instant;

use informinfo::{DeliveryEvent, Effect, Filter, Refusal, Reply, UpstreamResult};
use mad_codec::attr::inform_info_record::mask as iir;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, ComponentMask, Gid, InformInfoRecord, InformInfoRepr, MadStatus, Method, Notice,
    SaMadBuilder, TrapDetails, TrapNumber,
};
use tracing::{debug, info, warn};

use super::Warning;
use crate::address::Transmit;
use crate::agent::counterparts::{Asker, Subscriber};
use crate::agent::master::purpose::Purpose;
use crate::agent::master::waiters::Join;
use crate::agent::registration_proxy::RegistrationProxy;
use crate::agent::registration_proxy::effect::ProxyEffect;
use crate::request::{LocalBody, LocalReply};

/// RespTimeValue of the agent's subscriptions (2^19 × 4.096 µs ≈ 2 s).
const SUBSCRIPTION_RESP_TIME: u8 = 19;

/// The traps the agent itself subscribes to: ports coming and going
/// (64/65), and a switch port's link going up or down (128), after which
/// the master sweeps and may reroute. (Not trap 144, a port's local
/// changes: it says nothing of routes, and every restarting SM-capable
/// port raises one.)
const CORE_TRAPS: [TrapNumber; 3] = [
    TrapNumber::GID_IN_SERVICE,
    TrapNumber::GID_OUT_OF_SERVICE,
    TrapNumber::LINK_STATE_CHANGE,
];

/// The traps the agent subscribes to while the port is in some multicast
/// group: its members hear of the group's deletion and re-creation.
const GROUP_TRAPS: [TrapNumber; 2] = [TrapNumber::MC_GROUP_CREATED, TrapNumber::MC_GROUP_DELETED];

/// The filter of the agent's own subscription to `trap`.
fn core_filter(trap: TrapNumber) -> Filter {
    let ii = InformInfoRepr::generic_subscription(trap, true, 1, SUBSCRIPTION_RESP_TIME);
    Filter::of(&ii, true).unwrap_or_else(|_| unreachable!("a generic trap subscription is valid"))
}

impl RegistrationProxy {
    /// Subscribes the agent to its own traps (64, 65, 128).
    pub(in crate::agent) fn subscribe_own(&mut self) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        for trap in CORE_TRAPS {
            self.subscriptions.registry_mut().subscribe(
                Subscriber::Core,
                core_filter(trap),
                &mut effects,
            );
        }
        self.inform_effects(effects)
    }

    /// Holds traps 66/67 while the port is in some multicast group, and
    /// only then: every such trap in the fabric reaches every subscriber.
    pub(super) fn follow_group_traps(&mut self) -> Vec<ProxyEffect> {
        let wanted = self.memberships.groups() > 0 && !self.withdrawing;
        if !self.subscriptions.hold_group_traps(wanted) {
            return Vec::new();
        }
        let mut effects = Vec::new();
        for trap in GROUP_TRAPS {
            let registry = self.subscriptions.registry_mut();
            if wanted {
                registry.subscribe(Subscriber::Core, core_filter(trap), &mut effects);
            } else {
                registry.unsubscribe(&Subscriber::Core, core_filter(trap), &mut effects);
            }
        }
        self.inform_effects(effects)
    }

    /// Every subscription and membership again at the master (a new
    /// master, a restart, ClientReregister).
    pub(in crate::agent) fn register_all_again(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        self.subscriptions
            .registry_mut()
            .reregister_all(&mut effects);
        let mut out = self.inform_effects(effects);
        out.extend(self.rejoin_all(now));
        out
    }

    /// Withdraws every subscription at the master (shutdown).
    pub(super) fn unsubscribe_all(&mut self) -> Vec<ProxyEffect> {
        let holders: Vec<Subscriber> = self
            .subscriptions
            .registry()
            .holdings()
            .map(|(s, _)| *s)
            .collect();
        let mut effects = Vec::new();
        // Only the filters go: Reports in flight are still delivered, and
        // requests waiting for the master still get its answer, in the
        // moment the daemon gives the withdrawals.
        let registry = self.subscriptions.registry_mut();
        for s in holders {
            registry.remove_subscriber(&s, &mut effects);
        }
        self.inform_effects(effects)
    }

    /// What the registry asks, as effects; the askers it answers are
    /// released, and their subscribers' quotas settled.
    pub(super) fn inform_effects(&mut self, effects: Vec<Effect<Subscriber>>) -> Vec<ProxyEffect> {
        let mut out = Vec::new();
        for effect in effects {
            match effect {
                Effect::Send { filter, subscribe } => {
                    let ii = filter
                        .inform_info(subscribe, 1, SUBSCRIPTION_RESP_TIME)
                        .to_wire();
                    let request = SaMadBuilder::request(Method::SET, 0, AttributeId::INFORM_INFO)
                        .record(&ii)
                        .into_bytes();
                    let purpose = Purpose::Inform { filter, subscribe };
                    out.push(ProxyEffect::Send { purpose, request });
                }
                Effect::Confirm { subscriber, filter } => {
                    for asker in self.subscriptions.answered(subscriber, filter) {
                        out.push(answer(asker, MadStatus::OK));
                    }
                }
                Effect::Refuse {
                    subscriber,
                    filter,
                    reason,
                } => {
                    let status = match reason {
                        Refusal::Master(s) => MadStatus(s),
                        Refusal::NoAnswer => MadStatus::BUSY,
                    };
                    for asker in self.subscriptions.answered(subscriber, filter) {
                        out.push(answer(asker, status));
                    }
                    self.settle_subscriber(subscriber, Some(filter));
                    if subscriber == Subscriber::Core {
                        warn!(%status, %filter, "the master refused the agent's own subscription");
                    }
                }
            }
        }
        out
    }

    /// The master answered (`Some(status)`) or did not answer a
    /// subscription request.
    pub(in crate::agent) fn inform_answered(
        &mut self,
        now: Instant,
        filter: Filter,
        subscribe: bool,
        status: Option<MadStatus>,
    ) -> Vec<ProxyEffect> {
        let result = match status {
            Some(MadStatus::OK) => {
                debug!(
                    %filter,
                    subscribe, "the master confirmed a subscription change"
                );
                UpstreamResult::Accepted
            }
            Some(status) => {
                if let Some(earlier_not_logged) =
                    self.log_limit
                        .allow(now, Warning::SubscriptionRefused, 0u32)
                {
                    warn!(
                        %filter,
                        subscribe,
                        %status,
                        earlier_not_logged,
                        "the master refused a subscription change"
                    );
                }
                UpstreamResult::Refused(status.0)
            }
            None => UpstreamResult::NoAnswer,
        };
        let mut effects = Vec::new();
        self.subscriptions
            .registry_mut()
            .upstream_result(filter, subscribe, result, &mut effects);
        let out = self.inform_effects(effects);
        if self.subscriptions.registry().has_stalled() && !self.withdrawing {
            let at = now + self.config.retry_backoff;
            self.subscriptions.retry_by(at);
        }
        out
    }

    /// A subscribe or unsubscribe by `s` (let in by its owner's limits,
    /// or refused), answered to `asker` now or when the master has.
    pub(in crate::agent) fn subscription_request(
        &mut self,
        now: Instant,
        s: Subscriber,
        filter: Filter,
        subscribe: bool,
        asker: Asker,
    ) -> Vec<ProxyEffect> {
        if subscribe && let Err(refusal) = self.admit_subscription(s, filter, self.owners()) {
            self.registration_refused(now, refusal);
            self.subscriptions.settle(&s);
            return vec![answer(asker, MadStatus::ERR_NO_RESOURCES)];
        }
        let mut effects = Vec::new();
        let registry = self.subscriptions.registry_mut();
        let reply = if subscribe {
            registry.subscribe(s, filter, &mut effects)
        } else {
            registry.unsubscribe(&s, filter, &mut effects)
        };
        let mut out = Vec::new();
        match reply {
            Reply::Done => out.push(answer(asker, MadStatus::OK)),
            Reply::Pending => {
                if let Join::Full(asker) = self.subscriptions.wait_for_master(s, filter, asker) {
                    // The same subscription asked again and again while the
                    // master is asked: the first ones get its answer.
                    out.push(answer(asker, MadStatus::BUSY));
                }
            }
            // OpenSM answers an unsubscribe it cannot match this way.
            Reply::NotHeld => out.push(answer(asker, MadStatus::ERR_REQ_INVALID)),
        }
        out.extend(self.inform_effects(effects));
        self.settle_subscriber(s, Some(filter));
        self.subscriptions.settle(&s);
        out
    }

    /// Where a MAD subscriber's Reports go.
    pub(in crate::agent) fn note_address(&mut self, s: Subscriber, to: crate::address::Address) {
        self.subscriptions.note_address(s, to);
    }

    /// Everything `s` holds goes: its connection closed, its lease ended,
    /// its port left the fabric.
    pub(in crate::agent) fn remove_subscriber(
        &mut self,
        now: Instant,
        s: Subscriber,
    ) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        let n = self.subscriptions.remove(&s, &mut effects);
        self.settle_subscriber(s, None);
        if n > 0
            && let Some(earlier_not_logged) =
                self.log_limit.allow(now, Warning::SubscriberRemoved, 0u32)
        {
            info!(
                subscriber = %s,
                subscriptions = n,
                earlier_not_logged,
                "subscriber removed"
            );
        }
        self.inform_effects(effects)
    }

    /// A notice from the master (its Report already answered): passed on
    /// once to everyone whose filter matches it.
    pub(in crate::agent) fn notice(&mut self, now: Instant, notice: Notice) -> Vec<ProxyEffect> {
        let Some(recipients) = self.subscriptions.recipients(now, &notice) else {
            debug!("a duplicate Report of a notice already passed on");
            return Vec::new();
        };
        self.counts.notices += 1;
        let mut out = Vec::new();
        for s in recipients {
            match s {
                Subscriber::Core => out.push(ProxyEffect::Notice(notice)),
                Subscriber::Mad { .. } => out.extend(self.send_report(now, s, notice)),
                Subscriber::Local(conn) => out.push(ProxyEffect::Local(LocalReply {
                    conn,
                    request: 0,
                    answers: None,
                    status: MadStatus::OK,
                    from_master: false,
                    body: LocalBody::Notice(notice),
                })),
            }
        }
        if let TrapDetails::GidOutOfService { gid } = notice.details() {
            // OpenSM drops the subscriptions of a port that left; so do we.
            let gone: Vec<Subscriber> = self
                .subscriptions
                .registry()
                .holdings()
                .map(|(s, _)| *s)
                .filter(|s| matches!(s, Subscriber::Mad { gid: g, .. } if *g == gid))
                .collect();
            for s in gone {
                out.extend(self.remove_subscriber(now, s));
            }
        }
        out
    }

    fn send_report(&mut self, now: Instant, s: Subscriber, notice: Notice) -> Vec<ProxyEffect> {
        let Some((to, tid, ended)) = self.subscriptions.report(now, s, notice) else {
            return Vec::new();
        };
        self.counts.reports_sent += 1;
        let mut out = vec![ProxyEffect::Transmit(Transmit::reply(
            to,
            report_mad(tid, &notice),
        ))];
        if let Some(gone) = ended {
            out.extend(self.lease_ended(now, gone));
        }
        out
    }

    /// A ReportResp: true if it answered one of our Reports.
    pub(in crate::agent) fn report_resp(&mut self, tid: u32) -> bool {
        self.subscriptions.acknowledged(tid)
    }

    fn lease_ended(&mut self, now: Instant, s: Subscriber) -> Vec<ProxyEffect> {
        if let Some(earlier_not_logged) = self.log_limit.allow(now, Warning::SubscriberSilent, 0u32)
        {
            warn!(
                subscriber = %s,
                earlier_not_logged,
                "a subscriber stopped answering Reports: its subscriptions end"
            );
        }
        self.counts.leases_ended += 1;
        self.remove_subscriber(now, s)
    }

    /// Report resends, lease ends, and subscription retries that are due.
    pub(super) fn notices_due(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut out = Vec::new();
        for event in self.subscriptions.deliveries_due(now) {
            match event {
                DeliveryEvent::Resend {
                    subscriber,
                    tid,
                    notice,
                } => {
                    if let Some(to) = self.subscriptions.address(&subscriber) {
                        out.push(ProxyEffect::Transmit(Transmit::reply(
                            to,
                            report_mad(tid, &notice),
                        )));
                    }
                }
                DeliveryEvent::LeaseEnded { subscriber } => {
                    out.extend(self.lease_ended(now, subscriber))
                }
            }
        }
        if self.subscriptions.take_retry_due(now) {
            let mut effects = Vec::new();
            self.subscriptions.registry_mut().retry(&mut effects);
            out.extend(self.inform_effects(effects));
        }
        out
    }

    /// InformInfoRecord Get/GetTable by `template` and `mask`: the records
    /// of this port's subscribers it asks about, or `None` when it asks
    /// about someone else (the master's to answer).
    pub(in crate::agent) fn inform_info_records(
        &self,
        template: &InformInfoRecord,
        mask: ComponentMask,
        trusted: bool,
    ) -> Option<Vec<InformInfoRecord>> {
        let about_us = mask.contains(iir::SUBSCRIBER_GID)
            && self.subscriber_gids().contains(&template.subscriber_gid());
        if !about_us {
            return None;
        }
        let records = self
            .subscription_records(trusted)
            .into_iter()
            .filter(|r| r.subscriber_gid() == template.subscriber_gid())
            .filter(|r| !mask.contains(iir::ENUM) || r.enumeration() == template.enumeration())
            .collect();
        Some(records)
    }

    /// Every subscription of this port, as InformInfoRecords: a MAD
    /// subscriber's under its GID, the agent's and local connections'
    /// under this port's (each distinct filter once). QPNs are shown only
    /// to trusted askers, as OpenSM does.
    pub(in crate::agent) fn subscription_records(&self, trusted: bool) -> Vec<InformInfoRecord> {
        let mut seen = BTreeSet::new();
        for (s, filter) in self.subscriptions.registry().holdings() {
            let (gid, qpn) = match s {
                Subscriber::Mad { gid, qpn } => (*gid, *qpn),
                Subscriber::Core | Subscriber::Local(_) => (self.port_gid, 1),
            };
            seen.insert((gid, filter, qpn));
        }
        seen.into_iter()
            .map(|(gid, filter, qpn)| {
                let mut r = InformInfoRecord::new_zeroed();
                r.set_subscriber_gid(gid);
                let qpn = if trusted { qpn } else { 0 };
                r.set_inform_info(
                    filter
                        .inform_info(true, qpn, SUBSCRIPTION_RESP_TIME)
                        .to_wire(),
                );
                r
            })
            .collect()
    }

    fn subscriber_gids(&self) -> Vec<Gid> {
        let mut gids: Vec<Gid> = self
            .subscriptions
            .registry()
            .holdings()
            .map(|(s, _)| match s {
                Subscriber::Mad { gid, .. } => *gid,
                _ => self.port_gid,
            })
            .collect();
        gids.push(self.port_gid);
        gids.sort();
        gids.dedup();
        gids
    }
}

/// `asker`'s subscribe or unsubscribe answered with `status`.
fn answer(asker: Asker, status: MadStatus) -> ProxyEffect {
    ProxyEffect::AnswerInform { asker, status }
}

/// A Report of `notice` under TransactionID `tid`.
fn report_mad(tid: u32, notice: &Notice) -> bytes::Bytes {
    SaMadBuilder::request(Method::REPORT, u64::from(tid), AttributeId::NOTICE)
        .record(notice)
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_own_filters_are_the_generic_trap_subscriptions() {
        let f = core_filter(TrapNumber::GID_OUT_OF_SERVICE);
        assert_eq!(
            (f.trap_or_device, f.gid, f.lid_range_begin),
            (65, Gid::ZERO, 0xFFFF)
        );
        let ii = f.inform_info(false, 1, SUBSCRIPTION_RESP_TIME);
        assert_eq!(
            ii,
            InformInfoRepr::generic_subscription(TrapNumber(65), false, 1, SUBSCRIPTION_RESP_TIME)
        );
    }
}
