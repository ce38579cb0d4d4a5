//! A do-nothing SA agent on local-sa's transport: it answers every
//! request with the request itself turned into a response, cut to the size
//! of a one-PathRecord answer, without looking anything up, on the
//! transport's reader thread as local-sa answers. What it costs per answer
//! is the floor of the transport (umad, its threads); the fabric benchmark
//! compares local-sa's cost with it.
//!
//! Run on a port with no other SA agent:
//! `cargo run --release -p umad --example sa_echo` (SIGINT/SIGTERM stop it).

use std::process::ExitCode;

use bytes::BytesMut;
use mad_codec::header::SaMadHeader;
use mad_codec::{MadStatus, Method};
use smol::stream::StreamExt as _;
use umad::port::Sysfs;
use umad::{AgentSpec, OutgoingMad, UmadDevice, UmadTransport};

/// The length of a PathRecord Get answer: headers and one record.
const ANSWER_LEN: usize = SaMadHeader::LEN + 64;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sa_echo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let port = Sysfs::default()
        .select(None, None)
        .map_err(|e| e.to_string())?;
    let path = port.umad_path().ok_or("the port has no umad device")?;
    let device = UmadDevice::open(&path).map_err(|e| e.to_string())?;
    let agent = device
        .register_agent(&AgentSpec::sa(&[Method::GET, Method::GET_TABLE]))
        .map_err(|e| e.to_string())?;
    let transport = UmadTransport::start_with(device, 4096, move |m, outlet| {
        let mut answer = BytesMut::from(&m.mad[..m.mad.len().min(ANSWER_LEN)]);
        if let Ok((h, _)) = SaMadHeader::parse_mut(&mut answer) {
            h.mad.set_method(h.mad.method().response());
            h.mad.set_status(MadStatus::OK);
        }
        let out = OutgoingMad {
            agent,
            dest: m.source.reply(),
            mad: answer.freeze(),
            timeout_ms: 0,
            retries: 0,
        };
        // A full writer queue drops the answer, as a full send queue would.
        !matches!(
            outlet.send(out),
            Err(smol::channel::TrySendError::Closed(_))
        )
    })
    .map_err(|e| e.to_string())?;
    let mut signals =
        async_signal::Signals::new([async_signal::Signal::Term, async_signal::Signal::Int])
            .map_err(|e| e.to_string())?;
    eprintln!("sa_echo: answering SA requests on {port}");
    smol::block_on(signals.next());
    transport.shutdown();
    Ok(())
}
