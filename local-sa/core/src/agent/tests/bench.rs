//! The core on a test bench: a virtual clock, the fake master wired to its
//! SM LID, and clients elsewhere whose answers are collected.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::rmpp::{Receiver, RmppConfig, TransferState};
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, ComponentMask, MAD_LEN, MadStatus, Method, PathRecord, Records, SaMad,
    SaMadBuilder,
};

use super::fake_master::{FakeMaster, gid};
use crate::address::Address;
use crate::address::{Received, Transmit};
use crate::agent::SaCore;
use crate::config::{AgentConfig, PortIdentity};
use crate::request::{Lookup, PathQuery, Request};

/// The master SM's LID.
pub(crate) const MASTER_LID: u16 = 1;
/// The TransactionID seed every bench agent starts from.
pub(crate) const SEED: u32 = 0x100;

/// The agent's port's LID.
pub(crate) const MY_LID: u16 = 2;
/// Hosts on the fake fabric (LIDs 1..=HOSTS): 12 paths from the agent's
/// port, 768 bytes, four RMPP segments.
pub(crate) const HOSTS: u16 = 12;

/// The agent's port.
pub(crate) fn my_port() -> PortIdentity {
    PortIdentity {
        lid: MY_LID,
        lmc: 0,
        gid: gid(MY_LID),
        sm_lid: MASTER_LID,
        sm_sl: 0,
    }
}

/// QP1 of a client at `lid`.
pub(crate) fn client(lid: u16) -> Address {
    Address::gsi(lid, 0)
}

/// A PathRecord request padded to 256 bytes, as clients send them.
pub(crate) fn pr_request(
    method: Method,
    tid: u64,
    mask: ComponentMask,
    fill: impl FnOnce(&mut PathRecord),
) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    fill(&mut t);
    let mut b = SaMadBuilder::request(method, tid, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    padded(&b.into_bytes())
}

/// A local program's PathRecord Get by SLID and DLID.
pub(crate) fn local_get(slid: u16, dlid: u16) -> Request {
    let mut template = PathRecord::new_zeroed();
    template.set_slid(slid);
    template.set_dlid(dlid);
    Request::PathQuery {
        query: PathQuery {
            method: Method::GET,
            mask: mad_codec::attr::path_record::mask::SLID
                | mad_codec::attr::path_record::mask::DLID,
            template,
        },
        lookup: Lookup::Anywhere,
    }
}

/// `mad` padded with zeros to 256 bytes.
pub(crate) fn padded(mad: &[u8]) -> Bytes {
    let mut m = BytesMut::from(mad);
    m.resize(MAD_LEN.max(mad.len()), 0);
    m.freeze()
}

/// The status of an answer.
pub(crate) fn status(mad: &[u8]) -> MadStatus {
    SaMad::parse(mad).expect("an SA MAD").mad().status()
}

/// The PathRecords of a whole (reassembled) answer.
pub(crate) fn path_records(mad: &[u8]) -> Vec<PathRecord> {
    let m = SaMad::parse(mad).expect("an SA MAD");
    if m.data().is_empty() {
        return Vec::new();
    }
    Records::<PathRecord>::with_standard_stride(m.data())
        .copied()
        .collect()
}

/// The agent, the master and the clock.
pub(crate) struct Bench {
    pub(crate) core: SaCore,
    pub(crate) master: FakeMaster,
    pub(crate) now: Instant,
    /// What the agent sent to anyone but the master, oldest first.
    pub(crate) sent: VecDeque<Transmit>,
}

impl Bench {
    /// The agent started against `master` with `config`, after everything
    /// that needs no time has happened.
    pub(crate) fn new(master: FakeMaster, config: AgentConfig) -> Self {
        let now = Instant::now();
        Self::start(SaCore::new(config, my_port(), now, SEED), master, now)
    }

    /// [`Bench::new`] for the port `port`.
    pub(crate) fn with_port(master: FakeMaster, config: AgentConfig, port: PortIdentity) -> Self {
        let now = Instant::now();
        Self::start(SaCore::new(config, port, now, SEED), master, now)
    }

    /// [`Bench::new`] for a port whose P_Key table holds `pkeys`.
    pub(crate) fn with_pkeys(master: FakeMaster, config: AgentConfig, pkeys: &[u16]) -> Self {
        let now = Instant::now();
        let mut core = SaCore::new(config, my_port(), now, SEED);
        core.handle_pkeys(now, pkeys);
        Self::start(core, master, now)
    }

    /// An agent started against `master` with `config` that takes the
    /// tables `kept` (kept by a predecessor at Unix time `wall`) before it
    /// sends anything; also what taking them said.
    pub(crate) fn restored(
        master: FakeMaster,
        config: AgentConfig,
        kept: crate::kept_tables::Kept,
        wall: u64,
    ) -> (Self, Result<usize, crate::kept_tables::NotTaken>) {
        let now = Instant::now();
        let mut core = SaCore::new(config, my_port(), now, SEED + 1);
        let taken = core.restore_tables(now, wall, kept);
        (Self::start(core, master, now), taken)
    }

    /// `core` started against `master`: everything that needs no time done.
    fn start(core: SaCore, master: FakeMaster, now: Instant) -> Self {
        let mut b = Self {
            core,
            master,
            now,
            sent: VecDeque::new(),
        };
        b.pump();
        if b.core.is_ready() {
            // The registrations and directory loads that follow the first
            // table, at the port's phase of the start's window (the
            // shortest one for a fabric this small).
            b.advance(b.core.config.pace.min_window);
        }
        b
    }

    /// An agent for the port at `lid` (another port of the same node, or
    /// of another) against `master`.
    pub(crate) fn for_port(master: FakeMaster, lid: u16) -> Self {
        let now = Instant::now();
        let port = PortIdentity {
            lid,
            gid: gid(lid),
            ..my_port()
        };
        let core = SaCore::new(AgentConfig::default(), port, now, SEED + u32::from(lid));
        Self::start(core, master, now)
    }

    /// The agent with the default configuration against a master of
    /// [`HOSTS`] hosts answering through RMPP.
    pub(crate) fn started() -> Self {
        let b = Self::new(FakeMaster::new(MASTER_LID, HOSTS), AgentConfig::default());
        assert!(
            b.core.is_ready(),
            "the agent fetched its port's paths at start"
        );
        b
    }

    /// Moves MADs between the agent and the master until both are quiet.
    pub(crate) fn pump(&mut self) {
        loop {
            let mut moved = self.send_all();
            while self.answer_one() {
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }

    /// Moves what the agent has to send (to the master, or to
    /// [`Bench::sent`]) and then one of the master's MADs to the agent;
    /// returns whether anything moved. A test stops between two answers
    /// of the master with it.
    pub(crate) fn step(&mut self) -> bool {
        let sent = self.send_all();
        self.answer_one() || sent
    }

    fn send_all(&mut self) -> bool {
        let mut moved = false;
        while let Some(t) = self.core.poll_transmit() {
            moved = true;
            if t.dest.lid == self.master.lid {
                self.master.handle(self.now, &t.mad);
            } else {
                self.sent.push_back(t);
            }
        }
        moved
    }

    fn answer_one(&mut self) -> bool {
        let Some((mad, cut)) = self.master.poll_transmit() else {
            return false;
        };
        let from = Address::gsi(self.master.lid, 0);
        let received = Received {
            cut,
            ..Received::new(from, mad)
        };
        self.core.handle_mad(self.now, received);
        true
    }

    /// Lets `by` pass, firing every timer due on the way.
    pub(crate) fn advance(&mut self, by: Duration) {
        let end = self.now + by;
        for _ in 0..1_000_000 {
            let next = [self.core.poll_timeout(), self.master.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.core.handle_timeout(self.now);
                    self.master.handle_timeout(self.now);
                    self.pump();
                }
                _ => {
                    self.now = end;
                    return;
                }
            }
        }
        panic!("timers keep firing without time passing");
    }

    /// `from` sends the agent `mad`, whole.
    pub(crate) fn deliver(&mut self, from: Address, mad: &[u8]) {
        let received = Received::new(from, Bytes::copy_from_slice(mad));
        self.core.handle_mad(self.now, received);
    }

    /// What the agent sent to `lid` since last asked.
    pub(crate) fn take_sent(&mut self, lid: u16) -> Vec<Bytes> {
        let (mine, rest): (Vec<Transmit>, Vec<Transmit>) =
            self.sent.drain(..).partition(|t| t.dest.lid == lid);
        self.sent = rest.into();
        mine.into_iter().map(|t| t.mad).collect()
    }

    /// `from` sends `request`; returns the MADs the agent sent `from`.
    pub(crate) fn ask(&mut self, from: Address, request: &[u8]) -> Vec<Bytes> {
        self.deliver(from, request);
        self.pump();
        self.take_sent(from.lid)
    }

    /// `from` sends `request` and receives the whole answer as a client
    /// does: one MAD, or an RMPP transfer it acknowledges segment by
    /// segment.
    pub(crate) fn query(&mut self, from: Address, request: &[u8]) -> Bytes {
        let mut mads = self.ask(from, request);
        assert!(!mads.is_empty(), "no answer to the query");
        let (h, _) = SaMadHeader::parse(&mads[0]).expect("SA headers");
        if !(h.rmpp.is_active() && h.rmpp.rmpp_type() == RmppType::DATA) {
            assert_eq!(mads.len(), 1, "one answer");
            return mads.remove(0);
        }
        let mut r = Receiver::new(RmppConfig::default(), self.now);
        for _ in 0..10_000 {
            for m in mads.drain(..) {
                r.handle_segment(self.now, &m);
            }
            while let Some(ack) = r.poll_transmit() {
                self.deliver(from, &ack);
            }
            self.pump();
            if r.state() != TransferState::Active {
                break;
            }
            mads = self.take_sent(from.lid);
        }
        assert_eq!(
            r.state(),
            TransferState::Complete,
            "the answer arrived whole"
        );
        r.take_message().expect("the reassembled answer")
    }
}
