//! Pushing PathRecords to an SA and deleting them: local-sa's load
//! contract (docs/wire-contract.md), Set and Delete of PathRecords over
//! RMPP carrying the SM_Key.

use std::path::Path;

use bytes::{Bytes, BytesMut};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromBytes, IntoBytes};
use mad_codec::{AttributeId, ComponentMask, Method, PathRecord, SaMadBuilder};

use crate::query::Query;
use crate::records_file;
use crate::session::{Failure, Session};

/// AttributeModifier bit 0 of a load: the records are the whole table of
/// every source they name.
const REPLACE_SOURCES: u32 = 1;

/// Reads the PathRecords of a text dump.
pub(crate) fn read(path: &Path) -> Result<Vec<PathRecord>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::new(2, format!("cannot read {}: {e}", path.display())))?;
    let records = records_file::parse(&text)
        .map_err(|e| Failure::new(2, format!("{}: {e}", path.display())))?;
    if records.is_empty() {
        return Err(Failure::new(
            2,
            format!("{}: no PathRecords in it", path.display()),
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
) -> Result<u32, Failure> {
    let mut b = SaMadBuilder::request(method, 0, AttributeId::PATH_RECORD);
    let h = b.header_mut();
    h.sa.set_sm_key(session.sm_key);
    h.sa.set_component_mask(mask);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(modifier);
    let header = *h;
    let mut data = BytesMut::with_capacity(records.len() * PathRecord::LEN);
    for r in records {
        data.extend_from_slice(r.as_bytes());
    }
    let dest = session.dest;
    let mut bar = ProgressBar::on_terminal(records.len());
    let completion = session
        .client
        .request_rmpp(dest, header, Bytes::from(data), |acked, all| {
            bar.show(acked, all);
        })
        .await?;
    bar.finish();
    let completion = completion.map_err(|e| session.unanswered(e))?;
    let answer = session.answer(completion)?;
    let mad = session.ok(&answer)?;
    Ok(mad.mad().attribute_modifier())
}

/// `--load FILE [--replace]`.
pub(crate) async fn load(session: &mut Session, path: &Path, replace: bool) -> Result<(), Failure> {
    let records = read(path)?;
    let modifier = if replace { REPLACE_SOURCES } else { 0 };
    let stored = push(
        session,
        Method::SET,
        ComponentMask::NONE,
        modifier,
        &records,
    )
    .await?;
    println!(
        "loaded {stored} of {} PathRecords into the SA at LID {}",
        records.len(),
        session.dest.lid
    );
    Ok(())
}

/// `--delete FILE`: the records named, by their (SLID, DLID) pairs.
pub(crate) async fn delete_named(session: &mut Session, path: &Path) -> Result<(), Failure> {
    let records = read(path)?;
    let removed = push(session, Method::DELETE, ComponentMask::NONE, 0, &records).await?;
    println!(
        "deleted {removed} of {} PathRecords from the SA at LID {}",
        records.len(),
        session.dest.lid
    );
    Ok(())
}

/// `--delete-matching`: every record matching the query's template.
pub(crate) async fn delete_matching(session: &mut Session, query: &Query) -> Result<(), Failure> {
    if query.mask == ComponentMask::NONE {
        return Err(Failure::new(
            2,
            "--delete-matching needs a selection (--slid, --dlid, --sgid, ...); to delete everything, name \
             the records with --delete FILE",
        ));
    }
    let template = PathRecord::read_from_prefix(&query.record[..])
        .map(|(r, _)| r)
        .map_err(|_| Failure::new(2, "--delete-matching: no PathRecord template"))?;
    let removed = push(session, Method::DELETE, query.mask, 0, &[template]).await?;
    println!(
        "deleted {removed} PathRecords from the SA at LID {}",
        session.dest.lid
    );
    Ok(())
}

/// A one-line progress bar on standard error, when it is a terminal and
/// the load is large enough to take a while: segments acknowledged of all,
/// redrawn at most ten times a second.
struct ProgressBar {
    shown: Option<std::time::Instant>,
    enabled: bool,
}

impl ProgressBar {
    fn on_terminal(records: usize) -> Self {
        use std::io::IsTerminal as _;
        Self {
            shown: None,
            enabled: records >= 1000 && std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, acked: u32, all: u32) {
        if !self.enabled || all == 0 {
            return;
        }
        if self
            .shown
            .is_some_and(|t| t.elapsed() < std::time::Duration::from_millis(100))
        {
            return;
        }
        self.shown = Some(std::time::Instant::now());
        let width = 40;
        let done = (u64::from(acked) * width / u64::from(all)) as usize;
        eprint!(
            "\r[{}{}] {acked}/{all} segments acknowledged ",
            "#".repeat(done),
            " ".repeat(width as usize - done)
        );
    }

    fn finish(&mut self) {
        if self.shown.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}
