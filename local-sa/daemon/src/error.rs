//! Why the daemon could not run.

use umad::port::PortError;

/// Why the daemon could not run.
#[derive(Debug)]
pub(crate) enum DaemonError {
    /// No port to serve.
    Port(PortError),
    /// The port has no umad device, or it could not be opened or used.
    Device(String),
    /// Signals could not be watched.
    Signals(std::io::Error),
    /// The ibacm door could not be set up.
    Acm(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Port(e) => write!(f, "{e}"),
            Self::Device(e) => write!(f, "{e}"),
            Self::Signals(e) => write!(f, "cannot watch SIGTERM/SIGINT: {e}"),
            Self::Acm(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DaemonError {}
