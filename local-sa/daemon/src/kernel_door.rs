//! The kernel door's socket: where the kernel's RDMA_NL_LS queries come
//! in and the replies go out. The socket is the one systemd passed
//! (`ListenNetlink=rdma 4`; in tests, one end of a datagram socketpair)
//! or a NETLINK_RDMA socket the daemon opens; where the kernel has no
//! NETLINK_RDMA, the door stays shut and says so once.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use bytes::Bytes;
use smol::Async;
use smol::channel::{Receiver, Sender};
use tracing::{debug, info, warn};

use local_sa_core::netlink::{KernelPort, NetlinkConfig, NetlinkService, wire};
use local_sa_core::request::ConnId;
use umad::netlink::NetlinkSocket;

use crate::bridge::identity;
use crate::error::DaemonError;
use crate::options::Options;
use crate::port_agent::PortAgent;

/// The connection number of the kernel door's requests to the agents
/// (local connections count up from 1).
pub(crate) const CONN: ConnId = ConnId::MAX;

/// The longest datagram read: RESOLVEs are about 150 bytes; anything
/// longer is cut and refused by the decoder.
const MAX_DATAGRAM: usize = 4096;
/// Replies queued for the socket at most; past that they are dropped
/// (the kernel asks the SA itself after its time-out) and counted.
pub(crate) const MAX_QUEUED_REPLIES: usize = 4096;

/// The door for `ports`: every served port by its device name and number,
/// and the names from the files for IP_RESOLVE.
pub(crate) fn service(
    options: &Options,
    ports: &[PortAgent],
) -> Result<NetlinkService, DaemonError> {
    let kernel_ports = ports
        .iter()
        .enumerate()
        .map(|(agent, p)| KernelPort {
            agent,
            device: p.facts.ca.clone(),
            port_num: p.facts.port,
            port: identity(&p.facts),
        })
        .collect();
    let names = crate::endpoints::names(options).map_err(DaemonError::Acm)?;
    Ok(NetlinkService::new(
        NetlinkConfig::default(),
        CONN,
        kernel_ports,
        names,
    ))
}

/// The socket to serve, if any: the inherited one, else (unless turned
/// off) one of the daemon's own.
pub(crate) fn socket(inherited: Option<OwnedFd>, open_own: bool) -> Option<NetlinkSocket> {
    if let Some(fd) = inherited {
        return match NetlinkSocket::inherited(fd) {
            Ok(s) => {
                info!("serving the kernel's RDMA_NL_LS queries on the inherited netlink socket");
                Some(s)
            }
            Err(e) => {
                warn!(error = %e, "cannot use the inherited netlink socket; the kernel's queries are not served");
                None
            }
        };
    }
    if !open_own {
        return None;
    }
    match NetlinkSocket::open() {
        Ok(s) => {
            info!("serving the kernel's RDMA_NL_LS queries (NETLINK_RDMA, group RDMA_NL_GROUP_LS)");
            Some(s)
        }
        Err(e) => {
            info!(
                error = %e,
                "no NETLINK_RDMA socket: the kernel's PathRecord and IP queries are not served (everything else is)"
            );
            None
        }
    }
}

/// Reads datagrams from `socket` and passes them on, until the socket or
/// the driver goes.
pub(crate) async fn read(socket: Rc<Async<NetlinkSocket>>, to: Sender<Bytes>) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        match socket.read_with(|s| s.recv(&mut buf)).await {
            // A datagram socket whose peer closed reads 0 bytes for ever.
            Ok(0) => {
                info!("the kernel door's socket was closed by its peer");
                return;
            }
            Ok(n) => {
                if to.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot read the kernel door's socket; the kernel's queries are no longer served");
                return;
            }
        }
    }
}

/// Writes each reply from `from` to `socket`.
pub(crate) async fn write(socket: Rc<Async<NetlinkSocket>>, from: Receiver<Bytes>) {
    while let Ok(reply) = from.recv().await {
        if let Err(e) = socket.write_with(|s| s.send(&reply)).await {
            debug!(error = %e, "a reply to the kernel was not sent");
        }
    }
}

/// The SET_TIMEOUT telling the kernel how long to wait for a reply: the
/// longest a query can take here (every attempt at the master, and a
/// margin), within the 40 ms to 200 s the kernel accepts.
pub(crate) fn set_timeout(per_attempt: std::time::Duration, retries: u32) -> Bytes {
    let worst = per_attempt.as_millis() * u128::from(retries + 1) + 500;
    let millis = u32::try_from(worst).unwrap_or(u32::MAX).clamp(40, 200_000);
    wire::set_timeout(1, std::process::id(), millis)
}
