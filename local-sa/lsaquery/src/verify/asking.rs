//! Many requests to one SA, safe on a busy fabric: at most `window`
//! outstanding, at most `rate` sent per second, and given up after a run
//! of requests that got no answer at all (a frozen master must not make
//! the check wait a time-out per destination).

use bytes::Bytes;
use local_sa_core::requester::Answer;
use mad_codec::MadStatus;
use umad::Address;

use crate::client::Client;
use crate::fan_out::FanOut;
use crate::stop::Stop;

/// Requests in a row left unanswered after which the rest are not sent.
const GIVE_UP_AFTER: usize = 8;

/// What became of one request.
#[derive(Debug)]
pub(super) enum Asked {
    Answered(Answer),
    /// Sent, and no answer came (the reason, as the requester gives it).
    Unanswered(String),
    /// Not sent: the SA had stopped answering.
    Skipped,
}

impl Asked {
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

/// Sends every request to `dest` and returns the outcomes in order,
/// showing `what` on a progress bar.
pub(super) async fn ask_all(
    client: &mut Client,
    dest: Address,
    requests: &[Bytes],
    pace: Pace,
    what: &str,
) -> Result<Vec<Asked>, Stop> {
    let mut outcomes: Vec<Asked> = requests.iter().map(|_| Asked::Skipped).collect();
    let fan_out = FanOut {
        rate: Some(pace.rate),
        give_up_after: Some(GIVE_UP_AFTER),
        progress: Some((what, 101)),
        ..FanOut::window(pace.window)
    };
    fan_out
        .run(
            client,
            requests.len(),
            |i| (dest, requests[i].clone()),
            |i, end, _| {
                outcomes[i] = match end {
                    Ok(a) => Asked::Answered(a),
                    Err(e) => Asked::Unanswered(e.to_string()),
                }
            },
        )
        .await?;
    Ok(outcomes)
}
