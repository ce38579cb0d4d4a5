//! The metrics endpoint (`--metrics`): HTTP/1.x `GET /metrics` on a TCP
//! address or a Unix socket, answered with the exposition the driver last
//! rendered (every stats interval). Whoever can connect can hold a
//! connection, so: at most [`MAX_OPEN`] at once (more are closed at once
//! and counted), a request head of at most [`HEAD_LIMIT`] bytes, and
//! [`DEADLINE`] for the whole exchange.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::{Rc, Weak};
use std::time::Duration;

use smol::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tracing::info;

use crate::listener::Listener;
use crate::stream::AsyncIo;

/// Connections served at once.
pub(crate) const MAX_OPEN: usize = 16;
/// Bytes a request's head may have.
pub(crate) const HEAD_LIMIT: usize = 8192;
/// Time a connection has to send its request and take the answer.
pub(crate) const DEADLINE: Duration = Duration::from_secs(5);

/// Where the endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MetricsAddr {
    /// `127.0.0.1:9464`, `[::1]:9464`.
    Tcp(SocketAddr),
    /// An absolute path: a Unix socket.
    Unix(PathBuf),
}

/// Parses `--metrics`' value.
pub(crate) fn parse_addr(s: &str) -> Result<MetricsAddr, String> {
    if s.starts_with('/') {
        return Ok(MetricsAddr::Unix(PathBuf::from(s)));
    }
    s.parse().map(MetricsAddr::Tcp).map_err(|_| {
        format!("{s:?} is neither an address with a port (127.0.0.1:9464) nor a socket path")
    })
}

/// What the driver and the endpoint share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The latest exposition.
    pub(crate) text: RefCell<String>,
    /// Connections refused at [`MAX_OPEN`].
    pub(crate) refused: Cell<u64>,
    /// Connections open now.
    open: Cell<usize>,
}

/// The listening endpoint.
#[derive(Debug)]
pub(crate) struct MetricsListener(Listener);

impl MetricsListener {
    /// Binds `addr` (a Unix socket with mode 0666: the counters are no
    /// secret).
    pub(crate) fn bind(addr: &MetricsAddr) -> std::io::Result<Self> {
        let listener = match addr {
            MetricsAddr::Tcp(a) => Listener::bind_tcp(*a)?,
            MetricsAddr::Unix(path) => Listener::bind(path, 0o666, None)?,
        };
        info!(at = %listener.label(), "serving metrics (GET /metrics)");
        Ok(Self(listener))
    }
}

/// Serves connections until the executor stops.
pub(crate) async fn serve(
    listener: MetricsListener,
    shared: Rc<Shared>,
    ex: Weak<smol::LocalExecutor<'static>>,
) {
    let ids = Cell::new(0);
    loop {
        let (_, stream) = listener.0.accept(&ids).await;
        let stream = stream.into_io();
        let Some(ex) = ex.upgrade() else {
            return;
        };
        if shared.open.get() >= MAX_OPEN {
            shared.refused.set(shared.refused.get() + 1);
            continue;
        }
        shared.open.set(shared.open.get() + 1);
        let shared = shared.clone();
        ex.spawn(async move {
            let exchange = answer(stream, &shared);
            let deadline = async {
                smol::Timer::after(DEADLINE).await;
                Ok(())
            };
            let _ = smol::future::or(exchange, deadline).await;
            shared.open.set(shared.open.get() - 1);
        })
        .detach();
    }
}

/// Reads one request and answers it.
async fn answer(mut stream: Box<dyn AsyncIo>, shared: &Shared) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > HEAD_LIMIT {
            return respond(&mut stream, "431 Request Header Fields Too Large", "").await;
        }
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some("GET"), Some("/metrics")) => {
            let body = shared.text.borrow().clone();
            respond(&mut stream, "200 OK", &body).await
        }
        (Some("GET"), Some(_)) => respond(&mut stream, "404 Not Found", "GET /metrics\n").await,
        _ => respond(&mut stream, "405 Method Not Allowed", "GET /metrics\n").await,
    }
}

async fn respond(stream: &mut Box<dyn AsyncIo>, status: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr("127.0.0.1:9464"),
            Ok(MetricsAddr::Tcp("127.0.0.1:9464".parse().unwrap()))
        );
        assert_eq!(
            parse_addr("/run/local-sa/metrics.sock"),
            Ok(MetricsAddr::Unix("/run/local-sa/metrics.sock".into()))
        );
        assert!(parse_addr("localhost").unwrap_err().contains("neither"));
    }

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn answers_get_metrics_refuses_the_rest_and_limits_connections() {
        let ex = Rc::new(smol::LocalExecutor::new());
        let listener =
            MetricsListener::bind(&MetricsAddr::Tcp("127.0.0.1:0".parse().unwrap())).unwrap();
        let addr = listener.0.tcp_addr().unwrap();
        let shared = Rc::new(Shared::default());
        *shared.text.borrow_mut() = "local_sa_hits_total{port=\"a/1\"} 3\n".into();
        ex.spawn(serve(listener, shared.clone(), Rc::downgrade(&ex)))
            .detach();
        let client = std::thread::spawn(move || {
            let ok = get(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            let missing = get(addr, b"GET /other HTTP/1.0\r\n\r\n");
            let post = get(addr, b"POST /metrics HTTP/1.0\r\n\r\n");
            // One byte past the limit, all of which the server reads.
            let huge = get(addr, &[b'x'; HEAD_LIMIT + 1]);
            // MAX_OPEN idle connections, then one more.
            let idle: Vec<_> = (0..MAX_OPEN)
                .map(|_| std::net::TcpStream::connect(addr).unwrap())
                .collect();
            std::thread::sleep(Duration::from_millis(200));
            let mut extra = std::net::TcpStream::connect(addr).unwrap();
            let mut buf = [0; 16];
            let closed = extra.read(&mut buf).map(|n| n == 0).unwrap_or(true);
            drop(idle);
            (ok, missing, post, huge, closed)
        });
        let (ok, missing, post, huge, closed) = smol::block_on(ex.run(async {
            loop {
                if client.is_finished() {
                    break client.join().unwrap();
                }
                smol::Timer::after(Duration::from_millis(10)).await;
            }
        }));
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Type: text/plain; version=0.0.4"),
            "{ok}"
        );
        assert!(
            ok.ends_with("\r\n\r\nlocal_sa_hits_total{port=\"a/1\"} 3\n"),
            "{ok}"
        );
        assert!(missing.starts_with("HTTP/1.1 404 "), "{missing}");
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        assert!(huge.starts_with("HTTP/1.1 431 "), "{huge}");
        assert!(closed, "the connection past the limit is closed");
        assert_eq!(shared.refused.get(), 1);
    }
}
