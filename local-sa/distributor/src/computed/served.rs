//! What the master served a distributor: queries, records, bytes.

/// What the master served: queries answered, records and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    /// Queries answered.
    pub queries: u64,
    /// Records in the answers.
    pub records: u64,
    /// The records' bytes.
    pub bytes: u64,
}

impl Served {
    /// Counts one answer of `records` records of `stride` bytes each.
    pub fn count(&mut self, records: usize, stride: usize) {
        self.queries += 1;
        self.records += records as u64;
        self.bytes += (records * stride) as u64;
    }

    /// Adds what another count served.
    pub fn add(&mut self, other: Self) {
        self.queries += other.queries;
        self.records += other.records;
        self.bytes += other.bytes;
    }
}
