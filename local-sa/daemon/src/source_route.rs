//! The kernel's choice of source address for an IP destination, as ibacm
//! asks it (`acm_svr_select_src`): a UDP socket connected to the
//! destination is bound by the kernel to the source address of its route,
//! which `getsockname` tells. Connecting a UDP socket sends nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use local_sa_core::doors::acm::SourceRoute;

/// The kernel's routing table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelRoutes;

/// Any port: the route does not depend on it, and nothing is sent.
const ANY_PORT: u16 = 9;

impl SourceRoute for KernelRoutes {
    fn source_for(&self, destination: IpAddr) -> Option<IpAddr> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_routes_loopback_from_loopback() {
        let lo: IpAddr = Ipv4Addr::LOCALHOST.into();
        assert_eq!(KernelRoutes.source_for(lo), Some(lo));
    }
}
