//! A model distributor next to the master: it holds every node's
//! PathRecords (as from a dump: computing them costs the master SA
//! nothing here), asks the master once for the two names tables (the
//! channel adapters' NodeRecords and the local-sa directory), and pushes
//! each node the names tables (NAMES_TABLE) and then its own paths
//! (REPLACE_SOURCES), each a Set with the SM_Key over RMPP, `window`
//! nodes at a time, the next node as soon as one has all three. A
//! transfer that aborts or is refused is tried again, from the node's
//! first, after the others.
//!
//! The model master's names tables are empty (it charges a record per
//! host for them, but builds none), so the names pushed are one record
//! that is no host's: the nodes take the load as their names and skip
//! the fetch, which is what the master's load depends on.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{
    AttributeId, MadStatus, Method, NodeRecord, PathRecord, SaMad, SaMadBuilder, SaRecord,
    ServiceRecord,
};

use local_sa_core::Address;

use crate::fixture::record as path;

/// The SM_Key the distributor and the cores share.
pub(crate) const SM_KEY: u64 = 0x5eed;

/// REPLACE_SOURCES (docs/wire-contract.md).
const REPLACE_SOURCES: u32 = 1;

/// NAMES_TABLE (docs/wire-contract.md).
const NAMES_TABLE: u32 = 1;

/// What a node is sent, in order.
const STEPS: [AttributeId; 3] = [
    AttributeId::NODE_RECORD,
    AttributeId::SERVICE_RECORD,
    AttributeId::PATH_RECORD,
];

/// The distributor at `lid`.
pub(crate) struct Distributor {
    pub(crate) lid: u16,
    master: u16,
    hosts: u16,
    /// The names tables are yet to be asked of the master.
    names_unasked: bool,
    window: usize,
    /// Nodes still to fill, in order.
    todo: VecDeque<u16>,
    /// Transfers under way, by node: which of [`STEPS`], and its sender.
    sending: BTreeMap<u16, (usize, Sender)>,
    /// Transfers tried again.
    pub(crate) retries: u64,
}

impl Distributor {
    pub(crate) fn new(lid: u16, master: u16, hosts: u16, window: usize) -> Self {
        Self {
            lid,
            master,
            hosts,
            names_unasked: true,
            window: window.max(1),
            todo: (1..=hosts).collect(),
            sending: BTreeMap::new(),
            retries: 0,
        }
    }

    /// Starts transfers up to the window; returns MADs to send.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let due: Vec<u16> = self
            .sending
            .iter()
            .filter(|(_, (_, s))| s.poll_timeout().is_some_and(|t| t <= now))
            .map(|(n, _)| *n)
            .collect();
        for node in due {
            if let Some((_, s)) = self.sending.get_mut(&node) {
                s.handle_timeout(now);
            }
        }
        while self.sending.len() < self.window {
            let Some(node) = self.todo.pop_front() else {
                break;
            };
            match self.sender(node, 0, now) {
                Some(s) => {
                    self.sending.insert(node, (0, s));
                }
                None => break,
            }
        }
        let mut out = self.ask_names();
        out.extend(self.flush(now));
        out
    }

    /// The two names tables, asked of the master once (their answers are
    /// not needed: the model's are empty).
    fn ask_names(&mut self) -> Vec<(Address, Bytes)> {
        if !std::mem::take(&mut self.names_unasked) {
            return Vec::new();
        }
        let master = Address::gsi(self.master, 0);
        [AttributeId::NODE_RECORD, AttributeId::SERVICE_RECORD]
            .into_iter()
            .map(|attribute| {
                let b = SaMadBuilder::request(Method::GET_TABLE, 1, attribute);
                (master, b.into_bytes())
            })
            .collect()
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        self.sending
            .values()
            .filter_map(|(_, s)| s.poll_timeout())
            .min()
    }

    /// A MAD from node `from`: an ACK of its transfer, or its answer.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Vec<(Address, Bytes)> {
        let Ok(m) = SaMad::parse(mad) else {
            return Vec::new();
        };
        let node = from.lid;
        let h = m.header();
        let control = h.rmpp.is_active()
            && matches!(
                h.rmpp.rmpp_type(),
                RmppType::ACK | RmppType::STOP | RmppType::ABORT
            );
        if control {
            if let Some((_, s)) = self.sending.get_mut(&node) {
                s.handle_control(now, mad);
            }
        } else if h.mad.method().is_response()
            && let Some((step, _)) = self.sending.remove(&node)
        {
            let next = step + 1;
            if h.mad.status() != MadStatus::OK {
                self.retries += 1;
                self.todo.push_back(node);
            } else if next < STEPS.len()
                && let Some(s) = self.sender(node, next, now)
            {
                self.sending.insert(node, (next, s));
            }
        }
        let mut out = self.flush(now);
        out.extend(self.poll(now));
        out
    }

    /// The transfer of `STEPS[step]` to `node`.
    fn sender(&self, node: u16, step: usize, now: Instant) -> Option<Sender> {
        let attribute = STEPS[step];
        let tid = u64::from(node) << 2 | step as u64;
        let mut b = SaMadBuilder::request(Method::SET, tid, attribute);
        let h = b.header_mut();
        h.sa.set_sm_key(SM_KEY);
        let data = match attribute {
            AttributeId::NODE_RECORD => {
                h.sa.set_attribute_offset(NodeRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(NAMES_TABLE);
                Bytes::from(vec![0; NodeRecord::STRIDE])
            }
            AttributeId::SERVICE_RECORD => {
                h.sa.set_attribute_offset(ServiceRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(NAMES_TABLE);
                Bytes::from(vec![0; ServiceRecord::STRIDE])
            }
            _ => {
                h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
                h.mad.set_attribute_modifier(REPLACE_SOURCES);
                let mut data = BytesMut::with_capacity(usize::from(self.hosts) * PathRecord::LEN);
                for d in 1..=self.hosts {
                    data.extend_from_slice(path(node, d).as_bytes());
                }
                data.freeze()
            }
        };
        let header: SaMadHeader = *h;
        Sender::new(header, data, RmppConfig::default(), now).ok()
    }

    /// Segments due from every transfer; aborted ones go back on the list.
    fn flush(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let mut out = Vec::new();
        let mut aborted = Vec::new();
        for (&node, (_, s)) in &mut self.sending {
            while let Some(seg) = s.poll_transmit(now) {
                out.push((Address::gsi(node, 0), Bytes::copy_from_slice(&seg)));
            }
            if matches!(s.state(), TransferState::Aborted { .. }) {
                aborted.push(node);
            }
        }
        for node in aborted {
            self.sending.remove(&node);
            self.retries += 1;
            self.todo.push_back(node);
        }
        out
    }
}
