//! A distributor's snapshot: the records of the tables it sent, default
//! and partition tables apart, as a text dump in two sections
//! (records_file's [`DEFAULT_TABLES`] and [`PARTITION_TABLES`]), which
//! `--load`, `--from` and `--delta` read back.

use std::path::Path;

use mad_codec::PathRecord;

use crate::records_file::{DEFAULT_TABLES, Dump, PARTITION_TABLES};
use crate::stop::Stop;

/// What a node holds as far as the distributor knows: what it was sent
/// (or, in a snapshot, what an earlier run sent it).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SentTables {
    /// Its default table.
    pub(crate) default: Vec<PathRecord>,
    /// Its partition tables' records, each in its P_Key's partition.
    pub(crate) partitions: Vec<PathRecord>,
}

impl From<Dump> for SentTables {
    /// A dump's records: those before any section are default tables'.
    fn from(d: Dump) -> Self {
        let mut default = d.unmarked;
        default.extend(d.default);
        Self {
            default,
            partitions: d.partitions,
        }
    }
}

/// Writes what the nodes hold as a text dump in two sections, the
/// default tables' records and the partition tables' (what `--load`,
/// `--from` and `--delta` read).
pub(crate) fn write(path: &Path, held: &SentTables) -> Result<(), Stop> {
    let count = held.default.len() + held.partitions.len();
    let mut text = String::with_capacity(count * 700 + 128);
    for (section, records) in [
        (DEFAULT_TABLES, &held.default),
        (PARTITION_TABLES, &held.partitions),
    ] {
        text.push_str(section);
        text.push('\n');
        for r in records {
            text.push_str(&crate::print::path_record(r).to_text());
        }
    }
    // Written beside and renamed, so that a reader never sees half.
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| Stop::new(2, format!("cannot write {}: {e}", path.display())))
}
