//! A job's path resolution from one node, as an MPI or rdma_cm start does
//! it without a local cache: a PathRecord Get (SLID, DLID) to an SA for
//! every destination LID, `--ranks` times over (one pass per rank),
//! `--window` queries outstanding. Prints what came back and how long it
//! took, on one line:
//!
//! ```text
//! path-sweep --sa-lid LID --dlids LIDS [--ranks R] [--window W] [--tables]
//! asked 324 answered 324 no_records 0 unanswered 0 seconds 0.412
//! ```
//!
//! With `--tables`, each LID of `--dlids` is a source instead: a GetTable
//! of its whole table (SLID), as a node's refresh asks, or a distributor
//! without `--compute` (the simulator cuts the answer; the SA computes it
//! all the same).
//!
//! Run it on a node of the simulated fabric (through the preload, as
//! `fabric-scale` does): `--sa-lid` the master's LID for the baseline, the
//! node's own for its local-sa.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use conformance::saquery::{parse_lids, parse_number};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};
use umad::Address;

struct Args {
    sa_lid: u16,
    /// Destination LIDs: `4,7,20-40`.
    dlids: Vec<u16>,
    ranks: u32,
    window: usize,
    /// Each LID's whole table instead of a path to it.
    tables: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sa_lid: 0,
        dlids: Vec::new(),
        ranks: 1,
        window: 16,
        tables: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        let number = |v: &str| parse_number(v).ok_or(format!("{arg} {v}: not a number"));
        match arg.as_str() {
            "--sa-lid" => args.sa_lid = number(&value()?)? as u16,
            "--dlids" => args.dlids.extend(parse_lids(&value()?)?),
            "--ranks" => args.ranks = number(&value()?)? as u32,
            "--window" => args.window = number(&value()?)? as usize,
            "--tables" => args.tables = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.sa_lid == 0 || args.dlids.is_empty() {
        return Err("give --sa-lid LID and --dlids LIDS (e.g. 4,7,20-40)".into());
    }
    Ok(args)
}

/// A Get of the path from `slid` to `dlid`, or (`dlid` none) a GetTable
/// of `slid`'s whole table.
fn request(slid: u16, dlid: Option<u16>, tid: u64) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_slid(slid);
    let (method, mask) = match dlid {
        Some(d) => {
            t.set_dlid(d);
            (Method::GET, pr::SLID | pr::DLID)
        }
        None => (Method::GET_TABLE, pr::SLID),
    };
    let mut b = SaMadBuilder::request(method, tid, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    let mut mad = b.into_bytes().to_vec();
    mad.resize(mad_codec::MAD_LEN, 0);
    Bytes::from(mad)
}

fn run() -> Result<String, String> {
    let args = parse_args()?;
    let (port, agent, transport) = conformance::sa_agent::open(256)?;
    let dest = Address::gsi(args.sa_lid, port.sm_sl);
    let todo = (0..args.ranks).flat_map(|_| args.dlids.iter().copied());
    let (mut asked, mut answered, mut no_records, mut unanswered) = (0u64, 0u64, 0u64, 0u64);
    let started = Instant::now();
    conformance::sa_agent::ask_all(
        &transport,
        agent,
        dest,
        (args.window, Duration::from_secs(1), 3),
        todo.inspect(|_| asked += 1),
        |dlid, tid| {
            if args.tables {
                request(*dlid, None, tid)
            } else {
                request(port.lid, Some(*dlid), tid)
            }
        },
        |_, answer| {
            match SaMad::parse(&answer.mad) {
                _ if answer.status != 0 => unanswered += 1,
                Ok(m) if m.mad().status() == MadStatus::OK => answered += 1,
                _ => no_records += 1,
            }
            Ok(())
        },
    )?;
    let seconds = started.elapsed().as_secs_f64();
    transport.shutdown();
    Ok(format!(
        "asked {asked} answered {answered} no_records {no_records} unanswered {unanswered} seconds {seconds:.3}"
    ))
}

fn main() -> ExitCode {
    conformance::report("path-sweep", run())
}
