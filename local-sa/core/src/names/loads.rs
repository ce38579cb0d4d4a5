//! Names tables pushed by a distributor next to the master
//! (docs/wire-contract.md): a Set of NodeRecords or of directory
//! ServiceRecords with `NAMES_TABLE` in AttributeModifier and the
//! SM_Key, one MAD or an RMPP transfer, is that table whole — what the
//! port would otherwise fetch from the master after its paths.
//!
//! The two tables arrive as two loads. Each completes its half of a names
//! fetch (a fetch from the master still running is given up: the
//! distributor's tables are as new); when both halves are in, the names
//! are replaced as after a fetch. A port whose names came in a load does
//! not fetch them from the master at start; after a periodic refresh from
//! the master it does, as before (the master's word then).
//!
//! The answer is a GetResp holding, in AttributeModifier, how many
//! records were names records (channel adapters, directory entries);
//! others in the table are skipped. Records are trusted as a path load's
//! are: the SM_Key is what vouches for them.
//!
//! Here: a table's records as names ([`names_table`]); the load's routing
//! (key, counters, answer) is with the other loads' (`agent::port_tables::loads`).

use mad_codec::{AttributeId, NodeRecord, Records, ServiceRecord};

use super::fetching::{add_directory_names, add_node_names};
use super::hosts::Names;
use super::state::NameTable;

/// A names table's records (`data`, each `offset` bytes apart) of
/// `attribute` (NodeRecords, else directory ServiceRecords), as names
/// under the subnet `prefix`: which half of the names it is, and the
/// names with how many records were names records; `Err` if the offset is
/// shorter than a record.
pub(crate) fn names_table(
    attribute: AttributeId,
    data: &[u8],
    offset: u16,
    prefix: u64,
) -> (NameTable, Result<(Names, usize), ()>) {
    let mut names = Names::new();
    let (table, taken) = match attribute {
        AttributeId::NODE_RECORD => (
            NameTable::Nodes,
            Records::<NodeRecord>::new(data, offset).map(|r| add_node_names(prefix, r, &mut names)),
        ),
        _ => (
            NameTable::Directory,
            Records::<ServiceRecord>::new(data, offset).map(|r| add_directory_names(r, &mut names)),
        ),
    };
    (table, taken.map(|t| (names, t)).map_err(|_| ()))
}
