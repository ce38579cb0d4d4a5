//! The AttributeModifier bits of local-sa's PathRecord loads and deletes
//! (docs/wire-contract.md), for the agent that takes them and the tools
//! that send them.

/// Bit 0 of a Set: the load is the whole table of each source it names.
pub const REPLACE_SOURCES: u32 = 1;

/// Bit 0 of a Delete: the pairs are gone at the master too, so what is
/// removed is known absent and the sources keep their completeness.
pub const KNOWN_ABSENT: u32 = 1;
