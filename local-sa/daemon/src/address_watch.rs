//! Following this host's addresses: a task that waits on the kernel's
//! rtnetlink announcements and tells the driver, at most every
//! [`SETTLE`], that interfaces or addresses changed; the driver then
//! reads the IPoIB interfaces again and gives each endpoint what it owns
//! now (`endpoints::owned_addresses`).

use std::time::{Duration, Instant};

use local_sa_core::names::hosts::HostAddress;
use smol::channel::Sender;
use smol::{Async, Timer};
use tracing::{debug, info, warn};
use umad::address_watch::AddressWatch;
use umad::ipoib::InterfaceAddress;
use umad::port::PortFacts;

use crate::driver::Driver;
use crate::endpoints;

/// How long a burst of changes (an interface brought up with several
/// addresses) is let settle before the interfaces are read again.
pub(crate) const SETTLE: Duration = Duration::from_millis(100);

/// The watch's socket, ready for the event loop; `None` (logged) where it
/// cannot be opened: the addresses then stay as they were at start.
pub(crate) fn open() -> Option<Async<AddressWatch>> {
    match AddressWatch::open().and_then(Async::new) {
        Ok(watch) => Some(watch),
        Err(e) => {
            warn!(error = %e, "cannot follow this host's IP addresses (rtnetlink); the IPoIB addresses found at start stay this node's until it restarts");
            None
        }
    }
}

/// Sends `()` to `changed` after each settled burst of changes, until the
/// driver goes or the socket fails.
pub(crate) async fn follow(watch: Async<AddressWatch>, changed: Sender<()>) {
    loop {
        if let Err(e) = watch.readable().await {
            warn!(error = %e, "cannot wait on the rtnetlink socket; no longer following this host's addresses");
            return;
        }
        match watch.get_ref().take_changes() {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                warn!(error = %e, "cannot read the rtnetlink socket; no longer following this host's addresses");
                return;
            }
        }
        Timer::after(SETTLE).await;
        // What came meanwhile is part of the same change.
        let _ = watch.get_ref().take_changes();
        debug!("interfaces or addresses changed");
        if changed.send(()).await.is_err() {
            return;
        }
    }
}

impl Driver {
    /// Interfaces or addresses changed: each endpoint gets what it owns
    /// now, each door is told, and each port's directory record follows
    /// its IPoIB addresses.
    pub(crate) fn addresses_changed(&mut self, now: Instant) {
        let facts: Vec<PortFacts> = self.ports.iter().map(|p| p.facts.clone()).collect();
        let ipoib: Vec<Vec<InterfaceAddress>> =
            facts.iter().map(umad::ipoib::interface_addresses).collect();
        let owned =
            endpoints::owned_addresses(&self.owned_plan, &facts, &self.acm_endpoints, &ipoib);
        let mut changed = false;
        for (ep, now_owned) in self.acm_endpoints.iter_mut().zip(&owned) {
            if ep.addresses == *now_owned {
                continue;
            }
            changed = true;
            let listed = |of: &[HostAddress], not_in: &[HostAddress]| {
                let v: Vec<String> = of
                    .iter()
                    .filter(|a| !not_in.contains(a))
                    .map(ToString::to_string)
                    .collect();
                v.join(" ")
            };
            info!(
                port = %facts[ep.agent],
                pkey = format_args!("{:#06x}", ep.pkey),
                added = %listed(now_owned, &ep.addresses),
                removed = %listed(&ep.addresses, now_owned),
                "this endpoint's addresses changed"
            );
            ep.addresses.clone_from(now_owned);
        }
        if !changed {
            return;
        }
        for door in &mut self.doors {
            door.set_owned_addresses(&owned);
        }
        for (p, found) in self.ports.iter_mut().zip(&ipoib) {
            let ips = umad::ipoib::ips(found);
            match endpoints::publication(&self.settings.options, &self.owned_plan, &p.facts, &ips) {
                Ok(publication) => p.core().publish(now, publication),
                Err(e) => {
                    warn!(port = %p.facts, error = %e, "this port's directory record is unchanged")
                }
            }
        }
    }
}
