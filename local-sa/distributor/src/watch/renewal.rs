//! The lease renewal: every renewal interval each node gets one
//! `Set(PathRecord)` with LEASE and RENEW_ONLY (docs/wire-contract.md),
//! so that nodes whose tables did not change keep deferring their own
//! refreshes; it says the interval, so that a node takes a watch that
//! misses two as gone; after a sweep of the master it tells the node to
//! forget the QoS answers it kept (`FORGET_QOS`).

use bytes::Bytes;
use local_sa_core::load_flags::{FORGET_QOS, LeaseTerms, RENEW_ONLY};
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Method, PathRecord, SaMadBuilder};

/// The renewal MAD: a lease on `terms` (a lease of 0 ends it), carrying
/// `sm_key`; `forget_qos`: the master swept since the last.
pub fn renewal(sm_key: u64, terms: LeaseTerms, forget_qos: bool) -> Bytes {
    let mut b = SaMadBuilder::request(Method::SET, 0, AttributeId::PATH_RECORD)
        .record(&PathRecord::new_zeroed());
    b.header_mut().sa.set_sm_key(sm_key);
    b.header_mut()
        .mad
        .set_attribute_modifier(terms.modifier(if forget_qos {
            RENEW_ONLY | FORGET_QOS
        } else {
            RENEW_ONLY
        }));
    b.into_bytes()
}

#[cfg(test)]
mod tests {
    use local_sa_core::load_flags::{LEASE, lease_seconds, renewal_interval};
    use mad_codec::SaMad;

    use super::*;

    #[test]
    fn a_renewal_carries_the_key_the_lease_and_its_interval_and_nothing_to_store() {
        let terms = LeaseTerms {
            seconds: 180,
            renew_every: 8,
        };
        let mad = renewal(0x5eed, terms, false);
        let m = SaMad::parse(&mad).unwrap();
        assert_eq!(m.mad().method(), Method::SET);
        assert_eq!(m.sa().sm_key(), 0x5eed);
        let modifier = m.mad().attribute_modifier();
        assert_eq!(modifier & (LEASE | RENEW_ONLY), LEASE | RENEW_ONLY);
        assert_eq!(lease_seconds(modifier), Some(180));
        assert_eq!(renewal_interval(modifier), Some(8));
        assert_eq!(modifier & FORGET_QOS, 0);
        let swept = renewal(0x5eed, terms, true);
        let modifier = SaMad::parse(&swept).unwrap().mad().attribute_modifier();
        assert_eq!(modifier & FORGET_QOS, FORGET_QOS, "the master swept");
        assert_eq!(renewal_interval(modifier), Some(8));
        let end = renewal(
            1,
            LeaseTerms {
                seconds: 0,
                ..terms
            },
            false,
        );
        let modifier = SaMad::parse(&end).unwrap().mad().attribute_modifier();
        assert_eq!(lease_seconds(modifier), Some(0), "a lease of 0 ends it");
    }
}
