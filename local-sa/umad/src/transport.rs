//! The umad device on two named threads, connected to async code by
//! bounded channels.
//!
//! The reader thread polls with a short time-out (the simulator's `poll`
//! can watch only the umad descriptor, so there is no second descriptor to
//! wake it), reads everything waiting and feeds the incoming channel; the
//! writer thread drains the outgoing channel. On shutdown the stop flag and
//! the closed channel end both loops, both are joined, and only then is
//! the device closed.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    device: Arc<UmadDevice>,
    incoming: Receiver<IncomingMad>,
    outgoing: Sender<OutgoingMad>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl UmadTransport {
    /// Starts the threads. `depth` bounds each channel: a slow consumer
    /// makes the reader wait (and the kernel queue absorb the rest).
    pub fn start(device: UmadDevice, depth: usize) -> io::Result<Self> {
        let device = Arc::new(device);
        let stop = Arc::new(AtomicBool::new(false));
        let (in_tx, in_rx) = channel::bounded(depth.max(1));
        let (out_tx, out_rx) = channel::bounded::<OutgoingMad>(depth.max(1));

        let reader = {
            let device = Arc::clone(&device);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("umad-rx".into())
                .spawn(move || read_loop(&device, &stop, &in_tx))?
        };
        let writer = {
            let device = Arc::clone(&device);
            std::thread::Builder::new()
                .name("umad-tx".into())
                .spawn(move || {
                    let mut failures = Repeats::default();
                    while let Ok(mad) = out_rx.recv_blocking() {
                        if let Err(e) = device.send(&mad)
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
            device,
            incoming: in_rx,
            outgoing: out_tx,
            stop,
            threads: vec![reader, writer],
        })
    }

    /// The device.
    pub fn device(&self) -> &UmadDevice {
        &self.device
    }

    /// MADs as they arrive. Ends when the transport shuts down.
    pub fn incoming(&self) -> Receiver<IncomingMad> {
        self.incoming.clone()
    }

    /// Where to put MADs to send.
    pub fn outgoing(&self) -> Sender<OutgoingMad> {
        self.outgoing.clone()
    }

    /// Stops both threads, sending what is already queued, and closes the
    /// device.
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.outgoing.close();
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

fn read_loop(device: &UmadDevice, stop: &AtomicBool, incoming: &Sender<IncomingMad>) {
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
                    if incoming.send_blocking(mad).is_err() {
                        debug!("incoming channel closed; umad reader stops");
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
