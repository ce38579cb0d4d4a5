//! Port events: from libibverbs' async event queue where a verbs device
//! exists (hardware), otherwise by polling the port's facts in sysfs.
//!
//! Under the simulator there is no verbs device, and the sysfs it serves is
//! a snapshot taken when the process first touched the device, so polling
//! sees no change there; the SA core also learns of SM changes from the
//! SA traffic itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use smol::channel::{self, Receiver, Sender};
use tracing::{debug, info, warn};

use crate::port::{PortFacts, PortState, Sysfs};
use crate::sys::verbs;

/// Something changed on the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
    /// Its LID changed.
    LidChange,
    /// Its P_Key table changed.
    PkeyChange,
    /// A different SM is master (or the SM LID changed).
    SmChange,
    /// The SM asked every client to register again (new master, restart).
    ClientReregister,
    /// Its GID table changed.
    GidChange,
}

impl std::fmt::Display for PortEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Active => "port active",
            Self::Error => "port error",
            Self::LidChange => "LID change",
            Self::PkeyChange => "P_Key change",
            Self::SmChange => "SM change",
            Self::ClientReregister => "client reregister",
            Self::GidChange => "GID change",
        })
    }
}

impl PortEvent {
    /// Maps `enum ibv_event_type` (rdma-core) to a port event.
    pub fn from_verbs(event_type: u32) -> Option<Self> {
        Some(match event_type {
            9 => Self::Active,
            10 => Self::Error,
            11 => Self::LidChange,
            12 => Self::PkeyChange,
            13 => Self::SmChange,
            17 => Self::ClientReregister,
            18 => Self::GidChange,
            _ => return None,
        })
    }
}

/// The events that turn `old` facts into `new` ones.
pub fn diff(old: &PortFacts, new: &PortFacts) -> Vec<PortEvent> {
    let mut events = Vec::new();
    let was_active = old.state == PortState::Active;
    let is_active = new.state == PortState::Active;
    if is_active && !was_active {
        events.push(PortEvent::Active);
    }
    if was_active && !is_active {
        events.push(PortEvent::Error);
    }
    if old.lid != new.lid || old.lmc != new.lmc {
        events.push(PortEvent::LidChange);
    }
    if old.sm_lid != new.sm_lid || old.sm_sl != new.sm_sl {
        events.push(PortEvent::SmChange);
    }
    if old.gid != new.gid {
        events.push(PortEvent::GidChange);
    }
    events
}

/// Where events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSource {
    /// libibverbs async events.
    Verbs,
    /// Polling sysfs.
    SysfsPoll,
}

impl std::fmt::Display for EventSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Verbs => "verbs async events",
            Self::SysfsPoll => "polling sysfs",
        })
    }
}

/// A thread producing events for one port.
#[derive(Debug)]
pub struct PortEvents {
    events: Receiver<PortEvent>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    source: EventSource,
}

impl PortEvents {
    /// Watches `facts`' port: through verbs if its adapter is a verbs
    /// device, else by reading sysfs every `poll_interval`.
    pub fn start(
        facts: &PortFacts,
        sysfs: Sysfs,
        poll_interval: Duration,
    ) -> std::io::Result<Self> {
        let (tx, rx) = channel::bounded(64);
        let stop = Arc::new(AtomicBool::new(false));
        let has_verbs = verbs::device_names().contains(&facts.ca);
        let (source, thread) = match has_verbs.then(|| verbs::VerbsContext::open(&facts.ca)) {
            Some(Ok(ctx)) => {
                info!(ca = %facts.ca, "port events from libibverbs");
                let (stop2, port) = (Arc::clone(&stop), u32::from(facts.port));
                let t = std::thread::Builder::new()
                    .name("port-events".into())
                    .spawn(move || verbs_loop(ctx, port, &stop2, &tx))?;
                (EventSource::Verbs, t)
            }
            other => {
                if let Some(Err(e)) = other {
                    warn!(ca = %facts.ca, error = %e, "cannot open the verbs device; polling sysfs for port changes");
                } else {
                    debug!(ca = %facts.ca, "no verbs device; polling sysfs for port changes");
                }
                let (stop2, old) = (Arc::clone(&stop), facts.clone());
                let t = std::thread::Builder::new()
                    .name("port-poll".into())
                    .spawn(move || poll_loop(sysfs, old, poll_interval, &stop2, &tx))?;
                (EventSource::SysfsPoll, t)
            }
        };
        Ok(Self {
            events: rx,
            stop,
            thread: Some(thread),
            source,
        })
    }

    /// Where the events come from.
    pub fn source(&self) -> EventSource {
        self.source
    }

    /// The events as they happen.
    pub fn events(&self) -> Receiver<PortEvent> {
        self.events.clone()
    }
}

impl Drop for PortEvents {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn verbs_loop(mut ctx: verbs::VerbsContext, port: u32, stop: &AtomicBool, tx: &Sender<PortEvent>) {
    while !stop.load(Ordering::Acquire) {
        match ctx.next_event(100) {
            Ok(Some(ev)) if ev.port == port => {
                if let Some(e) = PortEvent::from_verbs(ev.event_type) {
                    let _ = tx.try_send(e);
                }
            }
            Ok(_) => {}
            Err(e) => {
                warn!(error = %e, "reading verbs async events failed; port events stop");
                return;
            }
        }
    }
}

fn poll_loop(
    sysfs: Sysfs,
    mut old: PortFacts,
    every: Duration,
    stop: &AtomicBool,
    tx: &Sender<PortEvent>,
) {
    let step = Duration::from_millis(100).min(every);
    let mut waited = Duration::ZERO;
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(step);
        waited += step;
        if waited < every {
            continue;
        }
        waited = Duration::ZERO;
        let Ok(new) = sysfs.select(Some(&old.ca), Some(old.port)) else {
            continue;
        };
        for e in diff(&old, &new) {
            let _ = tx.try_send(e);
        }
        old = new;
    }
}

#[cfg(test)]
mod tests {
    use mad_codec::Gid;

    use super::*;

    fn facts() -> PortFacts {
        PortFacts {
            ca: "mlx5_0".into(),
            port: 1,
            lid: 5,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            gid: Gid::new(Gid::DEFAULT_PREFIX, 7),
            state: PortState::Active,
            cap_mask: 0,
            link_layer: "InfiniBand".into(),
            umad_index: Some(0),
        }
    }

    #[test]
    fn sysfs_changes_become_events() {
        let old = facts();
        assert!(diff(&old, &old).is_empty());
        let new = PortFacts {
            sm_lid: 9,
            lid: 6,
            ..old.clone()
        };
        assert_eq!(
            diff(&old, &new),
            [PortEvent::LidChange, PortEvent::SmChange]
        );
        let down = PortFacts {
            state: PortState::Down,
            ..old.clone()
        };
        assert_eq!(diff(&old, &down), [PortEvent::Error]);
        assert_eq!(diff(&down, &old), [PortEvent::Active]);
    }

    #[test]
    fn verbs_event_numbers() {
        assert_eq!(PortEvent::from_verbs(17), Some(PortEvent::ClientReregister));
        assert_eq!(PortEvent::from_verbs(13), Some(PortEvent::SmChange));
        assert_eq!(PortEvent::from_verbs(0), None);
    }

    #[test]
    fn without_a_verbs_device_events_come_from_sysfs() {
        // No machine this runs on has a verbs device named like this.
        let f = PortFacts {
            ca: "no-such-hca".into(),
            ..facts()
        };
        let sysfs = Sysfs::new("/nonexistent/a", "/nonexistent/b");
        let watcher = PortEvents::start(&f, sysfs, Duration::from_millis(50)).unwrap();
        assert_eq!(watcher.source(), EventSource::SysfsPoll);
        drop(watcher); // joins the thread promptly
    }
}
