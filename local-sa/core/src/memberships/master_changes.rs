//! What changes at the master does to the groups: a new master (every
//! group joined again with what its members hold), a group deleted or
//! created (traps 67 and 66), and groups a restarted agent finds the port
//! still in.

use super::*;

impl<M, A> Memberships<M, A>
where
    M: Copy + Eq + Hash + Debug + std::fmt::Display,
    A: Clone + Debug,
{
    /// Joins every group again with the bits its members hold (a new
    /// master, a restart): at once, or once a request out for the group
    /// ends.
    pub fn rejoin_all(&mut self, out: &mut Vec<Effect<M, A>>) {
        let mut due = Vec::new();
        for (mgid, group) in &mut self.groups {
            // Whatever the master held may be gone. A group whose request
            // is out joins again when that request ends, unless its answer
            // shows the master holds what the members need.
            group.forget_held();
            group.wait_for_creation = false;
            let needed = group.needed();
            let Some(record) = group.record else {
                continue;
            };
            if needed.is_empty() || group.busy {
                continue;
            }
            group.busy = true;
            due.push((*mgid, record, needed));
        }
        for (mgid, record, needed) in due {
            self.rejoin(mgid, record, needed, out);
        }
    }

    /// The master deleted `mgid` (trap 67): the port holds nothing there
    /// any more, whoever added it. Its members are told, and it is joined
    /// again with their bits (which creates it again if a member is a full
    /// member; otherwise it waits for trap 66).
    pub fn group_deleted(&mut self, now: Instant, mgid: Gid, out: &mut Vec<Effect<M, A>>) {
        let Some(group) = self.groups.get_mut(&mgid) else {
            return;
        };
        group.forget_held();
        group.foreign = JoinState::NONE;
        group.retry_at = None;
        group.wait_for_creation = false;
        if group.members.is_empty() {
            return self.next_in_group(now, mgid, out);
        }
        group.lost = true;
        let members = group.members.len();
        if let Some(earlier_not_logged) = self.log.allow(now, Warning::GroupDeleted, 0u32) {
            info!(%mgid, members, earlier_not_logged, "the master deleted a group this port's members are in (trap 67)");
        }
        for member in group.members.keys() {
            out.push(Effect::Event {
                member: *member,
                event: GroupEvent::Lost(mgid),
            });
        }
        self.next_in_group(now, mgid, out);
    }

    /// The master created `mgid` (trap 66): a lost group waiting for it is
    /// joined again.
    pub fn group_created(&mut self, now: Instant, mgid: Gid, out: &mut Vec<Effect<M, A>>) {
        let Some(group) = self.groups.get_mut(&mgid) else {
            return;
        };
        if group.wait_for_creation {
            group.wait_for_creation = false;
            self.next_in_group(now, mgid, out);
        }
    }

    /// A previous agent on this port (one that ended without leaving)
    /// added `bits` to `mgid` at the master: they are deleted unless a
    /// member here holds them by then.
    pub fn adopt(&mut self, now: Instant, mgid: Gid, bits: JoinState, out: &mut Vec<Effect<M, A>>) {
        if bits.is_empty() || mgid == Gid::ZERO {
            return;
        }
        let group = self.groups.entry(mgid).or_default();
        group.held |= bits;
        group.ours |= bits;
        if !group.busy {
            self.next_in_group(now, mgid, out);
        }
    }

    /// Per group, the bits the master may hold for this port because this
    /// agent asked for them: what a later agent on the port removes if
    /// this one ends without leaving ([`Memberships::adopt`]).
    pub fn possibly_held(&self) -> Vec<(Gid, JoinState)> {
        let mut bits: BTreeMap<Gid, JoinState> = self
            .groups
            .iter()
            .filter(|(_, g)| !g.ours.is_empty())
            .map(|(m, g)| (*m, g.ours))
            .chain(self.abandoned.iter().map(|(m, b)| (*m, *b)))
            .collect();
        for (mgid, op) in self.ops.values() {
            let (Some(mgid), Op::Join(PendingJoin { bits: b, .. }) | Op::Rejoin { bits: b }) =
                (mgid, op)
            else {
                continue;
            };
            *bits.entry(*mgid).or_default() |= *b;
        }
        bits.into_iter().collect()
    }

    /// Joins `mgid` again with `bits`, from the group's last `record`
    /// (the caller marks the group busy).
    pub(super) fn rejoin(
        &mut self,
        mgid: Gid,
        mut record: McMemberRecord,
        bits: JoinState,
        out: &mut Vec<Effect<M, A>>,
    ) {
        record.set_port_gid(self.port_gid);
        record.set_join_state(bits);
        self.send(
            Some(mgid),
            Method::SET,
            REJOIN_MASK,
            record,
            Op::Rejoin { bits },
            out,
        );
    }
}
