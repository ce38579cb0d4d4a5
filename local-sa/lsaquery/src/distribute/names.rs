//! The names tables a distribution pushes with the paths: the channel
//! adapters' NodeRecords (host names from NodeDescriptions) and the
//! local-sa directory's ServiceRecords (host names and IP addresses),
//! asked of the master once per run — two GetTables, or, when the
//! transport cuts multi-MAD answers, one query per port — and sent to
//! every node as a Set with NAMES_TABLE (docs/wire-contract.md), so that
//! no node asks the master for them itself.

use bytes::{Bytes, BytesMut};
use local_sa_core::load_flags::NAMES_TABLE;
use local_sa_core::names::{directory, queries};
use mad_codec::codes::NodeType;
use mad_codec::records::put_record;
use mad_codec::{MadStatus, Method, NodeRecord, SaMadBuilder, SaRecord, ServiceRecord};
use umad::Address;

use local_sa_distributor::fill::names::{NamesLoad, NamesTables};
use local_sa_distributor::fill::ports::FabricPort;
use local_sa_distributor::fill::tally::Tally;

use crate::compute::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// Fetches both tables from `master` (the adapters' NodeRecords only if
/// not given in `adapters`); `ports` are asked one by one if the whole
/// tables come back cut.
pub(super) async fn fetch(
    session: &mut Session,
    master: Address,
    ports: &[FabricPort],
    adapters: Option<Vec<NodeRecord>>,
    window: usize,
    tally: &mut Tally,
) -> Result<NamesTables, Stop> {
    let nodes = match adapters {
        Some(known) => known,
        None => adapters_of(session, master, ports, window, tally).await?,
    };
    let entries: Vec<ServiceRecord> = fetch_table(session, master, ports, window, tally, |port| {
        queries::directory(port.map(|p| p.gid))
    })
    .await?
    .into_iter()
    .filter(|r: &ServiceRecord| directory::Publication::from_record(r).is_some())
    .collect();
    Ok(NamesTables {
        nodes: load(session.sm_key, &nodes),
        directory: load(session.sm_key, &entries),
    })
}

/// The channel adapters' NodeRecords at `master`.
async fn adapters_of(
    session: &mut Session,
    master: Address,
    ports: &[FabricPort],
    window: usize,
    tally: &mut Tally,
) -> Result<Vec<NodeRecord>, Stop> {
    Ok(fetch_table(session, master, ports, window, tally, |port| {
        queries::adapters(port.map(|p| p.lid))
    })
    .await?
    .into_iter()
    .filter(|r: &NodeRecord| r.node_type() == NodeType::CA)
    .collect())
}

/// One table of records of type `R`: the whole GetTable (`request(None)`),
/// or per port when its answer is cut. A port without a record (ERR_NO_RECORDS) has none.
pub(super) async fn fetch_table<R: SaRecord>(
    session: &mut Session,
    master: Address,
    ports: &[FabricPort],
    window: usize,
    tally: &mut Tally,
    request: impl Fn(Option<&FabricPort>) -> Bytes,
) -> Result<Vec<R>, Stop> {
    tally.tables += 1;
    let whole = session.client.request(master, &request(None)).await?;
    let answer = session.answer(whole)?;
    if answer.status() == MadStatus::ERR_NO_RECORDS {
        return Ok(Vec::new());
    }
    session.ok(&answer)?;
    if !answer.is_cut() {
        return Ok(answer.records::<R>().copied().collect());
    }
    tally.cut = true;
    let requests: Vec<Bytes> = ports.iter().map(|p| request(Some(p))).collect();
    tally.per_destination += requests.len() as u64;
    let mut records = Vec::new();
    for end in each(session, master, window, &requests).await? {
        let answer = end.map_err(|e| session.unanswered(e))?;
        if answer.status() == MadStatus::OK {
            records.extend(answer.records::<R>().copied());
        }
    }
    Ok(records)
}

/// The Set that carries `records` as a names table.
fn load<R: SaRecord>(sm_key: u64, records: &[R]) -> NamesLoad {
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
    NamesLoad {
        header: *h,
        data: data.freeze(),
        records: records.len(),
    }
}
