//! A distributor's snapshot: the records of the tables it sent, default
//! and partition tables apart, as a text dump in two sections
//! (records_file's [`DEFAULT_TABLES`] and [`PARTITION_TABLES`]), which
//! `--load`, `--from` and `--delta` read back.

use std::path::Path;

use local_sa_distributor::sent_tables::SentTables;

use crate::records_file::{DEFAULT_TABLES, Dump, PARTITION_TABLES};
use crate::stop::Stop;

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
