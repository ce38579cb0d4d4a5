//! One served port: its umad device and SA agent registration, the
//! transport's reader and writer threads, its port events, its counters
//! file and the SA core that serves it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use local_sa_core::log_limit::LogLimit;
use mad_codec::Method;
use smol::channel::{Sender, TrySendError};
use tracing::{info, warn};

use crate::bridge::identity;
use crate::error::DaemonError;
use crate::options::Options;
use crate::port_lock::PortLock;
use crate::registrations_file::RegistrationsFile;
use crate::stats::StatsFile;
use local_sa_core::SaCore;
use local_sa_core::counters::{Described, Kind};
use umad::port::{PortFacts, Sysfs};
use umad::port_events::PortEvents;
use umad::{AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice, UmadTransport};

/// The request methods the SA agent receives: queries, loads, deletes,
/// the master's Reports. (RMPP ACKs for table answers arrive as GetTable.)
const METHODS: [Method; 5] = [
    Method::GET,
    Method::SET,
    Method::GET_TABLE,
    Method::DELETE,
    Method::REPORT,
];

/// MADs buffered each way between the core and the umad threads.
pub(crate) const CHANNEL_DEPTH: usize = 4096;

/// Where a port's MADs go: its index (the driver's agent number) and the
/// channel every port's reader delivers to.
pub(crate) type Incoming<'a> = (usize, &'a Sender<(usize, IncomingMad)>);

/// The umad writer thread is gone: the port can send nothing more.
#[derive(Debug)]
pub(crate) struct TransportClosed;

/// A served port.
pub(crate) struct PortAgent {
    pub(crate) core: SaCore,
    pub(crate) agent: AgentId,
    pub(crate) facts: PortFacts,
    pub(crate) stats: Option<StatsFile>,
    /// The generation of the core's learned names the ibacm door has.
    pub(crate) names_generation: u64,
    pub(crate) transport: UmadTransport,
    pub(crate) events: PortEvents,
    /// What the core asked the master to hold, for the next local-sa.
    pub(crate) registrations: RegistrationsFile,
    /// MADs dropped because the writer thread was [`CHANNEL_DEPTH`]
    /// behind (the device did not take them), and the once-a-minute log
    /// of it.
    dropped_out: u64,
    drop_log: LogLimit,
    /// Held while the port is served.
    _lock: PortLock,
}

impl PortAgent {
    /// Opens `facts`' port and starts serving it: registers as its SA
    /// agent and starts the core (which starts fetching the port's paths).
    /// `stats` overrides the counters file's default place.
    pub(crate) fn open(
        options: &Options,
        sysfs: &Sysfs,
        facts: PortFacts,
        stats: Option<PathBuf>,
        incoming: Incoming<'_>,
    ) -> Result<Self, DaemonError> {
        let lock = PortLock::take(&options.port_file(&facts, "lock"), &facts.to_string())?;
        let umad_path = facts
            .umad_path()
            .ok_or_else(|| DaemonError::Device(format!("{facts} has no umad device")))?;
        let device = UmadDevice::open(&umad_path)
            .map_err(|e| DaemonError::Device(format!("{}: {e}", umad_path.display())))?;
        let agent = device.register_agent(&AgentSpec::sa(&METHODS)).map_err(|e| {
            DaemonError::Device(format!(
                "cannot register as the SA agent on {}: {e} (is another SA agent, such as OpenSM or local-sa, \
                 serving this port?)",
                umad_path.display()
            ))
        })?;
        let mut config = options.agent_config();
        // RMPP segments as big as the transport carries intact.
        config.rmpp.segment_data_len = device.transport().segment_data_len();
        let transport =
            UmadTransport::start_tagged(device, CHANNEL_DEPTH, incoming.0, incoming.1.clone())
                .map_err(|e| DaemonError::Device(format!("cannot start the umad threads: {e}")))?;
        let events = PortEvents::start(
            &facts,
            sysfs.clone(),
            Duration::from_secs(options.port_poll_interval.max(1)),
        )
        .map_err(|e| DaemonError::Device(format!("cannot watch port events: {e}")))?;
        let stats = stats_file(
            stats.unwrap_or_else(|| options.port_file(&facts, "counters")),
            &facts,
        );
        info!(
            port = %facts, lid = facts.lid, sm_lid = facts.sm_lid, gid = %facts.gid,
            events = %events.source(),
            stats = %stats.as_ref().map_or("none".into(), |s| s.path().display().to_string()),
            "serving SA PathRecord queries"
        );
        let now = Instant::now();
        let mut core = SaCore::new(config, identity(&facts), now, umad::transaction_id_seed());
        core.handle_pkeys(now, &sysfs.endpoint_facts(&facts).pkeys);
        let (registrations, previous) =
            RegistrationsFile::open(options.port_file(&facts, "registrations"));
        if let Some(previous) = previous {
            core.adopt(now, &previous);
        }
        Ok(Self {
            core,
            agent,
            facts,
            stats,
            names_generation: 0,
            transport,
            events,
            registrations,
            dropped_out: 0,
            drop_log: LogLimit::new(Duration::from_secs(60)),
            _lock: lock,
        })
    }

    /// Hands `mad` to the writer thread without waiting: the driver never
    /// waits for the device (a device that does not take MADs must not
    /// stop the doors). When the writer is [`CHANNEL_DEPTH`] MADs behind
    /// the MAD is dropped and counted, as a full send queue drops it on
    /// the wire: an answer's asker and a request's requester both send
    /// again.
    pub(crate) fn send(&mut self, now: Instant, mad: OutgoingMad) -> Result<(), TransportClosed> {
        match self.transport.send(mad) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(_)) => Err(TransportClosed),
            Err(TrySendError::Full(mad)) => {
                self.dropped_out += 1;
                if let Some(earlier_not_logged) = self.drop_log.allow(now, "writer behind", 0u32) {
                    warn!(
                        port = %self.facts,
                        dest_lid = mad.dest.lid,
                        earlier_not_logged,
                        "the umad device is not taking MADs as fast as they come: dropped one"
                    );
                }
                Ok(())
            }
        }
    }

    /// The port's counters: the core's, then the daemon's own of the
    /// port (its transport).
    pub(crate) fn counters(&self) -> Vec<Described> {
        let mut all = self.core.counters().described();
        all.push(Described {
            name: "umad_sends_dropped",
            value: self.dropped_out,
            kind: Kind::Counter,
            help: "MADs to send dropped because the umad device was not taking them (its \
                   writer thread that far behind).",
        });
        all
    }

    /// Writes the port's counters, then `extra` ones (the doors', which
    /// every port's file shows), to the counters file if there is one.
    pub(crate) fn write_stats(&self, extra: &[(&str, u64)]) {
        if let Some(f) = &self.stats
            && let Err(e) = f.write(&self.counters(), extra)
        {
            warn!(path = %f.path().display(), error = %e, "cannot write the counters file");
        }
    }

    /// Stops watching the port and joins the transport's threads; the
    /// port's lock goes last.
    pub(crate) fn close(self) {
        drop(self.events);
        self.transport.shutdown();
        self.registrations.close(&self.core);
        drop(self._lock);
    }
}

/// The counters file, unless it cannot be created (then the port is served
/// without one and the log says so).
fn stats_file(path: PathBuf, facts: &PortFacts) -> Option<StatsFile> {
    match StatsFile::create(path.clone(), &facts.ca, facts.port) {
        Ok(f) => Some(f),
        Err(e) => {
            warn!(path = %path.display(), error = %e, "cannot create the counters file; running without one");
            None
        }
    }
}
