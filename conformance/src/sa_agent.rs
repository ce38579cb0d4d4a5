//! A raw SA-class client on the node a program runs on (through the
//! simulator's preload), for the tools that send MADs no SA client would
//! (`mad-probe`, `rmpp-flood`) or many at once (`path-sweep`,
//! `opensm-paths`).

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use mad_codec::SaMad;
use umad::port::{PortFacts, Sysfs};
use umad::{Address, AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice, UmadTransport};

/// This node's port, an SA-class agent on it, and the agent's transport
/// with room for `queue` MADs each way.
pub fn open(queue: usize) -> Result<(PortFacts, AgentId, UmadTransport), String> {
    let port = Sysfs::default()
        .select(None, None)
        .map_err(|e| e.to_string())?;
    let path = port.umad_path().ok_or("the port has no umad device")?;
    let device = UmadDevice::open(&path).map_err(|e| e.to_string())?;
    let agent = device
        .register_agent(&AgentSpec::sa(&[]))
        .map_err(|e| e.to_string())?;
    let transport = UmadTransport::start(device, queue).map_err(|e| e.to_string())?;
    Ok((port, agent, transport))
}

/// Sends a request for each of `asks` to `dest` through `agent`, at most
/// `window` outstanding, each built by `request` with its TransactionID,
/// and hands each answer (or the transport's undelivered send) to
/// `answered` with its ask. Each request has `retries` more attempts of
/// `timeout` each; nothing at all for a minute is an error.
#[allow(clippy::too_many_arguments)] // A tool's one loop, spelled out.
pub fn ask_all<K>(
    transport: &UmadTransport,
    agent: AgentId,
    dest: Address,
    (window, timeout, retries): (usize, Duration, u32),
    asks: impl IntoIterator<Item = K>,
    request: impl Fn(&K, u64) -> Bytes,
    mut answered: impl FnMut(K, &IncomingMad) -> Result<(), String>,
) -> Result<(), String> {
    let mut asks = asks.into_iter();
    // By the TransactionID's low 32 bits: the MAD layer owns the high ones.
    let mut in_flight: HashMap<u32, K> = HashMap::new();
    let mut next_tid = umad::transaction_id_seed();
    loop {
        while in_flight.len() < window.max(1) {
            let Some(ask) = asks.next() else { break };
            next_tid = next_tid.wrapping_add(1);
            let m = OutgoingMad {
                agent,
                dest,
                mad: request(&ask, u64::from(next_tid)),
                timeout_ms: timeout.as_millis() as u32,
                retries,
            };
            transport
                .outgoing()
                .send_blocking(m)
                .map_err(|_| "the transport stopped")?;
            in_flight.insert(next_tid, ask);
        }
        if in_flight.is_empty() {
            return Ok(());
        }
        let answer = smol::block_on(async {
            smol::future::or(async { transport.incoming().recv().await.ok() }, async {
                smol::Timer::after(Duration::from_secs(60)).await;
                None
            })
            .await
        })
        .ok_or("no MAD for a minute")?;
        let Ok(mad) = SaMad::parse(&answer.mad) else {
            continue;
        };
        if let Some(ask) = in_flight.remove(&(mad.mad().transaction_id() as u32)) {
            answered(ask, &answer)?;
        }
    }
}
