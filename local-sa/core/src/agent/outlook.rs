//! What a driver acts on besides the MADs to send, summed up so that a
//! driver sharing the core with another thread (one that hands it MADs and
//! sends the answers itself) can tell whether that thread left it work.

use std::time::Instant;

use super::SaCore;

/// Everything about the core a driver looks at after it has handled
/// something, besides [`SaCore::poll_transmit`]: when two outlooks taken
/// before and after a call differ, the driver has work (replies to hand
/// out, a timer to set, names to pass on, readiness or idleness to act
/// on); when they are equal, the call left nothing but MADs to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outlook {
    /// [`SaCore::poll_timeout`].
    pub timeout: Option<Instant>,
    /// Whether [`SaCore::poll_local`] has something.
    pub local_replies: bool,
    /// [`SaCore::names_generation`].
    pub names_generation: u64,
    /// [`SaCore::is_ready`].
    pub ready: bool,
    /// [`SaCore::is_idle`].
    pub idle: bool,
}

impl SaCore {
    /// The driver's view of the core now.
    #[must_use]
    pub fn outlook(&self) -> Outlook {
        Outlook {
            timeout: self.poll_timeout(),
            local_replies: !self.local_out.is_empty(),
            names_generation: self.names_generation(),
            ready: self.is_ready(),
            idle: self.is_idle(),
        }
    }
}
