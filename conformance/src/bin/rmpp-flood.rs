//! A hostile loader: starts COUNT PathRecord loads (SetTable over RMPP) at
//! an SA agent, each announcing RECORDS records, and sends only their
//! first segment. Every one of them, left unbounded, would make the agent
//! keep a reassembly for the IBA's 40 s total time-out. Prints what came
//! back: how many were refused (STOP), accepted (ACK), answered otherwise,
//! or not answered at all.
//!
//! ```text
//! rmpp-flood --sa-lid LID --smkey KEY [--count N] [--records R] [--window W]
//! ```
//!
//! At most W (default 32) first segments are unanswered at a time (a
//! segment nobody answers within 2 s stops counting against it): the
//! simulator's ibsim stalls when a node sends far faster than it reads.
//! Run it on a node of the simulated fabric (through the preload, as the
//! conformance tests do). Output: one line, `sent=N stop=S ack=A other=O`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use conformance::saquery::parse_number;
use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType, SaMadHeader};
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MAD_LEN, Method, PathRecord, SaMadBuilder, records::SaRecord};
use umad::{Address, OutgoingMad};

struct Args {
    sa_lid: u16,
    smkey: u64,
    count: u64,
    records: u32,
    window: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sa_lid: 0,
        smkey: 0,
        count: 10_000,
        records: 1_000_000,
        window: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| {
            parse_number(v)
                .ok_or_else(|| format!("{flag} {v}: not a number (decimal, or hex with 0x)"))
        };
        match flag.as_str() {
            "--sa-lid" => args.sa_lid = number(&value)? as u16,
            "--smkey" => args.smkey = number(&value)?,
            "--count" => args.count = number(&value)?,
            "--records" => args.records = number(&value)? as u32,
            "--window" => args.window = number(&value)?.max(1),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if args.sa_lid == 0 {
        return Err("give the agent's LID with --sa-lid".into());
    }
    Ok(args)
}

/// The first segment of a load of `records` PathRecords under `tid`.
fn first_segment(tid: u64, smkey: u64, records: u32) -> Bytes {
    let mut b = SaMadBuilder::request(Method::SET, tid, AttributeId::PATH_RECORD);
    let h: &mut SaMadHeader = b.header_mut();
    h.sa.set_sm_key(smkey);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(1);
    let data = records.saturating_mul(64);
    let segments = data.div_ceil(200);
    let flags = RmppFlags::ACTIVE | RmppFlags::FIRST;
    let paylen = data.saturating_add(20 * segments);
    h.rmpp = RmppHeader::new(RmppType::DATA, flags, RmppStatus::NORMAL, 1, paylen);
    let mut mad = vec![0u8; MAD_LEN];
    mad[..SaMadHeader::LEN].copy_from_slice(h.as_bytes());
    Bytes::from(mad)
}

#[derive(Default)]
struct Tally {
    stop: u64,
    ack: u64,
    other: u64,
}

impl Tally {
    fn answered(&self) -> u64 {
        self.stop + self.ack + self.other
    }
}

fn run() -> Result<String, String> {
    let args = parse_args()?;
    let (port, agent, transport) = conformance::sa_agent::open(256)?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let last_answer = Arc::new(Mutex::new(Instant::now()));
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (incoming, tally, last_answer, done) = (
            transport.incoming(),
            tally.clone(),
            last_answer.clone(),
            done.clone(),
        );
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let Ok(m) = incoming.recv_blocking() else {
                    return;
                };
                *last_answer.lock().unwrap() = Instant::now();
                let mut t = tally.lock().unwrap();
                match SaMadHeader::parse(&m.mad) {
                    Ok((h, _)) if h.rmpp.is_active() => match h.rmpp.rmpp_type() {
                        RmppType::STOP => t.stop += 1,
                        RmppType::ACK => t.ack += 1,
                        _ => t.other += 1,
                    },
                    _ => t.other += 1,
                }
            }
        })
    };
    let outgoing = transport.outgoing();
    let dest = Address::gsi(args.sa_lid, port.sm_sl);
    let base = u64::from(std::process::id()) << 32;
    for n in 0..args.count {
        // Keep at most `window` unanswered, unless answers have stopped.
        while n - tally.lock().unwrap().answered().min(n) >= args.window
            && last_answer.lock().unwrap().elapsed() < Duration::from_secs(2)
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        let mad = OutgoingMad {
            agent,
            dest,
            mad: first_segment(base | n, args.smkey, args.records),
            timeout_ms: 1000,
            retries: 0,
        };
        outgoing
            .send_blocking(mad)
            .map_err(|_| "the transport stopped")?;
    }
    // Answers trail the sends; wait until two quiet seconds pass.
    loop {
        std::thread::sleep(Duration::from_millis(200));
        if last_answer.lock().unwrap().elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    transport.shutdown();
    let _ = reader.join();
    let t = tally.lock().unwrap();
    Ok(format!(
        "sent={} stop={} ack={} other={}",
        args.count, t.stop, t.ack, t.other
    ))
}

fn main() -> ExitCode {
    conformance::report("rmpp-flood", run())
}
