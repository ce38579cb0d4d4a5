//! This port's tables across a restart of local-sa: what to keep (its
//! paths in the default and partition tables, stamped with the master
//! and the lease, [`crate::kept_tables`]), and taking them back at start
//! instead of asking the master — only if they are this port's, from the
//! same master, no older than the refresh interval (or under a lease
//! still running), and no fabric change was waiting for a refresh when
//! they were kept. A few of their paths are then checked against the
//! master ([`crate::agent::tables::check`]); a difference, and the port fetches
//! its own tables.

use std::time::{Duration, Instant};

use tracing::info;

use crate::agent::master::purpose::Purpose;
use crate::agent::tables::upkeep::Lease;
use crate::agent::{MasterInfo, SaCore};
use crate::kept_tables::Kept;
use crate::names::hosts::Names;
use crate::partitions::TableKey;

impl SaCore {
    /// Moves whenever what [`SaCore::keep_tables`] gives may have changed
    /// (a refresh, a load or delete, a lease renewal, a change notice).
    pub fn tables_version(&self) -> u64 {
        let c = &self.telemetry.counters;
        [
            c.refreshes,
            c.refreshes_loaded,
            c.loaded,
            c.deleted,
            c.change_notices,
            c.lease_renewals,
            c.leases_lapsed,
            c.checks_failed,
            self.tables.paths.store.len() as u64,
        ]
        .iter()
        .fold(0u64, |v, n| v.rotate_left(7) ^ n)
    }

    /// This port's tables as a successor may take them, stamped with the
    /// time `wall` (Unix seconds) that goes with `now`; `None` while they
    /// are not complete, or a fabric change awaits a refresh (a successor
    /// must then ask the master).
    pub fn keep_tables(&self, now: Instant, wall: u64) -> Option<Kept> {
        if !self.is_ready() || self.tables.upkeep.change_pending() {
            return None;
        }
        let own = self.port.lids();
        let me = self.port.gid.guid();
        let mut tables = vec![(
            None,
            self.tables
                .paths
                .store
                .iter()
                .filter(|r| own.contains(&r.slid()))
                .copied()
                .collect(),
        )];
        for (p, t) in self.tables.partitions.tables() {
            if t.is_complete(me) {
                let records = t.store.iter().filter(|r| own.contains(&r.slid())).copied();
                tables.push((Some(p | 0x8000), records.collect()));
            }
        }
        Some(Kept {
            gid: self.port.gid,
            lid: self.port.lid,
            lmc: self.port.lmc,
            sm_lid: self.port.sm_lid,
            written: wall,
            master_qos: self.master.policy.info().map(|m| m.qos),
            lease: self.tables.upkeep.lease().map(|l| {
                let left = l.until.saturating_duration_since(now).as_secs();
                let length = u16::try_from(l.length.as_secs()).unwrap_or(u16::MAX);
                (l.lid, wall + left, length)
            }),
            tables,
            names: (self.telemetry.counters.name_fetches > 0 || self.naming.loaded()).then(|| {
                self.naming
                    .names()
                    .entries()
                    .map(|(a, g, s)| (a.clone(), g, s))
                    .collect()
            }),
        })
    }

    /// Takes the tables a predecessor kept, at start: called right after
    /// [`SaCore::new`] and [`SaCore::handle_pkeys`], before anything is
    /// sent (what the start queued for the master — its table, its
    /// ClassPortInfo — is dropped: the kept tables stand for them).
    /// `wall` is the Unix time that goes with `now`. Returns how many
    /// records were taken, or why none were.
    pub fn restore_tables(&mut self, now: Instant, wall: u64, kept: Kept) -> Result<usize, String> {
        let p = self.port;
        if (kept.gid, kept.lid, kept.lmc) != (p.gid, p.lid, p.lmc) {
            return Err(format!(
                "they are the tables of {} at LID {} (LMC {}); this port is {} at LID {} (LMC {})",
                kept.gid, kept.lid, kept.lmc, p.gid, p.lid, p.lmc
            ));
        }
        if kept.sm_lid != p.sm_lid {
            return Err(format!(
                "they came from the master at LID {}; the master is at LID {} now",
                kept.sm_lid, p.sm_lid
            ));
        }
        let age = wall.saturating_sub(kept.written);
        let lease = kept.lease.and_then(|(lid, end, length)| {
            // No more left than a renewal gives, whatever the file says.
            let left = end
                .checked_sub(wall)
                .filter(|l| *l > 0)?
                .min(u64::from(length));
            Some(Lease {
                lid,
                until: now + Duration::from_secs(left),
                length: Duration::from_secs(u64::from(length)),
            })
        });
        let max_age = self.config.refresh_interval.as_secs();
        if age > max_age && lease.is_none() {
            return Err(format!(
                "they were kept {age} s ago, longer than the refresh interval ({max_age} s), and no lease runs"
            ));
        }
        // What the start queued stands for nothing now.
        self.master.requester.forget(|p| {
            matches!(
                p,
                Purpose::Bulk { .. } | Purpose::Walk { .. } | Purpose::MasterInfo
            )
        });
        self.outbox.mads.clear();
        self.tables.refresh.stop();
        self.tables.refresh.next_epoch();
        let (epoch, me) = (self.tables.refresh.epoch(), p.gid.guid());
        let mut records = 0;
        for (pkey, list) in kept.tables {
            let key = match pkey {
                None => TableKey::Default,
                Some(p) => TableKey::Partition(p & 0x7FFF),
            };
            let Some(t) = self.tables.table_mut(key) else {
                continue;
            };
            t.store.expect_table(list.len());
            records += list.len();
            for r in list {
                t.store.insert(r, epoch);
            }
            t.mark_complete(me);
        }
        if let Some(qos) = kept.master_qos {
            self.master.policy.learned(MasterInfo {
                qos,
                sm_lid: p.sm_lid,
            });
        }
        self.tables.upkeep.resume_lease(lease);
        if let Some(kept_names) = kept.names {
            let mut names = Names::new();
            for (address, gid, source) in kept_names {
                names.insert(address, gid, source);
            }
            // No fetch of the names tables at start: these stand for it.
            self.naming.take_kept(names);
        }
        self.telemetry.counters.refreshes_kept += 1;
        self.tables.refresh.made_fresh(now, None);
        self.paths_fresh(now, epoch);
        // A few of them asked again soon: nobody fetched them just now.
        let window = self.config.pace.min_window;
        let first_check = now + window + self.port.spread(window);
        self.tables.upkeep.check_at(Some(first_check));
        info!(
            records,
            age_s = age,
            leased = lease.is_some(),
            "this port's tables were kept from before the restart: no table asked of the master; a \
             few paths are checked against it"
        );
        Ok(records)
    }
}
