//! The names tables a distribution pushes with the paths (the channel
//! adapters' NodeRecords and the local-sa directory's ServiceRecords),
//! each ready to send as a Set with NAMES_TABLE.

use bytes::Bytes;
use mad_codec::header::SaMadHeader;

/// One names table, ready to send: its Set's headers and its records.
#[derive(Clone)]
pub struct NamesLoad {
    /// The Set's headers (NAMES_TABLE in its modifier).
    pub header: SaMadHeader,
    /// Its records, back to back.
    pub data: Bytes,
    /// How many records.
    pub records: usize,
}

/// Both tables.
pub struct NamesTables {
    /// The channel adapters' NodeRecords.
    pub nodes: NamesLoad,
    /// The local-sa directory's ServiceRecords.
    pub directory: NamesLoad,
}
