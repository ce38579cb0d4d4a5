//! The umad device on two named threads, connected to async code by
//! bounded channels.
//!
//! The reader thread polls with a short time-out (the simulator's `poll`
//! can watch only the umad descriptor, so there is no second descriptor to
//! wake it), reads everything waiting and hands each MAD to a handler: by
//! default one that feeds the incoming channel, or the caller's own
//! ([`UmadTransport::start_with`]), which can answer on the reader thread
//! itself and so spare a hand-off per MAD. The writer thread drains the
//! outgoing channel. A MAD sent while nothing is queued for the writer
//! goes out on the sender's own thread instead ([`Outlet::send`]): the
//! device's descriptor is non-blocking, so that costs no more than the
//! write, and saves waking the writer. On shutdown the stop flag and the
//! closed channel end both loops, both are joined, and only then is the
//! device closed.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use tracing::{debug, warn};

use crate::device::{IncomingMad, OutgoingMad, UmadDevice};

/// How long the reader waits in `poll` before checking the stop flag.
const POLL_MS: i32 = 100;

/// A umad device served by reader and writer threads.
#[derive(Debug)]
pub struct UmadTransport {
    incoming: Receiver<IncomingMad>,
    outlet: Outlet,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Where MADs are sent from, on any thread: the device itself when
/// nothing waits for the writer thread, else the writer thread's channel.
#[derive(Debug, Clone)]
pub struct Outlet {
    device: Arc<UmadDevice>,
    outgoing: Sender<OutgoingMad>,
    /// MADs given to the writer thread and not yet written: while there
    /// are any, new ones queue behind them, so that MADs leave in order.
    queued: Arc<AtomicUsize>,
}

impl Outlet {
    /// Sends `mad`: at once on this thread when nothing waits for the
    /// writer thread and the device takes it, else through the writer
    /// thread (which reports failures). `Full` when the writer thread is
    /// as far behind as its channel allows; the MAD is given back. MADs
    /// sent this way leave in order among themselves (not with ones put on
    /// [`UmadTransport::outgoing`] directly: use one or the other).
    pub fn send(&self, mad: OutgoingMad) -> Result<(), channel::TrySendError<OutgoingMad>> {
        if self.queued.load(Ordering::Acquire) == 0 && self.device.send(&mad).is_ok() {
            return Ok(());
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.outgoing.try_send(mad).inspect_err(|_| {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        })
    }
}

impl UmadTransport {
    /// Starts the threads, the reader putting each MAD on
    /// [`UmadTransport::incoming`]. `depth` bounds each channel: a slow
    /// consumer makes the reader wait (and the kernel queue absorb the
    /// rest).
    pub fn start(device: UmadDevice, depth: usize) -> io::Result<Self> {
        let (in_tx, in_rx) = channel::bounded(depth.max(1));
        Self::spawn(device, depth, in_rx, move |mad, _: &Outlet| {
            in_tx.send_blocking(mad).is_ok()
        })
    }

    /// Starts the threads, the reader handing each MAD to `handle`, on the
    /// reader thread, with the outlet to answer through; `handle` returns
    /// false when it takes no more (the reader then stops). Its own
    /// [`UmadTransport::incoming`] stays empty (closed).
    pub fn start_with(
        device: UmadDevice,
        depth: usize,
        handle: impl FnMut(IncomingMad, &Outlet) -> bool + Send + 'static,
    ) -> io::Result<Self> {
        let (_, unused) = channel::bounded(1);
        Self::spawn(device, depth, unused, handle)
    }

    fn spawn(
        device: UmadDevice,
        depth: usize,
        incoming: Receiver<IncomingMad>,
        handle: impl FnMut(IncomingMad, &Outlet) -> bool + Send + 'static,
    ) -> io::Result<Self> {
        let device = Arc::new(device);
        let stop = Arc::new(AtomicBool::new(false));
        let (out_tx, out_rx) = channel::bounded::<OutgoingMad>(depth.max(1));
        let outlet = Outlet {
            device: Arc::clone(&device),
            outgoing: out_tx,
            queued: Arc::new(AtomicUsize::new(0)),
        };
        let reader = {
            let outlet = outlet.clone();
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("umad-rx".into())
                .spawn(move || read_loop(&outlet, &stop, handle))?
        };
        let writer = {
            let queued = Arc::clone(&outlet.queued);
            std::thread::Builder::new()
                .name("umad-tx".into())
                .spawn(move || {
                    let mut failures = Repeats::default();
                    while let Ok(mad) = out_rx.recv_blocking() {
                        let sent = device.send(&mad);
                        // MADs put on `outgoing()` directly were never
                        // counted: the count stops at zero.
                        let _ = queued.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                            n.checked_sub(1)
                        });
                        if let Err(e) = sent
                            && let Some(left_out) = failures.allow()
                        {
                            warn!(
                                dest_lid = mad.dest.lid,
                                error = %e,
                                earlier_not_logged = left_out,
                                "umad write failed"
                            );
                        }
                    }
                })?
        };
        Ok(Self {
            incoming,
            outlet,
            stop,
            threads: vec![reader, writer],
        })
    }

    /// The device.
    pub fn device(&self) -> &UmadDevice {
        &self.outlet.device
    }

    /// MADs as they arrive. Ends when the transport shuts down.
    pub fn incoming(&self) -> Receiver<IncomingMad> {
        self.incoming.clone()
    }

    /// Where MADs are sent from, for other threads.
    pub fn outlet(&self) -> &Outlet {
        &self.outlet
    }

    /// Where to put MADs to send.
    pub fn outgoing(&self) -> Sender<OutgoingMad> {
        self.outlet.outgoing.clone()
    }

    /// Stops both threads, sending what is already queued, and closes the
    /// device.
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.outlet.outgoing.close();
        self.stop.store(true, Ordering::Release);
        self.incoming.close();
        for t in self.threads.drain(..) {
            let name = t.thread().name().unwrap_or("umad").to_owned();
            if t.join().is_err() {
                warn!(thread = %name, "umad thread panicked");
            }
        }
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// A failure that may repeat at the rate MADs arrive: logged at most once a
/// minute, with how many were left out since the last line.
#[derive(Debug, Default)]
struct Repeats {
    logged: Option<Instant>,
    left_out: u64,
}

impl Repeats {
    /// `Some(left out)` if this one is logged.
    fn allow(&mut self) -> Option<u64> {
        let now = Instant::now();
        match self.logged {
            Some(t) if now.duration_since(t) < Duration::from_secs(60) => {
                self.left_out += 1;
                None
            }
            _ => {
                self.logged = Some(now);
                Some(std::mem::take(&mut self.left_out))
            }
        }
    }
}

fn read_loop(
    outlet: &Outlet,
    stop: &AtomicBool,
    mut handle: impl FnMut(IncomingMad, &Outlet) -> bool,
) {
    let device = &outlet.device;
    let (mut poll_failures, mut read_failures) = (Repeats::default(), Repeats::default());
    while !stop.load(Ordering::Acquire) {
        match device.wait_readable(POLL_MS) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => {
                if let Some(left_out) = poll_failures.allow() {
                    warn!(error = %e, earlier_not_logged = left_out, "poll on the umad device failed");
                }
                std::thread::sleep(Duration::from_millis(POLL_MS as u64));
                continue;
            }
        }
        loop {
            match device.recv() {
                Ok(Some(mad)) => {
                    if !handle(mad, outlet) {
                        debug!("the MADs' handler takes no more; umad reader stops");
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    if let Some(left_out) = read_failures.allow() {
                        warn!(error = %e, earlier_not_logged = left_out, "umad read failed");
                    }
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Repeats;

    #[test]
    fn a_repeating_failure_is_logged_once_a_minute_with_a_count() {
        let mut r = Repeats::default();
        assert_eq!(r.allow(), Some(0));
        for _ in 0..1000 {
            assert_eq!(r.allow(), None);
        }
        assert_eq!(r.left_out, 1000, "counted for the next line");
    }
}
