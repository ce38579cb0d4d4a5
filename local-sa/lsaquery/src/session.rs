//! One run of lsaquery: the port, the client, and where the SA is.

use local_sa_core::requester::{Answer, Completion, Failure as RequestFailure};
use mad_codec::SaMad;
use umad::port::PortFacts;
use umad::{Address, IncomingMad};

use crate::client::{Client, Token};
use crate::print::Printed;
use crate::stop::Stop;

/// Everything a query or registration needs.
pub(crate) struct Session {
    pub(crate) port: PortFacts,
    pub(crate) client: Client,
    pub(crate) dest: Address,
    pub(crate) sm_key: u64,
    pub(crate) debug: bool,
    /// `-e`: the MADs of a refused or unanswered request, in hex.
    pub(crate) show_errors: bool,
    pub(crate) json: bool,
    pub(crate) show_keys: bool,
    /// Names for nodes, by node GUID (`--node-name-map`).
    pub(crate) node_names: crate::node_names::NodeNameMap,
}

impl Session {
    /// Sends a request to the SA and returns its answer, printing both in
    /// hex with `-d`.
    pub(crate) async fn exchange(&mut self, request: &[u8]) -> Result<Answer, Stop> {
        let completion = self.client.request(self.dest, request).await?;
        if self.show_errors && completion.outcome.is_err() {
            eprintln!(
                "lsaquery: unanswered request to LID {}:\n{}",
                self.dest.lid,
                mad_codec::hex::dump(&completion.request)
            );
        }
        self.answer(completion)
    }

    /// The answer of a completed request, printed in hex with `-d`, or
    /// what to report (exit status 4).
    pub(crate) fn answer(&self, c: Completion<Token>) -> Result<Answer, Stop> {
        let answer = c.outcome.map_err(|e| self.unanswered(e))?;
        if self.debug {
            outln!("SA Request:\n{}", mad_codec::hex::dump(&c.request))?;
            outln!("SA Response:\n{}", mad_codec::hex::dump(answer.mad()))?;
        }
        Ok(answer)
    }

    /// What to report when the SA gave no answer.
    pub(crate) fn unanswered(&self, e: RequestFailure) -> Stop {
        let lid = self.dest.lid;
        let why = match e {
            RequestFailure::Undeliverable { status } => format!(
                "request to LID {lid} came back with umad status {status} ({})",
                umad::status_hint(status)
            ),
            other => other.to_string(),
        };
        // This node's own LID is where local-sa answers.
        let hint = if lid == self.port.lid {
            "; is local-sa running on this port? --master asks the master SA"
        } else {
            ""
        };
        Stop::new(4, format!("SA at LID {lid}: {why}{hint}"))
    }

    /// The answer as an SA MAD if its status is success; otherwise the
    /// failure to report (exit status 1).
    pub(crate) fn ok<'a>(&self, answer: &'a Answer) -> Result<SaMad<'a>, Stop> {
        answer_ok(self.dest.lid, self.show_errors, answer)
    }

    /// The next unsolicited MAD (a Report, for a subscriber).
    pub(crate) async fn unsolicited(&mut self) -> Result<IncomingMad, Stop> {
        Ok(self.client.next_unsolicited().await?)
    }

    /// Prints a record as text or a JSON line.
    pub(crate) fn print(&self, p: &Printed) -> Result<(), Stop> {
        p.print(self.json)
    }
}

/// The answer of the SA at `lid` as an SA MAD if its status is success;
/// otherwise the failure to report (exit status 1), and with
/// `show_errors` the answer dumped.
pub(crate) fn answer_ok<'a>(
    lid: u16,
    show_errors: bool,
    answer: &'a Answer,
) -> Result<SaMad<'a>, Stop> {
    let mad = SaMad::parse_checked(answer.mad()).map_err(|e| {
        Stop::new(
            4,
            format!("malformed answer from the SA at LID {}: {e}", lid),
        )
    })?;
    let status = mad.mad().status();
    if !status.is_ok() && show_errors {
        eprintln!(
            "lsaquery: answer with status {:#06x} from LID {}:\n{}",
            status.0,
            lid,
            mad_codec::hex::dump(answer.mad())
        );
    }
    if !status.is_ok() {
        return Err(Stop::new(
            1,
            format!(
                "SA at LID {} answered {} ({}; status {:#06x})",
                lid,
                status.names(),
                status.describe(),
                status.0,
            ),
        ));
    }
    Ok(mad)
}
