//! What the agent has produced and its driver has not yet taken: MADs to
//! send and replies for local programs, each in the order made.

use std::collections::VecDeque;

use crate::address::Transmit;
use crate::request::{ConnId, LocalReply};

/// MADs to send and local replies, waiting for the driver.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    /// MADs to send (the requester and the transfers append to it).
    pub(super) mads: VecDeque<Transmit>,
    /// Replies for local programs.
    pub(super) local: VecDeque<LocalReply>,
}

impl Outbox {
    /// Replies for local connection `conn`, which closed, go unsent.
    pub(super) fn forget_conn(&mut self, conn: ConnId) {
        self.local.retain(|r| r.conn != conn);
    }
}
