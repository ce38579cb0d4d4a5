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
use std::time::Instant;

use bytes::Bytes;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::{RmppFlags, RmppType, SaMadHeader};
use mad_codec::{ComponentMask, MadStatus, Method, PathRecord, Records};
use tracing::{info, warn};

use crate::address::Transmit;
use crate::agent::SaCore;
use crate::agent::master::purpose::Purpose;
use crate::agent::tables::PortTables;
use crate::inbound::SaRequest;
use crate::load_flags::{
    KNOWN_ABSENT, PARTITION_TABLES, QOS_TABLES, RENEW_ONLY, REPLACE_SOURCES, lease_seconds,
};
use crate::names::hosts::Names;
use crate::names::loads::names_table;
use crate::names::state::NameTable;
use crate::partitions::{PathTable, TableKey, partition_of};
use crate::respond;
use crate::transfers::Event;

impl SaCore {
    /// A Set or Delete of PathRecords: one MAD, or a segment of an RMPP
    /// transfer.
    pub(in crate::agent) fn load(&mut self, now: Instant, request: &SaRequest) {
        let Some((header, data)) = self.take_load(now, request) else {
            return;
        };
        let records = if is_segment(request) {
            Records::<PathRecord>::new(&data, header.sa.attribute_offset())
                .map(|r| r.copied().collect())
                .map_err(|_| "AttributeOffset is not that of 64-byte PathRecords")
        } else {
            Ok(vec![request.template::<PathRecord>()])
        };
        self.apply(now, request, &header, records);
    }

    /// A load's whole content — its headers and data — once it is in: at
    /// once for a single MAD, at the last segment for an RMPP transfer.
    /// A transfer without the SM_Key is refused at its first segment
    /// rather than taken in whole (the answer also ends the sender's
    /// wait); a single MAD's key is checked with its content.
    pub(in crate::agent) fn take_load(
        &mut self,
        now: Instant,
        request: &SaRequest,
    ) -> Option<(SaMadHeader, Bytes)> {
        let rmpp = request.header().rmpp;
        if !is_segment(request) {
            let data = request.mad().slice(SaMadHeader::LEN..);
            return Some((*request.header(), data));
        }
        let tid = request.tid();
        if !self.transfers.is_receiving(&request.from, tid) {
            if !rmpp.flags().contains(RmppFlags::FIRST) {
                // A segment of a transfer not (or no longer) being
                // received, such as the rest of a refused one.
                return None;
            }
            if !self.authorized(now, request.sm_key(), request.from.lid) {
                self.deny(request, request.header());
                return None;
            }
        }
        let event = self.transfers.segment(
            now,
            &request.from,
            tid,
            request.mad(),
            &mut self.outbox.mads,
        )?;
        self.reply().count_transfer(now, &event);
        let Event::Received(whole) = event else {
            return None;
        };
        let header = *SaMadHeader::parse(&whole).ok()?.0;
        Some((header, whole.slice(SaMadHeader::LEN..)))
    }

    /// Whether a load or delete carrying `carried` may change the cache:
    /// only with the configured SM_Key, and never while none is
    /// configured (said once in the log).
    pub(in crate::agent) fn authorized(&mut self, now: Instant, carried: u64, lid: u16) -> bool {
        match self.config.sm_key {
            Some(key) if key.matches(carried) => true,
            Some(_) => {
                if let Some(left_out) = self.telemetry.log_limit.allow(now, "denied load", lid) {
                    warn!(
                        lid,
                        earlier_not_logged = left_out,
                        "PathRecord load or delete without the SM_Key: denied"
                    );
                }
                false
            }
            None => {
                if self.telemetry.first_unkeyed_refusal() {
                    warn!(
                        lid,
                        "a PathRecord load or delete arrived, but no SM_Key is configured: every load \
                         and delete is refused until one is (--sm-key-file FILE)"
                    );
                }
                false
            }
        }
    }

    /// Answers a malformed load or delete ERR_REQ_INVALID, saying `why`
    /// in the log (limited: a peer chooses how often).
    pub(in crate::agent) fn refuse_invalid_load(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        why: &'static str,
    ) {
        self.telemetry.counters.errors += 1;
        let lid = request.from.lid;
        if let Some(left_out) = self.telemetry.log_limit.allow(now, "invalid load", lid) {
            warn!(
                lid,
                why,
                earlier_not_logged = left_out,
                "PathRecord load or delete refused as invalid"
            );
        }
        self.answer_load(request, header, MadStatus::ERR_REQ_INVALID, 0);
    }

    pub(in crate::agent) fn deny(&mut self, request: &SaRequest, header: &SaMadHeader) {
        self.telemetry.counters.denied += 1;
        self.answer_load(request, header, MadStatus::ERR_REQ_DENIED, 0);
    }

    /// Applies a whole Set or Delete (already reassembled if it was RMPP)
    /// whose headers are `header` and records `records`.
    fn apply(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        records: Result<Vec<PathRecord>, &'static str>,
    ) {
        if !self.authorized(now, header.sa.sm_key(), request.from.lid) {
            return self.deny(request, header);
        }
        let method = header.mad.method();
        let mask = header.sa.component_mask();
        let flags = header.mad.attribute_modifier();
        if method == Method::SET && flags & QOS_TABLES != 0 {
            return self.load_qos_tables(now, request, header, records);
        }
        let lease = lease_seconds(flags);
        if method == Method::SET && flags & RENEW_ONLY != 0 {
            let Some(seconds) = lease else {
                return self.refuse_invalid_load(now, request, header, "RENEW_ONLY without LEASE");
            };
            self.lease_renewed(now, request.from.lid, seconds);
            return self.answer_load(request, header, MadStatus::OK, 0);
        }
        let records = match records.and_then(|r| check_load(method, mask, r)) {
            Ok(r) => r,
            Err(why) => return self.refuse_invalid_load(now, request, header, why),
        };
        // Before the records: a whole table loaded under a lease counts
        // as the lease's refresh, not as one that starts an interval.
        if let Some(seconds) = lease {
            self.lease_renewed(now, request.from.lid, seconds);
        }
        let partitions = flags & PARTITION_TABLES != 0;
        let count = if method == Method::SET {
            let replace = flags & REPLACE_SOURCES != 0;
            let count = self.store_records(&records, replace, partitions);
            let me = self.port.gid.guid();
            if replace && !partitions && records.iter().any(|r| r.sgid().guid() == me) {
                self.own_paths_loaded(now);
            }
            count
        } else {
            let absent = flags & KNOWN_ABSENT != 0;
            self.delete_records(mask, &records, absent, partitions)
        };
        self.answer_load(request, header, MadStatus::OK, count);
    }

    fn store_records(&mut self, records: &[PathRecord], replace: bool, partitions: bool) -> usize {
        let stored = self.tables.store_load(records, replace, partitions);
        self.telemetry.counters.loaded += stored as u64;
        self.answers.forget();
        info!(
            records = stored,
            offered = records.len(),
            replace,
            partitions,
            "PathRecords loaded"
        );
        stored
    }

    fn delete_records(
        &mut self,
        mask: ComponentMask,
        records: &[PathRecord],
        known_absent: bool,
        partitions: bool,
    ) -> usize {
        let removed = self
            .tables
            .delete_load(mask, records, known_absent, partitions);
        self.telemetry.counters.deleted += removed as u64;
        self.answers.forget();
        info!(removed, known_absent, partitions, "PathRecords deleted");
        removed
    }

    /// A Set with `QOS_TABLES`, authorized, whose records are `records`
    /// (or why they could not be read): the QoS cache takes them.
    fn load_qos_tables(
        &mut self,
        now: Instant,
        request: &SaRequest,
        header: &SaMadHeader,
        records: Result<Vec<PathRecord>, &'static str>,
    ) {
        let flags = header.mad.attribute_modifier();
        let mask = header.sa.component_mask();
        let loaded = records.and_then(|r| self.answers.qos_cache.load(flags, mask, &r));
        let load = match loaded {
            Ok(l) => l,
            Err(why) => return self.refuse_invalid_load(now, request, header, why),
        };
        self.telemetry.counters.qos_cache_loaded += load.stored as u64;
        info!(
            records = load.stored,
            not_kept = load.given - load.stored,
            sources = load.sources,
            key = %mask,
            "QoS tables loaded (a destination's records larger than the QoS cache's byte limit are not kept)"
        );
        self.answer_load(request, header, MadStatus::OK, load.stored);
    }

    /// A Set of NodeRecords or ServiceRecords marked `NAMES_TABLE`: one
    /// MAD, or a segment of an RMPP transfer ([`crate::names::loads`]).
    pub(in crate::agent) fn names_load(&mut self, now: Instant, request: &SaRequest) {
        let Some((header, data)) = self.take_load(now, request) else {
            return;
        };
        if !self.authorized(now, header.sa.sm_key(), request.from.lid) {
            return self.deny(request, &header);
        }
        let offset = header.sa.attribute_offset();
        let (table, taken) =
            names_table(request.attribute(), &data, offset, self.port.gid.prefix());
        let Ok((names, taken)) = taken else {
            self.telemetry.counters.errors += 1;
            warn!(
                lid = request.from.lid,
                table = table.describe(),
                offset,
                "names load refused: its AttributeOffset is shorter than a record"
            );
            return self.answer_load(request, &header, MadStatus::ERR_REQ_INVALID, 0);
        };
        self.telemetry.counters.name_tables_loaded += 1;
        info!(
            table = table.describe(),
            records = taken,
            "names table loaded"
        );
        self.take_names_table(table, names);
        self.answer_load(request, &header, MadStatus::OK, taken);
    }

    /// Makes `names` the `table` half of the names: a fetch from the
    /// master (running or due) is given up for the loaded one.
    fn take_names_table(&mut self, table: NameTable, names: Names) {
        let epoch = self.tables.refresh.epoch();
        if self.naming.table_loaded(epoch, table, names) {
            self.master.forget(|p| matches!(p, Purpose::Names { .. }));
        }
        self.finish_name_fetch();
    }

    /// Answers a load: its headers with `status`, the response method,
    /// SM_Key 0 and the count in AttributeModifier; no data.
    pub(in crate::agent) fn answer_load(
        &mut self,
        request: &SaRequest,
        header: &SaMadHeader,
        status: MadStatus,
        count: usize,
    ) {
        let mut header = respond::success_header(header, 0);
        header.mad.set_status(status);
        header
            .mad
            .set_attribute_modifier(u32::try_from(count).unwrap_or(u32::MAX));
        let answer = respond::single(&header, &[]);
        // A load that came through RMPP: its receiver lingers, and sends
        // this again if the loader, having missed it, repeats a segment.
        self.transfers
            .remember_answer(&request.from, request.tid(), answer.clone());
        self.outbox
            .mads
            .push_back(Transmit::reply(request.reply_to(), answer));
    }
}

impl PortTables {
    /// Stores a load's records, each in its table (with `partitions`, its
    /// P_Key's partition's; a partition the port does not hold takes
    /// none), under a new epoch; with `replace` they are the whole of each
    /// source's paths there. Returns how many were stored.
    pub(in crate::agent) fn store_load(
        &mut self,
        records: &[PathRecord],
        replace: bool,
        partitions: bool,
    ) -> usize {
        let epoch = self.refresh.next_epoch();
        let mut stored = 0;
        for (table, records) in by_table(records, partitions) {
            let Some(t) = self.table_mut(table) else {
                continue;
            };
            load_into(t, &records, epoch, replace);
            stored += records.len();
        }
        stored
    }

    /// Removes a Delete's pairs (mask 0) or the records matching its
    /// template on `mask` (with `partitions`: in the template's partition
    /// if it names a P_Key, else in every partition table). Returns how
    /// many went.
    pub(in crate::agent) fn delete_load(
        &mut self,
        mask: ComponentMask,
        records: &[PathRecord],
        known_absent: bool,
        partitions: bool,
    ) -> usize {
        let work = if partitions && mask != ComponentMask::NONE {
            let keys: Vec<TableKey> = if mask.contains(pr::PKEY) {
                vec![TableKey::Partition(partition_of(records[0].pkey()))]
            } else {
                let held = self.partitions.tables();
                held.map(|(p, _)| TableKey::Partition(p)).collect()
            };
            keys.into_iter()
                .map(|k| (k, Cow::Borrowed(records)))
                .collect()
        } else {
            by_table(records, partitions)
        };
        let mut removed = 0;
        for (table, records) in work {
            if let Some(t) = self.table_mut(table) {
                removed += delete_from(t, mask, &records, known_absent);
            }
        }
        removed
    }
}

/// A load's records by the table each belongs to: all the default
/// table's, or (a partition load) each its P_Key's partition's.
/// (A default table's load is not copied: it can be 64 MB.)
fn by_table(records: &[PathRecord], partitions: bool) -> Vec<(TableKey, Cow<'_, [PathRecord]>)> {
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
fn load_into(t: &mut PathTable, records: &[PathRecord], epoch: u32, replace: bool) {
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
fn delete_from(
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
fn is_segment(request: &SaRequest) -> bool {
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
