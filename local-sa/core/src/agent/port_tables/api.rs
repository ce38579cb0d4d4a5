//! The tables' calls for the agent: what `SaCore` asks of the refresh's
//! and the upkeep's state, and of the tables themselves — reached
//! through [`PortTables`], never through its members.

use std::time::{Duration, Instant};

use crate::agent::counterparts::RefreshWaiter;
use crate::agent::port_tables::PortTables;
use crate::agent::port_tables::upkeep::{CheckQuestion, Checking, Lease};
use crate::partitions::Partitions;
use crate::store::{Epoch, PathStore, PortLids};

impl PortTables {
    /// True while a refresh runs.
    pub(in crate::agent) fn refreshing(&self) -> bool {
        self.refresh.is_running()
    }

    /// The epoch the tables' records are stamped with now.
    pub(in crate::agent) fn epoch(&self) -> Epoch {
        self.refresh.epoch()
    }

    /// No refresh runs now, but when the one that ended began is kept:
    /// the attempt that replaces it (after a failure, a new master, a new
    /// identity) counts its time from then.
    pub(in crate::agent) fn pause_refresh(&mut self) {
        self.refresh.pause()
    }

    /// A load of the port's own table made its paths fresh at `now`: it
    /// counts as the port's refresh.
    pub(in crate::agent) fn made_fresh_by_load(&mut self, now: Instant) {
        self.counts.refreshes_loaded += 1;
        self.refresh.made_fresh(now, None);
    }

    /// The port's paths were made fresh at `now` (by a refresh that took
    /// `took`, or by kept tables: `None`).
    pub(in crate::agent) fn made_fresh(&mut self, now: Instant, took: Option<Duration>) {
        self.refresh.made_fresh(now, took)
    }

    /// Ports of the fabric, as the last complete refresh showed them (0
    /// before one).
    pub(in crate::agent) fn fabric_ports(&self) -> usize {
        self.refresh.fabric_ports()
    }

    /// Everyone who waited for the refresh, to be answered.
    pub(in crate::agent) fn take_refresh_waiters(&mut self) -> Vec<RefreshWaiter> {
        self.refresh.take_waiters()
    }

    /// True while someone waits for the refresh to end.
    pub(in crate::agent) fn refresh_awaited(&self) -> bool {
        self.refresh.awaited()
    }

    /// When the next refresh is due.
    pub(in crate::agent) fn next_refresh(&self) -> Option<Instant> {
        self.refresh.next()
    }

    /// The next refresh is due at `at` (or never: `None`).
    pub(in crate::agent) fn schedule_refresh(&mut self, at: Option<Instant>) {
        self.refresh.schedule(at)
    }

    /// A next refresh already scheduled comes no later than `at`.
    pub(in crate::agent) fn bring_refresh_forward(&mut self, at: Instant) {
        self.refresh.bring_forward(at)
    }

    /// The tables of new partitions are due at `at`.
    pub(in crate::agent) fn schedule_partitions(&mut self, at: Instant) {
        self.refresh.schedule_partitions(at)
    }

    /// The agent waits for its first refresh before it registers.
    pub(in crate::agent) fn registers_after(&self) -> bool {
        self.refresh.registers_after()
    }

    /// The agent registers without waiting for a refresh from now on.
    pub(in crate::agent) fn register_now(&mut self) {
        self.refresh.register_now()
    }

    /// True (once) if the agent waited for this refresh to register.
    pub(in crate::agent) fn take_register_after(&mut self) -> bool {
        self.refresh.take_register_after()
    }

    /// The distributor's lease, if one runs.
    pub(in crate::agent) fn lease(&self) -> Option<Lease> {
        self.upkeep.lease()
    }

    /// The lease a kept table carried across a restart.
    pub(in crate::agent) fn resume_lease(&mut self, lease: Option<Lease>) {
        self.upkeep.resume_lease(lease)
    }

    /// Whether a refresh is owed to a change notice.
    pub(in crate::agent) fn change_pending(&self) -> bool {
        self.upkeep.change_pending()
    }

    /// A refresh of every table begins at `now`: true (once) if it sees
    /// a change that was due by then (its end may also end the doubt).
    pub(in crate::agent) fn refresh_begins(&mut self, now: Instant) -> bool {
        let owed = self.upkeep.refresh_begins(now);
        self.counts.change_refreshes += u64::from(owed);
        owed
    }

    /// Whether queries the tables would answer go to the master.
    pub(in crate::agent) fn in_doubt(&self) -> bool {
        self.upkeep.in_doubt()
    }

    /// The default table's refresh failed: the doubt waits for the next.
    pub(in crate::agent) fn doubt_refresh_failed(&mut self) {
        self.upkeep.refresh_failed()
    }

    /// The last table of a refresh came: true if that ended the doubt.
    pub(in crate::agent) fn doubt_refresh_ended(&mut self) -> bool {
        self.upkeep.refresh_ended()
    }

    /// The next check is at `at` (or none: `None`).
    pub(in crate::agent) fn check_at(&mut self, at: Option<Instant>) {
        self.upkeep.check_at(at)
    }

    /// True while a check runs.
    pub(in crate::agent) fn checking(&self) -> bool {
        self.upkeep.is_checking()
    }

    /// A check of `waiting` destinations begins: its round.
    pub(in crate::agent) fn begin_check(&mut self, waiting: usize) -> u32 {
        self.upkeep.begin_check(waiting)
    }

    /// The master's answer about `dlid` in `table`, in check `round`:
    /// whether it agrees with what is held (`None`: it did not answer).
    /// The check, once every destination is answered.
    pub(in crate::agent) fn check_answered(
        &mut self,
        round: u32,
        question: CheckQuestion,
        agrees: Option<bool>,
    ) -> Option<Checking> {
        self.upkeep.check_answered(round, question, agrees)
    }

    /// How many records the default table holds.
    pub(in crate::agent) fn default_records(&self) -> usize {
        self.paths.store.len()
    }

    /// True once port `guid`'s paths are complete in the default table.
    pub(in crate::agent) fn is_complete(&self, guid: u64) -> bool {
        self.paths.is_complete(guid)
    }

    /// The port at `lid` as the default table knows it: its GUID and
    /// base LID.
    pub(in crate::agent) fn port_at(&self, lid: u16) -> Option<(u64, PortLids)> {
        self.paths.store.port_at(lid)
    }

    /// The default table's store.
    pub(in crate::agent) fn store(&self) -> &PathStore {
        &self.paths.store
    }

    /// The partition tables.
    pub(in crate::agent) fn partitions(&self) -> &Partitions {
        &self.partitions
    }

    /// The partitions the port holds.
    pub(in crate::agent) fn partitions_held(&self) -> &[u16] {
        self.partitions.held()
    }

    /// The port's P_Key table, as it lists it: true if the partitions
    /// held changed (the tables of those gone go).
    pub(in crate::agent) fn set_partitions_held(&mut self, pkeys: &[u16]) -> bool {
        self.partitions.set_held(pkeys)
    }

    /// Every partition table emptied (the master's policy changed).
    pub(in crate::agent) fn clear_partitions(&mut self) {
        self.partitions.clear();
    }

    /// The refresh completed: the fabric's size is the default table's
    /// port count from now on.
    pub(in crate::agent) fn refresh_completed(&mut self) {
        self.refresh.completed(self.paths.store.port_count());
    }
}
