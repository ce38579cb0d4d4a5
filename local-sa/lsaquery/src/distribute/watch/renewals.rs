//! Lease renewals: every interval each node gets one `Set(PathRecord)`
//! with LEASE and RENEW_ONLY (docs/wire-contract.md), so that nodes whose
//! tables did not change keep deferring their own refreshes. A node that
//! does not answer is no longer known to hold its tables (it may have
//! restarted or missed a push); one that refuses takes no lease (an older
//! local-sa) and refreshes on its own.

use bytes::Bytes;
use local_sa_core::load_flags::{RENEW_ONLY, with_lease};
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder};
use umad::Address;

use local_sa_distributor::watch::Renewed;

use crate::compute::ask::each_to;
use crate::session::Session;
use crate::stop::Stop;

/// The renewal MAD: a lease of `seconds` (0 ends it), carrying `sm_key`.
pub(super) fn renewal(sm_key: u64, seconds: u16) -> Bytes {
    let mut b = SaMadBuilder::request(Method::SET, 0, AttributeId::PATH_RECORD)
        .record(&PathRecord::new_zeroed());
    b.header_mut().sa.set_sm_key(sm_key);
    b.header_mut()
        .mad
        .set_attribute_modifier(with_lease(RENEW_ONLY, seconds));
    b.into_bytes()
}

/// Renews the lease of every node of `nodes` (GID, LID) for `seconds`,
/// at most `window` at once.
pub(super) async fn renew(
    session: &mut Session,
    nodes: &[(Gid, u16)],
    seconds: u16,
    window: usize,
) -> Result<Renewed, Stop> {
    let mad = renewal(session.sm_key, seconds);
    let sm_sl = session.port.sm_sl;
    let requests: Vec<(Address, Bytes)> = nodes
        .iter()
        .map(|(_, lid)| (Address::gsi(*lid, sm_sl), mad.clone()))
        .collect();
    let ends = each_to(session, window, &requests).await?;
    let mut renewed = Renewed::default();
    for ((gid, _), end) in nodes.iter().zip(ends) {
        match end {
            Ok(a) if a.status() == MadStatus::OK => renewed.taken.push(*gid),
            Ok(a) => renewed.refused.push((*gid, a.status())),
            Err(_) => renewed.unanswered.push(*gid),
        }
    }
    Ok(renewed)
}

#[cfg(test)]
mod tests {
    use local_sa_core::load_flags::{LEASE, lease_seconds};
    use mad_codec::SaMad;

    use super::*;

    #[test]
    fn a_renewal_carries_the_key_and_the_lease_and_nothing_to_store() {
        let mad = renewal(0x5eed, 180);
        let m = SaMad::parse(&mad).unwrap();
        assert_eq!(m.mad().method(), Method::SET);
        assert_eq!(m.sa().sm_key(), 0x5eed);
        let modifier = m.mad().attribute_modifier();
        assert_eq!(modifier & (LEASE | RENEW_ONLY), LEASE | RENEW_ONLY);
        assert_eq!(lease_seconds(modifier), Some(180));
        let end = renewal(1, 0);
        let modifier = SaMad::parse(&end).unwrap().mad().attribute_modifier();
        assert_eq!(lease_seconds(modifier), Some(0), "a lease of 0 ends it");
    }
}
