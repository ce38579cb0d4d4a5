//! A port's core as the driver and the port's umad reader thread share it.
//!
//! The reader thread hands each MAD it reads to the core itself and sends
//! what the core then wants sent: a query answered from the cache costs no
//! hand-off between threads, which would be most of what answering it
//! costs. It wakes the driver only when the MAD left the driver work —
//! replies for local programs, a timer moved, names, readiness, idleness —
//! which the core's [`local_sa_core::outlook::Outlook`] before and after tells. Everything else the
//! driver does with the core, it does under the same lock.
//!
//! Whoever sends the core's MADs first rewrites the registrations record if
//! it may have changed ([`ServedPort::send_all`]): the record never lists less
//! than the master may hold, whichever thread sends.

use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use local_sa_core::SaCore;
use local_sa_core::log_limit::LogLimit;
use smol::channel::{Sender, TrySendError};
use tracing::{error, warn};
use umad::{AgentId, IncomingMad, Outlet};

use crate::bridge;
use crate::registrations_file::RegistrationsFile;

/// The umad writer thread is gone: the port can send nothing more.
#[derive(Debug)]
pub(crate) struct TransportClosed;

/// The one warning a port's sending limits: the umad writer falling
/// behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct WriterBehind;

/// What a port's reader thread tells the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoreWake {
    /// Port `.0`'s core has work for the driver.
    Changed(usize),
    /// Port `.0`'s core panicked on the reader thread: the daemon stops,
    /// as it would had the driver's thread panicked.
    Failed(usize),
}

/// A port's core and what goes with sending its MADs.
pub(crate) struct ServedPort {
    core: SaCore,
    /// What the core asked the master to hold, for the next local-sa.
    registrations: RegistrationsFile,
    agent: AgentId,
    /// The port, for the log.
    port: String,
    /// MADs dropped because the writer thread was that far behind (the
    /// device did not take them), and the once-a-minute log of it.
    dropped_out: u64,
    drop_log: LogLimit<WriterBehind>,
}

impl ServedPort {
    pub(crate) fn new(
        core: SaCore,
        registrations: RegistrationsFile,
        agent: AgentId,
        port: String,
    ) -> Self {
        Self {
            core,
            registrations,
            agent,
            port,
            dropped_out: 0,
            drop_log: LogLimit::new(Duration::from_secs(60)),
        }
    }

    /// Rewrites the registrations record if it may have changed, then
    /// hands every MAD the core wants sent to `outlet` without waiting: a
    /// device that does not take MADs must not stop anything else. When
    /// the writer thread is as far behind as its channel allows the MAD is
    /// dropped and counted, as a full send queue drops it on the wire: an
    /// answer's asker and a request's requester both send again.
    pub(crate) fn send_all(
        &mut self,
        outlet: &Outlet,
        now: Instant,
    ) -> Result<(), TransportClosed> {
        self.registrations.update(&self.core, now);
        while let Some(t) = self.core.poll_transmit() {
            match outlet.send(bridge::outgoing(self.agent, t)) {
                Ok(()) => {}
                Err(TrySendError::Closed(_)) => return Err(TransportClosed),
                Err(TrySendError::Full(mad)) => {
                    self.dropped_out += 1;
                    if let Some(earlier_not_logged) = self.drop_log.allow(now, WriterBehind, 0u32) {
                        warn!(
                            port = %self.port,
                            dest_lid = mad.dest.lid,
                            earlier_not_logged,
                            "the umad device is not taking MADs as fast as they come: dropped one"
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// When the registrations record, out of date only by what the master
    /// no longer holds, is written (by [`ServedPort::send_all`]).
    pub(crate) fn record_due(&self) -> Option<Instant> {
        self.registrations.deferred_until(&self.core)
    }

    /// MADs dropped because the writer thread was behind.
    pub(crate) fn dropped_out(&self) -> u64 {
        self.dropped_out
    }

    /// At exit: the registrations record goes, or lists what is left at
    /// the master.
    pub(crate) fn close(self) {
        self.registrations.close(&self.core);
    }
}

/// A port's [`ServedPort`], shared with its reader thread.
#[derive(Clone)]
pub(crate) struct SharedCore {
    served: Arc<Mutex<ServedPort>>,
    /// The reader has woken the driver and the driver has not yet looked:
    /// further changes need no second wake.
    wake_pending: Arc<AtomicBool>,
}

/// The locked core.
pub(crate) struct CoreGuard<'a>(MutexGuard<'a, ServedPort>);

impl SharedCore {
    pub(crate) fn new(served: ServedPort) -> Self {
        Self {
            served: Arc::new(Mutex::new(served)),
            wake_pending: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The core, for as long as the guard lives. A core that panicked on
    /// the reader thread is still handed out: the daemon is stopping, and
    /// its counters and registrations are written on the way out.
    ///
    /// Not re-entrant: a thread that asks again while its guard lives
    /// waits for itself (debug builds panic instead, naming the mistake).
    pub(crate) fn lock(&self) -> CoreGuard<'_> {
        #[cfg(debug_assertions)]
        HELD.with(|held| {
            assert!(
                !held.replace(true),
                "a core locked twice on one thread (or two ports' at once)"
            );
        });
        CoreGuard(self.served.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Called by the driver when woken for this port, before it looks at
    /// the core: a change after this wakes it again.
    pub(crate) fn woken(&self) {
        self.wake_pending.store(false, Ordering::Release);
    }

    /// What the port's reader thread does with each MAD: hands it to the
    /// core, sends what the core wants sent and wakes the driver (port
    /// `index`'s wake on `wakes`) if the MAD left it work. False when the
    /// driver is gone or the core panicked: the reader stops.
    pub(crate) fn mad_handler(
        &self,
        index: usize,
        wakes: Sender<CoreWake>,
    ) -> impl FnMut(IncomingMad, &Outlet) -> bool + Send + 'static {
        let shared = self.clone();
        move |mad, outlet| {
            let handled = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let mut served = shared.lock();
                let before = served.outlook();
                let now = Instant::now();
                served.handle_mad(now, bridge::received(mad));
                let sent = served.send_all(outlet, now);
                let changed = served.outlook() != before;
                drop(served);
                (changed || sent.is_err(), sent.is_ok())
            }));
            match handled {
                Ok((wake, open)) => {
                    let woken = !wake
                        || shared.wake_pending.swap(true, Ordering::AcqRel)
                        || wakes.send_blocking(CoreWake::Changed(index)).is_ok();
                    woken && open
                }
                Err(_) => {
                    error!("the SA core failed on the umad reader thread; local-sa stops");
                    let _ = wakes.send_blocking(CoreWake::Failed(index));
                    false
                }
            }
        }
    }

    /// The [`ServedPort`] itself, once the reader thread is gone.
    pub(crate) fn into_inner(self) -> Option<ServedPort> {
        Arc::try_unwrap(self.served)
            .ok()
            .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(debug_assertions)]
thread_local! {
    /// Whether this thread holds a core's guard.
    static HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(debug_assertions)]
impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        HELD.with(|held| held.set(false));
    }
}

impl CoreGuard<'_> {
    /// See [`ServedPort::send_all`].
    pub(crate) fn send_all(
        &mut self,
        outlet: &Outlet,
        now: Instant,
    ) -> Result<(), TransportClosed> {
        self.0.send_all(outlet, now)
    }

    /// See [`ServedPort::dropped_out`].
    pub(crate) fn dropped_out(&self) -> u64 {
        self.0.dropped_out()
    }

    /// The core's next timeout, or the registrations record's deferred
    /// write if that is sooner.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        let core = self.0.core.poll_timeout();
        core.into_iter().chain(self.0.record_due()).min()
    }
}

impl Deref for CoreGuard<'_> {
    type Target = SaCore;

    fn deref(&self) -> &SaCore {
        &self.0.core
    }
}

impl DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut SaCore {
        &mut self.0.core
    }
}
