//! The daemon: the SA core of [`crate::agent`] driven by the umad
//! transport, the clock, port events and signals, on one smol task.
//!
//! Everything the core decides happens inside [`SaCore`]; this module only
//! moves MADs in and out, calls it when its timer is due, tells it when the
//! port changes, writes the counters file and shuts down on a signal.

mod options;
mod stats;

use std::time::{Duration, Instant};

use async_signal::{Signal, Signals};
use mad_codec::Method;
use smol::Timer;
use smol::channel::{Receiver, Sender};
use smol::stream::StreamExt as _;
use tracing::{info, warn};

pub use self::options::{Options, OptionsError};
pub use self::stats::StatsFile;
use crate::agent::{PortIdentity, SaCore};
use crate::port::{PortError, PortFacts, Sysfs};
use crate::port_events::{PortEvent, PortEvents};
use crate::umad::{AgentId, AgentSpec, IncomingMad, OutgoingMad, UmadDevice, UmadTransport};

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
const CHANNEL_DEPTH: usize = 4096;

/// How long a shutdown waits for the master to confirm the unsubscribes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Why the daemon could not run.
#[derive(Debug)]
pub enum DaemonError {
    /// No port to serve.
    Port(PortError),
    /// The port has no umad device, or it could not be opened or used.
    Device(String),
    /// Signals could not be watched.
    Signals(std::io::Error),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Port(e) => write!(f, "{e}"),
            Self::Device(e) => write!(f, "{e}"),
            Self::Signals(e) => write!(f, "cannot watch SIGTERM/SIGINT: {e}"),
        }
    }
}

impl std::error::Error for DaemonError {}

/// The port as the core needs it.
fn identity(f: &PortFacts) -> PortIdentity {
    PortIdentity {
        lid: f.lid,
        lmc: f.lmc,
        gid: f.gid,
        sm_lid: f.sm_lid,
        sm_sl: f.sm_sl,
    }
}

/// Runs the daemon until SIGTERM/SIGINT.
pub fn run(options: &Options) -> Result<(), DaemonError> {
    let sysfs = Sysfs::default();
    let facts = sysfs
        .select(options.ca.as_deref(), options.port)
        .map_err(DaemonError::Port)?;
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
    let transport = UmadTransport::start(device, CHANNEL_DEPTH)
        .map_err(|e| DaemonError::Device(format!("cannot start the umad threads: {e}")))?;
    let events = PortEvents::start(
        &facts,
        sysfs.clone(),
        Duration::from_secs(options.port_poll_interval.max(1)),
    )
    .map_err(|e| DaemonError::Device(format!("cannot watch port events: {e}")))?;
    let signals = Signals::new([Signal::Term, Signal::Int]).map_err(DaemonError::Signals)?;
    let stats = stats_file(options, &facts);
    info!(
        port = %facts, lid = facts.lid, sm_lid = facts.sm_lid, gid = %facts.gid,
        events = ?events.source(), stats = ?stats.as_ref().map(StatsFile::path),
        "serving SA PathRecord queries"
    );
    let driver = Driver {
        core: SaCore::new(options.agent_config(), identity(&facts), Instant::now()),
        agent,
        outgoing: transport.outgoing(),
        sysfs,
        facts,
        stats,
        stats_interval: Duration::from_secs(options.stats_interval),
    };
    smol::block_on(driver.run(transport.incoming(), events.events(), signals));
    drop(events);
    transport.shutdown();
    Ok(())
}

/// The counters file, unless it cannot be created (then the daemon runs
/// without one and says so).
fn stats_file(options: &Options, facts: &PortFacts) -> Option<StatsFile> {
    let path = options
        .stats_file
        .clone()
        .unwrap_or_else(|| StatsFile::default_path(&facts.ca, facts.port));
    match StatsFile::create(path.clone(), &facts.ca, facts.port) {
        Ok(f) => Some(f),
        Err(e) => {
            warn!(path = %path.display(), error = %e, "cannot create the counters file; running without one");
            None
        }
    }
}

/// What woke the driver.
enum Wake {
    Mad(IncomingMad),
    Port(PortEvent),
    Signal,
    Timer,
    Stats,
    Closed,
}

struct Driver {
    core: SaCore,
    agent: AgentId,
    outgoing: Sender<OutgoingMad>,
    sysfs: Sysfs,
    facts: PortFacts,
    stats: Option<StatsFile>,
    stats_interval: Duration,
}

impl Driver {
    async fn run(
        mut self,
        incoming: Receiver<IncomingMad>,
        events: Receiver<PortEvent>,
        mut signals: Signals,
    ) {
        let mut timer = Timer::never();
        let mut armed: Option<Instant> = None;
        let mut stats_timer = if self.stats_interval.is_zero() {
            Timer::never()
        } else {
            Timer::interval(self.stats_interval)
        };
        let mut shutdown_by: Option<Instant> = None;
        loop {
            if !self.flush().await {
                break;
            }
            if shutdown_by.is_some_and(|t| self.core.is_idle() || Instant::now() >= t) {
                break;
            }
            let due = [self.core.poll_timeout(), shutdown_by]
                .into_iter()
                .flatten()
                .min();
            if due != armed {
                match due {
                    Some(t) => timer.set_at(t),
                    None => timer = Timer::never(),
                }
                armed = due;
            }
            let wake = smol::future::or(
                async { incoming.recv().await.map_or(Wake::Closed, Wake::Mad) },
                smol::future::or(
                    async {
                        match events.recv().await {
                            Ok(e) => Wake::Port(e),
                            // No port events any more: keep serving.
                            Err(_) => std::future::pending().await,
                        }
                    },
                    smol::future::or(
                        async {
                            signals.next().await;
                            Wake::Signal
                        },
                        smol::future::or(
                            async {
                                (&mut timer).await;
                                Wake::Timer
                            },
                            async {
                                (&mut stats_timer).await;
                                Wake::Stats
                            },
                        ),
                    ),
                ),
            )
            .await;
            let now = Instant::now();
            match wake {
                Wake::Mad(m) => {
                    self.core.handle_mad(now, m.source, m.status, &m.mad);
                    // Take whatever else has arrived before sending: one
                    // wake-up for a burst.
                    while let Ok(m) = incoming.try_recv() {
                        self.core.handle_mad(now, m.source, m.status, &m.mad);
                    }
                }
                Wake::Timer => {
                    armed = None;
                    self.core.handle_timeout(now);
                }
                Wake::Port(e) => self.port_event(now, e),
                Wake::Stats => self.write_stats(),
                Wake::Signal if shutdown_by.is_none() => {
                    info!("shutting down: withdrawing the subscriptions at the master");
                    self.core.begin_shutdown(now);
                    shutdown_by = Some(now + SHUTDOWN_GRACE);
                }
                Wake::Signal => {
                    info!("second signal: exiting at once");
                    break;
                }
                Wake::Closed => {
                    warn!("the umad transport stopped; exiting");
                    break;
                }
            }
        }
        self.write_stats();
        let c = self.core.counters();
        info!(
            hits = c.hits,
            misses = c.misses,
            coalesced = c.coalesced,
            upstream_queries = c.upstream_queries,
            loaded = c.loaded,
            deleted = c.deleted,
            denied = c.denied,
            errors = c.errors,
            records = c.records,
            "stopped"
        );
    }

    /// Hands every MAD the core wants sent to the writer thread. False if
    /// the transport is gone.
    async fn flush(&mut self) -> bool {
        while let Some(t) = self.core.poll_transmit() {
            let out = OutgoingMad {
                agent: self.agent,
                dest: t.dest,
                mad: t.mad,
                timeout_ms: t.timeout_ms,
                retries: 0,
            };
            if self.outgoing.send(out).await.is_err() {
                return false;
            }
        }
        true
    }

    fn port_event(&mut self, now: Instant, event: PortEvent) {
        match event {
            PortEvent::Error => warn!(port = %self.facts, "port went down; serving what is cached"),
            PortEvent::PkeyChange => info!(port = %self.facts, "P_Key table changed"),
            PortEvent::Active
            | PortEvent::LidChange
            | PortEvent::SmChange
            | PortEvent::ClientReregister
            | PortEvent::GidChange => match self
                .sysfs
                .select(Some(&self.facts.ca), Some(self.facts.port))
            {
                Ok(facts) => {
                    info!(
                        ?event,
                        lid = facts.lid,
                        sm_lid = facts.sm_lid,
                        "port changed"
                    );
                    self.core.handle_port_change(now, identity(&facts));
                    self.facts = facts;
                }
                Err(e) => warn!(?event, error = %e, "cannot read the port after an event"),
            },
        }
    }

    fn write_stats(&self) {
        if let Some(f) = &self.stats {
            if let Err(e) = f.write(&self.core.counters()) {
                warn!(path = %f.path().display(), error = %e, "cannot write the counters file");
            }
        }
    }
}
