//! How lsaquery stops: an exit status and what to say about it.

use crate::client::Closed;

/// An exit status and what to say about it; or, with status 0 and
/// nothing to say, a stop that is no failure (the reader of the output
/// went away).
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Stop {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// Standard output was closed by its reader: stop, successfully.
    pub(crate) fn output_closed() -> Self {
        Self::new(0, "")
    }
}

impl From<local_sa_distributor::computed::opensm_input::ConfigError> for Stop {
    /// A configuration refused is a usage error (2); one that does not fit
    /// the master or the fabric, an unusable description (5).
    fn from(e: local_sa_distributor::computed::opensm_input::ConfigError) -> Self {
        use local_sa_distributor::computed::opensm_input::ConfigError;
        match e {
            ConfigError::Refused(m) => Self::new(2, m),
            ConfigError::DoesNotFit(m) => Self::new(5, m),
        }
    }
}

impl From<Closed> for Stop {
    fn from(_: Closed) -> Self {
        Self::new(4, "the MAD transport is shut down")
    }
}
