//! Driving the distributor's read of a fabric
//! ([`local_sa_distributor::computed::fabric_read`]) against the master:
//! each batch of queries a window at a time; a query alone is sent as one
//! request, its exchange dumped with `--debug`.

use std::time::Instant;

use local_sa_core::requester::{Answer, Failure as RequestFailure};
use local_sa_distributor::computed::description::ReadFailure;
use local_sa_distributor::computed::fabric_read::{FabricRead, FabricReadEnd, FabricReadFailure};
use umad::Address;

use super::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// Carries `read` out against `master`, at most `window` queries in
/// flight. P_KeyTableRecords need the master's SA key (`--smkey`).
pub(crate) async fn read(
    session: &mut Session,
    master: Address,
    window: usize,
    mut read: FabricRead,
) -> Result<FabricReadEnd, Stop> {
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
        (read.handle_batch(Instant::now(), ends)).map_err(|e| failed(session, e))?;
    }
    read.finish()
        .ok_or_else(|| Stop::new(3, "the read of the fabric stopped without a result"))
}

/// Why a read failed, as lsaquery ends: a query the master refuses with
/// exit status 1, OpenSM's files refused with 2, an answer that cannot be
/// used or none with 4, a description that does not hold together with 5.
pub(crate) fn failed(session: &Session, e: FabricReadFailure) -> Stop {
    match e {
        FabricReadFailure::Read(ReadFailure::NoAnswer(failure)) => session.unanswered(failure),
        FabricReadFailure::Read(ReadFailure::Refused(why)) => Stop::new(1, why),
        FabricReadFailure::Read(ReadFailure::Unusable(why)) => Stop::new(4, why),
        FabricReadFailure::ConfigRefused(why) => Stop::new(2, why),
        e @ FabricReadFailure::NotTogether(_) => Stop::new(5, e.to_string()),
    }
}
