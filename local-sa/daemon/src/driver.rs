//! The driver: one smol task that feeds each port's core everything that
//! happens (its MADs, its timer, its port events, local API and ibacm
//! requests, signals) and carries out what the cores ask (MADs to send,
//! replies to local connections).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_signal::{Signal, Signals};
use bytes::Bytes;
use smol::Timer;
use smol::channel::{Receiver, Sender};
use smol::stream::StreamExt as _;
use tracing::{debug, info, warn};

use crate::acm_socket::AcmEvent;
use crate::api::ApiEvent;
use crate::bridge::{self, identity};
use crate::connection::Outbox;
use crate::doors::SharedDoors;
use crate::kernel_door;
use crate::port_agent::PortAgent;
use crate::service_manager::Notifier;
use crate::settings::Settings;
use local_sa_core::doors::acm::{AcmService, Step};
use local_sa_core::doors::api;
use local_sa_core::doors::netlink::{
    Action as NetlinkAction, NetlinkService, Sender as NetlinkSender,
};
use local_sa_core::log_limit::LogLimit;
use local_sa_core::naming::Names;
use local_sa_core::request::{ConnId, LocalBody, LocalReply, Request, StatusReport};
use umad::IncomingMad;
use umad::port::Sysfs;
use umad::port_events::PortEvent;

/// How long a shutdown waits for the master to confirm the unsubscribes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What woke the driver.
enum Wake {
    Mad(usize, IncomingMad),
    Port(usize, PortEvent),
    Api(ApiEvent),
    Acm(AcmEvent),
    Kernel(kernel_door::Datagram),
    Signal,
    HangUp,
    Timer,
    Stats,
    Watchdog,
    Closed,
}

/// The sources the driver waits on; MADs and port events come tagged with
/// the index of their port.
pub(crate) struct Sources {
    pub(crate) incoming: Receiver<(usize, IncomingMad)>,
    pub(crate) port_events: Receiver<(usize, PortEvent)>,
    pub(crate) api: Receiver<ApiEvent>,
    pub(crate) acm: Receiver<AcmEvent>,
    /// Datagrams from the kernel door's socket.
    pub(crate) kernel: Receiver<kernel_door::Datagram>,
    pub(crate) signals: Signals,
}

pub(crate) struct Driver {
    /// The served ports; a port's index is its agent number.
    pub(crate) ports: Vec<PortAgent>,
    pub(crate) sysfs: Sysfs,
    pub(crate) stats_interval: Duration,
    /// Each local connection's outgoing frames (both doors).
    pub(crate) connections: HashMap<ConnId, Outbox>,
    /// What the doors' connections hold and what was refused.
    pub(crate) doors: SharedDoors,
    /// The ibacm door, if it serves.
    pub(crate) acm: Option<AcmService>,
    /// The kernel door, if it serves.
    pub(crate) kernel: Option<KernelDoor>,
    /// The settings, and what reloading them needs.
    pub(crate) settings: Settings,
    /// When the daemon started.
    pub(crate) started: Instant,
    /// What the metrics endpoint serves, if there is one.
    pub(crate) metrics: Option<std::rc::Rc<crate::metrics_server::Shared>>,
    /// The service manager (systemd), if it watches.
    pub(crate) notifier: Notifier,
    /// When to say READY=1 even though a port has no table yet (None:
    /// only once every port has one); None once said.
    pub(crate) ready_by: Option<Option<Instant>>,
}

/// The kernel door: its logic and where its replies go.
pub(crate) struct KernelDoor {
    pub(crate) service: NetlinkService,
    /// To the socket's writer.
    pub(crate) replies: Sender<Bytes>,
    /// Replies dropped because the writer was that far behind.
    pub(crate) dropped: u64,
    /// The kernel's refusals, logged once a minute per errno: a daemon
    /// without CAP_NET_ADMIN is refused every reply.
    pub(crate) log: LogLimit,
}

impl KernelDoor {
    fn send(&mut self, reply: Bytes) {
        if self.replies.try_send(reply).is_err() {
            self.dropped += 1;
        }
    }
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
        let mut shutdown_by: Option<Instant> = None;
        loop {
            if !self.flush() {
                break;
            }
            self.announce_ready(Instant::now());
            let idle = self.ports.iter().all(|p| p.core.is_idle());
            if shutdown_by.is_some_and(|t| idle || Instant::now() >= t) {
                break;
            }
            let kernel_due = self.kernel.as_mut().and_then(|k| k.service.poll_timeout());
            let due = self
                .ports
                .iter()
                .filter_map(|p| p.core.poll_timeout())
                .chain(kernel_due)
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
            let wake = next_wake(&mut src, &mut timer, &mut stats_timer, &mut watchdog).await;
            let now = Instant::now();
            match wake {
                Wake::Mad(i, m) => {
                    self.ports[i].core.handle_mad(now, bridge::received(m));
                    // Take whatever else has arrived before sending: one
                    // wake-up for a burst.
                    while let Ok((i, m)) = src.incoming.try_recv() {
                        self.ports[i].core.handle_mad(now, bridge::received(m));
                    }
                }
                Wake::Api(e) => self.api_event(now, e),
                Wake::Acm(e) => self.acm_event(now, e),
                Wake::Kernel((from, datagram)) => self.kernel_datagram(now, from, &datagram),
                Wake::Timer => {
                    armed = None;
                    for p in &mut self.ports {
                        if p.core.poll_timeout().is_some_and(|t| t <= now) {
                            p.core.handle_timeout(now);
                        }
                    }
                    if let Some(door) = self.kernel.as_mut() {
                        for reply in door.service.handle_timeout(now) {
                            door.send(reply);
                        }
                    }
                }
                Wake::Port(i, e) => self.port_event(now, i, e),
                Wake::Stats => {
                    self.update_metrics();
                    if !self.stats_interval.is_zero() {
                        self.write_stats();
                    }
                }
                Wake::Watchdog => self.notifier.notify("WATCHDOG=1"),
                Wake::Signal if shutdown_by.is_none() => {
                    info!("shutting down: withdrawing subscriptions and memberships at the master");
                    self.notifier
                        .notify("STOPPING=1\nSTATUS=withdrawing registrations at the master");
                    for p in &mut self.ports {
                        p.core.begin_shutdown(now);
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
        self.write_stats();
        for p in &self.ports {
            let c = p.core.counters();
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

    /// Hands every MAD the cores want sent to their writer threads and
    /// every local reply to its connection; gives the ibacm door new
    /// names. False if a transport is gone.
    fn flush(&mut self) -> bool {
        let now = Instant::now();
        for i in 0..self.ports.len() {
            let p = &mut self.ports[i];
            // The record first: it must list whatever these requests may
            // make the master hold.
            p.registrations.update(&p.core);
            while let Some(t) = p.core.poll_transmit() {
                let mad = bridge::outgoing(p.agent, t);
                if p.send(now, mad).is_err() {
                    return false;
                }
            }
            while let Some(mut reply) = self.ports[i].core.poll_local() {
                if let LocalBody::Status(report) = &mut reply.body {
                    self.add_daemon_status(i, report);
                }
                self.reply(reply);
            }
        }
        self.update_names();
        true
    }

    /// Gives the ibacm door the names the ports learned, when they change:
    /// the one port's table as it is, or several ports' merged (the first
    /// port's entries first).
    fn update_names(&mut self) {
        if self.acm.is_none() && self.kernel.is_none() {
            return;
        }
        let mut changed = false;
        for p in &mut self.ports {
            let generation = p.core.names_generation();
            changed |= generation != p.names_generation;
            p.names_generation = generation;
        }
        if !changed {
            return;
        }
        let names = match &self.ports[..] {
            [one] => Arc::clone(one.core.names()),
            several => {
                let mut merged = Names::new();
                for p in several {
                    merged.fill_from(p.core.names());
                }
                Arc::new(merged)
            }
        };
        if let Some(door) = self.kernel.as_mut() {
            door.service.set_learned_names(Arc::clone(&names));
        }
        if let Some(acm) = self.acm.as_mut() {
            acm.set_learned_names(names);
        }
    }

    /// A local request for port `agent`'s core.
    fn ask(&mut self, now: Instant, agent: usize, conn: ConnId, id: u32, request: Request) {
        match self.ports.get_mut(agent) {
            Some(p) => p.core.handle_local(now, conn, id, request),
            None => warn!(agent, "a request for a port this daemon does not serve"),
        }
    }

    fn api_event(&mut self, now: Instant, event: ApiEvent) {
        match event {
            ApiEvent::Opened { conn, outbox, user } => {
                self.connections.insert(conn, outbox);
                // What it registers counts against its user's limits.
                for p in &mut self.ports {
                    p.core.handle_local_opened(conn, user);
                }
            }
            ApiEvent::Request {
                conn,
                agent,
                id,
                request,
            } => self.ask(now, agent, conn, id, request),
            ApiEvent::Bad {
                conn,
                id,
                status,
                close,
            } => {
                debug!(
                    conn,
                    status = format_args!("{status:#06x}"),
                    "a bad local API frame"
                );
                self.send(conn, api::error_frame(id, status).encode());
                if close {
                    // After the error frame that says why.
                    if let Some(outbox) = self.forget(now, conn) {
                        outbox.finish();
                    }
                }
            }
            ApiEvent::Closed { conn } => self.disconnect(now, conn),
        }
    }

    fn acm_event(&mut self, now: Instant, event: AcmEvent) {
        match event {
            AcmEvent::Opened { conn, outbox } => {
                self.connections.insert(conn, outbox);
            }
            AcmEvent::Message { conn, message } => {
                let Some(acm) = self.acm.as_mut() else { return };
                match acm.handle_message(conn, &message) {
                    Step::Reply(reply) => self.send(conn, reply),
                    Step::Ask { agent, id, request } => self.ask(now, agent, conn, id, request),
                }
            }
            AcmEvent::Closed { conn } => self.disconnect(now, conn),
        }
    }

    /// A datagram from the kernel: replies to send, questions for the
    /// cores.
    fn kernel_datagram(&mut self, now: Instant, from: NetlinkSender, datagram: &[u8]) {
        let Some(door) = self.kernel.as_mut() else {
            return;
        };
        let actions = door.service.handle_datagram(now, from, datagram);
        if let Some(errno) = door.service.take_kernel_error()
            && let Some(earlier_not_logged) =
                door.log.allow(now, "kernel refusal", errno.unsigned_abs())
        {
            warn!(
                error = %std::io::Error::from_raw_os_error(errno),
                earlier_not_logged,
                "the kernel refused a netlink message of ours (EPERM: local-sa needs CAP_NET_ADMIN to answer the kernel)"
            );
        }
        for action in actions {
            match action {
                NetlinkAction::Reply(reply) => {
                    if let Some(door) = self.kernel.as_mut() {
                        door.send(reply);
                    }
                }
                NetlinkAction::Ask { agent, id, request } => {
                    self.ask(now, agent, kernel_door::CONN, id, request);
                }
            }
        }
    }

    /// A reply from a core, as a message on its connection: the kernel's
    /// if the kernel door asked, an ibacm reply if the ibacm door asked,
    /// else a local API frame.
    fn reply(&mut self, r: LocalReply) {
        if r.conn == kernel_door::CONN {
            if let Some(door) = self.kernel.as_mut()
                && let Some(reply) = door.service.handle_reply(&r)
            {
                door.send(reply);
            }
            return;
        }
        let acm = self.acm.as_mut().and_then(|a| a.handle_reply(&r));
        match acm {
            Some(Step::Reply(message)) => self.send(r.conn, message),
            // The door's next question (an alternate path) for the same
            // client: answered by the next poll of that core.
            Some(Step::Ask { agent, id, request }) => {
                self.ask(Instant::now(), agent, r.conn, id, request);
            }
            None => {
                for frame in api::reply_frames(&r) {
                    self.send(r.conn, frame.encode());
                }
            }
        }
    }

    /// Queues a frame for `conn`; a connection that lets more than its
    /// share pile up is not reading and is let go (counted and logged).
    fn send(&mut self, conn: ConnId, frame: Bytes) {
        let Some(outbox) = self.connections.get(&conn) else {
            return;
        };
        if !outbox.push(frame) {
            self.disconnect(Instant::now(), conn);
        }
    }

    /// Forgets `conn`, closes it at once and releases everything it held.
    fn disconnect(&mut self, now: Instant, conn: ConnId) {
        if let Some(outbox) = self.forget(now, conn) {
            outbox.close();
        }
    }

    /// Forgets `conn` and releases everything it held, at every port (an
    /// ibacm connection may have asked any of them); gives back its outbox
    /// for the caller to close.
    fn forget(&mut self, now: Instant, conn: ConnId) -> Option<Outbox> {
        let outbox = self.connections.remove(&conn);
        if outbox.is_some() {
            debug!(conn, "local connection closed");
        }
        if let Some(acm) = self.acm.as_mut() {
            acm.handle_closed(conn);
        }
        for p in &mut self.ports {
            p.core.handle_local_closed(now, conn);
        }
        outbox
    }

    fn port_event(&mut self, now: Instant, i: usize, event: PortEvent) {
        let port = &mut self.ports[i];
        match event {
            PortEvent::Error => warn!(port = %port.facts, "port went down; serving what is cached"),
            PortEvent::PkeyChange => info!(port = %port.facts, "P_Key table changed"),
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
                    port.core.handle_port_change(now, identity(&facts));
                    if let Some(acm) = self.acm.as_mut() {
                        acm.handle_port_change(i, identity(&facts));
                    }
                    if let Some(door) = self.kernel.as_mut() {
                        door.service.handle_port_change(i, identity(&facts));
                    }
                    port.facts = facts;
                }
                Err(e) => {
                    warn!(%event, port = %port.facts, error = %e, "cannot read the port after an event");
                }
            },
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
            .filter(|p| !p.core.is_ready())
            .map(|p| p.facts.to_string())
            .collect();
        let records: u64 = self.ports.iter().map(|p| p.core.counters().records).sum();
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
        report.push(
            "door_connections",
            self.doors.borrow().counters().connections,
        );
        for line in self.settings.log.recent().lines(now) {
            report.push("recent_warning", line);
        }
    }

    /// The doors' and the kernel door's counters.
    fn daemon_counters(&self) -> Vec<(&'static str, u64)> {
        let mut fields = self.doors.borrow().counters().fields().to_vec();
        if let Some(door) = &self.kernel {
            fields.extend(door.service.counters().fields());
            fields.push(("netlink_replies_dropped", door.dropped));
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
            .map(|p| crate::metrics::PortMetrics {
                label: format!("{}/{}", p.facts.ca, p.facts.port),
                counters: p.counters(),
                stats: p.core.stats().clone(),
                registrants: p.core.registrants(),
            })
            .collect();
        let mut daemon = self.daemon_counters();
        daemon.push(("metrics_refused", shared.refused.get()));
        *shared.text.borrow_mut() = crate::metrics::render(&ports, &daemon);
    }
}

/// Waits for the next thing to happen.
async fn next_wake(
    src: &mut Sources,
    timer: &mut Timer,
    stats_timer: &mut Timer,
    watchdog: &mut Timer,
) -> Wake {
    let mad = async {
        src.incoming
            .recv()
            .await
            .map_or(Wake::Closed, |(i, m)| Wake::Mad(i, m))
    };
    let api = async {
        match src.api.recv().await {
            Ok(e) => Wake::Api(e),
            // No API (or it stopped): keep serving MADs.
            Err(_) => std::future::pending().await,
        }
    };
    let acm = async {
        match src.acm.recv().await {
            Ok(e) => Wake::Acm(e),
            Err(_) => std::future::pending().await,
        }
    };
    let kernel = async {
        match src.kernel.recv().await {
            Ok(d) => Wake::Kernel(d),
            Err(_) => std::future::pending().await,
        }
    };
    let port = async {
        match src.port_events.recv().await {
            Ok((i, e)) => Wake::Port(i, e),
            Err(_) => std::future::pending().await,
        }
    };
    let signal = async {
        match src.signals.next().await {
            Some(Ok(Signal::Hup)) => Wake::HangUp,
            _ => Wake::Signal,
        }
    };
    let timers = async {
        smol::future::or(
            async {
                timer.await;
                Wake::Timer
            },
            smol::future::or(
                async {
                    stats_timer.await;
                    Wake::Stats
                },
                async {
                    watchdog.await;
                    Wake::Watchdog
                },
            ),
        )
        .await
    };
    smol::future::or(
        mad,
        smol::future::or(
            smol::future::or(api, smol::future::or(acm, kernel)),
            smol::future::or(port, smol::future::or(signal, timers)),
        ),
    )
    .await
}
