//! Which partition tables each node keeps, so that the distributor sends
//! them too: the node's P_Keys from the master's P_KeyTableRecords (a
//! trusted query: OpenSM answers it only with its SA key, the `--smkey`
//! given), and whether the master applies QoS (its ClassPortInfo). As the
//! node decides (the core's `wanted_partitions`): every partition of its
//! P_Key table gets a table, but for the one its default table's paths
//! carry on a master without QoS, whose answers the default table gives.

use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::pkey_table_record::mask as pkr;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, ClassPortInfo, Method, PkeyTableRecord, SaMadBuilder};
use umad::Address;

use local_sa_distributor::fill::partitions::NodePartitions;
use local_sa_distributor::fill::ports::FabricPort;
use local_sa_distributor::fill::tally::Tally;

use super::names::fetch_table;
use crate::session::Session;
use crate::stop::Stop;

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
