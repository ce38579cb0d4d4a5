//! Which partition tables each node keeps: every partition of its P_Key
//! table gets a table, but for the one its default table's paths carry on
//! a master without QoS, whose answers the default table gives (as the
//! node decides: the core's `wanted_partitions`).

use std::collections::HashMap;

use mad_codec::{PathRecord, PkeyTableRecord};

/// The partitions of each node (by LID), and the master's QoS.
#[derive(Debug, Default)]
pub struct NodePartitions {
    by_lid: HashMap<u16, Vec<u16>>,
    master_qos: bool,
}

impl NodePartitions {
    /// From the P_KeyTableRecords of the master and its QoS bit.
    pub fn new(records: &[PkeyTableRecord], master_qos: bool) -> Self {
        let mut by_lid: HashMap<u16, Vec<u16>> = HashMap::new();
        for r in records {
            // 0x0000 and 0x8000 are empty entries.
            let held = r
                .pkeys()
                .into_iter()
                .map(|p| p & 0x7FFF)
                .filter(|p| *p != 0);
            by_lid.entry(r.lid()).or_default().extend(held);
        }
        for p in by_lid.values_mut() {
            p.sort_unstable();
            p.dedup();
        }
        Self { by_lid, master_qos }
    }

    /// The partitions whose tables the node at `lid` keeps, in order,
    /// given its default table `default`.
    pub fn tables_of(&self, lid: u16, default: &[PathRecord]) -> Vec<u16> {
        let default_partition = default.first().map(|r| r.pkey() & 0x7FFF);
        self.by_lid
            .get(&lid)
            .into_iter()
            .flatten()
            .copied()
            .filter(|p| self.master_qos || Some(*p) != default_partition)
            .collect()
    }
}

impl NodePartitions {
    /// Every partition of the node at `lid` (low 15 bits), the default
    /// table's among them; only the default table's when the master did
    /// not list the node's P_Keys.
    pub fn pkeys_of(&self, lid: u16, default: &[PathRecord]) -> Vec<u16> {
        match self.by_lid.get(&lid) {
            Some(p) if !p.is_empty() => p.clone(),
            _ => default
                .first()
                .map(|r| r.pkey() & 0x7FFF)
                .into_iter()
                .collect(),
        }
    }

    /// Whether the master applies QoS.
    pub fn master_qos(&self) -> bool {
        self.master_qos
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::{FromZeros, IntoBytes};

    use super::*;

    fn pkey_record(lid: u16, pkeys: &[u16]) -> PkeyTableRecord {
        let mut r = PkeyTableRecord::new_zeroed();
        r.set_lid(lid);
        let bytes = r.as_mut_bytes();
        for (i, p) in pkeys.iter().enumerate() {
            bytes[8 + 2 * i..10 + 2 * i].copy_from_slice(&p.to_be_bytes());
        }
        r
    }

    fn default_table(pkey: u16) -> Vec<PathRecord> {
        let mut r = PathRecord::new_zeroed();
        r.set_pkey(pkey);
        vec![r]
    }

    #[test]
    fn a_node_keeps_a_table_per_partition_but_its_default_tables_without_qos() {
        let records = [
            pkey_record(4, &[0xFFFF, 0x8001, 0x0002, 0x8000]),
            pkey_record(4, &[0x0001]),
            pkey_record(9, &[0xFFFF]),
        ];
        let plain = NodePartitions::new(&records, false);
        assert_eq!(plain.tables_of(4, &default_table(0xFFFF)), [1, 2]);
        assert_eq!(plain.tables_of(9, &default_table(0xFFFF)), [] as [u16; 0]);
        assert_eq!(plain.tables_of(77, &default_table(0xFFFF)), [] as [u16; 0]);
        let qos = NodePartitions::new(&records, true);
        assert_eq!(qos.tables_of(4, &default_table(0xFFFF)), [1, 2, 0x7FFF]);
        assert_eq!(qos.tables_of(9, &default_table(0xFFFF)), [0x7FFF]);
    }
}
