//! Sends one SA request, given as raw bytes, to an SA agent and prints the
//! answer's bytes: a probe for requests no SA client would build (a status
//! set in a request, another class version, odd header fields), to compare
//! how OpenSM and local-sa answer them byte for byte.
//!
//! ```text
//! mad-probe --sa-lid LID HEX
//! ```
//!
//! HEX is the request MAD (spaces allowed; shorter than 256 bytes is
//! padded with zeros). Run it on a node of the simulated fabric (through
//! the preload, as the conformance tests do). Output: the first MAD of the
//! answer, in hex on one line; exit status 1, with a message, when no
//! answer came.

use std::process::ExitCode;

use bytes::Bytes;
use conformance::saquery::parse_number;
use mad_codec::MAD_LEN;
use umad::{Address, OutgoingMad};

fn parse_args() -> Result<(u16, Vec<u8>), String> {
    let (mut lid, mut hex) = (None, String::new());
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--sa-lid" => {
                let v = it.next().ok_or("--sa-lid needs a value")?;
                let n = parse_number(&v).filter(|n| (1..0xc000).contains(n));
                lid = Some(n.ok_or(format!("--sa-lid {v}: not a unicast LID"))? as u16);
            }
            _ => hex.push_str(&arg),
        }
    }
    let lid = lid.ok_or("give the SA's LID with --sa-lid")?;
    let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) || digits.len() / 2 > MAD_LEN {
        return Err(format!(
            "the request must be whole bytes, at most {MAD_LEN} of them"
        ));
    }
    let mut mad = vec![0u8; MAD_LEN];
    for (i, pair) in digits.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).unwrap_or("");
        mad[i] = u8::from_str_radix(text, 16).map_err(|_| format!("{text:?} is not hex"))?;
    }
    Ok((lid, mad))
}

fn run() -> Result<String, String> {
    let (lid, mad) = parse_args()?;
    let (port, agent, transport) = conformance::sa_agent::open(16)?;
    let request = OutgoingMad {
        agent,
        dest: Address::gsi(lid, port.sm_sl),
        mad: Bytes::from(mad),
        timeout_ms: 1000,
        retries: 2,
    };
    transport
        .outgoing()
        .send_blocking(request)
        .map_err(|_| "the transport stopped")?;
    let answer = transport
        .incoming()
        .recv_blocking()
        .map_err(|_| "the transport stopped")?;
    transport.shutdown();
    if answer.status != 0 {
        return Err(format!(
            "no answer from LID {lid}: {}",
            umad::status_hint(answer.status)
        ));
    }
    Ok(answer.mad.iter().map(|b| format!("{b:02x}")).collect())
}

fn main() -> ExitCode {
    conformance::report("mad-probe", run())
}
