//! The PathRecord an SA answers for every ordered pair of a set of LIDs
//! (or the pairs from `--sources` to them): one Get naming both LIDs (and
//! a P_Key, with `--pkey`, a ServiceID, with `--service-id`, a QoS class,
//! with `--qos-class`) per pair, `--window` outstanding. Prints one line
//! per pair:
//!
//! ```text
//! opensm-paths --sa-lid LID --lids LIDS [--sources LIDS] [--pkey P] [--service-id S] [--qos-class C] [--window W]
//! 4 9 0x0000 0000000000000000fe80...    (SLID DLID status record-in-hex)
//! 4 11 0x0300 -
//! ```
//!
//! Run on a node of the simulated fabric; the tests of the path engine
//! compare these answers of OpenSM's with what the engine computed,
//! without lsaquery's own comparison in between.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use bytes::Bytes;
use conformance::saquery::{parse_lids, parse_number};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};
use umad::Address;

struct Args {
    sa_lid: u16,
    lids: Vec<u16>,
    /// The pairs' sources (default: every one of `lids`).
    sources: Vec<u16>,
    pkey: Option<u16>,
    service_id: Option<u64>,
    qos_class: Option<u16>,
    window: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sa_lid: 0,
        lids: Vec::new(),
        sources: Vec::new(),
        pkey: None,
        service_id: None,
        qos_class: None,
        window: 16,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        let number = |v: &str| parse_number(v).ok_or(format!("{arg} {v}: not a number"));
        match arg.as_str() {
            "--sa-lid" => args.sa_lid = number(&value()?)? as u16,
            "--lids" => args.lids.extend(parse_lids(&value()?)?),
            "--sources" => args.sources.extend(parse_lids(&value()?)?),
            "--pkey" => args.pkey = Some(number(&value()?)? as u16),
            "--service-id" => args.service_id = Some(number(&value()?)?),
            "--qos-class" => args.qos_class = Some(number(&value()?)? as u16),
            "--window" => args.window = number(&value()?)? as usize,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.sa_lid == 0 || args.lids.is_empty() {
        return Err("give --sa-lid LID and --lids LIDS (e.g. 4,7,20-40)".into());
    }
    if args.sources.is_empty() {
        args.sources = args.lids.clone();
    }
    Ok(args)
}

fn request(slid: u16, dlid: u16, args: &Args, tid: u64) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_slid(slid);
    t.set_dlid(dlid);
    let mut mask = pr::SLID | pr::DLID;
    if let Some(p) = args.pkey {
        t.set_pkey(p);
        mask |= pr::PKEY;
    }
    if let Some(id) = args.service_id {
        t.set_service_id(id);
        mask |= pr::SERVICE_ID;
    }
    if let Some(class) = args.qos_class {
        t.set_qos_class(class);
        mask |= pr::QOS_CLASS;
    }
    let mut b = SaMadBuilder::request(Method::GET, tid, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    let mut mad = b.into_bytes().to_vec();
    mad.resize(mad_codec::MAD_LEN, 0);
    Bytes::from(mad)
}

fn run() -> Result<String, String> {
    let args = parse_args()?;
    let (port, agent, transport) = conformance::sa_agent::open(256)?;
    let dest = Address::gsi(args.sa_lid, port.sm_sl);
    let pairs = args
        .sources
        .iter()
        .flat_map(|s| args.lids.iter().map(move |d| (*s, *d)));
    let mut out = String::new();
    conformance::sa_agent::ask_all(
        &transport,
        agent,
        dest,
        (args.window, Duration::from_secs(2), 4),
        pairs,
        |(slid, dlid), tid| request(*slid, *dlid, &args, tid),
        |(slid, dlid), answer| {
            if answer.status != 0 {
                return Err(format!("no answer for {slid} -> {dlid}"));
            }
            let mad = SaMad::parse(&answer.mad).map_err(|e| e.to_string())?;
            let status = mad.mad().status();
            let record = if status == MadStatus::OK {
                mad.data()[..64].iter().fold(String::new(), |mut s, b| {
                    let _ = write!(s, "{b:02x}");
                    s
                })
            } else {
                "-".to_owned()
            };
            let _ = writeln!(out, "{slid} {dlid} {:#06x} {record}", status.0);
            Ok(())
        },
    )?;
    transport.shutdown();
    Ok(out.trim_end().to_owned())
}

fn main() -> ExitCode {
    conformance::report("opensm-paths", run())
}
