//! PathRecord loads ("SetTable") and deletes, local-sa's own contract (the
//! IBA has no such method; see docs/wire-contract.md):
//!
//! * `Set(PathRecord)` carries N records, through RMPP when they do not fit
//!   one MAD (AttributeOffset 8). Each replaces the stored record of its
//!   (SLID, DLID) pair. With AttributeModifier bit 0 set, the load is the
//!   whole table of every source port it names: that port's other records
//!   go and the port counts as complete.
//! * `Delete(PathRecord)` with ComponentMask 0 carries N records and removes
//!   the stored record of each one's (SLID, DLID) pair; with a non-zero
//!   mask it carries one template and removes every stored record whose
//!   masked fields equal the template's. A source port that loses a record
//!   is no longer complete: queries the cache cannot answer for it go to
//!   the master until a refresh or a whole-table load completes it again.
//!   With AttributeModifier bit 0 set, the sender says the pairs no longer
//!   exist at the master (a distributor's delta after a reroute): the
//!   sources stay as complete as they were.
//! * With AttributeModifier bit 1 set (`PARTITION_TABLES`), either one
//!   is about the partition tables: each record belongs to the table of
//!   its P_Key's partition, and a record of a partition the port does not
//!   hold is not stored (the count says how many were).
//! * With AttributeModifier bit 2 set (`QOS_TABLES`), a Set holds
//!   sources' whole tables at one QoS key for the QoS cache
//!   (`qos_loads`).
//! * Both need the configured SM_Key; anything else, and anything at all
//!   while no key is configured, is answered ERR_REQ_DENIED and changes
//!   nothing. Malformed loads (AttributeOffset
//!   under 8, a record with LID 0) are ERR_REQ_INVALID and change nothing.
//! * The answer is one MAD: GetResp (Set) or DeleteResp (Delete), the
//!   request's headers with the status, AttributeModifier holding how many
//!   records were stored or removed.

use std::borrow::Cow;
use std::collections::HashSet;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::RmppType;
use mad_codec::{ComponentMask, Method, PathRecord};

use crate::inbound::SaRequest;
use crate::load_flags::{
    FORGET_QOS, KNOWN_ABSENT, PARTITION_TABLES, QOS_TABLES, RENEW_ONLY, REPLACE_SOURCES,
    lease_seconds,
};
use crate::partitions::{PathTable, TableKey, partition_of};

/// What a whole load asks, read from its headers and records.
#[derive(Debug)]
pub(in crate::agent) enum LoadCommand {
    /// Sources' whole tables at one QoS key, for the QoS cache: the
    /// load's AttributeModifier and ComponentMask say which.
    QosTables {
        flags: u32,
        mask: ComponentMask,
        records: Vec<PathRecord>,
    },
    /// Only the distributor's lease, renewed for `seconds`; with
    /// `forget_qos` the master swept since, and the answers kept from it
    /// are forgotten.
    Renew { seconds: u16, forget_qos: bool },
    /// Records stored; with `replace` they are the whole of each
    /// source's paths; with `partitions` each goes to its P_Key's table.
    Store {
        records: Vec<PathRecord>,
        replace: bool,
        partitions: bool,
        /// The lease the load renews.
        lease: Option<u16>,
    },
    /// Records deleted: each pair (mask 0) or those matching the one
    /// template on `mask`; `known_absent`: gone at the master too.
    Delete {
        mask: ComponentMask,
        records: Vec<PathRecord>,
        known_absent: bool,
        partitions: bool,
        /// The lease the delete renews.
        lease: Option<u16>,
    },
}

impl LoadCommand {
    /// Reads a Set or Delete (`method`) whose headers carry `mask` and
    /// AttributeModifier `flags`, and whose records are `records` (or why
    /// they could not be read). The error says why the load is invalid
    /// (answered ERR_REQ_INVALID, nothing changed).
    pub(in crate::agent) fn read(
        method: Method,
        mask: ComponentMask,
        flags: u32,
        records: Result<Vec<PathRecord>, &'static str>,
    ) -> Result<Self, &'static str> {
        if method == Method::SET && flags & QOS_TABLES != 0 {
            let records = records?;
            return Ok(Self::QosTables {
                flags,
                mask,
                records,
            });
        }
        let lease = lease_seconds(flags);
        if method == Method::SET && flags & RENEW_ONLY != 0 {
            let seconds = lease.ok_or("RENEW_ONLY without LEASE")?;
            let forget_qos = flags & FORGET_QOS != 0;
            return Ok(Self::Renew {
                seconds,
                forget_qos,
            });
        }
        let records = check_load(method, mask, records?)?;
        let partitions = flags & PARTITION_TABLES != 0;
        Ok(if method == Method::SET {
            Self::Store {
                records,
                replace: flags & REPLACE_SOURCES != 0,
                partitions,
                lease,
            }
        } else {
            Self::Delete {
                mask,
                records,
                known_absent: flags & KNOWN_ABSENT != 0,
                partitions,
                lease,
            }
        })
    }
}

/// A load's records by the table each belongs to: all the default
/// table's, or (a partition load) each its P_Key's partition's.
/// (A default table's load is not copied: it can be 64 MB.)
pub(super) fn by_table(
    records: &[PathRecord],
    partitions: bool,
) -> Vec<(TableKey, Cow<'_, [PathRecord]>)> {
    if !partitions {
        return vec![(TableKey::Default, Cow::Borrowed(records))];
    }
    let mut tables: Vec<(TableKey, Vec<PathRecord>)> = Vec::new();
    for r in records {
        let key = TableKey::Partition(partition_of(r.pkey()));
        match tables.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(*r),
            None => tables.push((key, vec![*r])),
        }
    }
    tables
        .into_iter()
        .map(|(k, list)| (k, Cow::Owned(list)))
        .collect()
}

/// Stores `records` in `t` with `epoch`; with `replace`, they are the
/// whole of each source's paths in `t`: the source's others go and it
/// counts as complete.
pub(super) fn load_into(t: &mut PathTable, records: &[PathRecord], epoch: u32, replace: bool) {
    t.store.expect_table(records.len());
    for r in records {
        t.store.insert(*r, epoch);
    }
    if replace {
        let sources: HashSet<(u64, u16)> = records
            .iter()
            .map(|r| (r.sgid().guid(), r.slid()))
            .collect();
        for (guid, slid) in sources {
            t.store.sweep_from(slid..=slid, epoch);
            t.mark_complete(guid);
        }
    }
}

/// Removes from `t` the pairs of `records` (mask 0) or the records that
/// match the template `records[0]` on `mask`; returns how many went.
/// Unless the sender says the pairs are gone at the master too, the
/// sources that lose a record lose their completeness: what was removed
/// is unknown from now on (queries for it go to the master), not known to
/// be absent.
pub(super) fn delete_from(
    t: &mut PathTable,
    mask: ComponentMask,
    records: &[PathRecord],
    known_absent: bool,
) -> usize {
    let mut sources: HashSet<u64> = HashSet::new();
    let removed = if mask == ComponentMask::NONE {
        records
            .iter()
            .filter_map(|r| t.store.remove(r.slid(), r.dlid()))
            .map(|gone| sources.insert(gone.sgid().guid()))
            .count()
    } else {
        let template = records[0];
        t.store.remove_where(|r, _| {
            let doomed = matches_template(r, mask, &template);
            if doomed {
                sources.insert(r.sgid().guid());
            }
            doomed
        })
    };
    if !known_absent {
        for guid in &sources {
            t.mark_incomplete(*guid);
        }
    }
    removed
}

/// Whether `request` is a segment of an RMPP transfer (else a load of one
/// MAD).
pub(in crate::agent) fn is_segment(request: &SaRequest) -> bool {
    let rmpp = request.header().rmpp;
    rmpp.is_active() && rmpp.rmpp_type() == RmppType::DATA
}

/// The records of a load, checked: there must be some, a template Delete
/// carries exactly one, and every record of any other load has both LIDs.
/// The error says what is wrong (the answer is ERR_REQ_INVALID).
fn check_load(
    method: Method,
    mask: ComponentMask,
    records: Vec<PathRecord>,
) -> Result<Vec<PathRecord>, &'static str> {
    if records.is_empty() {
        return Err("no records");
    }
    let template = method == Method::DELETE && mask != ComponentMask::NONE;
    if template {
        // Only the selected fields of a template matter; LIDs may be 0.
        return if records.len() == 1 {
            Ok(records)
        } else {
            Err("a template Delete carries exactly one record")
        };
    }
    if records.iter().any(|r| r.slid() == 0 || r.dlid() == 0) {
        return Err("a record with SLID or DLID 0");
    }
    Ok(records)
}

/// True when every field `mask` selects is equal in `r` and `template`.
fn matches_template(r: &PathRecord, mask: ComponentMask, t: &PathRecord) -> bool {
    let checks: [(ComponentMask, bool); 13] = [
        (pr::SERVICE_ID, r.service_id() == t.service_id()),
        (pr::DGID, r.dgid() == t.dgid()),
        (pr::SGID, r.sgid() == t.sgid()),
        (pr::DLID, r.dlid() == t.dlid()),
        (pr::SLID, r.slid() == t.slid()),
        (pr::TCLASS, r.tclass() == t.tclass()),
        (pr::REVERSIBLE, r.reversible() == t.reversible()),
        (pr::PKEY, r.pkey() == t.pkey()),
        (pr::QOS_CLASS, r.qos_class() == t.qos_class()),
        (pr::SL, r.sl() == t.sl()),
        (pr::MTU, r.mtu() == t.mtu()),
        (pr::RATE, r.rate() == t.rate()),
        (pr::PACKET_LIFE_TIME, r.packet_life() == t.packet_life()),
    ];
    checks
        .iter()
        .all(|(bit, equal)| !mask.intersects(*bit) || *equal)
}
