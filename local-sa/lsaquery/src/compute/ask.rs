//! Many queries at the master, a window at a time, and what they cost it.

use bytes::Bytes;
use local_sa_core::requester::{Answer, Attempts, Failure as RequestFailure};
use umad::Address;

use crate::fan_out::FanOut;
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
/// instead of the session's.
pub(crate) async fn each_to_with(
    session: &mut Session,
    window: usize,
    requests: &[(Address, Bytes)],
    attempts: Attempts,
) -> Result<Vec<Result<Answer, RequestFailure>>, Stop> {
    let mut ends: Vec<Option<Result<Answer, RequestFailure>>> =
        (0..requests.len()).map(|_| None).collect();
    let fan_out = FanOut {
        attempts: Some(attempts),
        ..FanOut::window(window)
    };
    fan_out
        .run(
            &mut session.client,
            requests.len(),
            |i| requests[i].clone(),
            |i, end, _| ends[i] = Some(end),
        )
        .await?;
    Ok(ends.into_iter().flatten().collect())
}
