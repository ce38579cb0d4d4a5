//! Where MADs come from and go to, in the core's own terms: the parts of a
//! UD address an SA agent answers with, what arrived, and what to send.
//! The daemon maps these to and from its transport (umad); nothing here
//! knows about one.

use bytes::Bytes;

pub use mad_codec::address::{Address, GSI_QKEY, Grh};

/// A MAD the transport delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Where it came from.
    pub from: Address,
    /// 0, or an errno when the transport gave one of our own requests back
    /// undelivered (ETIMEDOUT: nobody answered it in time).
    pub status: u32,
    /// The MAD at the length it arrived.
    pub mad: Bytes,
    /// `Some(n)` when the transport delivered only part of what the sender
    /// sent: the sender meant a longer answer, or the transport damaged the
    /// MAD's tail; only its first `n` bytes are real.
    pub cut: Option<usize>,
}

impl Received {
    /// A whole MAD from `from` with status 0.
    pub fn new(from: Address, mad: impl Into<Bytes>) -> Self {
        Self {
            from,
            status: 0,
            mad: mad.into(),
            cut: None,
        }
    }
}

/// A MAD to put on the wire, to a destination of type `A`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<A = Address> {
    /// Where it goes.
    pub dest: A,
    /// The MAD (up to 256 bytes; shorter ones are answers at their exact
    /// length).
    pub mad: Bytes,
    /// For requests: how long the transport should wait for the answer
    /// (0 for answers and other MADs that expect none).
    pub timeout_ms: u32,
}

impl<A> Transmit<A> {
    /// An answer or control MAD: nothing to wait for.
    pub fn reply(dest: A, mad: Bytes) -> Self {
        Self {
            dest,
            mad,
            timeout_ms: 0,
        }
    }
}
