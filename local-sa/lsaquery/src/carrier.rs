//! The distributor's machines' sends carried out over the session's
//! client: the fill's ([`local_sa_distributor::fill::Distribution`]), the
//! watch driver's ([`local_sa_distributor::watch::driver::WatchDriver`])
//! and a batch of queries' ([`local_sa_distributor::batch::Batch`])
//! alike ([`Sends`]).

use std::collections::HashMap;
use std::time::Instant;

use local_sa_distributor::sends::{Send, Sends};

use crate::client::Token;
use crate::session::Session;
use crate::stop::Stop;

/// The sends out, by the client's token.
#[derive(Default)]
pub(crate) struct Carrier {
    ids: HashMap<Token, u64>,
}

impl Carrier {
    /// Makes every send `machine` has now.
    pub(crate) fn send(&mut self, session: &mut Session, machine: &mut impl Sends) {
        while let Some((id, send)) = machine.poll_send() {
            match send {
                Send::Query {
                    dest,
                    request,
                    attempts,
                } => {
                    let token = match attempts {
                        Some(a) => session.client.start_with(dest, &request, a),
                        None => session.client.start(dest, &request),
                    };
                    self.ids.insert(token, id);
                }
                Send::Transfer { dest, header, data } => {
                    match session.client.start_rmpp(dest, header, data) {
                        Ok(token) => {
                            self.ids.insert(token, id);
                        }
                        Err(e) => machine.handle_unsendable(Instant::now(), id, &e.to_string()),
                    }
                }
            }
        }
    }

    /// Whether a send of `machine`'s is out.
    pub(crate) fn is_waiting(&self) -> bool {
        !self.ids.is_empty()
    }

    /// Waits for the next request to end and tells `machine` if it was
    /// one of its sends.
    pub(crate) async fn next_end(
        &mut self,
        session: &mut Session,
        machine: &mut impl Sends,
    ) -> Result<(), Stop> {
        let c = session.client.next_completion().await?;
        if let Some(id) = self.ids.remove(&c.token) {
            machine.handle_end(Instant::now(), id, c.outcome);
        }
        Ok(())
    }
}
