//! The daemon: the SA core of [`local_sa_core::agent`] driven by the umad
//! transport, the clock, port events, the local API socket and signals, on
//! one smol thread.
//!
//! Everything the core decides happens inside [`SaCore`]; this module only
//! moves MADs and local API frames in and out, calls it when its timer is
//! due, tells it when the port changes, writes the counters file and shuts
//! down on a signal.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_signal::{Signal, Signals};
use mad_codec::Method;
use tracing::{info, warn};

use crate::driver::{Driver, Sources};

use crate::acm_socket::AcmListener;
use crate::activation;
use crate::api;
use crate::bridge::identity;
use crate::endpoints;
use crate::listener::Listener;
use crate::options::Options;
use crate::stats::StatsFile;
use local_sa_core::SaCore;
use local_sa_core::acm::{AcmConfig, AcmService};
use umad::port::{PortError, PortFacts, Sysfs};
use umad::port_events::PortEvents;
use umad::{AgentSpec, UmadDevice, UmadTransport};

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

/// Why the daemon could not run.
#[derive(Debug)]
pub(crate) enum DaemonError {
    /// No port to serve.
    Port(PortError),
    /// The port has no umad device, or it could not be opened or used.
    Device(String),
    /// Signals could not be watched.
    Signals(std::io::Error),
    /// The ibacm door could not be set up.
    Acm(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Port(e) => write!(f, "{e}"),
            Self::Device(e) => write!(f, "{e}"),
            Self::Signals(e) => write!(f, "cannot watch SIGTERM/SIGINT: {e}"),
            Self::Acm(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DaemonError {}

/// Runs the daemon until SIGTERM/SIGINT.
pub(crate) fn run(options: &Options) -> Result<(), DaemonError> {
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
    let mut config = options.agent_config();
    // RMPP segments as big as the transport carries intact.
    config.rmpp.segment_data_len = device.transport().segment_data_len();
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
    let activated = activation::activated().map_err(DaemonError::Acm)?;
    let api = match (activated.api, options.api_socket_path(&facts)) {
        (Some(inherited), _) => Some(api::ApiServer::new(inherited)),
        (None, Some(path)) => {
            let listener =
                Listener::bind(&path, options.api_mode, options.api_group).map_err(|e| {
                    DaemonError::Device(format!(
                        "cannot listen on the local API socket {}: {e}",
                        path.display()
                    ))
                })?;
            Some(api::ApiServer::new(listener))
        }
        (None, None) => None,
    };
    if let Some(server) = &api {
        api::announce(server, options.api_mode);
    }
    let ids = std::rc::Rc::new(std::cell::Cell::new(1));
    let (acm, acm_listeners) = acm_door(options, &sysfs, &facts, activated.acm)?;
    let publication =
        endpoints::publication(options, acm.as_ref().map_or(&[][..], AcmService::endpoints))
            .map_err(DaemonError::Acm)?;
    let now = Instant::now();
    let mut core = SaCore::new(config, identity(&facts), now, umad::transaction_id_seed());
    if let Some(p) = &publication {
        info!(host = p.host_name(), addresses = ?p.addresses(), "publishing this host in the local-sa directory");
    }
    core.publish(now, publication);
    let driver = Driver {
        core,
        names_generation: 0,
        agent,
        outgoing: transport.outgoing(),
        sysfs,
        facts,
        stats,
        stats_interval: Duration::from_secs(options.stats_interval),
        connections: HashMap::new(),
        acm,
    };
    let (api_tx, api_rx) = smol::channel::bounded(1024);
    let (acm_tx, acm_rx) = smol::channel::bounded(1024);
    let sources = Sources {
        incoming: transport.incoming(),
        port_events: events.events(),
        api: api_rx,
        acm: acm_rx,
        signals,
    };
    let ex = std::rc::Rc::new(smol::LocalExecutor::new());
    if let Some(server) = api {
        ex.spawn(server.serve(std::rc::Rc::downgrade(&ex), ids.clone(), api_tx))
            .detach();
    } else {
        drop(api_tx);
    }
    for listener in acm_listeners {
        ex.spawn(listener.serve(std::rc::Rc::downgrade(&ex), ids.clone(), acm_tx.clone()))
            .detach();
    }
    drop(acm_tx);
    smol::block_on(ex.run(driver.run(sources)));
    drop(events);
    transport.shutdown();
    Ok(())
}

/// The ibacm door and its listening sockets, or none if it serves on no
/// socket. Sockets systemd passed replace the default ones; default
/// sockets that cannot be created are skipped with a warning; sockets
/// asked for with --acm-socket must be created.
fn acm_door(
    options: &Options,
    sysfs: &Sysfs,
    facts: &PortFacts,
    inherited: Vec<Listener>,
) -> Result<(Option<AcmService>, Vec<AcmListener>), DaemonError> {
    let (mut paths, defaults) = options.acm_socket_paths();
    if defaults && !inherited.is_empty() {
        paths.clear();
    }
    let none = !defaults && paths.is_empty() && !options.acm_sockets.is_empty();
    if none && !inherited.is_empty() {
        warn!("--acm-socket none: not serving the ibacm sockets systemd passed");
    }
    let mut listeners: Vec<AcmListener> = if none {
        Vec::new()
    } else {
        inherited.into_iter().map(AcmListener::new).collect()
    };
    for path in &paths {
        match AcmListener::bind(path) {
            Ok(l) => listeners.push(l),
            Err(e) if defaults => warn!(
                socket = %path.display(), error = %e,
                "cannot serve the ibacm protocol on its default socket; ib_acme and librdmacm will not reach local-sa there (--acm-socket PATH chooses another)"
            ),
            Err(e) => {
                return Err(DaemonError::Acm(format!(
                    "cannot listen on the ibacm socket {}: {e}",
                    path.display()
                )));
            }
        }
    }
    if listeners.is_empty() {
        return Ok((None, listeners));
    }
    let names = endpoints::names(options).map_err(DaemonError::Acm)?;
    let eps = endpoints::endpoints(options, sysfs, facts).map_err(DaemonError::Acm)?;
    info!(
        endpoints = eps.len(),
        pkeys = ?eps.iter().map(|e| format!("{:#06x}", e.pkey)).collect::<Vec<_>>(),
        names = names.len(),
        "ibacm door ready"
    );
    Ok((
        Some(AcmService::new(AcmConfig::default(), eps, names)),
        listeners,
    ))
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
