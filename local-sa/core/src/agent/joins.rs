//! MCMemberRecord joins and leaves for this port's consumers, proxied to
//! the master (the rules are in [`super::multicast`]), queries about the
//! groups this port holds, and re-joining after the master changes.
//!
//! Members are processes on this port: local API connections, and
//! programs that send MCMemberRecord Set/Delete MADs to this port's own
//! LID. A MAD member keeps its membership by joining again within the
//! member lease ([`super::AgentConfig::member_lease`]); a connection keeps
//! it while it is open.

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use mad_codec::attr::mc_member_record::mask as mc;
use mad_codec::header::SaMadHeader;
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ComponentMask, Gid, JoinState, MadStatus, McMemberRecord, Method, SaMad,
    SaMadBuilder,
};
use tracing::{debug, info, warn};

use super::local::{ConnId, LocalBody, LocalReply};
use super::multicast::{Group, Groups, Member, Queued, compatible};
use super::upstream::Purpose;
use super::{Asker, SaCore, Transmit, respond};
use umad::MadAddress;

/// A request to the master about a group.
#[derive(Debug, Clone)]
enum Op {
    /// A member's join; `gone` once the member went away meanwhile (its
    /// bits are then not kept, and nobody is answered).
    Join {
        member: Member,
        asker: Asker,
        bits: JoinState,
        gone: bool,
    },
    /// Deleting bits nobody holds any more; the leaver, if one waits.
    Leave {
        asker: Option<(Asker, McMemberRecord)>,
    },
    /// Joining again after the master changed.
    Rejoin,
}

/// The agent's multicast state.
#[derive(Debug, Default)]
pub(crate) struct Memberships {
    pub(crate) groups: Groups,
    ops: HashMap<u64, (Option<Gid>, Op)>,
    next_op: u64,
}

/// The components of a re-join: enough to create the group again.
const REJOIN_MASK: ComponentMask = ComponentMask(
    mc::CREATE.0 | mc::MLID.0 | mc::MTU_SELECTOR.0 | mc::MTU.0 | mc::RATE_SELECTOR.0 | mc::RATE.0,
);

impl SaCore {
    /// A Set (join) or Delete (leave) of an MCMemberRecord MAD.
    pub(super) fn membership_mad(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let asker = Asker::Mad {
            address: *source,
            request: Bytes::copy_from_slice(mad),
        };
        if !self.port.lids().contains(&source.lid) {
            // Members are this port's processes; another port joins
            // through its own SA.
            debug!(
                lid = source.lid,
                "a join or leave from another port: refused"
            );
            return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        }
        let Ok(record) = m.record::<McMemberRecord>().copied() else {
            return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        };
        let join = m.mad().method() == Method::SET;
        let member = Member::Mad {
            lid: source.lid,
            qpn: source.qpn,
        };
        self.membership(now, join, member, asker, m.sa().component_mask(), record);
    }

    /// A local connection's join or leave.
    pub(super) fn local_membership(
        &mut self,
        now: Instant,
        conn: ConnId,
        id: u32,
        join: bool,
        mask: ComponentMask,
        mut record: McMemberRecord,
    ) {
        // A local consumer joins as this port, whatever it filled in.
        record.set_port_gid(self.port.gid);
        self.membership(
            now,
            join,
            Member::Local(conn),
            Asker::Local { conn, id },
            mask | mc::PORT_GID,
            record,
        );
    }

    fn membership(
        &mut self,
        now: Instant,
        join: bool,
        member: Member,
        asker: Asker,
        mask: ComponentMask,
        record: McMemberRecord,
    ) {
        // OpenSM's first checks.
        if !mask.contains(mc::JOIN) {
            return self.answer_status(&asker, MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS);
        }
        let bits = record.join_state();
        let gid = record.port_gid();
        let ours =
            gid == self.port.gid || (gid.is_link_local() && gid.guid() == self.port.gid.guid());
        if bits.is_empty() || !ours {
            return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        }
        let mgid = record.mgid();
        if mgid == Gid::ZERO {
            if !join {
                return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
            }
            // The master assigns the MGID: nothing here to share.
            return self.send_membership(
                now,
                None,
                Method::SET,
                mask,
                record,
                Op::Join {
                    member,
                    asker,
                    bits,
                    gone: false,
                },
            );
        }
        let group = self.memberships.groups.entry(mgid).or_default();
        if group.busy {
            group.queue.push_back(Queued {
                join,
                member,
                asker,
                mask,
                record,
            });
            return;
        }
        if join {
            self.join(now, mgid, member, asker, mask, record);
        } else {
            self.leave(now, mgid, member, asker, record);
        }
    }

    fn join(
        &mut self,
        now: Instant,
        mgid: Gid,
        member: Member,
        asker: Asker,
        mask: ComponentMask,
        record: McMemberRecord,
    ) {
        let bits = record.join_state();
        let lease = now + self.config.member_lease;
        let group = self.memberships.groups.entry(mgid).or_default();
        let local = group
            .record
            .filter(|r| group.held.contains(bits) && compatible(r, mask, &record));
        if let Some(group_record) = local {
            *group.members.entry(member).or_default() |= bits;
            if matches!(member, Member::Mad { .. }) {
                group.leases.insert(member, lease);
            }
            let mut answer = group_record;
            answer.set_join_state(group.held);
            self.counters.joins_local += 1;
            debug!(%mgid, ?bits, "join completed here: the master holds these bits already");
            return self.answer_member(&asker, &answer);
        }
        group.busy = true;
        self.counters.joins_upstream += 1;
        self.send_membership(
            now,
            Some(mgid),
            Method::SET,
            mask,
            record,
            Op::Join {
                member,
                asker,
                bits,
                gone: false,
            },
        );
    }

    fn leave(
        &mut self,
        now: Instant,
        mgid: Gid,
        member: Member,
        asker: Asker,
        record: McMemberRecord,
    ) {
        let bits = record.join_state();
        let Some(group) = self.memberships.groups.get_mut(&mgid) else {
            return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        };
        let held = group
            .members
            .get(&member)
            .copied()
            .unwrap_or(JoinState::NONE);
        if !held.contains(bits) {
            // OpenSM: the bits must be a subset of the member's.
            self.drop_if_empty(mgid);
            return self.answer_status(&asker, MadStatus::ERR_REQ_INVALID);
        }
        let left = held.minus(bits);
        if left.is_empty() {
            group.members.remove(&member);
            group.leases.remove(&member);
        } else {
            group.members.insert(member, left);
        }
        self.counters.leaves += 1;
        debug!(
            %mgid,
            full = group.count(JoinState::FULL_MEMBER),
            non = group.count(JoinState::NON_MEMBER),
            send_only = group.count(JoinState::SEND_ONLY_NON_MEMBER),
            send_only_full = group.count(JoinState::SEND_ONLY_FULL_MEMBER),
            "a member left; members per JoinState bit"
        );
        let unneeded = group.held.minus(group.needed());
        if unneeded.is_empty() {
            let mut answer = record;
            answer.set_join_state(group.held);
            self.answer_leave(&asker, &answer);
            return self.drop_if_empty(mgid);
        }
        group.busy = true;
        let delete = delete_record(mgid, self.port.gid, unneeded);
        let op = Op::Leave {
            asker: Some((asker, record)),
        };
        self.send_membership(now, Some(mgid), Method::DELETE, mc::JOIN, delete, op);
    }

    /// Sends a Set or Delete of `record` for `mgid` to the master.
    fn send_membership(
        &mut self,
        now: Instant,
        mgid: Option<Gid>,
        method: Method,
        mask: ComponentMask,
        record: McMemberRecord,
        op: Op,
    ) {
        let id = self.memberships.next_op;
        self.memberships.next_op += 1;
        self.memberships.ops.insert(id, (mgid, op));
        let mut b = SaMadBuilder::request(method, 0, AttributeId::MC_MEMBER_RECORD).record(&record);
        b.header_mut().sa.set_component_mask(mask);
        self.send_upstream(now, Purpose::Membership { op: id }, &b.into_bytes());
    }

    /// The master answered a membership request (`mad`), or did not.
    pub(super) fn membership_answered(&mut self, now: Instant, op: u64, mad: Option<&[u8]>) {
        let Some((mgid, op)) = self.memberships.ops.remove(&op) else {
            return;
        };
        let answer = mad.and_then(|m| {
            let m = SaMad::parse(m).ok()?;
            Some((m.mad().status(), m.record::<McMemberRecord>().ok().copied()))
        });
        match (op, answer) {
            (
                Op::Join {
                    member,
                    asker,
                    bits,
                    gone,
                },
                Some((MadStatus::OK, Some(r))),
            ) => {
                let mgid = r.mgid();
                let lease = now + self.config.member_lease;
                let group = self.memberships.groups.entry(mgid).or_default();
                group.record = Some(r);
                group.held = r.join_state();
                info!(%mgid, held = ?group.held, "joined at the master");
                if !gone {
                    *group.members.entry(member).or_default() |= bits;
                    if matches!(member, Member::Mad { .. }) {
                        group.leases.insert(member, lease);
                    }
                    self.relay_or_answer(&asker, mad, &r);
                }
                // A group the master assigned is only known now.
                self.next_in_group(now, mgid);
            }
            (Op::Join { gone: true, .. }, _) => {}
            (Op::Join { asker, .. }, answer) => {
                // The master's verdict goes back unchanged.
                let status = answer.map_or(MadStatus::BUSY, |(s, _)| {
                    if s == MadStatus::OK {
                        MadStatus::ERR_REQ_INVALID
                    } else {
                        s
                    }
                });
                match (&asker, mad) {
                    (Asker::Mad { address, request }, Some(m)) => {
                        self.relay_to(address, request, m)
                    }
                    _ => self.answer_status(&asker, status),
                }
            }
            (Op::Leave { asker }, answer) => {
                let status = answer.map(|(s, _)| s);
                let (backoff, shutting_down) =
                    (now + self.config.retry_backoff, self.shutting_down);
                if let Some(group) = mgid.and_then(|g| self.memberships.groups.get_mut(&g)) {
                    match answer {
                        Some((MadStatus::OK, Some(r))) => group.held = r.join_state(),
                        // The master does not have what we thought: it holds nothing.
                        Some(_) => group.held = JoinState::NONE,
                        // Shutting down: nobody is left to try again.
                        None if shutting_down => group.held = JoinState::NONE,
                        // No answer: keep what we believed and try again later.
                        None => {
                            warn!(
                                ?mgid,
                                "the master did not answer a leave; trying again later"
                            );
                            group.retry_at = Some(backoff);
                        }
                    }
                    if group.held.is_empty() {
                        group.record = None;
                    }
                    if let Some((asker, mut record)) = asker {
                        record.set_join_state(group.held);
                        self.answer_leave(&asker, &record);
                    }
                    if status != Some(MadStatus::OK) {
                        debug!(?status, "a leave at the master did not complete");
                    }
                }
            }
            (Op::Rejoin, Some((MadStatus::OK, Some(r)))) => {
                if let Some(group) = self.memberships.groups.get_mut(&r.mgid()) {
                    group.record = Some(r);
                    group.held = r.join_state();
                }
            }
            (Op::Rejoin, other) => {
                warn!(?mgid, status = ?other.map(|(s, _)| s), "re-joining a group at the master failed; trying again later");
                let (backoff, shutting_down) =
                    (now + self.config.retry_backoff, self.shutting_down);
                if let Some(group) = mgid.and_then(|g| self.memberships.groups.get_mut(&g)) {
                    group.held = JoinState::NONE;
                    group.retry_at = (!shutting_down).then_some(backoff);
                }
            }
        }
        if let Some(mgid) = mgid {
            if let Some(group) = self.memberships.groups.get_mut(&mgid) {
                group.busy = false;
            }
            self.next_in_group(now, mgid);
        }
    }

    /// After a request for `mgid` ends: bits nobody needs are deleted, or
    /// the next waiting request goes, or the group is forgotten.
    fn next_in_group(&mut self, now: Instant, mgid: Gid) {
        // Waiting requests are taken one by one until one goes to the
        // master (they may complete here, or be refused).
        loop {
            let Some(group) = self.memberships.groups.get_mut(&mgid) else {
                return;
            };
            if group.busy {
                return;
            }
            if group.retry_at.is_none_or(|t| t <= now) {
                group.retry_at = None;
                let unneeded = group.held.minus(group.needed());
                if !unneeded.is_empty() {
                    group.busy = true;
                    let delete = delete_record(mgid, self.port.gid, unneeded);
                    let op = Op::Leave { asker: None };
                    return self.send_membership(
                        now,
                        Some(mgid),
                        Method::DELETE,
                        mc::JOIN,
                        delete,
                        op,
                    );
                }
                let missing = group.needed().minus(group.held);
                if let (false, Some(mut record)) =
                    (missing.is_empty() || self.shutting_down, group.record)
                {
                    // Members hold bits the master lost (a failed re-join).
                    record.set_port_gid(self.port.gid);
                    record.set_join_state(group.needed());
                    group.busy = true;
                    return self.send_membership(
                        now,
                        Some(mgid),
                        Method::SET,
                        REJOIN_MASK,
                        record,
                        Op::Rejoin,
                    );
                }
            }
            let Some(q) = group.queue.pop_front() else {
                break;
            };
            self.membership(now, q.join, q.member, q.asker, q.mask, q.record);
        }
        self.drop_if_empty(mgid);
    }

    fn drop_if_empty(&mut self, mgid: Gid) {
        if self
            .memberships
            .groups
            .get(&mgid)
            .is_some_and(Group::is_empty)
        {
            self.memberships.groups.remove(&mgid);
        }
    }

    /// Everything `member` holds goes (its connection closed, its lease
    /// ended): bits nobody else holds are deleted at the master.
    pub(super) fn remove_member(&mut self, now: Instant, member: Member) {
        for (_, op) in self.memberships.ops.values_mut() {
            if let Op::Join {
                member: m, gone, ..
            } = op
            {
                *gone |= *m == member;
            }
        }
        let mgids: Vec<Gid> = self
            .memberships
            .groups
            .iter()
            .filter(|(_, g)| {
                g.members.contains_key(&member) || g.queue.iter().any(|q| q.member == member)
            })
            .map(|(m, _)| *m)
            .collect();
        for mgid in mgids {
            if let Some(group) = self.memberships.groups.get_mut(&mgid) {
                group.members.remove(&member);
                group.leases.remove(&member);
                group.queue.retain(|q| q.member != member);
            }
            self.next_in_group(now, mgid);
        }
    }

    /// Ends the leases of MAD members that did not renew.
    pub(super) fn expire_members(&mut self, now: Instant) {
        let expired: Vec<Member> = self
            .memberships
            .groups
            .values()
            .flat_map(|g| g.leases.iter().filter(|(_, t)| **t <= now).map(|(m, _)| *m))
            .collect();
        for member in expired {
            info!(?member, "a multicast member's lease ended");
            self.counters.leases_ended += 1;
            self.remove_member(now, member);
        }
    }

    /// When the next member lease ends or group retry is due.
    pub(super) fn next_lease_end(&self) -> Option<Instant> {
        let groups = self.memberships.groups.values();
        groups
            .flat_map(|g| g.leases.values().copied().chain(g.retry_at))
            .min()
    }

    /// Groups whose retry is due are brought in line with the master.
    pub(super) fn retry_groups(&mut self, now: Instant) {
        let due: Vec<Gid> = self
            .memberships
            .groups
            .iter()
            .filter(|(_, g)| g.retry_at.is_some_and(|t| t <= now))
            .map(|(m, _)| *m)
            .collect();
        for mgid in due {
            self.next_in_group(now, mgid);
        }
    }

    /// Joins every group again with the bits its members hold (a new
    /// master, a restart).
    pub(super) fn rejoin_all(&mut self, now: Instant) {
        let port_gid = self.port.gid;
        let mut sends = Vec::new();
        for (mgid, group) in &mut self.memberships.groups {
            let needed = group.needed();
            let Some(mut record) = group.record else {
                continue;
            };
            if needed.is_empty() || group.busy {
                continue;
            }
            record.set_port_gid(port_gid);
            record.set_join_state(needed);
            group.busy = true;
            sends.push((*mgid, record));
        }
        for (mgid, record) in sends {
            self.send_membership(
                now,
                Some(mgid),
                Method::SET,
                REJOIN_MASK,
                record,
                Op::Rejoin,
            );
        }
    }

    /// Leaves every group (shutdown): one last try for each, backoff or
    /// not.
    pub(super) fn leave_all(&mut self, now: Instant) {
        for group in self.memberships.groups.values_mut() {
            group.retry_at = None;
        }
        let members: Vec<Member> = self
            .memberships
            .groups
            .values()
            .flat_map(|g| g.members.keys().copied())
            .collect();
        for m in members {
            self.remove_member(now, m);
        }
    }

    /// MCMemberRecord Get/GetTable: about a group this port holds, answered
    /// here; otherwise by the master.
    pub(super) fn member_records(&mut self, now: Instant, source: &MadAddress, mad: &[u8]) {
        let Ok(m) = SaMad::parse(mad) else { return };
        let mask = m.sa().component_mask();
        let Ok(template) = m.record::<McMemberRecord>().copied() else {
            return self.relay_upstream(now, source, mad);
        };
        let trusted = m.sa().sm_key() == self.config.sm_key;
        let held = self
            .memberships
            .groups
            .get(&template.mgid())
            .and_then(|g| g.record.map(|r| (r, g.held)));
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
            return self.relay_upstream(now, source, mad);
        };
        if !about_us {
            return self.relay_upstream(now, source, mad);
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
        self.answer_table(now, source, mad, &[r]);
    }

    /// The groups this port holds, as MCMemberRecords with this port's
    /// JoinState (for the local API).
    pub(super) fn group_records(&self) -> Vec<McMemberRecord> {
        self.memberships
            .groups
            .values()
            .filter_map(|g| {
                let mut r = g.record?;
                r.set_port_gid(self.port.gid);
                r.set_join_state(g.held);
                Some(r)
            })
            .collect()
    }

    fn answer_member(&mut self, asker: &Asker, record: &McMemberRecord) {
        match asker {
            Asker::Mad { address, request } => {
                let Ok((h, _)) = SaMadHeader::parse(request) else {
                    return;
                };
                let header = respond::success_header(h, McMemberRecord::ATTRIBUTE_OFFSET);
                self.out.push_back(Transmit::reply(
                    address.reply(),
                    respond::single(&header, record.as_bytes()),
                ));
            }
            Asker::Local { conn, id } => {
                let mut data = bytes::BytesMut::with_capacity(McMemberRecord::STRIDE);
                mad_codec::records::put_record(&mut data, record);
                let body = LocalBody::Records {
                    attribute: AttributeId::MC_MEMBER_RECORD,
                    stride: McMemberRecord::STRIDE,
                    data: data.freeze(),
                    truncated: false,
                };
                self.local_out.push_back(LocalReply {
                    conn: *conn,
                    request: *id,
                    status: MadStatus::OK,
                    body,
                });
            }
        }
    }

    /// A leave's answer, shaped as OpenSM's DeleteResp: the request with
    /// its MTU/Rate/PacketLifeTime selectors 2 and the remaining state.
    fn answer_leave(&mut self, asker: &Asker, record: &McMemberRecord) {
        let mut r = *record;
        r.set_mtu_selector(mad_codec::Selector::Exactly);
        r.set_rate_selector(mad_codec::Selector::Exactly);
        r.set_packet_life_selector(mad_codec::Selector::Exactly);
        self.answer_member(asker, &r);
    }

    /// A join's answer: a port gets the master's answer as it came; a
    /// connection gets the record.
    fn relay_or_answer(&mut self, asker: &Asker, mad: Option<&[u8]>, record: &McMemberRecord) {
        match (asker, mad) {
            (Asker::Mad { address, request }, Some(m)) => self.relay_to(address, request, m),
            _ => self.answer_member(asker, record),
        }
    }

    fn relay_to(&mut self, address: &MadAddress, request: &[u8], answer: &[u8]) {
        if let Some(relayed) = respond::relay(answer, request) {
            self.out
                .push_back(Transmit::reply(address.reply(), relayed));
        }
    }
}

/// The record of a Delete of `bits` for this port in `mgid`.
fn delete_record(mgid: Gid, port_gid: Gid, bits: JoinState) -> McMemberRecord {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_port_gid(port_gid);
    r.set_join_state(bits);
    r
}
