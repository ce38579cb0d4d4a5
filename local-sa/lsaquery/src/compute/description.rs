//! Driving the distributor's read of the fabric's description
//! ([`local_sa_distributor::computed::description`]) against the master:
//! each batch of queries a window at a time; a query alone is sent as
//! one request, its exchange dumped with `--debug`.

use local_sa_core::path_engine::DescriptionError;
use local_sa_core::requester::{Answer, Failure as RequestFailure};
use local_sa_distributor::computed::description::{DescriptionRead, ReadFailure};
use umad::Address;

pub(crate) use local_sa_distributor::computed::description::Description;

use super::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// A description that does not hold together: exit status 5.
pub(crate) fn not_together(e: DescriptionError) -> Stop {
    Stop::new(
        5,
        format!("the fabric's description from the master does not hold together: {e}"),
    )
}

/// Reads the description from `master`, at most `window` queries in
/// flight. P_KeyTableRecords need the master's SA key (`--smkey`). A
/// query the master refuses ends it with exit status 1; an answer that
/// cannot be used, or none, with 4.
pub(crate) async fn read(
    session: &mut Session,
    master: Address,
    window: usize,
) -> Result<Description, Stop> {
    let floor = session.port.lid.max(master.lid);
    let mut read = DescriptionRead::new(session.sm_key, floor);
    while let Some(batch) = read.poll_batch() {
        let ends: Vec<Result<Answer, RequestFailure>> = if let [one] = &batch[..] {
            let c = session.client.request(master, one).await?;
            match c.outcome {
                Ok(_) => vec![Ok(session.answer(c)?)],
                Err(failure) => vec![Err(failure)],
            }
        } else {
            each(session, master, window, &batch).await?
        };
        read.handle_batch(ends).map_err(|e| match e {
            ReadFailure::NoAnswer(failure) => session.unanswered(failure),
            ReadFailure::Refused(why) => Stop::new(1, why),
            ReadFailure::Unusable(why) => Stop::new(4, why),
        })?;
    }
    Ok(read.finish())
}
