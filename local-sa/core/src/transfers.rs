//! RMPP transfers the agent takes part in: table answers it sends
//! (GetTableResp) and loads it receives (Set/Delete of many PathRecords),
//! each keyed by the peer and the TransactionID.
//!
//! An answer that fits one segment is sent as one MAD and forgotten. The
//! rest keep a sender until the peer has acknowledged every segment or the
//! transfer aborts; a finished receiver stays until its linger ends so
//! that a lost final ACK can be repeated.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use mad_codec::header::SaMadHeader;
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};

use crate::address::{Address, Transmit};

/// A transfer: who the peer is and which TransactionID (low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    lid: u16,
    qpn: u32,
    tid: u32,
}

impl Key {
    fn new(peer: &Address, tid: u32) -> Self {
        Self {
            lid: peer.lid,
            qpn: peer.qpn,
            tid,
        }
    }
}

/// What happened to a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// An answer was delivered (every segment acknowledged).
    Sent,
    /// A load arrived whole: the reassembled MAD.
    Received(Bytes),
    /// The transfer ended without completing.
    Aborted,
}

#[derive(Debug)]
struct Sending {
    sender: Sender,
    peer: Address,
}

#[derive(Debug)]
struct Receiving {
    receiver: Receiver,
    peer: Address,
    /// Set once the reassembled MAD has been handed out.
    delivered: bool,
}

/// Every transfer in progress.
#[derive(Debug)]
pub(crate) struct Transfers {
    config: RmppConfig,
    sending: HashMap<Key, Sending>,
    receiving: HashMap<Key, Receiving>,
}

impl Transfers {
    pub(crate) fn new(config: RmppConfig) -> Self {
        Self {
            config,
            sending: HashMap::new(),
            receiving: HashMap::new(),
        }
    }

    /// Transfers in progress: answers not yet acknowledged, loads not yet
    /// whole (a finished load lingering to re-ACK does not count).
    pub(crate) fn in_progress(&self) -> usize {
        self.sending.len() + self.receiving.values().filter(|r| !r.delivered).count()
    }

    /// Transfers held, lingering ones included.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.sending.len() + self.receiving.len()
    }

    /// Sends `data` under `header` to `peer` as an RMPP transfer. Returns
    /// `Some(Event::Sent)` when it fit one segment (sent and done).
    pub(crate) fn send(
        &mut self,
        now: Instant,
        peer: Address,
        tid: u32,
        header: SaMadHeader,
        data: Bytes,
        out: &mut VecDeque<Transmit>,
    ) -> Option<Event> {
        if let Some(mad) = self.config.single_segment(&header, &data) {
            out.push_back(Transmit::reply(peer, mad));
            return Some(Event::Sent);
        }
        let Ok(sender) = Sender::new(header, data, self.config, now) else {
            return Some(Event::Aborted);
        };
        let key = Key::new(&peer, tid);
        let mut s = Sending { sender, peer };
        flush_sender(&mut s, now, out);
        self.sending.insert(key, s);
        None
    }

    /// True if an answer to `peer` under `tid` is being sent.
    pub(crate) fn is_sending(&self, peer: &Address, tid: u32) -> bool {
        self.sending.contains_key(&Key::new(peer, tid))
    }

    /// An ACK, STOP or ABORT for an answer being sent.
    pub(crate) fn control(
        &mut self,
        now: Instant,
        peer: &Address,
        tid: u32,
        mad: &[u8],
        out: &mut VecDeque<Transmit>,
    ) -> Option<Event> {
        let key = Key::new(peer, tid);
        let s = self.sending.get_mut(&key)?;
        s.sender.handle_control(now, mad);
        flush_sender(s, now, out);
        let event = match s.sender.state() {
            TransferState::Active => return None,
            TransferState::Complete => Event::Sent,
            TransferState::Aborted { .. } => Event::Aborted,
        };
        self.sending.remove(&key);
        Some(event)
    }

    /// True if a load from `peer` under `tid` is being received.
    pub(crate) fn is_receiving(&self, peer: &Address, tid: u32) -> bool {
        self.receiving.contains_key(&Key::new(peer, tid))
    }

    /// A DATA segment (or an ABORT) of a load. A transfer starts with its
    /// first segment; the caller has checked that it may.
    pub(crate) fn segment(
        &mut self,
        now: Instant,
        peer: &Address,
        tid: u32,
        mad: &[u8],
        out: &mut VecDeque<Transmit>,
    ) -> Option<Event> {
        let key = Key::new(peer, tid);
        let r = self.receiving.entry(key).or_insert_with(|| Receiving {
            receiver: Receiver::new(self.config, now),
            peer: peer.reply(),
            delivered: false,
        });
        r.receiver.handle_segment(now, mad);
        while let Some(m) = r.receiver.poll_transmit() {
            out.push_back(Transmit::reply(r.peer, Bytes::copy_from_slice(&m)));
        }
        match r.receiver.state() {
            TransferState::Complete if !r.delivered => {
                r.delivered = true;
                r.receiver.take_message().map(Event::Received)
            }
            TransferState::Aborted { .. } => {
                self.receiving.remove(&key);
                Some(Event::Aborted)
            }
            _ => {
                if !r.receiver.has_started() {
                    // Not the start of a transfer: keep nothing.
                    self.receiving.remove(&key);
                }
                None
            }
        }
    }

    /// When [`Transfers::handle_timeout`] must next be called.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let sending = self
            .sending
            .values()
            .filter_map(|s| s.sender.poll_timeout());
        let receiving = self
            .receiving
            .values()
            .filter_map(|r| r.receiver.poll_timeout());
        sending.chain(receiving).min()
    }

    /// Resends, aborts and forgets what is due; returns the events.
    pub(crate) fn handle_timeout(
        &mut self,
        now: Instant,
        out: &mut VecDeque<Transmit>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        self.sending.retain(|_, s| {
            s.sender.handle_timeout(now);
            flush_sender(s, now, out);
            match s.sender.state() {
                TransferState::Active => true,
                TransferState::Complete => {
                    events.push(Event::Sent);
                    false
                }
                TransferState::Aborted { .. } => {
                    events.push(Event::Aborted);
                    false
                }
            }
        });
        self.receiving.retain(|_, r| {
            let finished = r.receiver.handle_timeout(now);
            while let Some(m) = r.receiver.poll_transmit() {
                out.push_back(Transmit::reply(r.peer, Bytes::copy_from_slice(&m)));
            }
            if finished && matches!(r.receiver.state(), TransferState::Aborted { .. }) {
                events.push(Event::Aborted);
            }
            !finished
        });
        events
    }
}

fn flush_sender(s: &mut Sending, now: Instant, out: &mut VecDeque<Transmit>) {
    while let Some(m) = s.sender.poll_transmit(now) {
        out.push_back(Transmit::reply(s.peer, Bytes::copy_from_slice(&m)));
    }
}
