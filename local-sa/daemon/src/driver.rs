//! The driver: one smol task that feeds the core everything that happens
//! (MADs, its timer, port events, local API requests, signals) and carries
//! out what it asks (MADs to send, replies to local connections).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_signal::Signals;
use bytes::Bytes;
use smol::Timer;
use smol::channel::{Receiver, Sender};
use smol::stream::StreamExt as _;
use tracing::{debug, info, warn};

use crate::acm_socket::AcmEvent;
use crate::api::ApiEvent;
use crate::bridge::{self, identity};
use crate::stats::StatsFile;
use local_sa_core::SaCore;
use local_sa_core::acm::{AcmService, Step};
use local_sa_core::api;
use local_sa_core::request::{ConnId, LocalReply};
use umad::port::{PortFacts, Sysfs};
use umad::port_events::PortEvent;
use umad::{AgentId, IncomingMad, OutgoingMad};

/// How long a shutdown waits for the master to confirm the unsubscribes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What woke the driver.
enum Wake {
    Mad(IncomingMad),
    Port(PortEvent),
    Api(ApiEvent),
    Acm(AcmEvent),
    Signal,
    Timer,
    Stats,
    Closed,
}

/// The sources the driver waits on.
pub(crate) struct Sources {
    pub(crate) incoming: Receiver<IncomingMad>,
    pub(crate) port_events: Receiver<PortEvent>,
    pub(crate) api: Receiver<ApiEvent>,
    pub(crate) acm: Receiver<AcmEvent>,
    pub(crate) signals: Signals,
}

pub(crate) struct Driver {
    pub(crate) core: SaCore,
    pub(crate) agent: AgentId,
    pub(crate) outgoing: Sender<OutgoingMad>,
    pub(crate) sysfs: Sysfs,
    pub(crate) facts: PortFacts,
    pub(crate) stats: Option<StatsFile>,
    pub(crate) stats_interval: Duration,
    /// Each local connection's outgoing frames (both doors).
    pub(crate) connections: HashMap<ConnId, Sender<Bytes>>,
    /// The ibacm door, if it serves.
    pub(crate) acm: Option<AcmService>,
    /// The generation of the core's learned names the door has.
    pub(crate) names_generation: u64,
}

impl Driver {
    pub(crate) async fn run(mut self, mut src: Sources) {
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
            let wake = next_wake(&mut src, &mut timer, &mut stats_timer).await;
            let now = Instant::now();
            match wake {
                Wake::Mad(m) => {
                    self.core.handle_mad(now, bridge::received(m));
                    // Take whatever else has arrived before sending: one
                    // wake-up for a burst.
                    while let Ok(m) = src.incoming.try_recv() {
                        self.core.handle_mad(now, bridge::received(m));
                    }
                }
                Wake::Api(e) => self.api_event(now, e),
                Wake::Acm(e) => self.acm_event(now, e),
                Wake::Timer => {
                    armed = None;
                    self.core.handle_timeout(now);
                }
                Wake::Port(e) => self.port_event(now, e),
                Wake::Stats => self.write_stats(),
                Wake::Signal if shutdown_by.is_none() => {
                    info!("shutting down: withdrawing subscriptions and memberships at the master");
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
            notices = c.notices,
            joins_local = c.joins_local,
            joins_upstream = c.joins_upstream,
            errors = c.errors,
            records = c.records,
            "stopped"
        );
    }

    /// Hands every MAD the core wants sent to the writer thread and every
    /// local reply to its connection. False if the transport is gone.
    async fn flush(&mut self) -> bool {
        while let Some(t) = self.core.poll_transmit() {
            if self
                .outgoing
                .send(bridge::outgoing(self.agent, t))
                .await
                .is_err()
            {
                return false;
            }
        }
        while let Some(reply) = self.core.poll_local() {
            self.reply(reply);
        }
        if let Some(acm) = self.acm.as_mut() {
            let generation = self.core.names_generation();
            if generation != self.names_generation {
                self.names_generation = generation;
                acm.set_learned_names(std::sync::Arc::clone(self.core.names()));
            }
        }
        true
    }

    fn api_event(&mut self, now: Instant, event: ApiEvent) {
        match event {
            ApiEvent::Opened { conn, writer } => {
                self.connections.insert(conn, writer);
            }
            ApiEvent::Request { conn, id, request } => {
                self.core.handle_local(now, conn, id, request);
            }
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
                    self.disconnect(now, conn);
                }
            }
            ApiEvent::Closed { conn } => self.disconnect(now, conn),
        }
    }

    fn acm_event(&mut self, now: Instant, event: AcmEvent) {
        match event {
            AcmEvent::Opened { conn, writer } => {
                self.connections.insert(conn, writer);
            }
            AcmEvent::Message { conn, message } => {
                let Some(acm) = self.acm.as_mut() else { return };
                match acm.handle_message(conn, &message) {
                    Step::Reply(reply) => self.send(conn, reply),
                    // One agent serves every endpoint: the port's.
                    Step::Ask { id, request, .. } => self.core.handle_local(now, conn, id, request),
                }
            }
            AcmEvent::Closed { conn } => self.disconnect(now, conn),
        }
    }

    /// A reply from the core, as a message on its connection: an ibacm
    /// reply if the ibacm door asked, else a local API frame.
    fn reply(&mut self, r: LocalReply) {
        let acm = self.acm.as_mut().and_then(|a| a.handle_reply(&r));
        match acm {
            Some(Step::Reply(message)) => self.send(r.conn, message),
            // The door's next question (an alternate path) for the same
            // client: answered by the next poll of the core.
            Some(Step::Ask { id, request, .. }) => {
                self.core.handle_local(Instant::now(), r.conn, id, request);
            }
            None => self.send(r.conn, api::reply_frame(&r).encode()),
        }
    }

    /// Queues a frame for `conn`; a connection whose queue is full is not
    /// reading and is let go.
    fn send(&mut self, conn: ConnId, frame: Bytes) {
        let Some(tx) = self.connections.get(&conn) else {
            return;
        };
        if tx.try_send(frame).is_err() {
            warn!(
                conn,
                "a local API client does not read its replies: disconnecting it"
            );
            self.disconnect(Instant::now(), conn);
        }
    }

    /// Forgets `conn` and releases everything it held.
    fn disconnect(&mut self, now: Instant, conn: ConnId) {
        if self.connections.remove(&conn).is_some() {
            debug!(conn, "local connection closed");
        }
        if let Some(acm) = self.acm.as_mut() {
            acm.handle_closed(conn);
        }
        self.core.handle_local_closed(now, conn);
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
                    if let Some(acm) = self.acm.as_mut() {
                        acm.handle_port_change(0, identity(&facts));
                    }
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

/// Waits for the next thing to happen.
async fn next_wake(src: &mut Sources, timer: &mut Timer, stats_timer: &mut Timer) -> Wake {
    let mad = async { src.incoming.recv().await.map_or(Wake::Closed, Wake::Mad) };
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
    let port = async {
        match src.port_events.recv().await {
            Ok(e) => Wake::Port(e),
            Err(_) => std::future::pending().await,
        }
    };
    let signal = async {
        src.signals.next().await;
        Wake::Signal
    };
    let timers = async {
        smol::future::or(
            async {
                timer.await;
                Wake::Timer
            },
            async {
                stats_timer.await;
                Wake::Stats
            },
        )
        .await
    };
    smol::future::or(
        mad,
        smol::future::or(
            smol::future::or(api, acm),
            smol::future::or(port, smol::future::or(signal, timers)),
        ),
    )
    .await
}
