//! A fabric read, computed and checked: what `--distribute --compute`
//! needs to know of it, and which tables the check proved.

use std::time::Duration;

use local_sa_core::path_engine::{Fabric, FabricRecords, Table};
use mad_codec::{NodeRecord, PkeyTableRecord};

use super::ask::Served;
use super::check::Checked;
use super::explain::why;

/// A fabric read, computed and checked.
pub(crate) struct Prepared {
    pub(crate) fabric: Fabric,
    /// OpenSM's configuration it was computed with, if given: a fabric
    /// read again gets it too.
    pub(crate) opensm: Option<std::sync::Arc<super::opensm_input::OpenSmInput>>,
    /// The description it was built from (a watch compares the next
    /// read with it).
    pub(crate) records: FabricRecords,
    /// The master applies QoS.
    pub(crate) qos: bool,
    /// The P_Key tables of the description.
    pub(crate) pkey_tables: Vec<PkeyTableRecord>,
    /// The channel adapters' NodeRecords of the description (a names
    /// table's).
    pub(crate) adapters: Vec<NodeRecord>,
    /// Reading the description cost the master this.
    pub(crate) description: Served,
    /// Its multi-MAD answers came cut.
    pub(crate) cut: bool,
    /// Partitions whose SL the master did not tell, and why.
    pub(crate) unknown_sls: Vec<(u16, String)>,
    /// The partition probes and the sample cost the master this.
    pub(crate) sample: Served,
    pub(crate) checked: Checked,
    pub(crate) read_time: Duration,
    pub(crate) check_time: Duration,
}

impl Prepared {
    /// Whether the default table (`None`) or partition `Some(p)`'s may be
    /// computed and sent: every sampled pair of it equal, and (a
    /// partition's) its SL known. A difference in a default-table pair
    /// distrusts every table: the default tables carry every partition's
    /// paths.
    pub(crate) fn trusted(&self, partition: Option<u16>) -> Result<(), String> {
        let mismatch_in = |table: Table| {
            self.checked
                .mismatches
                .iter()
                .find(|m| m.pair.table == table)
                .map(why)
        };
        if let Some(why) = mismatch_in(Table::Default) {
            return Err(why);
        }
        if let Some((_, why)) = self.checked.uncomputable.first() {
            return Err(format!("a sampled pair could not be computed: {why}"));
        }
        let Some(p) = partition.map(|p| p & 0x7FFF) else {
            return Ok(());
        };
        if let Some((_, why)) = self.unknown_sls.iter().find(|(u, _)| *u == p) {
            return Err(format!("the SL of partition {p:#06x} is not known: {why}"));
        }
        match mismatch_in(Table::Partition(p | 0x8000)) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Why a table the nodes are sent would not be computed but taken
    /// from the master: the first table of the fabric (the default ones,
    /// or a partition's) the check did not prove; `None` if it proved
    /// them all.
    pub(crate) fn unproven(&self) -> Option<String> {
        let partitions = self.unknown_sls.iter().map(|(p, _)| *p).chain(
            self.checked
                .mismatches
                .iter()
                .filter_map(|m| match m.pair.table {
                    Table::Partition(p) => Some(p),
                    Table::Default => None,
                }),
        );
        std::iter::once(None)
            .chain(partitions.map(Some))
            .find_map(|p| self.trusted(p).err())
    }
}
