//! Asks an SA agent for one PathRecord at a steady rate and writes down
//! how long each answer took: a watch on a QP1 door while something else
//! loads the agent (a flood of registrations being withdrawn, say).
//!
//! ```text
//! qp1-watch --sa-lid LID --dlid LID [--every-ms 100] [--for-s 30]
//! ```
//!
//! Each request is a Get of the path from this node's port to DLID; one
//! goes every `--every-ms`, the next only after the last is answered or
//! given up (2 s). Run it on a node of the simulated fabric (through the
//! preload, as the conformance tests do). Output, one line per request as
//! it ends: `<unix time of sending, ms> <answer time, µs>`, or `-` for
//! none within 2 s; then `answered=N unanswered=M slowest_us=S`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use conformance::saquery::parse_number;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadHeader, Method, PathRecord, SaMadBuilder};
use umad::{Address, OutgoingMad};

/// How long a request waits for its answer.
const GIVE_UP: Duration = Duration::from_secs(2);

struct Args {
    sa_lid: u16,
    dlid: u16,
    every: Duration,
    run_for: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sa_lid: 0,
        dlid: 0,
        every: Duration::from_millis(100),
        run_for: Duration::from_secs(30),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let n = parse_number(&value).ok_or(format!("{flag} {value}: not a number"))?;
        match flag.as_str() {
            "--sa-lid" => args.sa_lid = n as u16,
            "--dlid" => args.dlid = n as u16,
            "--every-ms" => args.every = Duration::from_millis(n),
            "--for-s" => args.run_for = Duration::from_secs(n),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if args.sa_lid == 0 || args.dlid == 0 {
        return Err("give --sa-lid and --dlid".into());
    }
    Ok(args)
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn run() -> Result<String, String> {
    let args = parse_args()?;
    let (port, agent, transport) = conformance::sa_agent::open(64)?;
    let incoming = transport.incoming();
    let end = Instant::now() + args.run_for;
    let (mut answered, mut unanswered, mut slowest) = (0u64, 0u64, Duration::ZERO);
    let mut out = std::io::stdout().lock();
    for tid in 1u64.. {
        let started = Instant::now();
        if started >= end {
            break;
        }
        let mut t = PathRecord::new_zeroed();
        t.set_slid(port.lid);
        t.set_dlid(args.dlid);
        let mut b = SaMadBuilder::request(Method::GET, tid, AttributeId::PATH_RECORD).record(&t);
        b.header_mut().sa.set_component_mask(pr::SLID | pr::DLID);
        let request = OutgoingMad {
            agent,
            dest: Address::gsi(args.sa_lid, port.sm_sl),
            mad: b.into_bytes(),
            timeout_ms: GIVE_UP.as_millis() as u32,
            retries: 0,
        };
        let sent_at = unix_ms();
        transport
            .outgoing()
            .send_blocking(request)
            .map_err(|_| "the transport stopped")?;
        let took = loop {
            let left = GIVE_UP.saturating_sub(started.elapsed());
            let received = smol::block_on(smol::future::or(
                async { incoming.recv().await.ok() },
                async {
                    smol::Timer::after(left).await;
                    None
                },
            ));
            let Some(m) = received else {
                break None;
            };
            let ours = MadHeader::parse(&m.mad)
                .is_ok_and(|(h, _)| h.transaction_id() & 0xFFFF_FFFF == tid);
            if ours && m.status == 0 {
                break Some(started.elapsed());
            }
        };
        match took {
            Some(d) => {
                answered += 1;
                slowest = slowest.max(d);
                let _ = writeln!(out, "{sent_at} {}", d.as_micros());
            }
            None => {
                unanswered += 1;
                let _ = writeln!(out, "{sent_at} -");
            }
        }
        let _ = out.flush();
        std::thread::sleep(args.every.saturating_sub(started.elapsed()));
    }
    transport.shutdown();
    Ok(format!(
        "answered={answered} unanswered={unanswered} slowest_us={}",
        slowest.as_micros()
    ))
}

fn main() -> ExitCode {
    conformance::report("qp1-watch", run())
}
