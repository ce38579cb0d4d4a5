//! One run of lsaquery: the port, the transport and client, and where the
//! SA is.

use mad_codec::SaMad;
use smol::channel::Receiver;
use umad::port::PortFacts;
use umad::{IncomingMad, MadAddress, MadClient, RequestOptions, Response};

use crate::print::Printed;

/// An exit status and what to say about it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Everything a query or registration needs.
pub(crate) struct Session {
    pub(crate) port: PortFacts,
    pub(crate) client: MadClient,
    pub(crate) unsolicited: Receiver<IncomingMad>,
    pub(crate) dest: MadAddress,
    pub(crate) opts: RequestOptions,
    pub(crate) sm_key: u64,
    pub(crate) debug: bool,
    pub(crate) json: bool,
    pub(crate) show_keys: bool,
}

impl Session {
    /// Sends a request to the SA and returns its answer, printing both in
    /// hex with `-d`.
    pub(crate) async fn exchange(&self, request: &[u8]) -> Result<Response, Failure> {
        let response = self
            .client
            .request(self.dest, request, &self.opts)
            .await
            .map_err(|e| Failure::new(4, format!("SA at LID {}: {e}", self.dest.lid)))?;
        if self.debug {
            println!("SA Request:\n{}", mad_codec::hex::dump(&response.request));
            println!("SA Response:\n{}", mad_codec::hex::dump(&response.mad));
        }
        Ok(response)
    }

    /// The answer as an SA MAD if its status is success; otherwise the
    /// failure to report (exit status 1).
    pub(crate) fn ok(response: &Response) -> Result<SaMad<'_>, Failure> {
        let mad = SaMad::parse_checked(&response.mad).map_err(|e| {
            Failure::new(
                4,
                format!("malformed answer from LID {}: {e}", response.source.lid),
            )
        })?;
        let status = mad.mad().status();
        if !status.is_ok() {
            return Err(Failure::new(
                1,
                format!(
                    "SA at LID {} answered status {:#06x} ({})",
                    response.source.lid,
                    status.0,
                    status.describe()
                ),
            ));
        }
        Ok(mad)
    }

    /// Prints a record as text or a JSON line.
    pub(crate) fn print(&self, p: &Printed) {
        if self.json {
            println!("{}", p.to_json());
        } else {
            print!("{}", p.to_text());
        }
    }
}
