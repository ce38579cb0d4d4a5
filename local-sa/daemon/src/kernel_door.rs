//! The kernel door's socket: where the kernel's RDMA_NL_LS queries come
//! in and the replies go out. The socket is the one systemd passed
//! (`ListenNetlink=rdma 4`; in tests, one end of a datagram socketpair)
//! or a NETLINK_RDMA socket the daemon opens; where the kernel has no
//! NETLINK_RDMA, the door stays shut and says so once.

use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use smol::Async;
use smol::channel::{Receiver, Sender};
use tracing::{debug, info, warn};

use local_sa_core::doors::DatagramSender;
use local_sa_core::doors::netlink::{
    KernelPort, NetlinkConfig, NetlinkService, clamp_kernel_timeout,
};
use local_sa_core::request::ConnId;
use umad::netlink::NetlinkSocket;

use crate::bridge::identity;
use crate::door_socket::{DoorEvent, DoorId};
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
    let config = NetlinkConfig {
        kernel_timeout: kernel_timeout(options),
        ..NetlinkConfig::default()
    };
    Ok(NetlinkService::new(config, CONN, kernel_ports, names))
}

/// How long the kernel is told to wait for each reply: --netlink-timeout,
/// else the agent's worst case.
pub(crate) fn kernel_timeout(options: &Options) -> Duration {
    match options.netlink_timeout {
        Some(ms) => clamp_kernel_timeout(Duration::from_millis(ms)),
        None => {
            let agent = options.agent_config();
            NetlinkConfig::worst_case(agent.upstream_timeout, agent.upstream_retries + 1)
        }
    }
}

/// The socket to serve, if any: the inherited one, else (unless turned
/// off) one of the daemon's own.
pub(crate) fn socket(inherited: Option<OwnedFd>, open_own: bool) -> Option<NetlinkSocket> {
    if let Some(fd) = inherited {
        return match NetlinkSocket::inherited(fd) {
            Ok(s) if !s.can_verify_senders() => {
                warn!(
                    "the inherited socket is neither netlink nor connected, so nothing on it can be told to come from the kernel; the kernel's queries are not served"
                );
                None
            }
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

/// Where a datagram door's replies go: gathered while the driver works
/// through what woke it, then written in one system call from the
/// driver's own thread ([`DatagramSink::flush`]), or through the socket's
/// writer task when that has some queued or the socket is full.
pub(crate) struct DatagramSink {
    socket: Rc<Async<NetlinkSocket>>,
    /// To the socket's writer.
    replies: Sender<Bytes>,
    /// Replies gathered since the last flush.
    gathered: Vec<Bytes>,
    /// Datagrams dropped because the writer was that far behind (the
    /// kernel asks the SA itself after its time-out).
    pub(crate) dropped: u64,
}

impl DatagramSink {
    pub(crate) fn new(socket: Rc<Async<NetlinkSocket>>, replies: Sender<Bytes>) -> Self {
        Self {
            socket,
            replies,
            gathered: Vec::new(),
            dropped: 0,
        }
    }

    /// Gathers `reply` for the next [`DatagramSink::flush`].
    pub(crate) fn push(&mut self, reply: Bytes) {
        self.gathered.push(reply);
    }

    /// Writes the replies gathered: at once, as many as the socket takes
    /// in one call, when the writer has none queued (waking the writer
    /// task would cost more than the write); the rest, in order, through
    /// the writer. (A reply written here may pass one the writer is still
    /// waiting to write: the kernel matches replies by sequence number.)
    pub(crate) fn flush(&mut self) {
        if self.gathered.is_empty() {
            return;
        }
        let mut sent = 0;
        if self.replies.is_empty() {
            let frames: Vec<&[u8]> = self.gathered.iter().map(|b| &b[..]).collect();
            match self.socket.get_ref().send_many(&frames) {
                Ok(n) => sent = n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    // That one is lost (the kernel asks the SA itself
                    // after its time-out); the rest still go.
                    debug!(error = %e, "a reply to the kernel was not sent");
                    sent = 1;
                }
            }
        }
        for frame in self.gathered.drain(..).skip(sent) {
            if self.replies.try_send(frame).is_err() {
                self.dropped += 1;
            }
        }
    }
}

/// Replies queued for the writer at which the reader stops taking the
/// kernel's messages until the writer has sent half of them: a peer that
/// reads its replies slowly slows its own questions (the kernel's own
/// sends then fail, and it asks the SA itself) instead of losing replies.
const READ_PAUSE_AT: usize = MAX_QUEUED_REPLIES / 2;

/// How the reader sees the writer's queue.
pub(crate) struct Backlog {
    /// The writer's queue (only its length is read).
    pub(crate) replies: Sender<Bytes>,
    /// A token whenever the writer's queue has drained below half of
    /// [`READ_PAUSE_AT`].
    pub(crate) room: Receiver<()>,
}

/// Reads datagrams from `socket` — every one waiting, up to a batch, per
/// system call — and passes them on with their senders (the driver's
/// door drops what is not the kernel's), until the socket fails or the
/// driver goes; pauses while the writer is [`READ_PAUSE_AT`] behind. An
/// empty datagram is passed on like any other: a datagram socket has no
/// end-of-file.
pub(crate) async fn read(
    socket: Rc<Async<NetlinkSocket>>,
    door: DoorId,
    to: Sender<DoorEvent>,
    backlog: Backlog,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM * NetlinkSocket::BATCH];
    loop {
        while backlog.replies.len() >= READ_PAUSE_AT {
            if backlog.room.recv().await.is_err() {
                return;
            }
        }
        match socket
            .read_with(|s| s.recv_many(&mut buf, MAX_DATAGRAM))
            .await
        {
            Ok(batch) => {
                let drained = batch.len() < NetlinkSocket::BATCH;
                for (got, slot) in batch.iter().zip(buf.chunks(MAX_DATAGRAM)) {
                    let from = match got.from {
                        umad::netlink::DatagramSender::Kernel => DatagramSender::Kernel,
                        umad::netlink::DatagramSender::Process(port) => {
                            DatagramSender::Process(port)
                        }
                        umad::netlink::DatagramSender::Unknown => DatagramSender::Unknown,
                    };
                    let bytes = Bytes::copy_from_slice(&slot[..got.len]);
                    if to
                        .send(DoorEvent::Datagram { door, from, bytes })
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                // A short batch emptied the socket: wait for the next
                // datagram rather than ask again at once, which would most
                // likely find nothing (a system call for naught).
                if drained && let Err(e) = socket.readable().await {
                    warn!(error = %e, "cannot wait on the kernel door's socket; the kernel's queries are no longer served");
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

/// Writes the replies from `from` to `socket` — every one queued, up to a
/// batch, per system call —, telling the reader through `room` when the
/// queue has drained.
pub(crate) async fn write(
    socket: Rc<Async<NetlinkSocket>>,
    from: Receiver<Bytes>,
    room: Sender<()>,
) {
    let mut batch: Vec<Bytes> = Vec::with_capacity(NetlinkSocket::BATCH);
    while let Ok(first) = from.recv().await {
        batch.push(first);
        while batch.len() < NetlinkSocket::BATCH
            && let Ok(more) = from.try_recv()
        {
            batch.push(more);
        }
        let mut sent = 0;
        while sent < batch.len() {
            let rest: Vec<&[u8]> = batch[sent..].iter().map(|b| &b[..]).collect();
            match socket.write_with(|s| s.send_many(&rest)).await {
                Ok(n) => sent += n.max(1),
                Err(e) => {
                    // That one is lost (the kernel asks the SA itself
                    // after its time-out); the rest still go.
                    debug!(error = %e, "a reply to the kernel was not sent");
                    sent += 1;
                }
            }
        }
        batch.clear();
        if from.len() < READ_PAUSE_AT / 2 {
            let _ = room.try_send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixDatagram;

    use super::*;

    /// local-sa's end of a socketpair as the kernel door's socket, the
    /// kernel's end, and the writer task's queue (nothing drains it here).
    fn sink(queue: usize) -> (DatagramSink, UnixDatagram, Receiver<Bytes>) {
        let (ours, kernel) = UnixDatagram::pair().unwrap();
        kernel.set_nonblocking(true).unwrap();
        let socket = NetlinkSocket::inherited(OwnedFd::from(ours)).unwrap();
        let (tx, rx) = smol::channel::bounded(queue);
        let socket = Rc::new(Async::new(socket).unwrap());
        (DatagramSink::new(socket, tx), kernel, rx)
    }

    fn received(kernel: &UnixDatagram) -> Vec<Vec<u8>> {
        let mut buf = [0u8; 64];
        std::iter::from_fn(|| kernel.recv(&mut buf).ok().map(|n| buf[..n].to_vec())).collect()
    }

    #[test]
    fn gathered_replies_are_written_at_once_in_order() {
        let (mut sink, kernel, queue) = sink(4);
        for i in 0..40u8 {
            sink.push(Bytes::from(vec![i; 3]));
        }
        sink.flush();
        // One call takes a batch; the rest wait for the writer, in order.
        let direct = received(&kernel);
        assert_eq!(direct.len(), NetlinkSocket::BATCH);
        assert!(
            direct
                .iter()
                .enumerate()
                .all(|(i, d)| d == &vec![i as u8; 3])
        );
        assert_eq!(queue.len(), 4, "as many as the writer's queue holds");
        assert_eq!(queue.try_recv().unwrap(), Bytes::from(vec![32u8; 3]));
        assert_eq!(
            sink.dropped,
            40 - 32 - 4,
            "the rest counted, not lost silently"
        );
        assert!(sink.gathered.is_empty());
    }

    #[test]
    fn replies_queue_behind_what_the_writer_has_not_sent() {
        let (mut sink, kernel, queue) = sink(8);
        sink.replies.try_send(Bytes::from_static(b"old")).unwrap();
        sink.push(Bytes::from_static(b"new"));
        sink.flush();
        assert!(received(&kernel).is_empty(), "nothing passes the queue");
        assert_eq!(queue.try_recv().unwrap(), Bytes::from_static(b"old"));
        assert_eq!(queue.try_recv().unwrap(), Bytes::from_static(b"new"));
    }
}
