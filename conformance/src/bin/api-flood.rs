//! A local user flooding local-sa's local API, as the documented protocol
//! allows any user to (docs/local-api.md): N joins of distinct groups, N
//! subscriptions with distinct filters, or N distinct PathRecord queries
//! for the master, on one connection, every answer read; then the
//! connection closes, and with it everything it held. Or N connections,
//! each greeted with HELLO, the ones answered held open.
//!
//! ```text
//! api-flood --api-socket PATH (--joins N | --subscriptions N | --path-queries N
//!           | --connections N) [--first K] [--window W] [--hold-s S]
//! ```
//!
//! Joins are IPoIB-style creating joins (Full member, with Q_Key 0x0B1B,
//! P_Key 0xFFFF, TClass, FlowLabel and SL) of `ff12:401b:ffff::1:K` and
//! on; subscriptions are to generic trap 1000 + K and on, from anyone
//! (distinct filters, each a registration at the master; OpenSM takes any
//! trap number); path queries are Gets of the path from LID 1 to LID
//! 100 + K and on with ServiceID K and on, asked of the master only (each
//! a query local-sa must pass on). At most W requests are unanswered at a
//! time (default 64). With `--hold-s` the connection stays open that long
//! after the last answer. Output, one line:
//! `answered=N ok=A no_resources=B busy=C other=D` (D counts every other
//! status); for connections, `connections=N served=S refused=R` before the
//! hold and `released=S` after it.
//! Run it as the user whose limits are to be tried (setpriv).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::Duration;

use conformance::saquery::parse_number;
use local_sa_core::doors::api::{self, Frame, kind};
use local_sa_core::request::{Lookup, PathQuery, Request};
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    Gid, InformInfoRepr, JoinState, MadStatus, McMemberRecord, Method, PathRecord, TrapNumber,
};

#[derive(Default)]
struct Args {
    socket: String,
    joins: u64,
    subscriptions: u64,
    path_queries: u64,
    connections: u64,
    first: u64,
    window: u64,
    hold: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        window: 64,
        ..Args::default()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        if flag == "--api-socket" {
            args.socket = value;
            continue;
        }
        let n = parse_number(&value).ok_or(format!("{flag} {value}: not a number"))?;
        match flag.as_str() {
            "--joins" => args.joins = n,
            "--subscriptions" => args.subscriptions = n,
            "--path-queries" => args.path_queries = n,
            "--connections" => args.connections = n,
            "--first" => args.first = n,
            "--window" => args.window = n.max(1),
            "--hold-s" => args.hold = Duration::from_secs(n),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    let kinds = [
        args.joins,
        args.subscriptions,
        args.path_queries,
        args.connections,
    ];
    if args.socket.is_empty() || kinds.iter().filter(|n| **n > 0).count() != 1 {
        return Err(
            "give --api-socket and one of --joins, --subscriptions, --path-queries or --connections"
                .into(),
        );
    }
    Ok(args)
}

/// The `i`th request of the flood.
fn request(args: &Args, i: u64) -> Request {
    let n = args.first + i;
    if args.joins > 0 {
        let mut r = McMemberRecord::new_zeroed();
        r.set_mgid(Gid::new(0xff12_401b_ffff_0000, 0x1_0000 | n));
        r.set_qkey(0x0B1B);
        r.set_pkey(0xFFFF);
        r.set_join_state(JoinState::FULL_MEMBER);
        Request::Join {
            mask: mc::CREATE,
            record: r,
        }
    } else if args.subscriptions > 0 {
        let trap = TrapNumber((1000 + n % 60_000) as u16);
        let ii = InformInfoRepr::generic_subscription(trap, true, 0, 0);
        Request::Inform(ii.to_wire())
    } else {
        let mut t = PathRecord::new_zeroed();
        t.set_slid(1);
        t.set_dlid((100 + n % 40_000) as u16);
        t.set_service_id(n);
        Request::PathQuery {
            query: PathQuery {
                method: Method::GET,
                mask: pr::SLID | pr::DLID | pr::SERVICE_ID,
                template: t,
            },
            lookup: Lookup::Master,
        }
    }
}

/// The next answer on `stream` (notices and group events skipped).
fn answer(stream: &mut UnixStream, parts: &mut api::Reassembly) -> Result<Frame, String> {
    loop {
        let mut len = [0u8; 4];
        stream
            .read_exact(&mut len)
            .map_err(|e| format!("reading: {e}"))?;
        let n =
            Frame::announced(len).map_err(|e| format!("a frame of an impossible length: {e:?}"))?;
        let mut rest = vec![0u8; n];
        stream
            .read_exact(&mut rest)
            .map_err(|e| format!("reading: {e}"))?;
        let frame = Frame::decode(&rest).map_err(|e| format!("a bad frame: {e:?}"))?;
        let Some(frame) = parts.push(frame) else {
            continue;
        };
        if frame.kind != kind::NOTICE && frame.kind != kind::GROUP_EVENT {
            return Ok(frame);
        }
    }
}

/// Opens `args.connections` connections, greets each, holds the answered
/// ones for `args.hold` after saying how many.
fn connections(args: &Args) -> Result<String, String> {
    let mut served = Vec::new();
    let mut refused = 0u64;
    for _ in 0..args.connections {
        let mut stream =
            UnixStream::connect(&args.socket).map_err(|e| format!("{}: {e}", args.socket))?;
        let mut parts = api::Reassembly::default();
        // A refused connection may be closed before the HELLO is written.
        let greeted = stream
            .write_all(&api::request_frame(&Request::Hello, 1).encode())
            .map_err(|e| e.to_string())
            .and_then(|()| answer(&mut stream, &mut parts));
        match greeted {
            Ok(f) if f.kind == kind::HELLO_ANSWER => served.push(stream),
            _ => refused += 1,
        }
    }
    let line = format!(
        "connections={} served={} refused={refused}",
        args.connections,
        served.len()
    );
    println!("{line}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    std::thread::sleep(args.hold);
    Ok(format!("released={}", served.len()))
}

fn run() -> Result<String, String> {
    let args = parse_args()?;
    if args.connections > 0 {
        return connections(&args);
    }
    let count = args.joins.max(args.subscriptions).max(args.path_queries);
    let mut stream =
        UnixStream::connect(&args.socket).map_err(|e| format!("{}: {e}", args.socket))?;
    let mut parts = api::Reassembly::default();
    let (mut sent, mut answered) = (0u64, 0u64);
    let (mut ok, mut no_resources, mut busy, mut other) = (0u64, 0u64, 0u64, 0u64);
    while answered < count {
        while sent < count && sent - answered < args.window {
            let frame = api::request_frame(&request(&args, sent), sent as u32 + 1).encode();
            stream
                .write_all(&frame)
                .map_err(|e| format!("writing: {e}"))?;
            sent += 1;
        }
        let frame = answer(&mut stream, &mut parts)?;
        answered += 1;
        match api::status(&frame) {
            MadStatus::OK => ok += 1,
            MadStatus::ERR_NO_RESOURCES => no_resources += 1,
            MadStatus::BUSY => busy += 1,
            _ => other += 1,
        }
    }
    std::thread::sleep(args.hold);
    Ok(format!(
        "answered={answered} ok={ok} no_resources={no_resources} busy={busy} other={other}"
    ))
}

fn main() -> ExitCode {
    conformance::report("api-flood", run())
}
