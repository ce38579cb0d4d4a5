//! The names tables a distribution pushes with the paths: the channel
//! adapters' NodeRecords (host names from NodeDescriptions) and the
//! local-sa directory's ServiceRecords (host names and IP addresses),
//! asked of the master once per run — two GetTables, or, when the
//! transport cuts multi-MAD answers, one query per port — and sent to
//! every node as a Set with NAMES_TABLE (docs/wire-contract.md), so that
//! no node asks the master for them itself.

use bytes::Bytes;
use local_sa_core::names::{directory, queries};
use mad_codec::codes::NodeType;
use mad_codec::{MadStatus, NodeRecord, SaRecord, ServiceRecord};
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
        nodes: NamesLoad::of(session.sm_key, &nodes),
        directory: NamesLoad::of(session.sm_key, &entries),
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
