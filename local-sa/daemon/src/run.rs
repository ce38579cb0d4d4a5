//! The daemon: one SA core ([`local_sa_core::agent`]) per served port —
//! by default every active port of every adapter — driven by the clock,
//! port events, the doors' sockets and signals on one smol thread, and by
//! the MADs its port receives on that port's umad reader thread, which
//! shares the core ([`crate::served`]).
//!
//! Everything the cores decide happens inside them; this module opens the
//! ports and sockets and starts the [`Driver`], which moves MADs and local
//! frames in and out.

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::{Duration, Instant};

use async_signal::{Signal, Signals};
use tracing::{info, warn};

use crate::acm_server::{self, PortFiles};
use crate::activation;
use crate::address_watch;
use crate::client_store::{self, ClientStore};
use crate::door_limits::{ACM_DOOR, API_DOOR, DoorLimits, Doors, FD_RESERVE, SharedDoors};
use crate::door_socket::StreamListener;
use crate::driver::{Connection, Driver, Sink, Sources};
use crate::endpoints;
use crate::error::DaemonError;
use crate::kept_clients;
use crate::kernel_door;
use crate::listener::Listener;
use crate::log_control::LogControl;
use crate::metrics_server::{self, MetricsListener};
use crate::options::Options;
use crate::port_agent::PortAgent;
use crate::service_manager::Notifier;
use crate::settings::Settings;
use crate::sm_signs::SmSigns;
use crate::source_route::KernelRoutes;
use local_sa_core::doors::Door;
use local_sa_core::doors::acm::{AcmConfig, AcmService};
use local_sa_core::doors::api::ApiService;
use umad::port::{PortFacts, Sysfs};

/// Runs the daemon until SIGTERM/SIGINT; `args` (the command line) and
/// `log` serve SIGHUP's reload.
pub(crate) fn run(
    options: &Options,
    args: Vec<OsString>,
    log: LogControl,
) -> Result<(), DaemonError> {
    let sysfs = Sysfs::default();
    let chosen = sysfs
        .select_all(options.ca.as_deref(), options.port)
        .map_err(DaemonError::Port)?;
    if chosen.len() > 1 {
        for (given, what) in [
            (options.api_socket.is_some(), "--api-socket"),
            (options.stats_file.is_some(), "--stats-file"),
        ] {
            if given {
                return Err(DaemonError::Device(format!(
                    "{what} names one file, and {} ports are to be served ({}): choose one with -C/-P, or leave {what} to its per-port default",
                    chosen.len(),
                    chosen
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    }
    // Every port's reader thread hands its MADs to the port's core itself
    // and wakes the driver, naming the port, on one channel when they left
    // it work: at most one wake waits per port, and one failure.
    let (wake_tx, wake_rx) = smol::channel::bounded(2 * chosen.len());
    let mut ports = Vec::with_capacity(chosen.len());
    let signs = SmSigns::new(options.sm_unit_names());
    for (i, facts) in chosen.into_iter().enumerate() {
        ports.push(PortAgent::open(
            options,
            &sysfs,
            facts,
            options.stats_file.clone(),
            &signs,
            (i, &wake_tx),
        )?);
    }
    drop(wake_tx);
    if options.sm_key.is_none() {
        info!(
            "no SM_Key configured: PathRecord loads and deletes will be refused (--sm-key-file FILE gives one)"
        );
    }
    if let (Some(note), Some(file)) = (options.sm_key_note, &options.sm_key_file) {
        warn!(file = %file.display(), "{note}");
    }
    let signals =
        Signals::new([Signal::Term, Signal::Int, Signal::Hup]).map_err(DaemonError::Signals)?;
    let mut activated = activation::activated().map_err(DaemonError::Acm)?;
    let notifier = Notifier::from_env();
    // Every door's service, by DoorId, and its sockets.
    let mut doors: Vec<Box<dyn Door>> = Vec::new();
    let mut listeners = Vec::new();
    for (agent, port) in ports.iter().enumerate() {
        // A passed API socket serves the first port.
        let listener = match (activated.api.take(), options.api_socket_path(&port.facts)) {
            (Some(inherited), _) => inherited,
            (None, Some(path)) => Listener::bind(&path, options.api_mode, options.api_group)
                .map_err(|e| {
                    DaemonError::Device(format!(
                        "cannot listen on the local API socket {}: {e}",
                        path.display()
                    ))
                })?,
            (None, None) => continue,
        };
        info!(port = %port.facts, socket = %listener.label(), mode = format_args!("{:o}", options.api_mode), "local API listening");
        listeners.push(StreamListener::new(
            listener,
            doors.len(),
            API_DOOR,
            ApiService::FRAMING,
        ));
        doors.push(Box::new(ApiService::new(agent)));
    }
    let facts: Vec<PortFacts> = ports.iter().map(|p| p.facts.clone()).collect();
    let owned_plan = endpoints::owned_plan(options).map_err(DaemonError::Acm)?;
    let (acm, acm_listeners, _port_files) =
        acm_door(options, &owned_plan, &sysfs, &facts, activated.acm)?;
    let acm_endpoints = acm
        .as_ref()
        .map_or_else(Vec::new, |a| a.endpoints().to_vec());
    let acm_serves = acm.is_some();
    let mut acm_door_id = None;
    let client_store = match acm {
        Some(_) => ClientStore::open(&notifier, activated.acm_ledger.take()),
        None => None,
    };
    if client_store.is_none() && activated.acm_ledger.take().is_some() {
        notifier.forget_stored(client_store::KEPT_LEDGER);
    }
    if let Some(acm) = acm {
        acm_door_id = Some(doors.len());
        for listener in acm_listeners {
            info!(socket = %listener.label(), "ibacm protocol listening");
            listeners.push(
                StreamListener::new(listener, doors.len(), ACM_DOOR, AcmService::FRAMING)
                    .kept_in(client_store.clone()),
            );
        }
        doors.push(Box::new(acm));
    }
    // The kernel door's socket goes to the descriptor store when this
    // process opens it: one from the store is there already, and one a
    // socket unit passed, the unit passes again.
    let opens_netlink = activated.netlink.is_none();
    let kernel_socket = kernel_door::socket(activated.netlink.take(), options.netlink == "auto");
    let kernel = match &kernel_socket {
        Some(_) => Some(kernel_door::service(options, &ports)?),
        None => None,
    };
    // The ibacm and kernel doors resolve names; the files are read again
    // on reload for them.
    let names_wanted = acm_serves || kernel.is_some();
    let now = Instant::now();
    for port in &mut ports {
        let ipoib = umad::ipoib::addresses(&port.facts);
        let publication = endpoints::publication(options, &owned_plan, &port.facts, &ipoib)
            .map_err(DaemonError::Acm)?;
        if let Some(p) = &publication {
            info!(
                port = %port.facts,
                host = p.host_name(),
                addresses = %endpoints::address_list(p.addresses()),
                "publishing this host in the local-sa directory"
            );
        }
        port.core().publish(now, publication);
    }
    let metrics =
        match &options.metrics {
            Some(addr) => Some(MetricsListener::bind(addr).map_err(|e| {
                DaemonError::Device(format!("cannot serve metrics at {addr:?}: {e}"))
            })?),
            None => None,
        };
    let ex = std::rc::Rc::new(smol::LocalExecutor::new());
    let metrics = metrics.map(|listener| {
        let shared = std::rc::Rc::new(metrics_server::Shared::default());
        ex.spawn(metrics_server::serve(
            listener,
            shared.clone(),
            std::rc::Rc::downgrade(&ex),
        ))
        .detach();
        shared
    });
    let (signal_tx, signal_rx) = smol::channel::bounded(4);
    ex.spawn(crate::driver::forward_signals(signals, signal_tx))
        .detach();
    // Every port's events, tagged with the port, on one channel.
    let (event_tx, event_rx) = smol::channel::bounded(64);
    for (i, port) in ports.iter().enumerate() {
        ex.spawn(tag(i, port.events.events(), event_tx.clone()))
            .detach();
    }
    drop(event_tx);
    let ids = std::rc::Rc::new(std::cell::Cell::new(1));
    let account = door_account(options);
    let (door_tx, door_rx) = smol::channel::bounded(1024);
    for listener in listeners {
        let serve = listener.serve(
            std::rc::Rc::downgrade(&ex),
            ids.clone(),
            account.clone(),
            door_tx.clone(),
        );
        ex.spawn(serve).detach();
    }
    kept_clients::take_back(
        std::mem::take(&mut activated.acm_clients),
        client_store.as_ref(),
        acm_door_id.map(|door| (door, ACM_DOOR, AcmService::FRAMING)),
        &ex,
        (ids.clone(), account.clone(), door_tx.clone()),
        &notifier,
    );
    if activated.netlink_kept && kernel_socket.is_none() {
        notifier.forget_stored(client_store::KEPT_NETLINK);
    }
    let mut connections = HashMap::new();
    if let (Some(socket), Some(service)) = (kernel_socket, kernel) {
        match smol::Async::new(socket) {
            Ok(socket) => {
                let socket = std::rc::Rc::new(socket);
                if opens_netlink && notifier.store_room() > 0 {
                    use std::os::fd::AsFd as _;
                    // Kept from the start, so that even a crash leaves it
                    // to the next local-sa.
                    if let Err(e) =
                        notifier.store(client_store::KEPT_NETLINK, &[socket.get_ref().as_fd()])
                    {
                        warn!(error = %e, "cannot give the service manager the kernel door's socket; the next local-sa opens its own");
                    }
                }
                let (out_tx, out_rx) = smol::channel::bounded(kernel_door::MAX_QUEUED_REPLIES);
                // How long the kernel is to wait for each reply, first.
                let _ = out_tx.try_send(service.set_timeout_message(std::process::id()));
                let (room_tx, room_rx) = smol::channel::bounded(1);
                let backlog = kernel_door::Backlog {
                    replies: out_tx.clone(),
                    room: room_rx,
                };
                let door = doors.len();
                ex.spawn(kernel_door::read(
                    socket.clone(),
                    door,
                    door_tx.clone(),
                    backlog,
                ))
                .detach();
                ex.spawn(kernel_door::write(socket.clone(), out_rx, room_tx))
                    .detach();
                let sink = Sink::Datagram(kernel_door::DatagramSink::new(socket, out_tx));
                connections.insert(kernel_door::CONN, Connection { door, sink });
                doors.push(Box::new(service));
            }
            Err(e) => {
                warn!(error = %e, "cannot poll the netlink socket; the kernel's queries are not served")
            }
        }
    }
    drop(door_tx);
    // The endpoints' IPoIB addresses, followed as they change.
    let (addresses_tx, addresses_rx) = smol::channel::bounded(1);
    if !acm_endpoints.is_empty()
        && let Some(watch) = address_watch::open()
    {
        ex.spawn(address_watch::follow(watch, addresses_tx))
            .detach();
    }
    let driver = Driver {
        ports,
        sysfs,
        stats_interval: Duration::from_secs(options.stats_interval),
        doors,
        connections,
        account,
        acm_endpoints,
        owned_plan,
        acm_door: acm_door_id,
        client_store,
        names_wanted,
        settings: Settings {
            args,
            options: options.clone(),
            log,
        },
        started: Instant::now(),
        metrics,
        notifier,
        ready_by: Some(
            (options.ready_timeout > 0)
                .then(|| Instant::now() + Duration::from_secs(options.ready_timeout)),
        ),
    };
    let sources = Sources {
        cores: wake_rx,
        port_events: event_rx,
        doors: door_rx,
        addresses: addresses_rx,
        signals: signal_rx,
    };
    let ports = smol::block_on(ex.run(driver.run(sources)));
    for port in ports {
        port.close();
    }
    Ok(())
}

/// Passes everything `from` yields to `to`, tagged with port `i`.
async fn tag<T>(i: usize, from: smol::channel::Receiver<T>, to: smol::channel::Sender<(usize, T)>) {
    while let Ok(item) = from.recv().await {
        if to.send((i, item)).await.is_err() {
            return;
        }
    }
}

/// The ibacm door (none if it serves on no socket), its listening
/// sockets, and the port files of its TCP server mode (removed when
/// dropped).
type AcmDoor = (Option<AcmService>, Vec<Listener>, Option<PortFiles>);

/// The ibacm door, its listening sockets, and the port files of its TCP
/// server mode; no door if it serves on no socket. Sockets systemd passed
/// replace the default Unix ones; default sockets that cannot be created
/// are skipped with a warning; sockets asked for with --acm-socket, and
/// the TCP socket of --acm-server-mode loop or open, must be created.
fn acm_door(
    options: &Options,
    owned_plan: &endpoints::OwnedPlan,
    sysfs: &Sysfs,
    facts: &[PortFacts],
    inherited: Vec<Listener>,
) -> Result<AcmDoor, DaemonError> {
    acm_server::log_ibacm_options(options);
    let (mut paths, defaults) = options.acm_socket_paths();
    if defaults && !inherited.is_empty() {
        paths.clear();
    }
    let none = !defaults && paths.is_empty() && !options.acm_sockets.is_empty();
    if none && !inherited.is_empty() {
        warn!("--acm-socket none: not serving the ibacm sockets systemd passed");
    }
    let mut listeners: Vec<Listener> = if none { Vec::new() } else { inherited };
    for path in &paths {
        // Mode 0666, as ibacm's.
        match Listener::bind(path, 0o666, None) {
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
    let mut port_files = None;
    if !none && let Some((tcp, files)) = acm_server::tcp(options)? {
        listeners.push(tcp);
        port_files = Some(files);
    }
    if listeners.is_empty() {
        return Ok((None, listeners, None));
    }
    let names = endpoints::names(options).map_err(DaemonError::Acm)?;
    let eps = endpoints::endpoints(owned_plan, sysfs, facts);
    info!(
        endpoints = eps.len(),
        pkeys = %eps.iter().map(|e| format!("{:#06x}", e.pkey)).collect::<Vec<_>>().join(" "),
        names = names.len(),
        "ibacm door ready"
    );
    let mut service = AcmService::new(AcmConfig::default(), eps, names);
    service.set_source_route(Box::new(KernelRoutes::default()));
    Ok((Some(service), listeners, port_files))
}

/// The doors' account: the limits from the options, the total bounded by
/// the open-files limit (raised to its hard limit first, as far as the
/// connections need) and by what the transport allows.
fn door_account(options: &Options) -> SharedDoors {
    let limits = DoorLimits {
        total: options.max_connections,
        per_user: options.max_connections_per_user,
        ..DoorLimits::default()
    };
    let transport_cap = umad::Transport::of_this_process()
        .max_open_files()
        .unwrap_or(u64::MAX);
    let wanted = ((limits.total + FD_RESERVE) as u64).min(transport_cap);
    let open_files = match umad::process::raise_open_files_limit(wanted) {
        Ok(n) => usize::try_from(n.min(transport_cap)).unwrap_or(usize::MAX),
        Err(e) => {
            warn!(error = %e, "cannot read the open-files limit; assuming 1024");
            1024
        }
    };
    let doors = Doors::shared(limits, open_files);
    let total = doors.borrow().limits().total;
    if total < limits.total {
        warn!(
            open_files,
            connections = total,
            "the open-files limit allows fewer local connections than --max-connections"
        );
    }
    doors
}
