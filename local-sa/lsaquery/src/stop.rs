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

impl From<Closed> for Stop {
    fn from(_: Closed) -> Self {
        Self::new(4, "the MAD transport is shut down")
    }
}
