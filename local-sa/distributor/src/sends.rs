//! What the distributor's machines ask the wire for ([`Send`]) and how
//! a driver carries it out ([`Sends`]): the fill ([`crate::fill`]) and
//! the watch's driver ([`crate::watch::driver`]) both speak it, so that
//! lsaquery's client and the storm simulator each carry out either with
//! one loop.

use std::time::Instant;

use bytes::Bytes;
use local_sa_core::requester::{Answer, Attempts, Failure as RequestFailure};
use mad_codec::address::Address;
use mad_codec::header::SaMadHeader;

/// What the driver is to send.
#[derive(Debug)]
pub enum Send {
    /// A query (`attempts`: other than the client's own).
    Query {
        /// The SA asked.
        dest: Address,
        /// The whole MAD.
        request: Bytes,
        /// Its own attempts, if not the client's.
        attempts: Option<Attempts>,
    },
    /// A load or delete over RMPP.
    Transfer {
        /// The node's SA.
        dest: Address,
        /// The Set's or Delete's headers.
        header: SaMadHeader,
        /// Its records, back to back.
        data: Bytes,
    },
}

/// A machine that sends through a driver: each send has an id, and the
/// driver tells the machine how each one ended, once.
pub trait Sends {
    /// The next send, and the id its end is told by.
    fn poll_send(&mut self) -> Option<(u64, Send)>;

    /// Send `id` ended at `now`: the answer, or why none came (the
    /// requester's retries are spent).
    fn handle_end(&mut self, now: Instant, id: u64, outcome: Result<Answer, RequestFailure>);

    /// Send `id` could not be sent at all (`why`: the transport's word).
    fn handle_unsendable(&mut self, now: Instant, id: u64, why: &str);
}
