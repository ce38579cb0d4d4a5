//! Pushing PathRecords to an SA and deleting them: local-sa's load
//! contract (docs/wire-contract.md), Set and Delete of PathRecords over
//! RMPP carrying the SM_Key.

use std::path::Path;

use local_sa_core::load_flags::{PARTITION_TABLES, REPLACE_SOURCES};
use mad_codec::zerocopy::FromBytes;
use mad_codec::{ComponentMask, Method, PathRecord};

use local_sa_distributor::fill::delta::load_request;

use crate::progress::ProgressBar;
use crate::query::Query;
use crate::records_file;
use crate::session::Session;
use crate::stop::Stop;

/// Reads the PathRecords of a text dump, by section.
pub(crate) fn read_dump(path: &Path) -> Result<records_file::Dump, Stop> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Stop::new(2, format!("cannot read {}: {e}", path.display())))?;
    let dump = records_file::parse_sections(&text)
        .map_err(|e| Stop::new(2, format!("{}: {e}", path.display())))?;
    if dump.unmarked.is_empty() && dump.default.is_empty() && dump.partitions.is_empty() {
        return Err(Stop::new(
            2,
            format!("{}: no PathRecords in it", path.display()),
        ));
    }
    Ok(dump)
}

/// Reads the PathRecords of a text dump for the default tables
/// (`partitions`: for the partition tables; a distributor's snapshot
/// holds both, apart).
fn read(path: &Path, partitions: bool) -> Result<Vec<PathRecord>, Stop> {
    let records = read_dump(path)?.table(partitions);
    if records.is_empty() {
        return Err(Stop::new(
            2,
            format!(
                "{}: no PathRecords of the {} tables in it{}",
                path.display(),
                if partitions { "partition" } else { "default" },
                if partitions {
                    ""
                } else {
                    " (for the partition tables' add --partitions)"
                }
            ),
        ));
    }
    Ok(records)
}

/// Sends `records` with `method` (Set or Delete) and reports how many the
/// SA stored or removed.
pub(crate) async fn push(
    session: &mut Session,
    method: Method,
    mask: ComponentMask,
    modifier: u32,
    records: &[PathRecord],
) -> Result<u32, Stop> {
    let (header, data) = load_request(session.sm_key, method, mask, modifier, records);
    let dest = session.dest;
    let mut bar = ProgressBar::on_terminal(records.len() >= 1000);
    let completion = session
        .client
        .request_rmpp(dest, header, data, |acked, all| {
            bar.show(acked.into(), all.into(), "segments acknowledged");
        })
        .await?;
    bar.finish();
    let completion = completion.map_err(|e| session.unanswered(e))?;
    let answer = session.answer(completion)?;
    let mad = session.ok(&answer)?;
    Ok(mad.mad().attribute_modifier())
}

/// The AttributeModifier bit of `--partitions`: the records are partition
/// tables' (each to the table of its P_Key).
fn partition_flag(partitions: bool) -> u32 {
    if partitions { PARTITION_TABLES } else { 0 }
}

/// `--load FILE [--replace] [--partitions]`.
pub(crate) async fn load(
    session: &mut Session,
    path: &Path,
    replace: bool,
    partitions: bool,
) -> Result<(), Stop> {
    let records = read(path, partitions)?;
    let modifier = if replace { REPLACE_SOURCES } else { 0 } | partition_flag(partitions);
    let stored = push(
        session,
        Method::SET,
        ComponentMask::NONE,
        modifier,
        &records,
    )
    .await?;
    outln!(
        "loaded {stored} of {} PathRecords into the SA at LID {}",
        records.len(),
        session.dest.lid
    )?;
    Ok(())
}

/// `--delete FILE [--partitions]`: the records named, by their (SLID,
/// DLID) pairs (and P_Keys).
pub(crate) async fn delete_named(
    session: &mut Session,
    path: &Path,
    partitions: bool,
) -> Result<(), Stop> {
    let records = read(path, partitions)?;
    let flag = partition_flag(partitions);
    let removed = push(session, Method::DELETE, ComponentMask::NONE, flag, &records).await?;
    outln!(
        "deleted {removed} of {} PathRecords from the SA at LID {}",
        records.len(),
        session.dest.lid
    )?;
    Ok(())
}

/// `--delete-matching`: every record matching the query's template.
pub(crate) async fn delete_matching(
    session: &mut Session,
    query: &Query,
    partitions: bool,
) -> Result<(), Stop> {
    if query.mask == ComponentMask::NONE {
        return Err(Stop::new(
            2,
            "--delete-matching needs a selection (--slid, --dlid, --sgid, ...); to delete everything, name \
             the records with --delete FILE",
        ));
    }
    let template = PathRecord::read_from_prefix(&query.record[..])
        .map(|(r, _)| r)
        .map_err(|_| Stop::new(2, "--delete-matching: no PathRecord template"))?;
    let flag = partition_flag(partitions);
    let removed = push(session, Method::DELETE, query.mask, flag, &[template]).await?;
    outln!(
        "deleted {removed} PathRecords from the SA at LID {}",
        session.dest.lid
    )?;
    Ok(())
}
