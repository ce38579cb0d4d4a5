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

use std::time::{Duration, Instant};

use mad_codec::attr::service_record::mask as sr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, SaMadBuilder, ServiceRecord};
use tracing::{debug, warn};

use crate::agent::master::purpose::{CanaryStep, Purpose};
use crate::agent::registration_proxy::RegistrationProxy;
use crate::agent::registration_proxy::effect::ProxyEffect;
use crate::log_limit::answer_status;

/// The canary's ServiceID ("LOCALSA" in ASCII, then 1).
pub(crate) const SERVICE_ID: u64 = 0x4C4F_4341_4C53_4101;

/// The canary's lease: 15 minutes, or three audit intervals when those
/// are longer, so that an audit always comes between half the lease (when
/// renewal is due) and its end.
pub(crate) fn canary_lease(audit_interval: Duration) -> Duration {
    (audit_interval * 3).max(Duration::from_secs(15 * 60))
}

impl RegistrationProxy {
    fn canary_record(&self) -> ServiceRecord {
        let mut r = ServiceRecord::new_zeroed();
        r.set_service_id(SERVICE_ID);
        r.set_service_gid(self.port_gid);
        r.set_service_pkey(0xFFFF);
        let lease = canary_lease(self.config.audit_interval).as_secs();
        r.set_service_lease(u32::try_from(lease).unwrap_or(ServiceRecord::INFINITE_LEASE - 1));
        r.set_service_name("local-sa");
        r
    }

    fn canary_request(&self, method: Method, step: CanaryStep) -> ProxyEffect {
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
        ProxyEffect::Send {
            purpose: Purpose::Canary(step),
            request: b.into_bytes(),
        }
    }

    /// Registers the canary at the master, unless that is being asked
    /// (`asking` says what is in flight).
    pub(in crate::agent) fn register_canary(
        &self,
        asking: impl Fn(&Purpose) -> bool,
    ) -> Option<ProxyEffect> {
        let step = CanaryStep::Register;
        (!asking(&Purpose::Canary(step))).then(|| self.canary_request(Method::SET, step))
    }

    /// True when the canary's audit is due.
    pub(in crate::agent) fn audit_due(&self, now: Instant) -> bool {
        self.schedule.audit_due(now)
    }

    /// Asks the master whether it still has the canary (if it took it,
    /// and unless that is being asked); the next audit one interval on.
    pub(in crate::agent) fn audit(
        &mut self,
        now: Instant,
        asking: impl Fn(&Purpose) -> bool,
    ) -> Option<ProxyEffect> {
        self.schedule
            .audit_at(Some(now + self.config.audit_interval));
        let step = CanaryStep::Audit;
        (self.schedule.canary_held() && !asking(&Purpose::Canary(step)))
            .then(|| self.canary_request(Method::GET, step))
    }

    /// Withdraws the canary if the master took it (shutdown).
    pub(super) fn withdraw_canary(&mut self) -> Option<ProxyEffect> {
        self.schedule
            .canary_gone()
            .then(|| self.canary_request(Method::DELETE, CanaryStep::Withdraw))
    }

    /// The master answered a canary request with `status` (`None`: it did
    /// not answer).
    pub(in crate::agent) fn canary_answered(
        &mut self,
        now: Instant,
        step: CanaryStep,
        status: Option<MadStatus>,
        asking: impl Fn(&Purpose) -> bool,
    ) -> Option<ProxyEffect> {
        match (step, status) {
            (CanaryStep::Register, Some(MadStatus::OK)) => {
                debug!("canary ServiceRecord registered at the master");
                let renew_at = now + canary_lease(self.config.audit_interval) / 2;
                self.schedule.canary_taken(renew_at);
                None
            }
            (CanaryStep::Register, other) => {
                warn!(status = %answer_status(other), "the master did not take the canary ServiceRecord; master restarts will go unnoticed");
                Some(ProxyEffect::RetryRegistration)
            }
            (CanaryStep::Audit, Some(MadStatus::ERR_NO_RECORDS)) => {
                self.schedule.canary_gone();
                Some(ProxyEffect::MasterLostState)
            }
            (CanaryStep::Audit, Some(MadStatus::OK))
                if self.schedule.take_canary_renewal_due(now) =>
            {
                // Still there: its lease starts again.
                self.register_canary(asking)
            }
            (CanaryStep::Audit, _) | (CanaryStep::Withdraw, _) => None,
        }
    }
}
