//! Many requests through the client, a window at a time, paced: the loop
//! behind `--verify`'s checks and `--bench` (the distributor's queries go
//! through the distributor's own batch, `compute::ask`). Each end is
//! handed over as it comes (with how long it took), so that a run of
//! millions keeps nothing it does not need.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::requester::{Answer, Failure as RequestFailure};
use umad::Address;

use crate::client::Client;
use crate::progress::ProgressBar;
use crate::stop::Stop;

/// How many requests go out, and how fast.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FanOut<'w> {
    /// Requests outstanding at once, at most.
    pub(crate) window: usize,
    /// Requests sent a second, at most.
    pub(crate) rate: Option<u32>,
    /// After this many in a row got no answer, the rest are not sent (a
    /// frozen SA must not cost a time-out per request).
    pub(crate) give_up_after: Option<usize>,
    /// A progress bar on a terminal saying this, when there are at least
    /// so many requests.
    pub(crate) progress: Option<(&'w str, usize)>,
}

impl FanOut<'_> {
    /// `window` at a time, nothing more.
    pub(crate) fn window(window: usize) -> Self {
        Self {
            window,
            rate: None,
            give_up_after: None,
            progress: None,
        }
    }

    /// Sends `count` requests (`request(i)`: where the `i`th goes, and
    /// the MAD) and hands each end to `ended` with its index and how long
    /// it took; returns how many were sent (fewer than `count` only after
    /// giving up).
    pub(crate) async fn run(
        &self,
        client: &mut Client,
        count: usize,
        request: impl Fn(usize) -> (Address, Bytes),
        mut ended: impl FnMut(usize, Result<Answer, RequestFailure>, Duration),
    ) -> Result<usize, Stop> {
        let gap = self.rate.map(|r| Duration::from_secs(1) / r.max(1));
        let give_up_after = self.give_up_after.unwrap_or(usize::MAX);
        let mut bar =
            ProgressBar::on_terminal(self.progress.is_some_and(|(_, from)| count >= from));
        let mut in_flight = HashMap::new();
        let (mut next, mut done, mut unanswered_in_a_row) = (0, 0u64, 0);
        let mut next_at = Instant::now();
        loop {
            let may_send = next < count && unanswered_in_a_row < give_up_after;
            if may_send && in_flight.len() < self.window.max(1) {
                if let Some(gap) = gap {
                    let now = Instant::now();
                    if next_at > now {
                        smol::Timer::at(next_at).await;
                    }
                    next_at = next_at.max(now) + gap;
                }
                let (dest, mad) = request(next);
                let token = client.start(dest, &mad);
                in_flight.insert(token, (next, Instant::now()));
                next += 1;
                continue;
            }
            if in_flight.is_empty() {
                break;
            }
            let c = client.next_completion().await?;
            let Some((i, started)) = in_flight.remove(&c.token) else {
                continue;
            };
            if c.outcome.is_ok() {
                unanswered_in_a_row = 0;
            } else {
                unanswered_in_a_row += 1;
            }
            ended(i, c.outcome, started.elapsed());
            done += 1;
            if let Some((what, _)) = self.progress {
                bar.show(done, count as u64, what);
            }
        }
        bar.finish();
        Ok(next)
    }
}
