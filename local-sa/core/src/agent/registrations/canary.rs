//! Noticing that the master SA lost this port's registrations.
//!
//! On hardware a new or restarted master makes the port report SM change
//! or ClientReregister, and the agent registers everything again. Where no
//! such event comes (the simulator, or a master restarted on the same LID
//! that does not ask clients to re-register), the agent keeps a canary at
//! the master: a ServiceRecord named "local-sa" for this port, registered
//! with its subscriptions. Every audit interval it asks for that one
//! record; when the master answers that it has no such record, its state
//! is gone, and every subscription and membership is sent again. The
//! record also tells anyone browsing ServiceRecords which ports run
//! local-sa.
//!
//! The canary has a finite lease ([`canary_lease`]): an agent that ends
//! without withdrawing it (SIGKILL) leaves it at the master for at most
//! that long. A live agent renews it at the first audit past half the
//! lease — an audit that found it, so that a renewal never hides a master
//! that lost its state.

use crate::log_limit::answer_status;
use std::time::{Duration, Instant};

use mad_codec::attr::service_record::mask as sr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, SaMadBuilder, ServiceRecord};
use tracing::{debug, info, warn};

use crate::agent::SaCore;
use crate::agent::master::purpose::{CanaryStep, Purpose};

/// The canary's ServiceID ("LOCALSA" in ASCII, then 1).
pub(crate) const SERVICE_ID: u64 = 0x4C4F_4341_4C53_4101;

/// The canary's lease: 15 minutes, or three audit intervals when those
/// are longer, so that an audit always comes between half the lease (when
/// renewal is due) and its end.
pub(crate) fn canary_lease(audit_interval: Duration) -> Duration {
    (audit_interval * 3).max(Duration::from_secs(15 * 60))
}

impl SaCore {
    fn canary_record(&self) -> ServiceRecord {
        let mut r = ServiceRecord::new_zeroed();
        r.set_service_id(SERVICE_ID);
        r.set_service_gid(self.port.gid);
        r.set_service_pkey(0xFFFF);
        let lease = canary_lease(self.config.audit_interval).as_secs();
        r.set_service_lease(u32::try_from(lease).unwrap_or(ServiceRecord::INFINITE_LEASE - 1));
        r.set_service_name("local-sa");
        r
    }

    fn send_canary(&mut self, now: Instant, method: Method, step: CanaryStep) {
        let mask = match method {
            Method::SET => {
                sr::SERVICE_ID
                    | sr::SERVICE_GID
                    | sr::SERVICE_PKEY
                    | sr::SERVICE_LEASE
                    | sr::SERVICE_NAME
            }
            _ => sr::SERVICE_ID | sr::SERVICE_GID,
        };
        let mut b = SaMadBuilder::request(method, 0, AttributeId::SERVICE_RECORD)
            .record(&self.canary_record());
        b.header_mut().sa.set_component_mask(mask);
        self.send_upstream(now, Purpose::Canary(step), &b.into_bytes());
    }

    /// Registers the canary at the master.
    pub(in crate::agent) fn register_canary(&mut self, now: Instant) {
        if !self
            .master
            .requester
            .any_pending(|p| *p == Purpose::Canary(CanaryStep::Register))
        {
            self.send_canary(now, Method::SET, CanaryStep::Register);
        }
    }

    /// Asks the master whether it still has the canary.
    pub(in crate::agent) fn audit(&mut self, now: Instant) {
        if self.proxy.schedule.canary_held()
            && !self
                .master
                .requester
                .any_pending(|p| *p == Purpose::Canary(CanaryStep::Audit))
        {
            self.send_canary(now, Method::GET, CanaryStep::Audit);
        }
        self.proxy
            .schedule
            .audit_at(Some(now + self.config.audit_interval));
    }

    /// Withdraws the canary (shutdown).
    pub(in crate::agent) fn withdraw_canary(&mut self, now: Instant) {
        if self.proxy.schedule.canary_gone() {
            self.send_canary(now, Method::DELETE, CanaryStep::Withdraw);
        }
    }

    /// The master answered a canary request with `status` (`None`: it did
    /// not answer).
    pub(in crate::agent) fn canary_answered(
        &mut self,
        now: Instant,
        step: CanaryStep,
        status: Option<MadStatus>,
    ) {
        match (step, status) {
            (CanaryStep::Register, Some(MadStatus::OK)) => {
                debug!("canary ServiceRecord registered at the master");
                let renew_at = now + canary_lease(self.config.audit_interval) / 2;
                self.proxy.schedule.canary_taken(renew_at);
            }
            (CanaryStep::Register, other) => {
                warn!(status = %answer_status(other), "the master did not take the canary ServiceRecord; master restarts will go unnoticed");
                self.retry_registration(now);
            }
            (CanaryStep::Audit, Some(MadStatus::ERR_NO_RECORDS)) => {
                info!(
                    master = self.port.sm_lid,
                    "the master SA lost this port's registrations (restarted?): registering again"
                );
                self.proxy.schedule.canary_gone();
                self.master_lost_state(now);
            }
            (CanaryStep::Audit, Some(MadStatus::OK))
                if self.proxy.schedule.take_canary_renewal_due(now) =>
            {
                // Still there: its lease starts again.
                self.register_canary(now);
            }
            (CanaryStep::Audit, _) | (CanaryStep::Withdraw, _) => {}
        }
    }

    /// Everything the master held for this port is gone: subscriptions,
    /// memberships, the canary, and (perhaps) its view of the paths.
    fn master_lost_state(&mut self, now: Instant) {
        self.master.policy.forget();
        self.proxy.schedule.register_at(Some(now));
        let again = now + self.reregister_delay();
        self.proxy.schedule.reregister_at(Some(again));
        self.tables
            .refresh
            .schedule(Some(now + self.refresh_delay()));
        self.naming.keep_after_next_refresh(true);
    }
}
