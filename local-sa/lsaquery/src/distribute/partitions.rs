//! Which partition tables each node keeps, so that the distributor sends
//! them too: the node's P_Keys from the master's P_KeyTableRecords (a
//! trusted query: OpenSM answers it only with its SA key, the `--smkey`
//! given), and whether the master applies QoS (its ClassPortInfo). As the
//! node decides (the core's `wanted_partitions`): every partition of its
//! P_Key table gets a table, but for the one its default table's paths
//! carry on a master without QoS, whose answers the default table gives.

use std::collections::HashMap;

use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::pkey_table_record::mask as pkr;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, ClassPortInfo, Method, PathRecord, PkeyTableRecord, SaMadBuilder};
use umad::Address;

use super::endpoints::FabricPort;
use super::names::fetch_table;
use super::tally::Tally;
use crate::session::Session;
use crate::stop::Stop;

/// The partitions of each node (by LID), and the master's QoS.
#[derive(Debug, Default)]
pub(super) struct NodePartitions {
    by_lid: HashMap<u16, Vec<u16>>,
    master_qos: bool,
}

impl NodePartitions {
    /// From the P_KeyTableRecords of the master and its QoS bit.
    pub(super) fn new(records: &[PkeyTableRecord], master_qos: bool) -> Self {
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
    pub(super) fn tables_of(&self, lid: u16, default: &[PathRecord]) -> Vec<u16> {
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
    pub(super) fn pkeys_of(&self, lid: u16, default: &[PathRecord]) -> Vec<u16> {
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
    pub(super) fn master_qos(&self) -> bool {
        self.master_qos
    }
}

/// Asks `master` for the P_Key tables of `nodes` (one GetTable, or one
/// per node when the answer comes cut) and for its ClassPortInfo.
pub(super) async fn fetch(
    session: &mut Session,
    master: Address,
    nodes: &[FabricPort],
    window: usize,
    tally: &mut Tally,
) -> Result<NodePartitions, Stop> {
    let sm_key = session.sm_key;
    let records: Vec<PkeyTableRecord> =
        fetch_table(session, master, nodes, window, tally, |node| {
            let mut t = PkeyTableRecord::new_zeroed();
            let mut mask = mad_codec::ComponentMask::NONE;
            if let Some(n) = node {
                t.set_lid(n.lid);
                mask = pkr::LID;
            }
            let mut b = SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PKEY_TABLE_RECORD)
                .record(&t);
            b.header_mut().sa.set_component_mask(mask);
            b.header_mut().sa.set_sm_key(sm_key);
            b.into_bytes()
        })
        .await
        .map_err(|e| {
            Stop::new(
                e.code,
                format!(
                    "its P_KeyTableRecords: {} (OpenSM gives them only for its SA key, `sa_key`; --smkey is \
                     sent for both)",
                    e.message
                ),
            )
        })?;
    let request = SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
    let c = session.client.request(master, &request).await?;
    let answer = session.answer(c)?;
    let mad = session.ok(&answer)?;
    let cpi = ClassPortInfo::parse(mad.data())
        .map_err(|e| Stop::new(4, format!("the master's ClassPortInfo: {e}")))?;
    let qos = cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0;
    Ok(NodePartitions::new(&records, qos))
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::IntoBytes;

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
