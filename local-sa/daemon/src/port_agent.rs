//! One served port: its umad device and SA agent registration, the
//! transport's reader and writer threads, its port events, its counters
//! file and the SA core that serves it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mad_codec::Method;
use smol::channel::Sender;
use tracing::{info, warn};

use crate::bridge::identity;
use crate::error::DaemonError;
use crate::kept_tables_file::{KeptTablesFile, unix_now};
use crate::options::Options;
use crate::port_lock::PortLock;
use crate::registrations_file::RegistrationsFile;
use crate::served::{CoreGuard, CoreWake, ServedPort, SharedCore, TransportClosed};
use crate::sm_signs::SmSigns;
use crate::stats::StatsFile;
use local_sa_core::SaCore;
use local_sa_core::counters::{Described, Kind};
use local_sa_core::sa_class::{RegistrationRefused, Wanted};
use umad::port::{PortFacts, Sysfs};
use umad::port_events::PortEvents;
use umad::{AgentId, AgentSpec, UmadDevice, UmadTransport};

/// The request method the client agent receives: the master's Reports
/// (notices). Every MAD local-sa sends goes out through this agent, so the
/// master's answers come back to it (the kernel matches them by
/// TransactionID).
const CLIENT_METHODS: [Method; 1] = [Method::REPORT];

/// The request methods of the SA class, received where local-sa holds it:
/// queries, loads, deletes. (RMPP ACKs for table answers arrive as
/// GetTable.) A subnet manager's SA registers these, so on hardware only
/// one of the two can ([`local_sa_core::sa_class`]).
const SA_METHODS: [Method; 4] = [Method::GET, Method::SET, Method::GET_TABLE, Method::DELETE];

/// MADs buffered between the core and the umad writer thread.
pub(crate) const CHANNEL_DEPTH: usize = 4096;

/// Which port this is (its index: the driver's agent number) and the
/// channel every port's reader thread wakes the driver on.
pub(crate) type Wakes<'a> = (usize, &'a Sender<CoreWake>);

/// A served port.
pub(crate) struct PortAgent {
    /// Its core, shared with the transport's reader thread.
    shared: SharedCore,
    pub(crate) facts: PortFacts,
    pub(crate) stats: Option<StatsFile>,
    /// Its tables, kept for the next local-sa.
    kept_tables: KeptTablesFile,
    /// The generation of the core's learned names the ibacm door has.
    pub(crate) names_generation: u64,
    pub(crate) transport: UmadTransport,
    /// The agent registered for the SA class's request methods, while
    /// local-sa holds the class.
    responder: Option<AgentId>,
    pub(crate) events: PortEvents,
    /// Held while the port is served.
    _lock: PortLock,
}

impl PortAgent {
    /// Opens `facts`' port and starts serving it: registers as its SA
    /// agent and starts the core (which starts fetching the port's paths),
    /// whose MADs the transport's reader thread hands it.
    /// `stats` overrides the counters file's default place.
    pub(crate) fn open(
        options: &Options,
        sysfs: &Sysfs,
        facts: PortFacts,
        stats: Option<PathBuf>,
        signs: &SmSigns,
        wakes: Wakes<'_>,
    ) -> Result<Self, DaemonError> {
        let lock = PortLock::take(&options.port_file(&facts, "lock"), &facts.to_string())?;
        let umad_path = facts
            .umad_path()
            .ok_or_else(|| DaemonError::Device(format!("{facts} has no umad device")))?;
        let device = UmadDevice::open(&umad_path)
            .map_err(|e| DaemonError::Device(format!("{}: {e}", umad_path.display())))?;
        let agent = device.register_agent(&AgentSpec::sa(&CLIENT_METHODS)).map_err(|e| {
            DaemonError::Device(format!(
                "cannot register for the SA's Reports on {}: {e} (is another local-sa serving this \
                 port, or an `lsaquery --watch` started before local-sa taking its Reports?)",
                umad_path.display()
            ))
        })?;
        let mut config = options.agent_config();
        // RMPP segments as big as the transport carries intact.
        config.rmpp.segment_data_len = device.transport().segment_data_len();
        let now = Instant::now();
        let mut core = SaCore::new(config, identity(&facts), now, umad::transaction_id_seed());
        core.handle_pkeys(now, &sysfs.endpoint_facts(&facts).pkeys);
        // Before the SA class is taken: a node that runs an SM never sees
        // local-sa hold it, not even for a moment.
        core.handle_sm_signs(now, signs.read(facts.cap_mask));
        let (kept_tables, kept) = KeptTablesFile::open(options.port_file(&facts, "tables"));
        if let Some(kept) = kept
            && let Err(why) = core.restore_tables(now, unix_now(), kept)
        {
            info!(port = %facts, "the tables kept from before are not used: {why}");
        }
        let (registrations, previous) =
            RegistrationsFile::open(options.port_file(&facts, "registrations"));
        if let Some(previous) = previous {
            core.adopt(now, &previous);
        }
        let shared = SharedCore::new(ServedPort::new(
            core,
            registrations,
            agent,
            facts.to_string(),
        ));
        let transport = UmadTransport::start_with(
            device,
            CHANNEL_DEPTH,
            shared.mad_handler(wakes.0, wakes.1.clone()),
        )
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
            "serving the port"
        );
        let mut port = Self {
            shared,
            facts,
            stats,
            kept_tables,
            names_generation: 0,
            transport,
            responder: None,
            events,
            _lock: lock,
        };
        port.settle_sa_class();
        Ok(port)
    }

    /// Takes the node's signs of an SM on this port again (its IsSM
    /// capability from `cap_mask`, the units): the core decides.
    pub(crate) fn handle_sm_signs(&self, now: Instant, signs: &SmSigns, cap_mask: u32) {
        self.core().handle_sm_signs(now, signs.read(cap_mask));
    }

    /// Registers for the SA class's request methods, or lets them go, as
    /// the core wants; tells it what the kernel said. The registration
    /// the kernel refuses (another agent, an SM, holds them) leaves the
    /// class to that agent until what the node says changes.
    pub(crate) fn settle_sa_class(&mut self) {
        let wanted = self.core().sa_class();
        match (wanted, self.responder) {
            (Wanted::Hold, None) => {
                let held = self
                    .transport
                    .device()
                    .register_agent(&AgentSpec::sa(&SA_METHODS));
                match held {
                    Ok(id) => {
                        self.responder = Some(id);
                        self.core().handle_sa_class_held(Ok(()));
                    }
                    Err(e) => self
                        .core()
                        .handle_sa_class_held(Err(RegistrationRefused::of(&e))),
                }
            }
            (Wanted::Leave(_) | Wanted::Wait, Some(id)) => {
                if let Err(e) = self.transport.device().unregister_agent(id) {
                    warn!(port = %self.facts, error = %e, "cannot let the SA class's methods go");
                }
                self.responder = None;
                self.core().handle_sa_class_left();
            }
            _ => {}
        }
    }

    /// The port's core, locked (its reader thread waits meanwhile).
    pub(crate) fn core(&self) -> CoreGuard<'_> {
        self.shared.lock()
    }

    /// Called when the reader thread woke the driver for this port, before
    /// the driver looks at the core.
    pub(crate) fn woken(&self) {
        self.shared.woken();
    }

    /// Sends every MAD the core wants sent (the registrations record
    /// first, if it may have changed).
    pub(crate) fn send_all(&self, now: Instant) -> Result<(), TransportClosed> {
        self.core().send_all(self.transport.outlet(), now)
    }

    /// The port's counters: the core's, then the daemon's own of the
    /// port (its transport).
    pub(crate) fn counters(&self) -> Vec<Described> {
        let core = self.core();
        let mut all = core.counters().described();
        all.push(Described {
            name: "umad_sends_dropped",
            value: core.dropped_out(),
            kind: Kind::Counter,
            help: "MADs to send dropped because the umad device was not taking them (its \
                   writer thread that far behind).",
        });
        all
    }

    /// Keeps the port's tables for the next local-sa if they may have
    /// changed (the file written with the core unlocked).
    pub(crate) fn keep_tables(&mut self) {
        let due = self.kept_tables.due(&self.core());
        if let Some(due) = due {
            self.kept_tables.write(due);
        }
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

    /// Stops watching the port and joins the transport's threads; then the
    /// registrations record is settled, and the port's lock goes last.
    pub(crate) fn close(self) {
        drop(self.events);
        self.transport.shutdown();
        match self.shared.into_inner() {
            Some(served) => served.close(),
            None => {
                warn!(port = %self.facts, "the core is still shared at exit; the registrations record is left as it is")
            }
        }
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
