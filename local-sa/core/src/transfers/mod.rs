//! RMPP transfers the agent takes part in: table answers it sends
//! (GetTableResp) and loads it receives (Set/Delete of many PathRecords),
//! each keyed by the peer and the TransactionID.
//!
//! An answer that fits one segment is sent as one MAD and forgotten. The
//! rest keep a sender until the peer has acknowledged every segment or the
//! transfer aborts; a finished receiver stays until its linger ends so
//! that a lost final ACK can be repeated.
//!
//! What is held is bounded ([`TransferLimits`]): transfers in all and per
//! LID, and bytes in all. A load over a limit is refused with STOP (ResX)
//! at its first segment, or stopped when its data would pass the byte
//! limit; an answer over a limit is not started, and the caller answers
//! ERR_NO_RESOURCES. A receiver holds memory only for segments that
//! arrived. Time-outs come from a heap of deadlines, not a scan.

mod deadlines;
mod limits;

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use mad_codec::header::SaMadHeader;
use mad_codec::rmpp::{Receiver, RmppConfig, Sender, TransferState};

use crate::address::{Address, Transmit};
use deadlines::Deadlines;
use limits::PerLid;
pub use limits::TransferLimits;
pub(crate) use limits::TransferRefusal;

/// A transfer: who the peer is and which TransactionID (low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// A transfer in the deadline heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Sending(Key),
    Receiving(Key),
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
    /// The transfer was refused, or stopped, for a limit; `lid` is the
    /// peer's.
    Refused { reason: TransferRefusal, lid: u16 },
}

#[derive(Debug)]
struct Sending {
    sender: Sender,
    peer: Address,
    /// The answer's bytes, counted against the send limit.
    bytes: usize,
    /// The deadline this transfer has in the heap, if any.
    armed: Option<Instant>,
}

#[derive(Debug)]
struct Receiving {
    receiver: Receiver,
    peer: Address,
    /// When the reassembled MAD was handed out, once it has been: the
    /// receiver lingers after that only to re-ACK.
    finished: Option<Instant>,
    /// The receiver's memory, counted against the receive limit.
    memory: usize,
    armed: Option<Instant>,
    /// The answer sent for the load once it was whole: sent again when the
    /// loader repeats a segment while the receiver lingers (the answer was
    /// lost on its way).
    answer: Option<Bytes>,
}

/// Every transfer in progress.
#[derive(Debug)]
pub(crate) struct Transfers {
    config: RmppConfig,
    limits: TransferLimits,
    sending: HashMap<Key, Sending>,
    receiving: HashMap<Key, Receiving>,
    sending_per_peer: PerLid,
    receiving_per_source: PerLid,
    send_bytes: usize,
    receive_bytes: usize,
    deadlines: Deadlines<Slot>,
}

impl Transfers {
    pub(crate) fn new(config: RmppConfig, limits: TransferLimits) -> Self {
        Self {
            config,
            limits,
            sending: HashMap::new(),
            receiving: HashMap::new(),
            sending_per_peer: PerLid::default(),
            receiving_per_source: PerLid::default(),
            send_bytes: 0,
            receive_bytes: 0,
            deadlines: Deadlines::new(),
        }
    }

    /// Transfers in progress: answers not yet acknowledged, loads not yet
    /// whole (a finished load lingering to re-ACK does not count).
    pub(crate) fn in_progress(&self) -> usize {
        self.sending.len()
            + self
                .receiving
                .values()
                .filter(|r| r.finished.is_none())
                .count()
    }

    /// Transfers held, lingering ones included.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.sending.len() + self.receiving.len()
    }

    /// Bytes held for transfers: answers being sent, loads being received.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.send_bytes + self.receive_bytes
    }

    /// Sends `data` under `header` to `peer` as an RMPP transfer. Returns
    /// `Some(Event::Sent)` when it fit one segment (sent and done), and
    /// `Some(Event::Refused)` or `Some(Event::Aborted)` when it was not
    /// started (nothing sent: the caller answers with an error).
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
        let key = Key::new(&peer, tid);
        // The same request again (the asker retried): the new answer
        // replaces the old one.
        self.remove_sending(&key);
        let reason = if self.sending.len() >= self.limits.sending {
            Some(TransferRefusal::Busy)
        } else if self.sending_per_peer.get(peer.lid) >= self.limits.sending_per_peer {
            Some(TransferRefusal::PerPeer)
        } else if self.send_bytes.saturating_add(data.len()) > self.limits.send_bytes {
            Some(TransferRefusal::Memory)
        } else {
            None
        };
        if let Some(reason) = reason {
            return Some(Event::Refused {
                reason,
                lid: peer.lid,
            });
        }
        let bytes = data.len();
        let Ok(sender) = Sender::new(header, data, self.config, now) else {
            return Some(Event::Aborted);
        };
        let mut s = Sending {
            sender,
            peer,
            bytes,
            armed: None,
        };
        flush_sender(&mut s, now, out);
        arm(
            &mut self.deadlines,
            Slot::Sending(key),
            &mut s.armed,
            s.sender.poll_timeout(),
        );
        self.send_bytes += bytes;
        self.sending_per_peer.add(peer.lid);
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
        self.after_sender(now, key, out)
    }

    /// True if a load from `peer` under `tid` is being received.
    pub(crate) fn is_receiving(&self, peer: &Address, tid: u32) -> bool {
        self.receiving.contains_key(&Key::new(peer, tid))
    }

    /// A DATA segment (or an ABORT) of a load. A transfer starts with its
    /// first segment, if the limits allow it; the caller has checked that
    /// the peer may load at all.
    pub(crate) fn segment(
        &mut self,
        now: Instant,
        peer: &Address,
        tid: u32,
        mad: &[u8],
        out: &mut VecDeque<Transmit>,
    ) -> Option<Event> {
        let key = Key::new(peer, tid);
        if !self.receiving.contains_key(&key) {
            self.make_room(peer.lid);
            if let Some(reason) = self.refuse_receive(peer.lid) {
                // Only a first segment is answered: the rest of a refused
                // transfer is dropped, as is any stray segment.
                let stop = Receiver::refusal(mad)?;
                out.push_back(Transmit::reply(peer.reply(), Bytes::copy_from_slice(&stop)));
                return Some(Event::Refused {
                    reason,
                    lid: peer.lid,
                });
            }
            self.receiving.insert(
                key,
                Receiving {
                    receiver: Receiver::new(self.config, now),
                    peer: peer.reply(),
                    finished: None,
                    memory: 0,
                    armed: None,
                    answer: None,
                },
            );
            self.receiving_per_source.add(key.lid);
        }
        let r = self.receiving.get_mut(&key)?;
        let finished_before = r.finished.is_some();
        r.receiver.handle_segment(now, mad);
        let over_limit =
            self.receive_bytes - r.memory + r.receiver.memory() > self.limits.receive_bytes;
        let refused = over_limit && r.receiver.state() == TransferState::Active;
        if refused {
            r.receiver.stop_for_resources();
        }
        flush_receiver(r, out);
        if finished_before
            && let Some(answer) = &r.answer
            && is_data(mad)
        {
            out.push_back(Transmit::reply(r.peer, answer.clone()));
        }
        let event = match r.receiver.state() {
            TransferState::Complete if r.finished.is_none() => {
                r.finished = Some(now);
                r.receiver.take_message().map(Event::Received)
            }
            TransferState::Aborted { .. } => {
                self.remove_receiving(&key);
                return Some(if refused {
                    Event::Refused {
                        reason: TransferRefusal::Memory,
                        lid: key.lid,
                    }
                } else {
                    Event::Aborted
                });
            }
            _ if !r.receiver.has_started() => {
                // Not the start of a transfer: keep nothing.
                self.remove_receiving(&key);
                return None;
            }
            _ => None,
        };
        self.account_receiver(&key);
        event
    }

    /// Keeps `answer`, the answer to the load `peer` sent under `tid`, to
    /// send again if the loader repeats a segment (see [`Receiving`]).
    pub(crate) fn remember_answer(&mut self, peer: &Address, tid: u32, answer: Bytes) {
        if let Some(r) = self.receiving.get_mut(&Key::new(peer, tid)) {
            r.answer = Some(answer);
        }
    }

    /// When [`Transfers::handle_timeout`] must next be called.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.next()
    }

    /// Resends, aborts and forgets what is due; returns the events.
    pub(crate) fn handle_timeout(
        &mut self,
        now: Instant,
        out: &mut VecDeque<Transmit>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some((at, slot)) = self.deadlines.pop_due(now) {
            match slot {
                Slot::Sending(key) => {
                    let Some(s) = self.sending.get_mut(&key) else {
                        continue;
                    };
                    if s.armed != Some(at) {
                        continue; // stale: an earlier entry replaced it
                    }
                    s.armed = None;
                    s.sender.handle_timeout(now);
                    events.extend(self.after_sender(now, key, out));
                }
                Slot::Receiving(key) => {
                    let Some(r) = self.receiving.get_mut(&key) else {
                        continue;
                    };
                    if r.armed != Some(at) {
                        continue;
                    }
                    r.armed = None;
                    let finished = r.receiver.handle_timeout(now);
                    flush_receiver(r, out);
                    if finished {
                        if matches!(r.receiver.state(), TransferState::Aborted { .. }) {
                            events.push(Event::Aborted);
                        }
                        self.remove_receiving(&key);
                    } else {
                        self.account_receiver(&key);
                    }
                }
            }
        }
        events
    }

    /// After a sender has been fed: sends what it has, and forgets it once
    /// it has ended, or schedules its next deadline.
    fn after_sender(
        &mut self,
        now: Instant,
        key: Key,
        out: &mut VecDeque<Transmit>,
    ) -> Option<Event> {
        let s = self.sending.get_mut(&key)?;
        flush_sender(s, now, out);
        let event = match s.sender.state() {
            TransferState::Active => {
                let next = s.sender.poll_timeout();
                arm(&mut self.deadlines, Slot::Sending(key), &mut s.armed, next);
                return None;
            }
            TransferState::Complete => Event::Sent,
            TransferState::Aborted { .. } => Event::Aborted,
        };
        self.remove_sending(&key);
        Some(event)
    }

    /// Brings the receive byte count up to date with the receiver's memory
    /// and schedules its next deadline.
    fn account_receiver(&mut self, key: &Key) {
        let Some(r) = self.receiving.get_mut(key) else {
            return;
        };
        let memory = r.receiver.memory();
        self.receive_bytes = self.receive_bytes - r.memory + memory;
        r.memory = memory;
        let next = r.receiver.poll_timeout();
        arm(
            &mut self.deadlines,
            Slot::Receiving(*key),
            &mut r.armed,
            next,
        );
    }

    /// Makes room for a new load from `lid` where only finished loads
    /// lingering to re-ACK fill a limit: the oldest of them goes (of
    /// `lid`'s own for the per-peer limit). A loader that starts another
    /// load has its last answer, and one that loads in a loop is not
    /// refused by its own finished loads.
    fn make_room(&mut self, lid: u16) {
        let per_source_full =
            self.receiving_per_source.get(lid) >= self.limits.receiving_per_source;
        let full = self.receiving.len() >= self.limits.receiving;
        if !per_source_full && !full {
            return;
        }
        let oldest = self
            .receiving
            .iter()
            .filter(|(k, r)| r.finished.is_some() && (!per_source_full || k.lid == lid))
            .min_by_key(|(_, r)| r.finished)
            .map(|(k, _)| *k);
        if let Some(key) = oldest {
            self.remove_receiving(&key);
        }
    }

    /// Why a new load from `lid` cannot start now, if it cannot.
    fn refuse_receive(&self, lid: u16) -> Option<TransferRefusal> {
        if self.receiving.len() >= self.limits.receiving {
            Some(TransferRefusal::Busy)
        } else if self.receiving_per_source.get(lid) >= self.limits.receiving_per_source {
            Some(TransferRefusal::PerPeer)
        } else if self.receive_bytes >= self.limits.receive_bytes {
            Some(TransferRefusal::Memory)
        } else {
            None
        }
    }

    fn remove_sending(&mut self, key: &Key) {
        if let Some(s) = self.sending.remove(key) {
            self.send_bytes -= s.bytes;
            self.sending_per_peer.remove(key.lid);
        }
    }

    fn remove_receiving(&mut self, key: &Key) {
        if let Some(r) = self.receiving.remove(key) {
            self.receive_bytes -= r.memory;
            self.receiving_per_source.remove(key.lid);
        }
    }
}

/// Schedules `next` for `slot` unless an entry at or before it is already
/// in the heap (that entry's wake-up schedules the real deadline).
fn arm(
    deadlines: &mut Deadlines<Slot>,
    slot: Slot,
    armed: &mut Option<Instant>,
    next: Option<Instant>,
) {
    if let Some(at) = next
        && armed.is_none_or(|a| at < a)
    {
        deadlines.schedule(at, slot);
        *armed = Some(at);
    }
}

fn flush_sender(s: &mut Sending, now: Instant, out: &mut VecDeque<Transmit>) {
    while let Some(m) = s.sender.poll_transmit(now) {
        out.push_back(Transmit::reply(s.peer, Bytes::copy_from_slice(&m)));
    }
}

fn flush_receiver(r: &mut Receiving, out: &mut VecDeque<Transmit>) {
    while let Some(m) = r.receiver.poll_transmit() {
        out.push_back(Transmit::reply(r.peer, Bytes::copy_from_slice(&m)));
    }
}

/// True for an RMPP DATA segment.
fn is_data(mad: &[u8]) -> bool {
    SaMadHeader::parse(mad).is_ok_and(|(h, _)| {
        h.rmpp.is_active() && h.rmpp.rmpp_type() == mad_codec::header::RmppType::DATA
    })
}
