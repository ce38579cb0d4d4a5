//! This port's tables across a restart of local-sa: what to keep (its
//! paths in the default and partition tables, stamped with the master
//! and the lease, [`crate::kept_tables`]), and taking them back at start
//! instead of asking the master — only if they are this port's, from the
//! same master, no older than the refresh interval (or under a lease
//! still running), and no fabric change was waiting for a refresh when
//! they were kept. A few of their paths are then checked against the
//! master ([`crate::agent::port_tables::check`]); a difference, and the port fetches
//! its own tables.
//!
//! Whether kept tables may be taken is here ([`takes`]); keeping and
//! taking them back are the tables' own
//! ([`PortTables::kept_tables`](super::PortTables::kept_tables)); `SaCore`'s public calls
//! ([`crate::SaCore::keep_tables`], [`crate::SaCore::restore_tables`])
//! add the master, the lease and the names.

use std::time::{Duration, Instant};

use crate::agent::port_tables::upkeep::{Lease, LeaseWord};
use crate::config::PortIdentity;
use crate::kept_tables::{Kept, NotTaken};

/// Whether `kept` may be taken by the port `port` at `now` (Unix time
/// `wall`): its tables, from the same master, no older than
/// `refresh_interval` or under a lease still running. The lease it
/// carries, or why not.
pub(in crate::agent) fn takes(
    kept: &Kept,
    port: &PortIdentity,
    now: Instant,
    wall: u64,
    refresh_interval: Duration,
) -> Result<Option<Lease>, NotTaken> {
    let p = port;
    if (kept.gid, kept.lid, kept.lmc) != (p.gid, p.lid, p.lmc) {
        return Err(NotTaken::OtherPort {
            kept: (kept.gid, kept.lid, kept.lmc),
            port: (p.gid, p.lid, p.lmc),
        });
    }
    if kept.sm_lid != p.sm_lid {
        return Err(NotTaken::OtherMaster {
            kept: kept.sm_lid,
            now: p.sm_lid,
        });
    }
    let age = wall.saturating_sub(kept.written);
    let lease = kept.lease.and_then(|(lid, end, length)| {
        // No more left than a renewal gives, whatever the file says.
        let left = end
            .checked_sub(wall)
            .filter(|l| *l > 0)?
            .min(u64::from(length));
        let word = LeaseWord {
            seconds: length,
            renewal: false,
            every: None,
        };
        let mut lease = Lease::new(lid, word, now);
        lease.until = now + Duration::from_secs(left);
        Some(lease)
    });
    let max_age = refresh_interval.as_secs();
    if age > max_age && lease.is_none() {
        return Err(NotTaken::TooOld {
            age_s: age,
            max_s: max_age,
        });
    }
    Ok(lease)
}
