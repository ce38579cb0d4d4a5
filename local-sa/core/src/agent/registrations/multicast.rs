//! Multicast joins and leaves for this port's members, through the
//! [`Memberships`](crate::memberships::Memberships) state machine: MADs and
//! local requests become its inputs, its effects become requests to the
//! master and answers to the askers. Queries about the groups this port
//! holds are answered here.
//!
//! Members are processes on this port: local programs, and programs that
//! send MCMemberRecord Set/Delete MADs to this port's own LID. A MAD member
//! keeps its membership by joining again within the member lease
//! ([`AgentConfig::member_lease`](crate::config::AgentConfig)); a local
//! connection keeps it while it is open.

use std::time::Instant;

use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::records::SaRecord;
use mad_codec::{
    AttributeId, ComponentMask, Gid, JoinState, MadStatus, McMemberRecord, Method, SaMadBuilder,
};
use tracing::{debug, warn};

use crate::agent::SaCore;
use crate::agent::counterparts::{Asker, Member};
use crate::agent::master::purpose::Purpose;
use crate::agent::registrations::admission::{Owners, Refusal};
use crate::agent::registrations::quotas::Refused;
use crate::inbound::SaRequest;
use crate::memberships::{Change, Effect, JoinAnswer, OpId};
use crate::quota::Owner;
use crate::request::{LocalBody, LocalReply};
use crate::requester;

impl SaCore {
    /// A Set (join) or Delete (leave) of an MCMemberRecord MAD.
    pub(in crate::agent) fn membership_mad(&mut self, now: Instant, request: SaRequest) {
        if !self.port.lids().contains(&request.from.lid) {
            // Members are this port's processes; another port joins
            // through its own SA.
            debug!(
                lid = request.from.lid,
                "a join or leave from another port: refused"
            );
            return self.respond_error(&request, MadStatus::ERR_REQ_INVALID);
        }
        let Some(record) = request.record::<McMemberRecord>() else {
            return self.respond_error(&request, MadStatus::ERR_REQ_INVALID);
        };
        let (join, mask) = (request.method() == Method::SET, request.mask());
        let asker = Asker::Mad(request);
        let change = Change {
            join,
            member: asker.member(),
            renews: true,
            mask,
            record,
            asker,
            may_create: false,
        };
        self.membership_change(now, change);
    }

    /// A local program's join or leave.
    pub(in crate::agent) fn local_membership(
        &mut self,
        now: Instant,
        asker: Asker,
        join: bool,
        mask: ComponentMask,
        mut record: McMemberRecord,
    ) {
        let Some(conn) = asker.conn() else { return };
        // A local program joins as this port, whatever it filled in.
        record.set_port_gid(self.port.gid);
        let change = Change {
            join,
            member: Member::Local(conn),
            renews: false,
            asker,
            mask: mask | mc::PORT_GID,
            record,
            may_create: false,
        };
        self.membership_change(now, change);
    }

    /// A join (let in by its owner's limits, or refused) or a leave.
    fn membership_change(&mut self, now: Instant, mut change: Change<Member, Asker>) {
        if change.join
            && let Err(refusal) = self.proxy.admit_join(&mut change, self.owners())
        {
            self.registration_refused(now, refusal);
            return self.answer_status(&change.asker, MadStatus::ERR_NO_RESOURCES);
        }
        let (member, mgid) = (change.member, change.record.mgid());
        let mut effects = Vec::new();
        self.proxy.memberships.request(now, change, &mut effects);
        self.apply_membership_effects(now, effects, None);
        self.proxy.settle_member(member, Some(mgid));
    }

    /// The master answered a membership request, or did not (`None`).
    pub(in crate::agent) fn membership_answered(
        &mut self,
        now: Instant,
        op: OpId,
        answer: Option<&requester::Answer>,
    ) {
        let verdict = answer.map(|a| {
            let record =
                (a.data().len() >= McMemberRecord::LEN).then(|| a.record::<McMemberRecord>());
            (a.status(), record)
        });
        let mut effects = Vec::new();
        self.proxy
            .memberships
            .answered(now, op, verdict, &mut effects);
        self.apply_membership_effects(now, effects, answer.map(requester::Answer::mad));
    }

    /// Everything `member` holds goes.
    pub(in crate::agent) fn remove_member(&mut self, now: Instant, member: Member) {
        let mut effects = Vec::new();
        self.proxy
            .memberships
            .remove_member(now, member, &mut effects);
        self.proxy.release_member(member);
        self.apply_membership_effects(now, effects, None);
    }

    /// Lease ends and retries that are due.
    pub(in crate::agent) fn memberships_timeout(&mut self, now: Instant) {
        let mut effects = Vec::new();
        self.proxy.memberships.handle_timeout(now, &mut effects);
        self.apply_membership_effects(now, effects, None);
    }

    /// Joins every group again (a new master, a restart).
    pub(in crate::agent) fn rejoin_all(&mut self, now: Instant) {
        let mut effects = Vec::new();
        self.proxy.memberships.rejoin_all(&mut effects);
        self.apply_membership_effects(now, effects, None);
    }

    /// The master created (trap 66) or deleted (trap 67) group `mgid`.
    pub(in crate::agent) fn group_notice(&mut self, now: Instant, mgid: Gid, created: bool) {
        let mut effects = Vec::new();
        if created {
            self.proxy
                .memberships
                .group_created(now, mgid, &mut effects);
        } else {
            self.proxy
                .memberships
                .group_deleted(now, mgid, &mut effects);
        }
        self.apply_membership_effects(now, effects, None);
    }

    /// Leaves every group (shutdown).
    pub(in crate::agent) fn leave_all(&mut self, now: Instant) {
        let mut effects = Vec::new();
        self.proxy.memberships.leave_all(now, &mut effects);
        self.apply_membership_effects(now, effects, None);
    }

    /// Carries out what the memberships ask; `master` is the master's
    /// answer that led to them, if one did (passed on as it came to the
    /// port whose request it answers).
    pub(in crate::agent) fn apply_membership_effects(
        &mut self,
        now: Instant,
        effects: Vec<Effect<Member, Asker>>,
        master: Option<&bytes::Bytes>,
    ) {
        self.apply_group_effects(now, effects, master);
        self.follow_group_traps(now);
    }

    /// Carries out each of the memberships' effects.
    fn apply_group_effects(
        &mut self,
        now: Instant,
        effects: Vec<Effect<Member, Asker>>,
        master: Option<&bytes::Bytes>,
    ) {
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
                    self.send_upstream(now, Purpose::Membership(op), &b.into_bytes());
                }
                // Counted and logged by the memberships; a member by MAD
                // has nobody to tell.
                Effect::LeaseEnded { member } => self.proxy.release_member(member),
                // A member by MAD learns of group changes from the
                // master's notices (traps 66/67), as any SA client.
                Effect::Event {
                    member: Member::Local(conn),
                    event,
                } => self.outbox.local.push_back(LocalReply {
                    conn,
                    request: 0,
                    answers: None,
                    status: MadStatus::OK,
                    from_master: false,
                    body: LocalBody::GroupEvent(event),
                }),
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
                        } => self.proxy.join_granted(member, r.mgid(), self.owners()),
                        JoinAnswer::Refused(MadStatus::ERR_NO_RESOURCES) => {
                            let refusal = self.proxy.creation_refused(member, self.owners());
                            self.registration_refused(now, refusal);
                        }
                        _ => {}
                    }
                    self.answer_membership(&asker, answer, master);
                    self.proxy.settle_member(member, mgid);
                }
            }
        }
    }

    /// Answers a join or a leave: a record, the master's answer passed on
    /// as it came, or a status.
    fn answer_membership(
        &mut self,
        asker: &Asker,
        answer: JoinAnswer,
        master: Option<&bytes::Bytes>,
    ) {
        match (answer, asker, master) {
            (JoinAnswer::Joined(r) | JoinAnswer::Left(r), _, _) => self.answer_record(asker, &r),
            (JoinAnswer::Master { .. }, Asker::Mad(request), Some(mad)) => {
                self.relay_to(request, mad)
            }
            (
                JoinAnswer::Master {
                    record: Some(r), ..
                },
                _,
                _,
            ) => self.answer_record(asker, &r),
            (JoinAnswer::Master { status, .. } | JoinAnswer::Refused(status), _, _) => {
                self.answer_status(asker, status)
            }
        }
    }

    /// MCMemberRecord Get/GetTable: about a group this port holds, answered
    /// here; otherwise by the master.
    pub(in crate::agent) fn member_records(&mut self, now: Instant, request: SaRequest) {
        let mask = request.mask();
        let Some(template) = request.record::<McMemberRecord>() else {
            return self.relay_upstream(now, request);
        };
        let trusted = self.trusted(request.sm_key());
        let held = self.proxy.memberships.held(template.mgid());
        let about_us = !mask.contains(mc::PORT_GID) || template.port_gid() == self.port.gid;
        // Only MGID (and PortGID) selections are answered here; the master
        // matches any other component against its own records.
        let only_group_and_port = mask.0 & !(mc::MGID.0 | mc::PORT_GID.0) == 0;
        let (Some((record, state)), true, true, true) = (
            held,
            mask.contains(mc::MGID),
            !trusted || mask.contains(mc::PORT_GID),
            only_group_and_port,
        ) else {
            return self.relay_upstream(now, request);
        };
        if !about_us {
            return self.relay_upstream(now, request);
        }
        let mut r = record;
        if mask.contains(mc::PORT_GID) {
            r.set_port_gid(self.port.gid);
            r.set_join_state(state);
        } else {
            // Untrusted, one record per group: no member shown (OpenSM).
            r.set_port_gid(Gid::ZERO);
            r.set_join_state(JoinState::NONE);
            r.set_proxy_join(false);
        }
        self.answer_table(now, &request, &[r]);
    }

    /// Who this port's registrations count against.
    pub(in crate::agent) fn owners(&self) -> Owners {
        Owners {
            port_gid: self.port.gid,
            limits: self.config.limits,
        }
    }

    /// A registration refused by its owner's limit: counted, and logged at
    /// most once a minute per owner.
    pub(in crate::agent) fn registration_refused(&mut self, now: Instant, refusal: Refusal) {
        let Refusal { owner, what, limit } = refusal;
        match what {
            Refused::Group => self.telemetry.counters.refused_groups += 1,
            Refused::Creation => self.telemetry.counters.refused_group_creations += 1,
            Refused::Subscription => self.telemetry.counters.refused_subscriptions += 1,
        }
        let (kind, source) = match owner {
            Owner::User(uid) => ("registration limit of a user", uid),
            Owner::Port(gid) => ("registration limit of a port", gid.guid() as u32),
        };
        if let Some(earlier_not_logged) = self.telemetry.log_limit.allow(now, kind, source) {
            warn!(
                %owner,
                refused = what.describe(),
                limit,
                earlier_not_logged,
                "a registration past its owner's limit: refused with ERR_NO_RESOURCES"
            );
        }
    }
}
