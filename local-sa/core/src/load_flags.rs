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

/// Bit 0 of a Set of NodeRecords or ServiceRecords: a distributor's whole
/// names table (the fabric's channel adapters, or the local-sa
/// directory), which replaces that table's names. Without it such a Set
/// is not local-sa's to take (0x000C).
pub const NAMES_TABLE: u32 = 1;
