//! Many queries at the master, a window at a time: the distributor's
//! batch of queries over the session's client.

use bytes::Bytes;
use local_sa_core::requester::{Answer, Attempts, Failure as RequestFailure};
use umad::Address;

use local_sa_distributor::batch::Batch;

use crate::carrier::Carrier;
use crate::session::Session;
use crate::stop::Stop;

/// Sends every request of `requests` to `master`, at most `window` in
/// flight, and returns each one's end in the order of `requests`.
pub(crate) async fn each(
    session: &mut Session,
    master: Address,
    window: usize,
    requests: &[Bytes],
) -> Result<Vec<Result<Answer, RequestFailure>>, Stop> {
    let to: Vec<(Address, Bytes)> = requests.iter().map(|r| (master, r.clone())).collect();
    each_to(session, window, &to).await
}

/// Sends each request of `requests` to its address, at most `window` in
/// flight, and returns each one's end in the order of `requests`.
pub(crate) async fn each_to(
    session: &mut Session,
    window: usize,
    requests: &[(Address, Bytes)],
) -> Result<Vec<Result<Answer, RequestFailure>>, Stop> {
    let attempts = session.client.attempts();
    each_to_with(session, window, requests, attempts).await
}

/// [`each_to`], each request with `attempts` (its time-out and retries)
/// instead of the session's: the distributor's [`Batch`], carried out
/// over the session's client as the watch's driver is.
pub(crate) async fn each_to_with(
    session: &mut Session,
    window: usize,
    requests: &[(Address, Bytes)],
    attempts: Attempts,
) -> Result<Vec<Result<Answer, RequestFailure>>, Stop> {
    let mut batch = Batch::new(requests.to_vec(), window).with_attempts(attempts);
    let mut carrier = Carrier::default();
    carrier.send(session, &mut batch);
    while carrier.is_waiting() {
        carrier.next_end(session, &mut batch).await?;
        carrier.send(session, &mut batch);
    }
    Ok(batch.finish())
}
