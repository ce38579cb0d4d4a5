//! One open `/dev/infiniband/umadN`: agent registration, and MADs written
//! and read with the 64-byte user_mad header.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use mad_codec::header::MadHeader;
use mad_codec::{MAD_LEN, Method, MgmtClass};
use zerocopy::IntoBytes;

use crate::abi::{
    HeaderLayout, IB_USER_MAD_ENABLE_PKEY, IB_USER_MAD_REGISTER_AGENT,
    IB_USER_MAD_UNREGISTER_AGENT, RegisterAgentRequest, USER_MAD_HEADER_LEN, UserMadHeader,
};
use crate::address::{self, Address};
use crate::simulator::Transport;
use crate::sys::{Fd, ReadOutcome};

/// The kernel's ID for a registered agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AgentId(pub u32);

/// What an agent registers for.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// Management class.
    pub class: MgmtClass,
    /// Class version (2 for the SA).
    pub class_version: u8,
    /// Request methods to receive unsolicited. Empty: only responses to
    /// this agent's own requests.
    pub methods: Vec<Method>,
    /// 0: RMPP segments pass through untouched (we do RMPP ourselves).
    pub rmpp_version: u8,
}

impl AgentSpec {
    /// An SA-class agent (class 3, version 2, no kernel RMPP) receiving
    /// `methods`.
    pub fn sa(methods: &[Method]) -> Self {
        Self {
            class: MgmtClass::SUBN_ADM,
            class_version: MgmtClass::SA_CLASS_VERSION,
            methods: methods.to_vec(),
            rmpp_version: 0,
        }
    }
}

/// A MAD to send.
#[derive(Debug, Clone)]
pub struct OutgoingMad {
    /// The agent sending it.
    pub agent: AgentId,
    /// Where it goes.
    pub dest: Address,
    /// The MAD, at most 256 bytes (shorter ones are padded by the kernel).
    pub mad: Bytes,
    /// For requests: how long the kernel waits for the response (0 for
    /// responses and sends that expect none). The kernel drops responses it
    /// cannot match to a pending request, so requests need this.
    pub timeout_ms: u32,
    /// Kernel-level resends of a request.
    pub retries: u32,
}

/// A MAD that arrived, or a request of ours that the kernel (or the
/// simulator) gave back with an error status.
#[derive(Debug, Clone)]
pub struct IncomingMad {
    /// The agent it was delivered to.
    pub agent: AgentId,
    /// 0, or an errno: ETIMEDOUT (110) when a request got no response in
    /// time, or, under ibsim, when no process on the destination node
    /// serves the class.
    pub status: u32,
    /// Where it came from.
    pub source: Address,
    /// The MAD at the length it arrived.
    pub mad: Bytes,
    /// `Some(n)` when only its first `n` bytes are real (see
    /// [`Transport::cut`]).
    pub cut: Option<usize>,
}

/// What a umad status (an errno) on one of our requests means, for
/// messages.
pub fn status_hint(status: u32) -> &'static str {
    if status == libc::ETIMEDOUT as u32 {
        "ETIMEDOUT: no response in time; under ibsim, no process on that node serves this class \
         — servers need SIM_SET_ISSM=1"
    } else {
        "an error status from the transport"
    }
}

/// A seed for the TransactionIDs of a process's requests, from the
/// operating system's random source (std's `RandomState` draws its keys
/// from it): a restarted program does not reuse its predecessor's
/// TransactionIDs, and two programs on one port do not take each other's
/// answers.
pub fn transaction_id_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32
}

/// Largest read: the header and one MAD.
const READ_LEN: usize = USER_MAD_HEADER_LEN + MAD_LEN;

/// An open umad device.
#[derive(Debug)]
pub struct UmadDevice {
    fd: Fd,
    path: PathBuf,
    transport: Transport,
    layout: HeaderLayout,
    /// The agents registered, and for what (under umad2sim the device
    /// delivers only the requests the kernel would).
    agents: Mutex<Vec<(AgentId, AgentSpec)>>,
    /// A MAD was written and none read since (see
    /// [`Transport::close_grace`]).
    written_last: AtomicBool,
}

impl UmadDevice {
    /// Opens `path` (e.g. `/dev/infiniband/umad0`) and switches it to the
    /// header with P_Key index, which must happen before any agent. Under
    /// the simulator the legacy header is used instead (see
    /// [`HeaderLayout::Legacy`]): which transport this process has is found
    /// out here, once.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = Fd::open(path, libc::O_RDWR | libc::O_NONBLOCK).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot open {}: {e} (need read/write access to the umad device)",
                    path.display()
                ),
            )
        })?;
        fd.ioctl_none(IB_USER_MAD_ENABLE_PKEY).map_err(|e| {
            io::Error::new(e.kind(), format!("ENABLE_PKEY on {}: {e}", path.display()))
        })?;
        let transport = Transport::of_this_process();
        let layout = transport.header_layout();
        if layout == HeaderLayout::Legacy {
            tracing::info!(device = %path.display(), "umad2sim preload: using the 56-byte user_mad header");
        }
        Ok(Self {
            fd,
            path: path.to_owned(),
            transport,
            layout,
            agents: Mutex::new(Vec::new()),
            written_last: AtomicBool::new(false),
        })
    }

    /// What carries its MADs: the kernel or the simulator.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The header layout in use.
    pub fn header_layout(&self) -> HeaderLayout {
        self.layout
    }

    /// The device path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Registers an agent. Fails (EINVAL from the kernel's MAD layer) on a
    /// port where another agent (an SM, another local-sa) already receives
    /// one of the methods.
    pub fn register_agent(&self, spec: &AgentSpec) -> io::Result<AgentId> {
        let mut req = RegisterAgentRequest {
            qpn: 1,
            mgmt_class: spec.class.0,
            mgmt_class_version: spec.class_version,
            rmpp_version: spec.rmpp_version,
            ..RegisterAgentRequest::default()
        };
        for m in &spec.methods {
            req.add_method(m.0);
        }
        self.fd
            .ioctl_inout(IB_USER_MAD_REGISTER_AGENT, &mut req)
            .map_err(|e| {
                // The kernel's MAD layer says EINVAL for a method another
                // agent receives ("method in use"); EBUSY elsewhere.
                let hint = if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EBUSY)) {
                    " (another agent on this port may already receive one of these methods)"
                } else {
                    ""
                };
                io::Error::new(
                    e.kind(),
                    format!(
                        "registering a class {} agent on {}: {e}{hint}",
                        spec.class,
                        self.path.display()
                    ),
                )
            })?;
        let id = AgentId(req.id);
        self.agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, spec.clone()));
        Ok(id)
    }

    /// Unregisters an agent (closing the device also does).
    pub fn unregister_agent(&self, id: AgentId) -> io::Result<()> {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let class = agents.iter().find(|(a, _)| *a == id).map(|(_, s)| s.class);
        let shares_class = agents
            .iter()
            .any(|(a, spec)| *a != id && Some(spec.class) == class);
        // umad2sim forgets every agent of a class when one of them is
        // unregistered, and its receiver thread then takes the class's
        // next MAD to no agent at all and brings the process down. There
        // the agent leaves this device's table only: what it was
        // registered for is answered as the kernel would (`recv`).
        if !(self.transport == Transport::Umad2sim && shares_class) {
            self.fd.ioctl_u32(IB_USER_MAD_UNREGISTER_AGENT, id.0)?;
        }
        agents.retain(|(a, _)| *a != id);
        Ok(())
    }

    /// Writes one MAD.
    pub fn send(&self, out: &OutgoingMad) -> io::Result<()> {
        if out.mad.len() > MAD_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte MAD does not fit one packet; send it through RMPP",
                    out.mad.len()
                ),
            ));
        }
        let mut h = UserMadHeader::default();
        h.agent_id.set(out.agent.0);
        h.timeout_ms.set(out.timeout_ms);
        h.retries.set(out.retries);
        address::write_into(&out.dest, &mut h);
        let header_len = self.layout.header_len();
        let mut buf = Vec::with_capacity(header_len + out.mad.len());
        buf.extend_from_slice(&h.as_bytes()[..header_len]);
        buf.extend_from_slice(&out.mad);
        let n = self.fd.write(&buf)?;
        self.written_last.store(true, Ordering::Release);
        if n != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short umad write: {n} of {}", buf.len()),
            ));
        }
        Ok(())
    }

    /// Reads one MAD if one is waiting. Under umad2sim, a request from a
    /// peer no agent of this device registered for is not handed up but
    /// answered as the kernel would
    /// ([`crate::simulator::unmatched_response`]), and `None` returned as
    /// if nothing was waiting; our own requests given back with a status
    /// are handed up.
    pub fn recv(&self) -> io::Result<Option<IncomingMad>> {
        let Some(incoming) = self.read_one()? else {
            return Ok(None);
        };
        // A MAD with a status is our own request given back (it timed
        // out, or no process serves the destination), not a peer's.
        if self.transport == Transport::Umad2sim
            && incoming.status == 0
            && !self.registered_for(&incoming.mad)
        {
            self.answer_unmatched(&incoming);
            return Ok(None);
        }
        Ok(Some(incoming))
    }

    /// Whether the kernel would hand `mad` to one of this device's agents:
    /// an answer (matched by TransactionID) or what it cannot read, yes; a
    /// request only if an agent registered for its class, version and
    /// method.
    fn registered_for(&self, mad: &[u8]) -> bool {
        let Ok((h, _)) = MadHeader::parse(mad) else {
            return true;
        };
        let method = h.method();
        if method.is_response() || method == Method::TRAP_REPRESS {
            return true;
        }
        let agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        agents.iter().any(|(_, spec)| {
            spec.class == h.mgmt_class()
                && spec.class_version == h.class_version()
                && spec.methods.contains(&method)
        })
    }

    /// Sends the kernel's answer to a request no agent is registered for,
    /// through any agent of the device (the simulator needs one to send).
    fn answer_unmatched(&self, request: &IncomingMad) {
        let agent = self
            .agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .map(|(id, _)| *id);
        let (Some(agent), Some(mad)) = (agent, crate::simulator::unmatched_response(&request.mad))
        else {
            return;
        };
        let out = OutgoingMad {
            agent,
            dest: request.source.reply(),
            mad,
            timeout_ms: 0,
            retries: 0,
        };
        if let Err(e) = self.send(&out) {
            tracing::debug!(device = %self.path.display(), error = %e, "cannot answer a request no agent serves");
        }
    }

    /// Reads one MAD from the device if one is waiting.
    fn read_one(&self) -> io::Result<Option<IncomingMad>> {
        let mut buf = [0u8; READ_LEN];
        let n = match self.fd.read(&mut buf)? {
            ReadOutcome::WouldBlock => return Ok(None),
            ReadOutcome::Data(n) => n,
        };
        let header_len = self.layout.header_len();
        if n < header_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("short umad read: {n} bytes"),
            ));
        }
        // A legacy header is the P_Key header without its last 8 bytes
        // (pkey_index and reserved), which stay zero here.
        let mut header = [0u8; USER_MAD_HEADER_LEN];
        header[..header_len].copy_from_slice(&buf[..header_len]);
        let h: UserMadHeader = zerocopy::transmute!(header);
        let rest = &buf[header_len..n];
        // `length` counts the header too; trust it only within what we read.
        let mad_len = (h.length.get() as usize)
            .saturating_sub(header_len)
            .min(rest.len());
        let mad = &rest[..mad_len];
        self.written_last.store(false, Ordering::Release);
        Ok(Some(IncomingMad {
            agent: AgentId(h.agent_id.get()),
            status: h.status.get(),
            source: address::read_from(&h),
            mad: Bytes::copy_from_slice(mad),
            cut: self.transport.cut(mad),
        }))
    }

    /// Waits up to `timeout_ms` for a MAD to read.
    pub fn wait_readable(&self, timeout_ms: i32) -> io::Result<bool> {
        self.fd.poll_readable(timeout_ms)
    }
}

impl Drop for UmadDevice {
    /// A process's last MADs (an RMPP transfer's final ACK, a ReportResp)
    /// must reach their peer before the device closes.
    fn drop(&mut self) {
        let grace = self.transport.close_grace();
        if !grace.is_zero() && self.written_last.load(Ordering::Acquire) {
            std::thread::sleep(grace);
        }
    }
}
