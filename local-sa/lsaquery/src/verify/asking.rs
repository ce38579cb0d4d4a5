//! Many requests to one SA, safe on a busy fabric: at most `window`
//! outstanding, at most `rate` sent per second, and given up after a run
//! of requests that got no answer at all (a frozen master must not make
//! the check wait a time-out per destination).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::requester::Answer;
use mad_codec::MadStatus;
use umad::Address;

use crate::client::Client;
use crate::progress::ProgressBar;
use crate::stop::Stop;

/// Requests in a row left unanswered after which the rest are not sent.
const GIVE_UP_AFTER: usize = 8;

/// What became of one request.
#[derive(Debug)]
pub(super) enum Outcome {
    Answered(Answer),
    /// Sent, and no answer came (the reason, as the requester gives it).
    Unanswered(String),
    /// Not sent: the SA had stopped answering.
    Skipped,
}

impl Outcome {
    /// The answer, if one came.
    pub(super) fn answer(&self) -> Option<&Answer> {
        match self {
            Self::Answered(a) => Some(a),
            _ => None,
        }
    }

    /// The answer, if one came with status success.
    pub(super) fn answer_ok(&self) -> Option<&Answer> {
        self.answer().filter(|a| a.status() == MadStatus::OK)
    }

    /// What came, for a reason: the status, or why nothing did.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Answered(a) => format!("status {:#06x} ({})", a.status().0, a.status().names()),
            Self::Unanswered(why) => why.clone(),
            Self::Skipped => "not asked: the SA had stopped answering".to_owned(),
        }
    }
}

/// How requests are paced.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pace {
    pub(super) window: usize,
    /// Requests per second at most.
    pub(super) rate: u32,
}

impl Pace {
    fn interval(self) -> Duration {
        Duration::from_secs(1) / self.rate.max(1)
    }
}

/// Sends every request to `dest` and returns the outcomes in order,
/// showing `what` on a progress bar.
pub(super) async fn ask_all(
    client: &mut Client,
    dest: Address,
    requests: &[Bytes],
    pace: Pace,
    what: &str,
) -> Result<Vec<Outcome>, Stop> {
    let mut outcomes: Vec<Outcome> = requests.iter().map(|_| Outcome::Skipped).collect();
    let mut in_flight = HashMap::new();
    let mut next = 0;
    let mut next_at = Instant::now();
    let mut unanswered_in_a_row = 0;
    let mut done = 0u64;
    let mut bar = ProgressBar::on_terminal(requests.len() > 100);
    while (next < requests.len() && unanswered_in_a_row < GIVE_UP_AFTER) || !in_flight.is_empty() {
        let may_send = next < requests.len() && unanswered_in_a_row < GIVE_UP_AFTER;
        if may_send && in_flight.len() < pace.window.max(1) {
            let now = Instant::now();
            if next_at > now {
                smol::Timer::at(next_at).await;
            }
            next_at = next_at.max(now) + pace.interval();
            in_flight.insert(client.start(dest, &requests[next]), next);
            next += 1;
            continue;
        }
        let c = client.next_completion().await?;
        let Some(i) = in_flight.remove(&c.token) else {
            continue;
        };
        outcomes[i] = match c.outcome {
            Ok(a) => {
                unanswered_in_a_row = 0;
                Outcome::Answered(a)
            }
            Err(e) => {
                unanswered_in_a_row += 1;
                Outcome::Unanswered(e.to_string())
            }
        };
        done += 1;
        bar.show(done, requests.len() as u64, what);
    }
    bar.finish();
    Ok(outcomes)
}
