//! The ibacm service as a [`Door`]: its framing, and inputs, replies and
//! outputs as the daemon drives every door.

use super::*;

/// The bytes after the header a message's header announces.
fn body_len(header: &[u8]) -> Result<usize, Unframeable> {
    let header = header
        .first_chunk::<{ wire::HEADER_LEN }>()
        .ok_or(Unframeable::ShortHeader)?;
    wire::message_len(header)
        .map(|n| n - wire::HEADER_LEN)
        .map_err(Unframeable::Acm)
}

impl AcmService {
    /// How its messages are framed: ibacm's header, whose length field
    /// counts the whole message.
    pub const FRAMING: Framing = Framing {
        header_len: wire::HEADER_LEN,
        body_len,
    };
}

impl Door for AcmService {
    fn framing(&self) -> Option<Framing> {
        Some(Self::FRAMING)
    }

    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match input {
            Input::Message { conn, bytes } => {
                let output = self.handle_message(conn, bytes);
                self.out.push_back(output);
            }
            Input::Unframeable { conn } => {
                tracing::debug!(
                    conn,
                    "closing an ibacm connection whose message cannot be framed"
                );
                self.out.push_back(Output::Close { conn });
            }
            Input::Closed { conn } => self.handle_closed(conn),
            Input::Opened { .. } | Input::Datagram { .. } => {}
        }
    }

    fn handle_reply(&mut self, _now: Instant, reply: &LocalReply) {
        if let Some(output) = self.handle_answer(reply) {
            // A reply, or the door's next question (an alternate path) for
            // the same client.
            self.out.push_back(output);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn handle_port_change(&mut self, agent: usize, port: PortIdentity) {
        for ep in self.endpoints.iter_mut().filter(|e| e.agent == agent) {
            ep.port = port;
        }
    }

    fn set_names(&mut self, names: Names) {
        self.names = names;
    }

    fn is_waiting(&self, conn: ConnId) -> bool {
        self.per_conn.get(&conn).is_some_and(|n| *n > 0)
    }

    /// `owned[i]` is endpoint `i`'s; a list of another length is ignored:
    /// the endpoints are fixed at start.
    fn set_owned_addresses(&mut self, owned: &[Vec<HostAddress>]) {
        if owned.len() != self.endpoints.len() {
            tracing::debug!(
                given = owned.len(),
                endpoints = self.endpoints.len(),
                "owned addresses for another set of endpoints ignored"
            );
            return;
        }
        for (ep, addresses) in self.endpoints.iter_mut().zip(owned) {
            ep.addresses.clone_from(addresses);
        }
    }

    /// The names learned from the master SA (NodeDescriptions and the
    /// local-sa directory); the files' names win over them.
    fn set_learned_names(&mut self, names: Arc<Names>) {
        self.learned = names;
    }
}
