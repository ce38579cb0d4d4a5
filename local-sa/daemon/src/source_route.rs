//! The kernel's choice of source address for an IP destination, as ibacm
//! asks it (`acm_svr_select_src`): a UDP socket connected to the
//! destination is bound by the kernel to the source address of its route,
//! which `getsockname` tells. Connecting a UDP socket sends nothing.
//!
//! That is five system calls, for a question whose answer changes only
//! when routes or addresses do: answers are kept for [`KEEP`], so that a
//! process resolving the same destination in a loop (every rank of a job
//! asking for its peers) pays once a second, and a route change is
//! followed within a second.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use local_sa_core::doors::acm::SourceRoute;

/// How long an answer is used again.
const KEEP: Duration = Duration::from_secs(1);

/// Destinations remembered at most (then all are forgotten at once).
const MAX_KEPT: usize = 4096;

/// The kernel's routing table, with the last second's answers.
#[derive(Debug, Default)]
pub(crate) struct KernelRoutes {
    kept: RefCell<HashMap<IpAddr, (Option<IpAddr>, Instant)>>,
}

/// Any port: the route does not depend on it, and nothing is sent.
const ANY_PORT: u16 = 9;

impl KernelRoutes {
    /// Asks the kernel.
    fn lookup(destination: IpAddr) -> Option<IpAddr> {
        let unspecified: IpAddr = match destination {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let socket = UdpSocket::bind(SocketAddr::new(unspecified, 0)).ok()?;
        socket
            .connect(SocketAddr::new(destination, ANY_PORT))
            .ok()?;
        socket.local_addr().ok().map(|a| a.ip())
    }
}

impl SourceRoute for KernelRoutes {
    fn source_for(&self, destination: IpAddr) -> Option<IpAddr> {
        let now = Instant::now();
        let mut kept = self.kept.borrow_mut();
        if let Some((source, at)) = kept.get(&destination)
            && now.duration_since(*at) < KEEP
        {
            return *source;
        }
        let source = Self::lookup(destination);
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(destination, (source, now));
        source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_routes_loopback_from_loopback_and_the_answer_is_kept() {
        let routes = KernelRoutes::default();
        let lo: IpAddr = Ipv4Addr::LOCALHOST.into();
        assert_eq!(routes.source_for(lo), Some(lo));
        assert_eq!(routes.source_for(lo), Some(lo));
        assert_eq!(routes.kept.borrow().len(), 1);
    }

    #[test]
    fn the_kept_answers_are_bounded() {
        let routes = KernelRoutes::default();
        for i in 0..=MAX_KEPT as u32 {
            routes
                .kept
                .borrow_mut()
                .insert(IpAddr::from(i.to_be_bytes()), (None, Instant::now()));
        }
        routes.source_for(Ipv4Addr::LOCALHOST.into());
        assert_eq!(routes.kept.borrow().len(), 1, "cleared at the limit");
    }
}
