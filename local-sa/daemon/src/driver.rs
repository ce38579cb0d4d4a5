//! The driver: one smol task that feeds each port's core everything that
//! happens but its MADs (its timer, its port events, signals) and every
//! door everything that happens at its sockets, and carries out what they
//! ask: MADs to send, requests for the cores, the cores' replies back to
//! the door that asked, bytes for connections. A port's MADs go to its
//! core on the port's reader thread ([`crate::served`]), which wakes the
//! driver when one left it work.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_signal::{Signal, Signals};
use bytes::Bytes;
use smol::Timer;
use smol::channel::{Receiver, Sender};
use smol::stream::StreamExt as _;
use tracing::{debug, error, info, warn};

use crate::bridge::identity;
use crate::connection::FrameQueue;
use crate::door_limits::SharedDoors;
use crate::door_socket::{DoorEvent, DoorId};
use crate::kernel_door::DatagramSink;
use crate::port_agent::PortAgent;
use crate::served::CoreWake;
use crate::service_manager::Notifier;
use crate::settings::Settings;
use crate::sm_signs::{SM_SIGNS_EVERY, SmSigns};
use local_sa_core::doors::acm::Endpoint;
use local_sa_core::doors::{Door, Input, Output};
use local_sa_core::names::hosts::Names;
use local_sa_core::request::{ConnId, LocalBody, LocalReply, Request, StatusReport};
use umad::port::Sysfs;
use umad::port_events::PortEvent;

/// How long a shutdown waits for the master to confirm the unsubscribes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What woke the driver.
enum Wake {
    Core(CoreWake),
    Port(usize, PortEvent),
    Door(DoorEvent),
    Addresses,
    Signal,
    HangUp,
    Timer,
    Stats,
    Watchdog,
    /// Time to read the node's signs of a subnet manager again.
    SmSigns,
    Closed,
}

/// The sources the driver waits on; MADs and port events come tagged with
/// the index of their port.
pub(crate) struct Sources {
    /// The ports' reader threads, when a MAD left the driver work.
    pub(crate) cores: Receiver<CoreWake>,
    pub(crate) port_events: Receiver<(usize, PortEvent)>,
    /// What happens at every door's sockets.
    pub(crate) doors: Receiver<DoorEvent>,
    /// This host's interfaces or addresses changed.
    pub(crate) addresses: Receiver<()>,
    /// SIGTERM, SIGINT and SIGHUP, as [`forward_signals`] passes them on.
    pub(crate) signals: Receiver<Signal>,
}

pub(crate) struct Driver {
    /// The served ports; a port's index is its agent number.
    pub(crate) ports: Vec<PortAgent>,
    pub(crate) sysfs: Sysfs,
    pub(crate) stats_interval: Duration,
    /// The doors served, by [`DoorId`].
    pub(crate) doors: Vec<Box<dyn Door>>,
    /// Every open connection: its door, and where its bytes go.
    pub(crate) connections: HashMap<ConnId, Connection>,
    /// What the doors' connections hold and what was refused.
    pub(crate) account: SharedDoors,
    /// The ibacm door's endpoints, and what they own (kept in step with
    /// the door's as the IPoIB addresses change).
    pub(crate) acm_endpoints: Vec<Endpoint>,
    /// What the endpoints own besides their IPoIB addresses.
    pub(crate) owned_plan: crate::endpoints::OwnedPlan,
    /// The ibacm door's number, if it is served.
    pub(crate) acm_door: Option<DoorId>,
    /// Where the ibacm clients are kept across a restart, if they are.
    pub(crate) client_store: Option<Rc<crate::client_store::ClientStore>>,
    /// Whether a door resolves names (the files are read again on reload).
    pub(crate) names_wanted: bool,
    /// The settings, and what reloading them needs.
    pub(crate) settings: Settings,
    /// When the daemon started.
    pub(crate) started: Instant,
    /// What the metrics endpoint serves, if there is one.
    pub(crate) metrics: Option<Rc<crate::metrics_server::Shared>>,
    /// The service manager (systemd), if it watches.
    pub(crate) notifier: Notifier,
    /// When to say READY=1 even though a port has no table yet (None:
    /// only once every port has one); None once said.
    pub(crate) ready_by: Option<Option<Instant>>,
}

/// An open connection of a door.
pub(crate) struct Connection {
    pub(crate) door: DoorId,
    pub(crate) sink: Sink,
}

/// Where a connection's bytes go.
pub(crate) enum Sink {
    /// A stream connection's queue.
    Stream(FrameQueue),
    /// A datagram socket's writer (the kernel door's).
    Datagram(DatagramSink),
}

impl Driver {
    /// Serves until a signal (or the transports stop); gives the ports
    /// back to be closed.
    pub(crate) async fn run(mut self, mut src: Sources) -> Vec<PortAgent> {
        let mut timer = Timer::never();
        let mut armed: Option<Instant> = None;
        let mut stats_timer = match (self.stats_interval.is_zero(), &self.metrics) {
            (false, _) => Timer::interval(self.stats_interval),
            // The file only at exit, but the metrics every second.
            (true, Some(_)) => Timer::interval(Duration::from_secs(1)),
            (true, None) => Timer::never(),
        };
        self.update_metrics();
        let mut watchdog = match self.notifier.watchdog_interval() {
            Some(every) => Timer::interval(every),
            None => Timer::never(),
        };
        let mut sm_signs = Timer::interval(SM_SIGNS_EVERY);
        let mut shutdown_by: Option<Instant> = None;
        loop {
            if !self.flush() {
                break;
            }
            self.announce_ready(Instant::now());
            let idle = self.ports.iter().all(|p| p.core().is_idle());
            if shutdown_by.is_some_and(|t| idle || Instant::now() >= t) {
                break;
            }
            let doors_due = self.doors.iter_mut().filter_map(|d| d.poll_timeout()).min();
            let due = self
                .ports
                .iter()
                .filter_map(|p| p.core().next_due())
                .chain(doors_due)
                .chain(shutdown_by)
                .chain(self.ready_by.flatten())
                .min();
            if due != armed {
                match due {
                    Some(t) => timer.set_at(t),
                    None => timer = Timer::never(),
                }
                armed = due;
            }
            let mut timers = Timers {
                core: &mut timer,
                stats: &mut stats_timer,
                watchdog: &mut watchdog,
                sm_signs: &mut sm_signs,
            };
            let wake = next_wake(&mut src, &mut timers).await;
            let now = Instant::now();
            match wake {
                // The reader threads handled MADs that left work here;
                // the next flush does it.
                Wake::Core(first) => {
                    let mut failed = None;
                    let more = std::iter::from_fn(|| src.cores.try_recv().ok());
                    for wake in std::iter::once(first).chain(more) {
                        match wake {
                            CoreWake::Changed(i) => self.ports[i].woken(),
                            CoreWake::Failed(i) => failed = Some(i),
                        }
                    }
                    if let Some(i) = failed {
                        error!(port = %self.ports[i].facts, "the port's SA core failed; exiting");
                        break;
                    }
                }
                Wake::Door(e) => {
                    self.door_event(now, e);
                    // Take whatever else has arrived at the doors: one
                    // wake-up for a burst.
                    while let Ok(e) = src.doors.try_recv() {
                        self.door_event(now, e);
                    }
                }
                Wake::Timer => {
                    armed = None;
                    for p in &self.ports {
                        let mut core = p.core();
                        if core.poll_timeout().is_some_and(|t| t <= now) {
                            core.handle_timeout(now);
                        }
                    }
                    for d in 0..self.doors.len() {
                        if self.doors[d].poll_timeout().is_some_and(|t| t <= now) {
                            self.doors[d].handle_timeout(now);
                            self.carry_out(now, d);
                        }
                    }
                }
                Wake::Port(i, e) => self.port_event(now, i, e),
                Wake::Addresses => self.addresses_changed(now),
                Wake::Stats => {
                    self.update_metrics();
                    if !self.stats_interval.is_zero() {
                        self.write_stats();
                    }
                    for p in &mut self.ports {
                        p.keep_tables();
                    }
                }
                Wake::Watchdog => self.notifier.notify("WATCHDOG=1"),
                Wake::SmSigns => self.read_sm_signs(now),
                Wake::Signal if shutdown_by.is_none() => {
                    info!("shutting down: withdrawing subscriptions and memberships at the master");
                    self.notifier
                        .notify("STOPPING=1\nSTATUS=withdrawing registrations at the master");
                    for p in &self.ports {
                        p.core().begin_shutdown(now);
                    }
                    shutdown_by = Some(now + SHUTDOWN_GRACE);
                }
                Wake::Signal => {
                    info!("second signal: exiting at once");
                    break;
                }
                Wake::HangUp if shutdown_by.is_none() => self.reload(now),
                Wake::HangUp => {}
                Wake::Closed => {
                    warn!("the umad transports stopped; exiting");
                    break;
                }
            }
        }
        // However the loop ended, the ibacm clients between messages stay
        // in the service manager's store for the next local-sa.
        self.keep_clients();
        self.write_stats();
        for p in &mut self.ports {
            p.keep_tables();
        }
        for p in &self.ports {
            let c = p.core().counters();
            info!(
                port = %p.facts,
                hits = c.hits,
                misses = c.misses,
                coalesced = c.coalesced,
                upstream_queries = c.upstream_queries,
                loaded = c.loaded,
                notices = c.notices,
                joins_local = c.joins_local,
                joins_upstream = c.joins_upstream,
                errors = c.errors,
                records = c.records,
                "stopped"
            );
        }
        self.ports
    }

    /// Sends every MAD the cores want sent and hands every local reply
    /// to its connection; gives the ibacm door new names; writes the
    /// datagram doors' replies. False if a transport is gone.
    fn flush(&mut self) -> bool {
        let now = Instant::now();
        for i in 0..self.ports.len() {
            self.ports[i].settle_sa_class();
            if self.ports[i].send_all(now).is_err() {
                return false;
            }
            let replies: Vec<LocalReply> =
                std::iter::from_fn(|| self.ports[i].core().poll_local()).collect();
            for mut reply in replies {
                if let LocalBody::Status(report) = &mut reply.body {
                    self.add_daemon_status(i, report);
                }
                self.reply(reply);
            }
        }
        self.update_names();
        for door in &self.doors {
            if let Some(Connection {
                sink: Sink::Datagram(sink),
                ..
            }) = door
                .datagram_conn()
                .and_then(|conn| self.connections.get_mut(&conn))
            {
                sink.flush();
            }
        }
        true
    }

    /// Gives the ibacm door the names the ports learned, when they change:
    /// the one port's table as it is, or several ports' merged (the first
    /// port's entries first).
    fn update_names(&mut self) {
        if !self.names_wanted {
            return;
        }
        let mut changed = false;
        for p in &mut self.ports {
            let generation = p.core().names_generation();
            changed |= generation != p.names_generation;
            p.names_generation = generation;
        }
        if !changed {
            return;
        }
        let names = match &self.ports[..] {
            [one] => Arc::clone(one.core().names()),
            several => {
                let mut merged = Names::new();
                for p in several {
                    merged.fill_from(p.core().names());
                }
                Arc::new(merged)
            }
        };
        for door in &mut self.doors {
            door.set_learned_names(Arc::clone(&names));
        }
    }

    /// A local request for port `agent`'s core.
    fn ask(&mut self, now: Instant, agent: usize, conn: ConnId, id: u32, request: Request) {
        match self.ports.get(agent) {
            Some(p) => p.core().handle_local(now, conn, id, request),
            None => warn!(agent, "a request for a port this daemon does not serve"),
        }
    }

    /// Something happened at a door's socket.
    fn door_event(&mut self, now: Instant, event: DoorEvent) {
        let (door, input) = match &event {
            DoorEvent::Opened {
                door, conn, user, ..
            } => (
                *door,
                Input::Opened {
                    conn: *conn,
                    user: *user,
                },
            ),
            DoorEvent::Message { conn, bytes } => match self.connections.get(conn) {
                Some(c) => (c.door, Input::Message { conn: *conn, bytes }),
                None => return,
            },
            DoorEvent::Unframeable { conn } => match self.connections.get(conn) {
                Some(c) => (c.door, Input::Unframeable { conn: *conn }),
                None => return,
            },
            DoorEvent::Closed { conn } => {
                self.disconnect(now, *conn);
                return;
            }
            DoorEvent::Datagram { door, from, bytes } => {
                (*door, Input::Datagram { from: *from, bytes })
            }
        };
        self.doors[door].handle_input(now, input);
        if let DoorEvent::Opened {
            door, conn, outbox, ..
        } = event
        {
            let sink = Sink::Stream(outbox);
            self.connections.insert(conn, Connection { door, sink });
        }
        self.carry_out(now, door);
    }

    /// Does what door `door` asks, in order.
    fn carry_out(&mut self, now: Instant, door: DoorId) {
        while let Some(output) = self.doors[door].poll_output() {
            match output {
                Output::Send { conn, bytes } => self.send(conn, bytes),
                Output::Close { conn } => {
                    // After what is queued (the error frame that says why).
                    if let Some(Sink::Stream(outbox)) = self.forget(now, conn) {
                        outbox.finish();
                    }
                }
                Output::Ask {
                    agent,
                    conn,
                    id,
                    request,
                } => self.ask(now, agent, conn, id, request),
                Output::Registrant { conn, user } => {
                    for p in &self.ports {
                        p.core().handle_local_opened(conn, user);
                    }
                }
            }
        }
    }

    /// A reply from a core, for the door of the connection that asked
    /// (none if the connection has closed meanwhile).
    fn reply(&mut self, r: LocalReply) {
        let Some(door) = self.connections.get(&r.conn).map(|c| c.door) else {
            return;
        };
        let now = Instant::now();
        self.doors[door].handle_reply(now, &r);
        self.carry_out(now, door);
    }

    /// Queues a frame for `conn`; a connection that lets more than its
    /// share pile up is not reading and is let go (counted and logged).
    fn send(&mut self, conn: ConnId, frame: Bytes) {
        let Some(c) = self.connections.get_mut(&conn) else {
            return;
        };
        match &mut c.sink {
            Sink::Stream(outbox) => {
                if !outbox.push(frame) {
                    self.disconnect(Instant::now(), conn);
                }
            }
            Sink::Datagram(sink) => sink.push(frame),
        }
    }

    /// Forgets `conn`, closes it at once and releases everything it held.
    fn disconnect(&mut self, now: Instant, conn: ConnId) {
        if let Some(Sink::Stream(outbox)) = self.forget(now, conn) {
            outbox.close();
        }
    }

    /// Forgets `conn` and releases everything it held, at its door and at
    /// every port (an ibacm connection may have asked any of them); gives
    /// back its sink for the caller to close.
    fn forget(&mut self, now: Instant, conn: ConnId) -> Option<Sink> {
        let c = self.connections.remove(&conn)?;
        debug!(conn, "local connection closed");
        self.doors[c.door].handle_input(now, Input::Closed { conn });
        for p in &self.ports {
            p.core().handle_local_closed(now, conn);
        }
        // Whatever the door still queues for it finds no connection.
        Some(c.sink)
    }

    fn port_event(&mut self, now: Instant, i: usize, event: PortEvent) {
        let port = &mut self.ports[i];
        match event {
            PortEvent::Error => warn!(port = %port.facts, "port went down; serving what is cached"),
            PortEvent::PkeyChange => {
                let pkeys = self.sysfs.endpoint_facts(&port.facts).pkeys;
                info!(
                    port = %port.facts,
                    pkeys = %pkeys.iter().map(|p| format!("{p:#06x}")).collect::<Vec<_>>().join(" "),
                    "P_Key table changed"
                );
                port.core().handle_pkeys(now, &pkeys);
            }
            PortEvent::Active
            | PortEvent::LidChange
            | PortEvent::SmChange
            | PortEvent::ClientReregister
            | PortEvent::GidChange => match self
                .sysfs
                .select(Some(&port.facts.ca), Some(port.facts.port))
            {
                Ok(facts) => {
                    info!(
                        %event,
                        port = %facts,
                        lid = facts.lid,
                        sm_lid = facts.sm_lid,
                        "port changed"
                    );
                    port.core().handle_port_change(now, identity(&facts));
                    for door in &mut self.doors {
                        door.handle_port_change(i, identity(&facts));
                    }
                    port.facts = facts;
                }
                Err(e) => {
                    warn!(%event, port = %port.facts, error = %e, "cannot read the port after an event");
                }
            },
        }
    }

    /// Reads the node's signs of a subnet manager on each port again (its
    /// IsSM capability, the SM units of the settings in effect).
    fn read_sm_signs(&mut self, now: Instant) {
        let signs = SmSigns::new(self.settings.options.sm_unit_names());
        for port in &self.ports {
            match self
                .sysfs
                .select(Some(&port.facts.ca), Some(port.facts.port))
            {
                Ok(facts) => port.handle_sm_signs(now, &signs, facts.cap_mask),
                Err(e) => {
                    debug!(port = %port.facts, error = %e, "cannot read the port's capabilities")
                }
            }
        }
    }

    /// Says READY=1 to the service manager once every port has its first
    /// table (its sockets were bound before the driver started), or once
    /// `--ready-timeout` has passed without: the daemon serves meanwhile,
    /// forwarding what it cannot answer.
    fn announce_ready(&mut self, now: Instant) {
        let Some(by) = self.ready_by else {
            return;
        };
        let waiting: Vec<String> = self
            .ports
            .iter()
            .filter(|p| !p.core().is_ready())
            .map(|p| p.facts.to_string())
            .collect();
        let records: u64 = self.ports.iter().map(|p| p.core().counters().records).sum();
        if waiting.is_empty() {
            let status = format!("serving {} port(s), {records} paths", self.ports.len());
            info!("{status}: ready");
            self.notifier.ready(&status);
        } else if by.is_some_and(|t| now >= t) {
            let status = format!(
                "serving; no paths yet for {} (their queries go to the master meanwhile)",
                waiting.join(", ")
            );
            warn!("--ready-timeout passed: {status}");
            self.notifier.ready(&status);
        } else {
            return;
        }
        self.ready_by = None;
    }

    /// What the daemon adds to port `i`'s status: itself, the port as the
    /// device shows it, the doors, the last warnings.
    fn add_daemon_status(&self, i: usize, report: &mut StatusReport) {
        let now = Instant::now();
        report.push("version", env!("CARGO_PKG_VERSION"));
        report.push("pid", std::process::id());
        report.push(
            "uptime_s",
            now.saturating_duration_since(self.started).as_secs(),
        );
        if let Some(p) = self.ports.get(i) {
            report.push("port", format!("{}/{}", p.facts.ca, p.facts.port));
            report.push("port_state", p.facts.state);
        }
        // The doors' counters as the counters file has them
        // (door_connections first).
        for (name, value) in self.daemon_counters() {
            report.push(name, value);
        }
        // The kernel's door is open when a door has a datagram socket.
        let kernel_door = self.doors.iter().any(|d| {
            d.datagram_conn()
                .is_some_and(|c| self.connections.contains_key(&c))
        });
        report.push("kernel_door", if kernel_door { "open" } else { "closed" });
        for line in self.settings.log.recent().lines(now) {
            report.push("recent_warning", line);
        }
    }

    /// The doors' counters: the connections' account, each door's own,
    /// the datagrams the kernel door's writer dropped, and the ibacm
    /// clients kept in the service manager's store.
    fn daemon_counters(&self) -> Vec<(&'static str, u64)> {
        let mut fields = self.account.borrow().counters().fields().to_vec();
        for door in &self.doors {
            fields.extend(door.counter_fields());
            let sink = door
                .datagram_conn()
                .and_then(|conn| self.connections.get(&conn));
            if let Some(Connection {
                sink: Sink::Datagram(s),
                ..
            }) = sink
            {
                fields.push(("netlink_replies_dropped", s.dropped));
            }
        }
        if let Some(store) = &self.client_store {
            fields.extend(store.fields());
        }
        fields
    }

    fn write_stats(&self) {
        let fields = self.daemon_counters();
        for p in &self.ports {
            p.write_stats(&fields);
        }
    }

    /// Renders the counters for the metrics endpoint.
    fn update_metrics(&self) {
        let Some(shared) = &self.metrics else {
            return;
        };
        let ports: Vec<crate::metrics::PortMetrics> = self
            .ports
            .iter()
            .map(|p| {
                let counters = p.counters();
                // One lock for both: a second `core()` while the first
                // guard lives would wait for itself.
                let core = p.core();
                crate::metrics::PortMetrics {
                    label: format!("{}/{}", p.facts.ca, p.facts.port),
                    counters,
                    stats: core.stats().clone(),
                    registrants: core.registrants(),
                }
            })
            .collect();
        let mut daemon = self.daemon_counters();
        daemon.push(("metrics_refused", shared.refused.get()));
        *shared.text.borrow_mut() = crate::metrics::render(&ports, &daemon);
    }
}

/// The driver's timers.
struct Timers<'a> {
    /// The cores' and doors' next deadline.
    core: &'a mut Timer,
    stats: &'a mut Timer,
    watchdog: &'a mut Timer,
    sm_signs: &'a mut Timer,
}

/// Waits for the next thing to happen.
async fn next_wake(src: &mut Sources, t: &mut Timers<'_>) -> Wake {
    let mad = async { src.cores.recv().await.map_or(Wake::Closed, Wake::Core) };
    let doors = async {
        match src.doors.recv().await {
            Ok(e) => Wake::Door(e),
            // No door (or they all stopped): keep serving MADs.
            Err(_) => std::future::pending().await,
        }
    };
    let port = async {
        match src.port_events.recv().await {
            Ok((i, e)) => Wake::Port(i, e),
            Err(_) => std::future::pending().await,
        }
    };
    let addresses = async {
        match src.addresses.recv().await {
            Ok(()) => Wake::Addresses,
            // Not followed: the addresses stay as they were at start.
            Err(_) => std::future::pending().await,
        }
    };
    let signal = async {
        match src.signals.recv().await {
            Ok(Signal::Hup) => Wake::HangUp,
            _ => Wake::Signal,
        }
    };
    let timers = async {
        smol::future::or(
            async {
                (&mut *t.core).await;
                Wake::Timer
            },
            smol::future::or(
                async {
                    (&mut *t.stats).await;
                    Wake::Stats
                },
                smol::future::or(
                    async {
                        (&mut *t.watchdog).await;
                        Wake::Watchdog
                    },
                    async {
                        (&mut *t.sm_signs).await;
                        Wake::SmSigns
                    },
                ),
            ),
        )
        .await
    };
    smol::future::or(
        mad,
        smol::future::or(
            doors,
            smol::future::or(
                port,
                smol::future::or(addresses, smol::future::or(signal, timers)),
            ),
        ),
    )
    .await
}

/// Passes the signals on to the driver, until they fail (then the channel
/// closes, which the driver takes as a signal to stop). Polling the signal
/// stream itself each time the driver waits would read its pipe each time.
pub(crate) async fn forward_signals(mut signals: Signals, to: Sender<Signal>) {
    while let Some(Ok(signal)) = signals.next().await {
        if to.send(signal).await.is_err() {
            return;
        }
    }
}
