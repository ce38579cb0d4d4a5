//! A raw SA-class client on the node a program runs on (through the
//! simulator's preload), for the tools that send MADs no SA client would:
//! `mad-probe` and `rmpp-flood`.

use umad::port::{PortFacts, Sysfs};
use umad::{AgentId, AgentSpec, UmadDevice, UmadTransport};

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
