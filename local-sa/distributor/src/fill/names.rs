//! The names tables a distribution pushes with the paths (the channel
//! adapters' NodeRecords and the local-sa directory's ServiceRecords),
//! each ready to send as a Set with NAMES_TABLE.

use bytes::{Bytes, BytesMut};
use local_sa_core::load_flags::NAMES_TABLE;
use mad_codec::header::SaMadHeader;
use mad_codec::records::put_record;
use mad_codec::{Method, SaMadBuilder, SaRecord};

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

impl NamesLoad {
    /// The Set that carries `records` as a names table.
    pub fn of<R: SaRecord>(sm_key: u64, records: &[R]) -> Self {
        let mut b = SaMadBuilder::request(Method::SET, 0, R::ATTRIBUTE_ID);
        let h = b.header_mut();
        h.sa.set_sm_key(sm_key);
        h.sa.set_attribute_offset(R::ATTRIBUTE_OFFSET);
        h.mad.set_attribute_modifier(NAMES_TABLE);
        let mut data = BytesMut::with_capacity(records.len().max(1) * R::STRIDE);
        for r in records {
            put_record(&mut data, r);
        }
        if records.is_empty() {
            // An empty table still replaces the node's: one zeroed record,
            // which no node takes for a name.
            data.resize(R::STRIDE, 0);
        }
        Self {
            header: *h,
            data: data.freeze(),
            records: records.len(),
        }
    }
}
