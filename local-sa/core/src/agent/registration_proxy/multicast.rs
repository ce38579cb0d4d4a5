//! Multicast joins and leaves for this port's members, through the
//! [`Memberships`](crate::memberships::Memberships) state machine: joins
//! let in by their owners' limits, its effects turned into requests for
//! the master and answers for the askers, the group traps followed while
//! the port is in some group. Queries about the groups this port holds
//! are answered here.
//!
//! Members are processes on this port: local programs, and programs that
//! send MCMemberRecord Set/Delete MADs to this port's own LID. A MAD member
//! keeps its membership by joining again within the member lease
//! ([`AgentConfig::member_lease`](crate::config::AgentConfig)); a local
//! connection keeps it while it is open.

use std::time::Instant;

use crate::agent::counterparts::{Asker, Member};
use crate::agent::master::purpose::Purpose;
use crate::agent::registration_proxy::RegistrationProxy;
use crate::agent::registration_proxy::effect::ProxyEffect;
use crate::memberships::{Change, Effect, JoinAnswer, OpId};
use crate::request::{LocalBody, LocalReply};
use crate::requester;
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::records::SaRecord;
use mad_codec::{
    AttributeId, ComponentMask, Gid, JoinState, MadStatus, McMemberRecord, SaMadBuilder,
};

impl RegistrationProxy {
    /// A join (let in by its owner's limits, or refused) or a leave.
    pub(in crate::agent) fn membership_change(
        &mut self,
        now: Instant,
        mut change: Change<Member, Asker>,
    ) -> Vec<ProxyEffect> {
        if change.join
            && let Err(refusal) = self.admit_join(&mut change, self.owners())
        {
            self.registration_refused(now, refusal);
            let answer = JoinAnswer::Refused(MadStatus::ERR_NO_RESOURCES);
            return vec![ProxyEffect::AnswerJoin {
                asker: change.asker,
                answer,
            }];
        }
        let (member, mgid) = (change.member, change.record.mgid());
        let mut effects = Vec::new();
        self.memberships.request(now, change, &mut effects);
        let out = self.membership_effects(now, effects);
        self.settle_member(member, Some(mgid));
        out
    }

    /// The master answered a membership request, or did not (`None`).
    pub(in crate::agent) fn membership_answered(
        &mut self,
        now: Instant,
        op: OpId,
        answer: Option<&requester::Answer>,
    ) -> Vec<ProxyEffect> {
        let verdict = answer.map(|a| {
            let record =
                (a.data().len() >= McMemberRecord::LEN).then(|| a.record::<McMemberRecord>());
            (a.status(), record)
        });
        let mut effects = Vec::new();
        self.memberships.answered(now, op, verdict, &mut effects);
        self.membership_effects(now, effects)
    }

    /// Everything `member` holds goes.
    pub(in crate::agent) fn remove_member(
        &mut self,
        now: Instant,
        member: Member,
    ) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        self.memberships.remove_member(now, member, &mut effects);
        self.release_member(member);
        self.membership_effects(now, effects)
    }

    /// Lease ends and retries that are due.
    pub(super) fn memberships_due(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        self.memberships.handle_timeout(now, &mut effects);
        self.membership_effects(now, effects)
    }

    /// Joins every group again (a new master, a restart).
    pub(super) fn rejoin_all(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        self.memberships.rejoin_all(&mut effects);
        self.membership_effects(now, effects)
    }

    /// The master created (trap 66) or deleted (trap 67) group `mgid`.
    pub(in crate::agent) fn group_notice(
        &mut self,
        now: Instant,
        mgid: Gid,
        created: bool,
    ) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        if created {
            self.memberships.group_created(now, mgid, &mut effects);
        } else {
            self.memberships.group_deleted(now, mgid, &mut effects);
        }
        self.membership_effects(now, effects)
    }

    /// Leaves every group (shutdown).
    pub(super) fn leave_all(&mut self, now: Instant) -> Vec<ProxyEffect> {
        let mut effects = Vec::new();
        self.memberships.leave_all(now, &mut effects);
        self.membership_effects(now, effects)
    }

    /// What the memberships ask, as effects (the owners' quotas follow
    /// the answers), then the group traps as the groups now want them.
    pub(super) fn membership_effects(
        &mut self,
        now: Instant,
        effects: Vec<Effect<Member, Asker>>,
    ) -> Vec<ProxyEffect> {
        let mut out = Vec::new();
        for effect in effects {
            match effect {
                Effect::Send {
                    op,
                    method,
                    mask,
                    record,
                } => {
                    let mut b = SaMadBuilder::request(method, 0, AttributeId::MC_MEMBER_RECORD)
                        .record(&record);
                    b.header_mut().sa.set_component_mask(mask);
                    let purpose = Purpose::Membership(op);
                    out.push(ProxyEffect::Send {
                        purpose,
                        request: b.into_bytes(),
                    });
                }
                // Counted and logged by the memberships; a member by MAD
                // has nobody to tell.
                Effect::LeaseEnded { member } => self.release_member(member),
                // A member by MAD learns of group changes from the
                // master's notices (traps 66/67), as any SA client.
                Effect::Event {
                    member: Member::Local(conn),
                    event,
                } => out.push(ProxyEffect::Local(LocalReply {
                    conn,
                    request: 0,
                    answers: None,
                    status: MadStatus::OK,
                    from_master: false,
                    body: LocalBody::GroupEvent(event),
                })),
                Effect::Event {
                    member: Member::Mad { .. },
                    ..
                } => {}
                Effect::Answer { asker, answer } => {
                    let member = asker.member();
                    let mgid = match &answer {
                        JoinAnswer::Joined(r)
                        | JoinAnswer::Left(r)
                        | JoinAnswer::Master {
                            record: Some(r), ..
                        } => Some(r.mgid()),
                        JoinAnswer::Master { record: None, .. } | JoinAnswer::Refused(_) => None,
                    };
                    match &answer {
                        JoinAnswer::Master {
                            status: MadStatus::OK,
                            record: Some(r),
                        } => self.join_granted(member, r.mgid(), self.owners()),
                        JoinAnswer::Refused(MadStatus::ERR_NO_RESOURCES) => {
                            let refusal = self.creation_refused(member, self.owners());
                            self.registration_refused(now, refusal);
                        }
                        _ => {}
                    }
                    out.push(ProxyEffect::AnswerJoin { asker, answer });
                    self.settle_member(member, mgid);
                }
            }
        }
        out.extend(self.follow_group_traps());
        out
    }

    /// MCMemberRecord Get/GetTable by `template` and `mask`, from
    /// `port_gid`'s own view: the record of a group this port holds when
    /// it asks only about that group (and this port), or `None` (the
    /// master's to answer).
    pub(in crate::agent) fn member_record(
        &self,
        template: &McMemberRecord,
        mask: ComponentMask,
        trusted: bool,
    ) -> Option<McMemberRecord> {
        let (record, state) = self.memberships.held(template.mgid())?;
        let about_us = !mask.contains(mc::PORT_GID) || template.port_gid() == self.port_gid;
        // Only MGID (and PortGID) selections are answered here; the master
        // matches any other component against its own records.
        let only_group_and_port = mask.0 & !(mc::MGID.0 | mc::PORT_GID.0) == 0;
        let answerable = mask.contains(mc::MGID)
            && (!trusted || mask.contains(mc::PORT_GID))
            && only_group_and_port
            && about_us;
        if !answerable {
            return None;
        }
        let mut r = record;
        if mask.contains(mc::PORT_GID) {
            r.set_port_gid(self.port_gid);
            r.set_join_state(state);
        } else {
            // Untrusted, one record per group: no member shown (OpenSM).
            r.set_port_gid(Gid::ZERO);
            r.set_join_state(JoinState::NONE);
            r.set_proxy_join(false);
        }
        Some(r)
    }

    /// The records of every group this port is in.
    pub(in crate::agent) fn group_records(&self) -> Vec<McMemberRecord> {
        self.memberships.group_records()
    }
}
