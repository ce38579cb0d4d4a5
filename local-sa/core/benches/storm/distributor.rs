//! A model distributor next to the master: it holds every node's
//! PathRecords (as from a dump: computing them costs the master SA
//! nothing here) and pushes each node its own with a SetTable
//! (REPLACE_SOURCES, the SM_Key) over RMPP, `window` nodes at a time, the
//! next node as soon as one answers. A transfer that aborts is tried again
//! after the others.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{RmppConfig, Sender, TransferState};
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder, SaRecord};

use local_sa_core::Address;

use crate::fixture::record as path;

/// The SM_Key the distributor and the cores share.
pub(crate) const SM_KEY: u64 = 0x5eed;

/// REPLACE_SOURCES (docs/wire-contract.md).
const REPLACE_SOURCES: u32 = 1;

/// The distributor at `lid`.
pub(crate) struct Distributor {
    pub(crate) lid: u16,
    hosts: u16,
    window: usize,
    /// Nodes still to fill, in order.
    todo: VecDeque<u16>,
    /// Transfers under way, by node.
    sending: BTreeMap<u16, Sender>,
    /// Transfers tried again.
    pub(crate) retries: u64,
}

impl Distributor {
    pub(crate) fn new(lid: u16, hosts: u16, window: usize) -> Self {
        Self {
            lid,
            hosts,
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
            .filter(|(_, s)| s.poll_timeout().is_some_and(|t| t <= now))
            .map(|(n, _)| *n)
            .collect();
        for node in due {
            if let Some(s) = self.sending.get_mut(&node) {
                s.handle_timeout(now);
            }
        }
        while self.sending.len() < self.window {
            let Some(node) = self.todo.pop_front() else {
                break;
            };
            match self.sender(node, now) {
                Some(s) => {
                    self.sending.insert(node, s);
                }
                None => break,
            }
        }
        self.flush(now)
    }

    /// When [`Self::poll`] must run again.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        self.sending.values().filter_map(Sender::poll_timeout).min()
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
            if let Some(s) = self.sending.get_mut(&node) {
                s.handle_control(now, mad);
            }
        } else if h.mad.method().is_response() && self.sending.contains_key(&node) {
            self.sending.remove(&node);
            if h.mad.status() != MadStatus::OK {
                self.retries += 1;
                self.todo.push_back(node);
            }
        }
        let mut out = self.flush(now);
        out.extend(self.poll(now));
        out
    }

    fn sender(&self, node: u16, now: Instant) -> Option<Sender> {
        let mut b = SaMadBuilder::request(Method::SET, u64::from(node), AttributeId::PATH_RECORD);
        let h = b.header_mut();
        h.sa.set_sm_key(SM_KEY);
        h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        h.mad.set_attribute_modifier(REPLACE_SOURCES);
        let header: SaMadHeader = *h;
        let mut data = BytesMut::with_capacity(usize::from(self.hosts) * PathRecord::LEN);
        for d in 1..=self.hosts {
            data.extend_from_slice(path(node, d).as_bytes());
        }
        Sender::new(header, data.freeze(), RmppConfig::default(), now).ok()
    }

    /// Segments due from every transfer; aborted ones go back on the list.
    fn flush(&mut self, now: Instant) -> Vec<(Address, Bytes)> {
        let mut out = Vec::new();
        let mut aborted = Vec::new();
        for (&node, s) in &mut self.sending {
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
