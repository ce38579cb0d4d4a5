//! The AttributeModifier bits of local-sa's PathRecord loads and deletes
//! (docs/wire-contract.md), for the agent that takes them and the tools
//! that send them.

/// Bit 0 of a Set: the load is the whole table of each source it names.
pub const REPLACE_SOURCES: u32 = 1;

/// Bit 0 of a Delete: the pairs are gone at the master too, so what is
/// removed is known absent and the sources keep their completeness.
pub const KNOWN_ABSENT: u32 = 1;

/// Bit 1 of a Set or Delete: the records are partition tables' (the
/// master's answers asked with each record's P_Key): each goes to, or
/// leaves, the table of its P_Key's partition, and only partitions the
/// port holds are stored.
pub const PARTITION_TABLES: u32 = 2;

/// Bit 2 of a Set: the records are sources' whole tables at one QoS key,
/// for the QoS cache. The Set's ComponentMask names the key's fields
/// (P_Key, ServiceID, QoS class); the first record carries their values
/// and nothing else is read from it; the others are the master's answers
/// to each source's GetTable at the key, as it gave them. Goes alone.
pub const QOS_TABLES: u32 = 4;

/// Bit 3 of a Set or Delete of PathRecords (not with QOS_TABLES): the
/// sender keeps the port's tables — a distributor watching the fabric,
/// which pushes every change — for the lease that AttributeModifier bits
/// 16–31 give in seconds ([`lease_seconds`]). While the lease runs the
/// port refreshes nothing itself; when the sender falls silent past it,
/// the port fetches its own tables again. A lease of 0 ends it at once.
pub const LEASE: u32 = 8;

/// Bit 4 of a Set carrying LEASE: the Set only renews the lease. Its
/// record is not read, nothing is stored, and the answer counts 0.
pub const RENEW_ONLY: u32 = 16;

/// Bit 0 of a Set carrying RENEW_ONLY: the master swept since the sender
/// last looked, and may have changed what it answers in ways no table
/// shows (a QoS level at a ServiceID): the port forgets the answers it
/// kept from the master — its QoS cache, the answers it forwarded — and
/// asks again. A port that does not know the bit renews all the same.
pub const FORGET_QOS: u32 = 1;

/// The lease in seconds an AttributeModifier carries, if it has LEASE.
pub const fn lease_seconds(modifier: u32) -> Option<u16> {
    if modifier & LEASE == 0 {
        None
    } else {
        Some((modifier >> 16) as u16)
    }
}

/// `flags` with LEASE and a lease of `seconds`.
pub const fn with_lease(flags: u32, seconds: u16) -> u32 {
    (flags & 0xFFFF) | LEASE | ((seconds as u32) << 16)
}

/// Where bits 5–15 of a Set or Delete carrying LEASE start: how often,
/// in seconds, the sender renews its lease (0: not said). A port takes a
/// sender that goes two of them without a word as gone, without waiting
/// for the rest of the lease.
const RENEWAL_SHIFT: u32 = 5;

/// The longest renewal interval bits 5–15 hold, in seconds.
pub const LONGEST_RENEWAL_INTERVAL: u16 = 0x7FF;

/// The renewal interval in seconds an AttributeModifier with LEASE says,
/// if it says one.
pub const fn renewal_interval(modifier: u32) -> Option<u16> {
    let every = (modifier >> RENEWAL_SHIFT) & LONGEST_RENEWAL_INTERVAL as u32;
    if modifier & LEASE == 0 || every == 0 {
        None
    } else {
        Some(every as u16)
    }
}

/// What a distributor's loads and renewals say of its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    /// The lease each gives, in seconds (0 ends it).
    pub seconds: u16,
    /// How often the distributor renews it, in seconds (at most
    /// [`LONGEST_RENEWAL_INTERVAL`]; 0: not said).
    pub renew_every: u16,
}

impl LeaseTerms {
    /// `flags` with LEASE, the lease and the renewal interval.
    pub const fn modifier(self, flags: u32) -> u32 {
        let every = if self.renew_every > LONGEST_RENEWAL_INTERVAL {
            LONGEST_RENEWAL_INTERVAL
        } else {
            self.renew_every
        };
        with_lease(flags & !(0x7FF << RENEWAL_SHIFT), self.seconds)
            | ((every as u32) << RENEWAL_SHIFT)
    }
}

/// Bit 0 of a Set of NodeRecords or ServiceRecords: a distributor's whole
/// names table (the fabric's channel adapters, or the local-sa
/// directory), which replaces that table's names. Without it such a Set
/// is not local-sa's to take (0x000C).
pub const NAMES_TABLE: u32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_terms_round_trip_beside_the_flags() {
        let terms = LeaseTerms {
            seconds: 185,
            renew_every: 8,
        };
        let m = terms.modifier(REPLACE_SOURCES | PARTITION_TABLES);
        assert_eq!(m & 0x1F, REPLACE_SOURCES | PARTITION_TABLES | LEASE);
        assert_eq!(lease_seconds(m), Some(185));
        assert_eq!(renewal_interval(m), Some(8));
        assert_eq!(
            renewal_interval(with_lease(RENEW_ONLY, 60)),
            None,
            "not said"
        );
        assert_eq!(renewal_interval(8 << 5), None, "without LEASE");
        let long = LeaseTerms {
            seconds: 60,
            renew_every: 5000,
        };
        assert_eq!(renewal_interval(long.modifier(0)), Some(2047));
    }
}
