//! The fuzz harness of the memberships machine
//! (`fuzz/fuzz_targets/memberships.rs`).
//!
//! Four members (0 and 1 joined by MAD, so they renew; 2 and 3 local) join
//! and leave two groups with any JoinState, a fake master answers, refuses
//! or loses the machine's requests, members go away, time passes (leases
//! end, retries come due) and a new master arrives that holds nothing. The
//! input is a script of steps, each an opcode byte (modulo 8) and its
//! operands:
//!
//! * `0`: a join or leave: a byte (member in bits 0–1, join in bit 2,
//!   group in bit 3, the member's owner out of group creations in bit 4,
//!   no JOIN component in bit 7) and the JoinState byte;
//! * `1`: the master answers a request in flight: a byte picks which, a
//!   byte whether it accepts it, refuses it (a join) or loses it before
//!   applying it;
//! * `2`: a member goes: its byte;
//! * `3`: time passes: a byte of seconds;
//! * `4`: a new master that holds nothing: every group is joined again;
//! * `5`: the master accepts everything in flight;
//! * `6`: shutdown, which ends the script: every group is left, and the
//!   master then answers (a byte: accepts or loses) whatever it is asked;
//! * `7`: another agent on the port (the kernel) joins a group the machine
//!   knows nothing of yet, directly at the master: a byte (group in bit 3)
//!   and the JoinState byte.
//!
//! Beside the machine runs a model of what each member holds, kept from
//! the answers the members get. The harness panics when the machine breaks
//! its contract:
//!
//! * a Delete names a bit that a member still holds (one not in the middle
//!   of leaving it), or one the other agent holds;
//! * an asker is answered twice;
//! * once the master has answered everything and every retry has run, the
//!   bits it holds for the port in a group differ from the union of what
//!   the members hold there (in a group the other agent is in: do not
//!   include that union and the other agent's bits), or the machine still
//!   waits for something.
//!
//! The master answers the machine's question whether the port is in a
//! group as OpenSM answers an untrusted one: the record without its
//! JoinState, or ERR_NO_RECORDS.
//!
//! A request the master applied but whose answer was lost is not played:
//! nothing tells any agent what the master holds then, short of joining
//! again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, JoinState, MadStatus, McMemberRecord, Method};

use crate::memberships::{Change, Effect, JoinAnswer, MembershipConfig, Memberships, OpId};

const PORT: Gid = Gid::new(Gid::DEFAULT_PREFIX, 0x51);
const GROUPS: [Gid; 2] = [
    Gid::new(0xff12_601b_ffff_0000, 1),
    Gid::new(0xff12_601b_ffff_0000, 2),
];
const LEASE: Duration = Duration::from_secs(30);
const BACKOFF: Duration = Duration::from_secs(5);

/// Who waits for an answer: a member and the number of its request.
type Asker = (u8, u32);

/// How a request is asked.
#[derive(Clone, Copy)]
struct Flags {
    /// It carries the JOIN components (and the CREATE ones).
    mask_ok: bool,
    /// Its owner may create groups.
    may_create: bool,
}

/// A request the machine sent the master.
struct Sent {
    op: OpId,
    method: Method,
    record: McMemberRecord,
}

struct World {
    now: Instant,
    machine: Memberships<u8, Asker>,
    /// What the master holds for the port, per group.
    master: BTreeMap<Gid, JoinState>,
    /// What another agent on the port holds, per group.
    kernel: BTreeMap<Gid, JoinState>,
    in_flight: Vec<Sent>,
    /// What each member holds, per group, as its answers told it.
    model: BTreeMap<(Gid, u8), JoinState>,
    /// Requests not answered yet: (join, group, bits).
    asked: BTreeMap<Asker, (bool, Gid, JoinState)>,
    answered: BTreeSet<Asker>,
    next_seq: u32,
}

impl World {
    fn new() -> Self {
        let config = MembershipConfig {
            member_lease: LEASE,
            retry_backoff: BACKOFF,
        };
        Self {
            now: Instant::now(),
            machine: Memberships::new(config, PORT),
            master: BTreeMap::new(),
            kernel: BTreeMap::new(),
            in_flight: Vec::new(),
            model: BTreeMap::new(),
            asked: BTreeMap::new(),
            answered: BTreeSet::new(),
            next_seq: 0,
        }
    }

    /// The bits of `mgid` some member holds and is not leaving.
    fn kept(&self, mgid: Gid) -> JoinState {
        let mut kept = JoinState::NONE;
        for ((g, m), bits) in &self.model {
            if *g != mgid {
                continue;
            }
            let leaving = self
                .asked
                .iter()
                .filter(|((who, _), (join, group, _))| who == m && !join && *group == mgid)
                .fold(JoinState::NONE, |acc, (_, (_, _, b))| acc | *b);
            kept |= bits.minus(leaving);
        }
        kept
    }

    fn apply(&mut self, effects: Vec<Effect<u8, Asker>>) {
        for e in effects {
            match e {
                Effect::Send {
                    op, method, record, ..
                } => {
                    if method == Method::DELETE {
                        let kept = self.kept(record.mgid()) | self.kernel_bits(record.mgid());
                        assert!(
                            kept.minus(record.join_state()) == kept,
                            "a Delete of {:?} in {} while members hold {kept:?}",
                            record.join_state(),
                            record.mgid()
                        );
                    }
                    self.in_flight.push(Sent { op, method, record });
                }
                Effect::Answer { asker, answer } => self.answer(asker, &answer),
                Effect::Event { .. } => {}
                Effect::LeaseEnded { member } => {
                    // It holds nothing and waits for nothing any more.
                    self.model.retain(|(_, m), _| *m != member);
                    self.asked.retain(|(m, _), _| *m != member);
                }
            }
        }
    }

    fn kernel_bits(&self, mgid: Gid) -> JoinState {
        self.kernel.get(&mgid).copied().unwrap_or(JoinState::NONE)
    }

    /// The other agent joins `mgid` with `bits`, if the machine does not
    /// know the group yet.
    fn kernel_joins(&mut self, mgid: Gid, bits: JoinState) {
        if self.machine.knows(mgid) || bits.is_empty() {
            return;
        }
        *self.kernel.entry(mgid).or_default() |= bits;
        *self.master.entry(mgid).or_default() |= bits;
    }

    fn answer(&mut self, asker: Asker, answer: &JoinAnswer) {
        assert!(self.answered.insert(asker), "{asker:?} answered twice");
        let Some((join, mgid, bits)) = self.asked.remove(&asker) else {
            // A request of a member that went away meanwhile.
            return;
        };
        let held = self.model.entry((mgid, asker.0)).or_default();
        match answer {
            JoinAnswer::Joined(_)
            | JoinAnswer::Master {
                status: MadStatus::OK,
                ..
            } => {
                assert!(join, "a join's answer to a leave");
                *held |= bits;
            }
            JoinAnswer::Left(_) => {
                assert!(!join, "a leave's answer to a join");
                *held = held.minus(bits);
            }
            JoinAnswer::Master { .. } | JoinAnswer::Refused(_) => {}
        }
        if held.is_empty() {
            self.model.remove(&(mgid, asker.0));
        }
    }

    fn request(&mut self, member: u8, join: bool, mgid: Gid, bits: JoinState, flags: Flags) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut record = McMemberRecord::new_zeroed();
        record.set_mgid(mgid);
        record.set_port_gid(PORT);
        record.set_qkey(0x1234);
        record.set_join_state(bits);
        let mask = if flags.mask_ok {
            mc::CREATE
        } else {
            mc::QKEY | mc::PKEY
        };
        self.asked.insert((member, seq), (join, mgid, bits));
        let change = Change {
            join,
            member,
            renews: member < 2,
            asker: (member, seq),
            mask,
            record,
            may_create: flags.may_create,
        };
        let mut out = Vec::new();
        self.machine.request(self.now, change, &mut out);
        self.apply(out);
    }

    /// The master takes request `i` in flight: `Some(true)` accepts it,
    /// `Some(false)` refuses it (a join; a leave it cannot refuse here),
    /// `None` loses it before applying it.
    fn master_answers(&mut self, i: usize, verdict: Option<bool>) {
        if self.in_flight.is_empty() {
            return;
        }
        let sent = self.in_flight.remove(i % self.in_flight.len());
        let mgid = sent.record.mgid();
        let bits = sent.record.join_state();
        let answer = match verdict {
            None => None,
            Some(_) if sent.method == Method::GET => {
                if self.master.contains_key(&mgid) {
                    let mut r = sent.record;
                    r.set_port_gid(Gid::ZERO);
                    Some((MadStatus::OK, Some(r)))
                } else {
                    Some((MadStatus::ERR_NO_RECORDS, None))
                }
            }
            Some(false) if sent.method == Method::SET => Some((MadStatus::ERR_REQ_INVALID, None)),
            Some(_) => {
                let held = self.master.entry(mgid).or_default();
                let status = if sent.method == Method::SET {
                    *held |= bits;
                    MadStatus::OK
                } else if held.contains(bits) {
                    *held = held.minus(bits);
                    MadStatus::OK
                } else {
                    MadStatus::ERR_REQ_INVALID
                };
                let mut r = sent.record;
                r.set_join_state(*held);
                if held.is_empty() {
                    self.master.remove(&mgid);
                }
                Some((status, (status == MadStatus::OK).then_some(r)))
            }
        };
        let mut out = Vec::new();
        self.machine.answered(self.now, sent.op, answer, &mut out);
        self.apply(out);
    }

    fn remove(&mut self, member: u8) {
        self.model.retain(|(_, m), _| *m != member);
        self.asked.retain(|(m, _), _| *m != member);
        let mut out = Vec::new();
        self.machine.remove_member(self.now, member, &mut out);
        self.apply(out);
    }

    fn pass(&mut self, by: Duration) {
        self.now += by;
        let mut out = Vec::new();
        self.machine.handle_timeout(self.now, &mut out);
        self.apply(out);
    }

    fn new_master(&mut self) {
        // The other agent joins the new master again too.
        self.master = self.kernel.clone();
        let mut out = Vec::new();
        self.machine.rejoin_all(&mut out);
        self.apply(out);
    }

    /// Leaves everything; the master accepts (`accept`) or loses every
    /// request from then on.
    fn shut_down(&mut self, accept: bool) {
        // Every member goes; nobody waits for an answer any more.
        self.model.clear();
        self.asked.clear();
        let mut out = Vec::new();
        self.machine.leave_all(self.now, &mut out);
        self.apply(out);
        for _ in 0..64 {
            if self.in_flight.is_empty() {
                break;
            }
            self.master_answers(0, accept.then_some(true));
        }
        assert!(
            self.in_flight.is_empty(),
            "requests without end after shutdown"
        );
        assert_eq!(self.machine.groups(), 0, "groups kept after shutdown");
        assert_eq!(self.machine.poll_timeout(), None, "retries after shutdown");
        // What the master may still hold of the agent's stays listed for
        // the next agent on the port.
        let listed: BTreeMap<Gid, JoinState> = self.machine.possibly_held().into_iter().collect();
        // (Where the other agent is in the group, the agent's bits may not
        // be its to delete: see the module docs of the machine.)
        for (mgid, own) in self
            .master
            .iter()
            .filter(|(g, _)| self.kernel_bits(**g).is_empty())
        {
            let record = listed.get(mgid).copied().unwrap_or(JoinState::NONE);
            assert!(
                record.contains(*own),
                "{mgid}: the master holds {own} of the agent's, the record lists {record}"
            );
        }
        if accept && self.kernel.is_empty() {
            assert!(
                self.master.is_empty(),
                "the master still holds {:?}",
                self.master
            );
        }
        for (mgid, bits) in &self.kernel {
            let at_master = self.master.get(mgid).copied().unwrap_or(JoinState::NONE);
            assert!(
                at_master.contains(*bits),
                "{mgid}: the other agent's {bits} deleted"
            );
        }
    }

    fn settle(&mut self) {
        for _ in 0..64 {
            while !self.in_flight.is_empty() {
                self.master_answers(0, Some(true));
            }
            let Some(next) = self.machine.poll_timeout() else {
                break;
            };
            let until = next.saturating_duration_since(self.now);
            self.pass(until.max(BACKOFF) + Duration::from_secs(1));
        }
        assert!(self.in_flight.is_empty() && !self.machine.is_busy());
        assert!(
            self.asked.is_empty(),
            "requests never answered: {:?}",
            self.asked
        );
        assert!(
            self.machine.poll_timeout().is_none(),
            "retries or leases still pending after settling"
        );
        let listed: BTreeMap<Gid, JoinState> = self.machine.possibly_held().into_iter().collect();
        let gave_up = self.machine.counts().leaves_given_up > 0;
        for mgid in GROUPS {
            let union = self
                .model
                .iter()
                .filter(|((g, _), _)| *g == mgid)
                .fold(JoinState::NONE, |acc, (_, b)| acc | *b);
            let at_master = self.master.get(&mgid).copied().unwrap_or(JoinState::NONE);
            let kernel = self.kernel_bits(mgid);
            let record = listed.get(&mgid).copied().unwrap_or(JoinState::NONE);
            if kernel.is_empty() && gave_up && at_master != union {
                // A leave the master never answered, given up: what it
                // still holds is nobody's here and listed for the next
                // agent on the port.
                assert!(
                    at_master.contains(union) && (union | record).contains(at_master),
                    "{mgid}: the master holds {at_master}, the members {union}, the record {record}"
                );
            } else if kernel.is_empty() {
                assert_eq!(
                    at_master, union,
                    "{mgid}: the master holds {at_master}, the members {union}"
                );
            } else {
                assert!(
                    at_master.contains(union | kernel),
                    "{mgid}: the master holds {at_master}, the members {union}, the other agent {kernel}"
                );
            }
        }
    }
}

/// Runs the script in `data`; see the module docs.
pub fn memberships(data: &[u8]) {
    let mut w = World::new();
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 8 {
            0 => {
                let Some((&[what, bits], tail)) = rest.split_first_chunk::<2>() else {
                    break;
                };
                rest = tail;
                let group = GROUPS[usize::from((what >> 3) & 1)];
                let flags = Flags {
                    mask_ok: what & 0x80 == 0,
                    may_create: what & 0x10 == 0,
                };
                w.request(what & 3, what & 4 != 0, group, JoinState(bits & 0xF), flags);
            }
            1 => {
                let Some((&[which, verdict], tail)) = rest.split_first_chunk::<2>() else {
                    break;
                };
                rest = tail;
                let verdict = match verdict % 3 {
                    0 => Some(true),
                    1 => Some(false),
                    _ => None,
                };
                w.master_answers(usize::from(which), verdict);
            }
            2 => {
                let Some((&member, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                w.remove(member & 3);
            }
            3 => {
                let Some((&secs, tail)) = rest.split_first() else {
                    break;
                };
                rest = tail;
                w.pass(Duration::from_secs(u64::from(secs)));
            }
            4 => w.new_master(),
            7 => {
                let Some((&[what, bits], tail)) = rest.split_first_chunk::<2>() else {
                    break;
                };
                rest = tail;
                w.kernel_joins(GROUPS[usize::from((what >> 3) & 1)], JoinState(bits & 0xF));
            }
            6 => {
                let accept = rest.first().is_none_or(|b| b & 1 == 0);
                return w.shut_down(accept);
            }
            _ => {
                while !w.in_flight.is_empty() {
                    w.master_answers(0, Some(true));
                }
            }
        }
    }
    w.settle();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_run() {
        memberships(&[]);
        // Members 0 (Full) and 2 (Non) join group 1; the master accepts;
        // 0 leaves; a new master; member 2 goes; everything settles.
        memberships(&[
            0, 0x04, 1, 1, 0, 0, 0, 0x06, 2, 5, 0, 0x00, 1, 5, 4, 2, 2, 3, 40,
        ]);
        memberships(&(0..=255).collect::<Vec<u8>>());
        // A member goes while its join is out; the master accepts the join
        // but loses the Delete that follows; then shutdown.
        memberships(&[0, 0x04, 1, 1, 0, 0, 2, 0, 1, 0, 2, 6, 0]);
    }
}
