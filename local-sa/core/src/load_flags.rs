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

/// Bit 0 of a Set of NodeRecords or ServiceRecords: a distributor's whole
/// names table (the fabric's channel adapters, or the local-sa
/// directory), which replaces that table's names. Without it such a Set
/// is not local-sa's to take (0x000C).
pub const NAMES_TABLE: u32 = 1;
