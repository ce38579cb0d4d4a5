//! What a driver acts on besides the MADs to send, summed up so that a
//! driver sharing an agent with another thread (one that hands it MADs and
//! sends the answers itself) can tell whether that thread left it work.

use std::time::Instant;

/// Everything about an agent a driver looks at after it has handled
/// something, besides the MADs to send
/// ([`crate::agent::SaCore::poll_transmit`]): when two outlooks taken
/// before and after a call differ, the driver has work (replies to hand
/// out, a timer to set, names to pass on, readiness or idleness to act
/// on); when they are equal, the call left nothing but MADs to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outlook {
    /// [`crate::agent::SaCore::poll_timeout`].
    pub timeout: Option<Instant>,
    /// Whether [`crate::agent::SaCore::poll_local`] has something.
    pub local_replies: bool,
    /// [`crate::agent::SaCore::names_generation`].
    pub names_generation: u64,
    /// [`crate::agent::SaCore::is_ready`].
    pub ready: bool,
    /// [`crate::agent::SaCore::is_idle`].
    pub idle: bool,
}
