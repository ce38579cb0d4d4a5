//! Driving the distributor's sample runs
//! ([`local_sa_distributor::computed::sample_check`]) against the
//! master: the check of computed records, each batch of queries a window
//! at a time.

use local_sa_core::path_engine::{Fabric, PairCheck};
use umad::Address;

use local_sa_distributor::computed::sample_check::SampleCheck;
use local_sa_distributor::computed::{Checked, Served};

use super::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// Compares the computed records of every pair of `pairs` with the
/// master's; an answer that is not about paths ends it with exit status 4.
pub(crate) async fn check(
    session: &mut Session,
    master: Address,
    window: usize,
    fabric: &Fabric,
    pairs: &[PairCheck],
    served: &mut Served,
) -> Result<Checked, Stop> {
    let mut run = SampleCheck::new(pairs.to_vec());
    while let Some(batch) = run.poll_batch(fabric) {
        let ends = each(session, master, window, &batch).await?;
        run.handle_batch(fabric, ends)
            .map_err(|why| Stop::new(4, why.to_string()))?;
    }
    let (checked, cost) = run.finish();
    served.add(cost);
    Ok(checked)
}
