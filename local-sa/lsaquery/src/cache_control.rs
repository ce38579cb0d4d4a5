//! --refresh, --flush and --dump: the node's administrators' hold on
//! local-sa's cache, through the local API (docs/local-api.md). local-sa
//! refuses them to anyone but root and its own user.

use std::io::Write as _;
use std::time::Instant;

use local_sa_core::doors::api::{self, DUMP_PAGE, Frame};
use local_sa_core::partitions::{TableKey, partition_of};
use local_sa_core::request::{Request, StatusReport};
use mad_codec::{PathRecord, Records};

use crate::local_api::Connection;
use crate::stop::Stop;
use serde::Serialize;

use crate::json::{self, Fixed, JSON_SCHEMA};
use crate::progress::ProgressBar;
use crate::status::PartitionLine;

/// PathRecords cached before and after, from a REFRESH or FLUSH answer.
fn change(f: &Frame) -> Result<(u64, u64), Stop> {
    api::decode_cache_change(&f.body)
        .ok_or_else(|| Stop::new(4, "local-sa's answer carries no record counts"))
}

/// `--refresh --json`'s line.
#[derive(Serialize)]
struct Refreshed<'a> {
    schema: u32,
    port: &'a str,
    before: u64,
    after: u64,
    seconds: Fixed<3>,
}

/// `--flush --json`'s line.
#[derive(Serialize)]
struct Flushed<'a> {
    schema: u32,
    port: &'a str,
    dropped: u64,
}

/// `--refresh`: a full refresh now; its outcome and duration.
pub(crate) async fn refresh(conn: &mut Connection, port: &str) -> Result<(), Stop> {
    let started = Instant::now();
    let answer = conn.call(&Request::Refresh).await?;
    let took = started.elapsed().as_secs_f64();
    let (before, after) = change(&answer)?;
    if conn.json() {
        outln!(
            "{}",
            json::line(&Refreshed {
                schema: JSON_SCHEMA,
                port,
                before,
                after,
                seconds: Fixed(took),
            })
        )?;
    } else {
        outln!("{port}: {before} PathRecords before, {after} after; refreshed in {took:.3} s")?;
    }
    Ok(())
}

/// `--flush`: everything dropped.
pub(crate) async fn flush(conn: &mut Connection, port: &str) -> Result<(), Stop> {
    let answer = conn.call(&Request::Flush).await?;
    let (before, _) = change(&answer)?;
    if conn.json() {
        outln!(
            "{}",
            json::line(&Flushed {
                schema: JSON_SCHEMA,
                port,
                dropped: before,
            })
        )?;
    } else {
        outln!(
            "{port}: {before} PathRecords dropped; queries go to the master SA until the next refresh or load"
        )?;
    }
    Ok(())
}

/// `--dump [--pkey P]`: every cached record of the default table (or of
/// P's partition table), a page at a time, printed as it comes; a reader
/// that stops reading (`| head`) ends it quietly.
pub(crate) async fn dump(conn: &mut Connection, partition: Option<u16>) -> Result<(), Stop> {
    let json = conn.json();
    // How many to expect, for the progress bar (when standard error is a
    // terminal and the dump is long).
    let held = match conn.call(&Request::Status).await {
        Ok(status) => held_records(
            &StatusReport::from_text(&String::from_utf8_lossy(&status.body)),
            partition,
        ),
        Err(_) => 0,
    };
    let mut bar = ProgressBar::on_terminal(held >= u64::from(DUMP_PAGE));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut from = 0u32;
    let mut printed = 0u64;
    loop {
        let answer = conn
            .call(&Request::Dump {
                from,
                max: DUMP_PAGE,
                partition,
            })
            .await?;
        let page: Vec<&PathRecord> = Records::with_standard_stride(&answer.body).collect();
        for r in &page {
            let p = crate::print::path_record(r);
            let text = if json {
                p.to_json() + "\n"
            } else {
                p.to_text()
            };
            if let Err(e) = out.write_all(text.as_bytes()) {
                return closed_or(e);
            }
            printed += 1;
        }
        bar.show(printed, held.max(printed), "PathRecords");
        match page.last().map(|r| api::dump_from_after(r)) {
            Some(Some(n)) if page.len() == DUMP_PAGE as usize => from = n,
            _ => break,
        }
    }
    bar.finish();
    if let Err(e) = out.flush() {
        return closed_or(e);
    }
    eprintln!("lsaquery: {printed} PathRecords");
    Ok(())
}

/// How many records the status says the table holds: `records`, or the
/// `records=N` of the partition's `partition` line (0 if none).
fn held_records(status: &StatusReport, partition: Option<u16>) -> u64 {
    let Some(pkey) = partition else {
        return status
            .get("records")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
    };
    let name = TableKey::Partition(partition_of(pkey)).to_string();
    status
        .all("partition")
        .filter_map(PartitionLine::parse)
        .find(|p| p.pkey == name)
        .map_or(0, |p| p.records)
}

/// A closed stdout (the reader had enough) is no failure.
fn closed_or(e: std::io::Error) -> Result<(), Stop> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(Stop::new(4, format!("cannot write the dump: {e}")))
    }
}

/// Runs --refresh, --flush or --dump against the local API socket given
/// (--api-socket; no InfiniBand device needed) or the one of the port
/// selected with -C/-P.
pub(crate) fn run(cli: &crate::cli::Cli) -> Result<(), Stop> {
    let path = match &cli.api_socket {
        Some(p) => p.clone(),
        None => {
            let port = umad::port::Sysfs::default()
                .select(cli.ca.as_deref(), cli.port)
                .map_err(|e| Stop::new(3, e.to_string()))?;
            crate::local_api::default_socket(&port.ca, port.port)
        }
    };
    smol::block_on(async {
        let mut conn = Connection::open(&path, cli.json)?;
        let hello = conn.call(&Request::Hello).await?;
        let port = api::decode_hello(&hello.body)
            .map(|h| format!("port LID {} ({})", h.lid, h.gid))
            .ok_or_else(|| Stop::new(4, "local-sa's HELLO answer is malformed"))?;
        if cli.refresh {
            refresh(&mut conn, &port).await
        } else if cli.flush {
            flush(&mut conn, &port).await
        } else {
            dump(&mut conn, cli.pkey).await
        }
    })
}
