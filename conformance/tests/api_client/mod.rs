//! A blocking client of local-sa's local API (docs/local-api.md), as a
//! consumer program on the node would write one: one request at a time,
//! notices collected as they arrive between answers.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use local_sa_core::doors::api::{self, Frame, kind};
use local_sa_core::memberships::GroupEvent;
use local_sa_core::request::Request;
use mad_codec::SaRecord;
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    Gid, InformInfoRepr, JoinState, MadStatus, McMemberRecord, Notice, TrapDetails, TrapNumber,
};

/// One connection: what it registers lasts until it is dropped.
pub(crate) struct Client {
    stream: UnixStream,
    next: u32,
    notices: Vec<Notice>,
    group_events: Vec<GroupEvent>,
    reassembly: api::Reassembly,
}

impl Client {
    pub(crate) fn connect(path: &Path) -> Self {
        let stream = UnixStream::connect(path)
            .unwrap_or_else(|e| panic!("local API at {}: {e}", path.display()));
        Self {
            stream,
            next: 1,
            notices: Vec::new(),
            group_events: Vec::new(),
            reassembly: api::Reassembly::default(),
        }
    }

    /// The next frame, if one starts within `timeout`; an answer split
    /// over several frames, whole.
    fn read_frame(&mut self, timeout: Duration) -> Option<Frame> {
        loop {
            let part = self.read_one_frame(timeout)?;
            if let Some(frame) = self.reassembly.push(part) {
                return Some(frame);
            }
        }
    }

    fn read_one_frame(&mut self, timeout: Duration) -> Option<Frame> {
        // Wait for the first byte only: once a frame starts, the rest of
        // it is already on its way.
        let mut len = [0u8; 4];
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
            .unwrap();
        loop {
            match self.stream.read(&mut len[..1]) {
                Ok(1) => break,
                Ok(_) => panic!("local-sa closed the connection"),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None;
                }
                // A signal delivered to the test process cut the wait
                // short: wait again.
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("local API: {e}"),
            }
        }
        self.stream.set_read_timeout(None).unwrap();
        self.stream.read_exact(&mut len[1..]).unwrap();
        let n = Frame::announced(len).expect("a frame of a valid length");
        let mut rest = vec![0u8; n];
        self.stream.read_exact(&mut rest).unwrap();
        Some(Frame::decode(&rest).expect("a version 1 frame"))
    }

    /// Keeps what arrives unasked (notices, group events); false for
    /// anything else.
    fn keep_notice(&mut self, f: &Frame) -> bool {
        if f.kind == kind::GROUP_EVENT {
            self.group_events
                .push(api::group_event(f).expect("a group event local-sa sends"));
            return true;
        }
        if f.kind != kind::NOTICE {
            return false;
        }
        self.notices
            .push(api::notice(f).expect("a notice carries a Notice"));
        true
    }

    /// Waits up to `timeout` for a group event that satisfies `wanted`
    /// (it stays counted).
    pub(crate) fn wait_group_event(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&GroupEvent) -> bool,
    ) -> bool {
        self.wait_unasked(timeout, |c| c.group_events.iter().any(&wanted))
    }

    /// Reads what arrives unasked for up to `timeout`, until `done`.
    fn wait_unasked(&mut self, timeout: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(self) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if let Some(f) = self.read_frame(left) {
                assert!(
                    self.keep_notice(&f),
                    "only notices and group events arrive unasked"
                );
            }
        }
    }

    /// Sends `request` and returns its answer.
    fn call(&mut self, request: &Request) -> Frame {
        let id = self.next;
        self.next += 1;
        self.stream
            .write_all(&api::request_frame(request, id).encode())
            .unwrap();
        loop {
            let f = self
                .read_frame(Duration::from_secs(60))
                .unwrap_or_else(|| panic!("no answer to {request:?}"));
            if self.keep_notice(&f) {
                continue;
            }
            assert_eq!(f.request, id, "answers come in order");
            assert_ne!(
                f.kind,
                kind::ERROR,
                "local-sa refused {request:?}: {}",
                api::describe_error(f.status)
            );
            return f;
        }
    }

    /// Writes `bytes` as they are and returns the next frame, if one comes
    /// within a few seconds (notices aside).
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) -> Option<Frame> {
        self.stream.write_all(bytes).ok()?;
        loop {
            let f = self.read_frame(Duration::from_secs(5))?;
            if !self.keep_notice(&f) {
                return Some(f);
            }
        }
    }

    /// True once local-sa has closed the connection.
    pub(crate) fn is_closed(&mut self) -> bool {
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        matches!(self.stream.read(&mut [0u8; 1]), Ok(0))
    }

    /// Asks which port local-sa serves (HELLO); the answer's length.
    pub(crate) fn hello(&mut self) -> usize {
        self.call(&Request::Hello).body.len()
    }

    /// How many subscriptions local-sa says this port holds.
    pub(crate) fn list_subscriptions(&mut self) -> usize {
        let f = self.call(&Request::ListSubscriptions);
        assert!(api::status(&f).is_ok());
        f.body.len() / mad_codec::InformInfoRecord::STRIDE
    }

    /// Subscribes to (or unsubscribes from) one generic trap, or every
    /// trap with [`TrapNumber::ALL`].
    pub(crate) fn subscribe(&mut self, trap: TrapNumber, on: bool) -> MadStatus {
        let ii = InformInfoRepr::generic_subscription(trap, on, 0, 0).to_wire();
        api::status(&self.call(&Request::Inform(ii)))
    }

    fn membership(
        &mut self,
        join: bool,
        mask: mad_codec::ComponentMask,
        group: Gid,
        bits: JoinState,
    ) -> MadStatus {
        let mut record = McMemberRecord::new_zeroed();
        record.set_mgid(group);
        record.set_join_state(bits);
        record.set_pkey(0xFFFF);
        let request = if join {
            Request::Join { mask, record }
        } else {
            Request::Leave { mask, record }
        };
        api::status(&self.call(&request))
    }

    /// Joins `group` with `bits`, creating it if it does not exist.
    pub(crate) fn join(&mut self, group: Gid, bits: JoinState) -> MadStatus {
        self.membership(true, mc::CREATE, group, bits)
    }

    /// Joins `group`, giving only what a join of an existing group needs.
    pub(crate) fn join_without_create(&mut self, group: Gid, bits: JoinState) -> MadStatus {
        self.membership(true, mc::JOIN, group, bits)
    }

    /// Leaves the `bits` of `group`.
    pub(crate) fn leave(&mut self, group: Gid, bits: JoinState) -> MadStatus {
        self.membership(false, mc::JOIN, group, bits)
    }

    /// How many groups local-sa says this port holds.
    pub(crate) fn list_groups(&mut self) -> usize {
        let f = self.call(&Request::ListGroups);
        assert!(api::status(&f).is_ok());
        f.body.len() / McMemberRecord::STRIDE
    }

    /// Waits up to `timeout` for a notice whose details satisfy `wanted`
    /// (it stays counted).
    pub(crate) fn wait_notice(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&TrapDetails) -> bool,
    ) -> bool {
        self.wait_unasked(timeout, |c| c.notices.iter().any(|n| wanted(&n.details())))
    }

    /// Collects the notices that arrive within `period`.
    pub(crate) fn collect_notices(&mut self, period: Duration) {
        self.wait_notice(period, |_| false);
    }

    /// How many notices so far satisfy `wanted`.
    pub(crate) fn count_notices(&self, wanted: impl Fn(&TrapDetails) -> bool) -> usize {
        self.notices.iter().filter(|n| wanted(&n.details())).count()
    }

    /// Forgets the notices collected so far.
    pub(crate) fn forget_notices(&mut self) {
        self.notices.clear();
    }
}
