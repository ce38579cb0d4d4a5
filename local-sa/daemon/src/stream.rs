//! A connected stream socket of a door: a Unix socket (every door), or a
//! TCP connection (the ibacm door in ibacm's `loop` and `open` server
//! modes). Both are non-blocking and polled by the event loop.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

use smol::Async;
use smol::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// A socket to read and write with async I/O, of either kind.
pub(crate) trait AsyncIo: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> AsyncIo for T {}

/// One connection's socket.
#[derive(Debug)]
pub(crate) enum Stream {
    /// A Unix stream socket: its peer's user is known.
    Unix(Async<UnixStream>),
    /// A TCP connection: its peer's user is not.
    Tcp(Async<TcpStream>),
}

impl Stream {
    /// Waits until the socket has something to read (or is closed).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.readable().await,
            Self::Tcp(s) => s.readable().await,
        }
    }

    /// Reads what is there, without waiting (`WouldBlock` if nothing).
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => io::Read::read(&mut s.get_ref(), buf),
            Self::Tcp(s) => io::Read::read(&mut s.get_ref(), buf),
        }
    }

    /// Writes all of `bytes`, waiting for room as needed.
    pub(crate) async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Unix(s) => {
                let mut s = s;
                s.write_all(bytes).await
            }
            Self::Tcp(s) => {
                let mut s = s;
                s.write_all(bytes).await
            }
        }
    }

    /// Shuts both directions, which ends the connection's tasks.
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Self::Unix(s) => s.get_ref().shutdown(Shutdown::Both),
            Self::Tcp(s) => s.get_ref().shutdown(Shutdown::Both),
        };
    }

    /// The socket for async reads and writes (the metrics endpoint's
    /// HTTP exchange).
    pub(crate) fn into_io(self) -> Box<dyn AsyncIo> {
        match self {
            Self::Unix(s) => Box::new(s),
            Self::Tcp(s) => Box::new(s),
        }
    }

    /// The socket's descriptor (which the service manager can keep across
    /// a restart).
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd as _;
        match self {
            Self::Unix(s) => s.get_ref().as_fd(),
            Self::Tcp(s) => s.get_ref().as_fd(),
        }
    }

    /// A connected socket passed in by descriptor (a kept client), as
    /// what it is: TCP if it has an IP address, else Unix.
    pub(crate) fn adopt(fd: std::os::fd::OwnedFd) -> io::Result<Self> {
        let tcp = TcpStream::from(fd);
        // getsockname of a Unix socket gives a family TcpStream refuses.
        if tcp.local_addr().is_ok() {
            return Ok(Self::Tcp(Async::new(tcp)?));
        }
        let unix = UnixStream::from(std::os::fd::OwnedFd::from(tcp));
        Ok(Self::Unix(Async::new(unix)?))
    }

    /// The peer's user ID, where the socket tells it (a Unix socket's
    /// credentials); `None` for TCP, whose peer may be on another host.
    pub(crate) fn peer_uid(&self) -> Option<u32> {
        match self {
            Self::Unix(s) => umad::process::peer_uid(s.get_ref()).ok(),
            Self::Tcp(_) => None,
        }
    }
}
