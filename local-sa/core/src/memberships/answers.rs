//! The master's answers: a join, the probe before a first join, a
//! leave, a join again after a new master, a check of what the port holds
//! — or no answer at all — and what each does to the group and those
//! waiting in it.

use super::*;

impl<M, A> Memberships<M, A>
where
    M: Copy + Eq + Hash + Debug + std::fmt::Display,
    A: Clone + Debug,
{
    /// The master answered request `op` with `status` and, if it carried
    /// one, a record; `None` if it did not answer at all.
    pub fn answered(
        &mut self,
        now: Instant,
        op: OpId,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let id = op;
        let Some((mgid, op)) = self.ops.remove(&id) else {
            return;
        };
        if let Some(group) = mgid.and_then(|g| self.groups.get_mut(&g))
            && group.op == Some(id)
        {
            group.op = None;
        }
        match op {
            Op::Join(join) => self.join_answered(now, join, answer, out),
            Op::Probe {
                change,
                gone,
                group,
            } => {
                if let Some(mgid) = mgid {
                    let probe = Probe {
                        change,
                        gone,
                        group,
                    };
                    return self.probe_answered(now, mgid, probe, answer, out);
                }
            }
            Op::Leave { asker, bits } => self.leave_answered(now, mgid, asker, bits, answer, out),
            Op::Rejoin { bits } => self.rejoin_answered(now, mgid, bits, answer, out),
            Op::Verify => self.verify_answered(now, mgid, answer),
        }
        if let Some(mgid) = mgid {
            if let Some(group) = self.groups.get_mut(&mgid) {
                group.busy = false;
            }
            self.next_in_group(now, mgid, out);
        }
    }

    pub(super) fn join_answered(
        &mut self,
        now: Instant,
        join: PendingJoin<M, A>,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let PendingJoin {
            member,
            renews,
            asker,
            bits,
            gone,
            creates,
        } = join;
        let Some((MadStatus::OK, Some(r))) = answer else {
            if !gone {
                // The master's verdict goes back unchanged.
                let status = answer.map_or(MadStatus::BUSY, |(s, _)| {
                    if s == MadStatus::OK {
                        MadStatus::ERR_REQ_INVALID
                    } else {
                        s
                    }
                });
                out.push(Effect::Answer {
                    asker,
                    answer: JoinAnswer::Master {
                        status,
                        record: None,
                    },
                });
            }
            return;
        };
        let mgid = r.mgid();
        let lease = now + self.config.member_lease;
        // The bits the master took are this agent's even when the member
        // went meanwhile: they are then deleted.
        self.took_record(now, mgid, r, bits, out);
        let Some(group) = self.groups.get_mut(&mgid) else {
            return;
        };
        debug!(%mgid, held = %group.held, creates, "joined at the master");
        group.exists = Some(true);
        if !gone {
            if creates {
                group.creator = Some(member);
            }
            *group.members.entry(member).or_default() |= bits;
            if renews {
                group.leases.insert(member, lease);
            }
            out.push(Effect::Answer {
                asker,
                answer: JoinAnswer::Master {
                    status: MadStatus::OK,
                    record: Some(r),
                },
            });
        }
        // A group the master assigned is only known now.
        self.next_in_group(now, mgid, out);
    }

    /// The master answered whether the port was in `mgid` before the
    /// agent's first join of it, or whether the group exists before a
    /// join that would create it; the join that waited goes on.
    pub(super) fn probe_answered(
        &mut self,
        now: Instant,
        mgid: Gid,
        probe: Probe<M, A>,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let Probe {
            change,
            gone,
            group: about_group,
        } = probe;
        let group = self.groups.entry(mgid).or_default();
        group.busy = false;
        match (answer.map(|(status, _)| status), about_group) {
            (Some(MadStatus::OK), true) => group.exists = Some(true),
            // It does not exist, or the master would not say: the join
            // counts as creating it.
            (Some(_), true) => group.exists = Some(false),
            (Some(MadStatus::ERR_NO_RECORDS), false) => {
                group.probed = true;
                group.foreign = JoinState::NONE;
            }
            (Some(status), false) => {
                // In the group already (OpenSM shows an untrusted asker no
                // JoinState), or the master would not say: whatever the
                // port holds may be another agent's.
                group.probed = true;
                group.foreign = ALL_BITS;
                if status == MadStatus::OK {
                    group.exists = Some(true);
                    if let Some(earlier_not_logged) =
                        self.log.allow(now, Warning::HeldByAnother, 0u32)
                    {
                        info!(
                            %mgid,
                            earlier_not_logged,
                            "this port is in the group already through another agent (the kernel?): local-sa will not delete its bits there"
                        );
                    }
                } else {
                    debug!(%mgid, %status, "the master would not say whether this port is in the group");
                }
            }
            (None, _) if !gone => {
                out.push(Effect::Answer {
                    asker: change.asker,
                    answer: JoinAnswer::Master {
                        status: MadStatus::BUSY,
                        record: None,
                    },
                });
                return self.next_in_group(now, mgid, out);
            }
            (None, _) => {}
        }
        if gone || self.shutting_down {
            if !gone {
                out.push(Effect::Answer {
                    asker: change.asker,
                    answer: JoinAnswer::Refused(MadStatus::BUSY),
                });
            }
            return self.next_in_group(now, mgid, out);
        }
        self.join(now, mgid, change, out);
        // A join refused here (a creation past its owner's limit) leaves
        // the group free for the next request.
        self.next_in_group(now, mgid, out);
    }

    pub(super) fn leave_answered(
        &mut self,
        now: Instant,
        mgid: Option<Gid>,
        asker: Option<(A, McMemberRecord)>,
        bits: JoinState,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let Some(mgid) = mgid.filter(|g| self.groups.contains_key(g)) else {
            return;
        };
        match answer {
            Some(_) => {
                let group = self.group_mut(mgid);
                group.leave_failures = 0;
                group.leave_verified = false;
                match answer {
                    Some((MadStatus::OK, Some(r))) => group.delete_answered(bits, r.join_state()),
                    // The master does not have what we thought: it holds
                    // nothing.
                    _ => group.forget_held(),
                }
            }
            // No answer: keep what we believed and try again later.
            None => self.leave_unanswered(now, mgid),
        }
        let group = self.group_mut(mgid);
        if let Some((asker, mut record)) = asker {
            record.set_join_state(group.held);
            out.push(Effect::Answer {
                asker,
                answer: JoinAnswer::Left(left_record(record)),
            });
        }
        let status = answer.map(|(s, _)| s);
        if status != Some(MadStatus::OK) {
            debug!(status = %answer_status(status), "a leave at the master did not complete");
        }
    }

    pub(super) fn rejoin_answered(
        &mut self,
        now: Instant,
        mgid: Option<Gid>,
        bits: JoinState,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
        out: &mut Vec<Effect<M, A>>,
    ) {
        if let Some((MadStatus::OK, Some(r))) = answer {
            if self.groups.contains_key(&r.mgid()) {
                self.took_record(now, r.mgid(), r, bits, out);
            }
            return;
        }
        let shutting_down = self.shutting_down;
        let backoff = now + self.config.retry_backoff;
        let Some((mgid, group)) = mgid.and_then(|g| self.groups.get_mut(&g).map(|gr| (g, gr)))
        else {
            return;
        };
        let status = answer_status(answer.map(|(s, _)| s));
        if group.lost && answer.is_some() {
            // A lost group without a full member here cannot be created
            // by this port: it is joined again when it exists (trap 66).
            group.wait_for_creation = true;
            if let Some(earlier_not_logged) = self.log.allow(now, Warning::LostGroupWaits, 0u32) {
                info!(
                    %mgid,
                    %status,
                    earlier_not_logged,
                    "the deleted group cannot be joined again yet; waiting for it to be created"
                );
            }
            return;
        }
        // A re-join only adds bits: one that failed left the master
        // holding what it held (after a new master, nothing: the
        // re-registration has forgotten what the old one held).
        group.retry_at = (!shutting_down).then_some(backoff);
        if let Some(earlier_not_logged) = self.log.allow(now, Warning::RejoinFailed, 0u32) {
            warn!(
                %mgid,
                %status,
                earlier_not_logged,
                "re-joining a group at the master failed; trying again later"
            );
        }
    }

    /// A leave of `mgid` (or the question before trying it again) got no
    /// answer: tried again later, waiting twice as long each time, and
    /// given up after [`MAX_LEAVE_TRIES`] — the group then stays listed
    /// for the next agent on the port ([`Self::possibly_held`]).
    pub(super) fn leave_unanswered(&mut self, now: Instant, mgid: Gid) {
        let backoff = self.config.retry_backoff;
        let shutting_down = self.shutting_down;
        let group = self.group_mut(mgid);
        if shutting_down {
            // Nobody is left to try again; what the master may still hold
            // stays listed for the next agent.
            group.abandoned = true;
            return;
        }
        group.leave_failures += 1;
        group.leave_verified = false;
        let tries = group.leave_failures;
        if tries >= MAX_LEAVE_TRIES {
            group.abandoned = true;
            self.counts.leaves_given_up += 1;
            if let Some(earlier_not_logged) = self.log.allow(now, Warning::LeaveGivenUp, 0u32) {
                warn!(
                    %mgid,
                    tries,
                    earlier_not_logged,
                    "the master never answered a leave: given up (the next local-sa on this port deletes it)"
                );
            }
            return;
        }
        let wait = backoff
            .saturating_mul(1 << (tries - 1).min(16))
            .min(MAX_LEAVE_BACKOFF.max(backoff));
        group.retry_at = Some(now + wait);
        if let Some(earlier_not_logged) = self.log.allow(now, Warning::LeaveUnanswered, 0u32) {
            warn!(
                %mgid,
                tries,
                retry_in_s = wait.as_secs(),
                earlier_not_logged,
                "the master did not answer a leave; asking whether the port is still in the group, then trying again"
            );
        }
    }

    /// The master answered whether the port is still in `mgid`, before an
    /// unanswered leave is tried again: a group it no longer holds the
    /// port in is forgotten here too.
    pub(super) fn verify_answered(
        &mut self,
        now: Instant,
        mgid: Option<Gid>,
        answer: Option<(MadStatus, Option<McMemberRecord>)>,
    ) {
        let Some(mgid) = mgid.filter(|g| self.groups.contains_key(g)) else {
            return;
        };
        match answer.map(|(s, _)| s) {
            Some(MadStatus::ERR_NO_RECORDS) => {
                let group = self.group_mut(mgid);
                group.forget_held();
                group.leave_failures = 0;
                self.counts.groups_gone_at_master += 1;
                debug!(%mgid, "the master no longer holds the port in the group: nothing to leave");
            }
            // Still in it (or the master would not say): the Delete next.
            Some(_) => self.group_mut(mgid).leave_verified = true,
            None => self.leave_unanswered(now, mgid),
        }
    }

    /// The master answered a Set of `asked` in `mgid` with `r`: the group's
    /// record and the port's JoinState. Members hear when the group came
    /// back after it was lost, or came back with another MLID.
    pub(super) fn took_record(
        &mut self,
        now: Instant,
        mgid: Gid,
        r: McMemberRecord,
        asked: JoinState,
        out: &mut Vec<Effect<M, A>>,
    ) {
        let group = self.groups.entry(mgid).or_default();
        let moved = group.record.is_some_and(|old| old.mlid() != r.mlid());
        let news = group.lost || moved;
        group.record = Some(r);
        group.lost = false;
        group.wait_for_creation = false;
        group.set_answered(asked, r.join_state());
        if news {
            if let Some(earlier_not_logged) = self.log.allow(now, Warning::GroupBack, 0u32) {
                info!(%mgid, mlid = r.mlid(), earlier_not_logged, "the group is back; telling its members");
            }
            let mut record = r;
            record.set_port_gid(self.port_gid);
            for member in group.members.keys() {
                out.push(Effect::Event {
                    member: *member,
                    event: GroupEvent::Recreated(record),
                });
            }
        }
    }
}
