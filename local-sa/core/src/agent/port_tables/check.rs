//! Checking the tables this port did not fetch itself — a distributor's,
//! or those kept across a restart — against the master: every
//! `check_interval` while a distributor keeps them, and once soon after a
//! restart, `check_sample` destinations of the default table, and a
//! quarter as many (at least one) of each partition table held and of the
//! pairs a distributor loaded into the QoS cache, are asked again
//! (GetTable with SGID = ours, the P_Key of a partition's, and the DLID,
//! as a refresh walk asks them; a QoS pair as the port asks it itself,
//! both GIDs and its key's fields) and the master's records compared with
//! those held: every kind of table a distributor sends is drawn from, as
//! its own check draws. A difference in a table and the port fetches its
//! own tables at once; in a QoS pair, the distributor's QoS tables are
//! forgotten (the port asks the master for each pair again as it is
//! asked). A master that does not answer changes nothing: what is held is
//! served, and the check is tried again after the back-off.
//!
//! What a check asks and what its answers say are here; the tables' side
//! is [`PortTables`](super::PortTables)' own (in `rules`): the sample of its tables,
//! whether the master's answer agrees with what is held, and what the
//! check's end leads to ([`CheckEnd`]). `SaCore` adds the QoS cache's
//! pairs, sends the questions and carries out the end.

use std::ops::RangeInclusive;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder};

use crate::agent::port_tables::upkeep::CheckQuestion;
use crate::partitions::TableKey;
use crate::requester::Answer;
use crate::store::PathStore;

/// The GetTable that asks the master `question` for the port at `gid`
/// (a QoS pair as the port asks it itself).
pub(in crate::agent) fn check_query(gid: Gid, question: CheckQuestion) -> bytes::Bytes {
    let (mask, t) = match question {
        CheckQuestion::Table(table, dlid) => {
            let (mask, mut t) = table.query(gid);
            t.set_dlid(dlid);
            (mask | pr::DLID, t)
        }
        CheckQuestion::Qos(key) => key.query(gid.prefix()),
    };
    let mut b = SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}

/// What a check's end leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct CheckEnd {
    /// The distributor's QoS pairs differ: forgotten, each asked of the
    /// master again.
    pub(in crate::agent) forget_qos: bool,
    /// The tables differ: the port fetches its own at once (the master's
    /// word wins, under a lease too).
    pub(in crate::agent) refresh: bool,
    /// Passed (`Some(true)`), failed (`Some(false)`), or the master did
    /// not answer (`None`: tried again after the back-off).
    pub(in crate::agent) passed: Option<bool>,
}

/// `k` of the destinations of `store`'s paths from the port at `lids`
/// (not its own LIDs), spread over them from `phase`.
pub(super) fn destinations_to_check(
    store: &PathStore,
    k: usize,
    phase: usize,
    lids: &RangeInclusive<u16>,
) -> Vec<u16> {
    let mut dlids: Vec<u16> = store
        .from_lid(*lids.start())
        .map(PathRecord::dlid)
        .filter(|d| !lids.contains(d))
        .collect();
    dlids.sort_unstable();
    dlids.dedup();
    let (len, k) = (dlids.len(), k.min(dlids.len()));
    if k == 0 {
        return Vec::new();
    }
    let offset = phase % len;
    (0..k)
        .map(|i| dlids[(offset + i * len / k) % len])
        .collect()
}

/// Whether an answer's status says anything about the paths (success or
/// no records); any other is taken as no answer.
pub(in crate::agent) fn speaks_of_paths(answer: &Answer) -> bool {
    answer.status() == MadStatus::OK || answer.status() == MadStatus::ERR_NO_RECORDS
}

/// The destinations that differed, by table, for the log: `default:
/// 5,7; 0x8001: 9; QoS: 0x…2 -> 0x…9`.
pub(in crate::agent) fn differing(differed: &[CheckQuestion]) -> String {
    let in_tables: Vec<(TableKey, u16)> = differed
        .iter()
        .filter_map(|q| match q {
            CheckQuestion::Table(t, d) => Some((*t, *d)),
            CheckQuestion::Qos(_) => None,
        })
        .collect();
    let mut tables: Vec<TableKey> = in_tables.iter().map(|(t, _)| *t).collect();
    tables.dedup();
    let mut parts: Vec<String> = tables
        .iter()
        .map(|t| {
            let lids: Vec<String> = in_tables
                .iter()
                .filter(|(u, _)| u == t)
                .map(|(_, d)| d.to_string())
                .collect();
            format!("{t}: {}", lids.join(","))
        })
        .collect();
    let pairs: Vec<String> = differed
        .iter()
        .filter_map(|q| match q {
            CheckQuestion::Qos(k) => Some(format!("{:#x} -> {:#x}", k.src, k.dst)),
            CheckQuestion::Table(..) => None,
        })
        .collect();
    if !pairs.is_empty() {
        parts.push(format!("QoS: {}", pairs.join(",")));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use bytes::BytesMut;
    use mad_codec::SaRecord as _;
    use mad_codec::header::SaMadHeader;
    use mad_codec::zerocopy::{FromZeros, IntoBytes};

    use super::*;
    use crate::agent::port_tables::PortTables;

    const ME: u16 = 2;

    fn path(d: u16, sl: u8) -> PathRecord {
        let mut r = PathRecord::new_zeroed();
        r.set_sgid(Gid::new(Gid::DEFAULT_PREFIX, u64::from(ME)));
        r.set_dgid(Gid::new(Gid::DEFAULT_PREFIX, u64::from(d)));
        r.set_slid(ME);
        r.set_dlid(d);
        r.set_pkey(0xFFFF);
        r.set_sl(sl);
        r
    }

    fn answer(records: &[PathRecord]) -> Answer {
        let request = check_query(
            Gid::new(Gid::DEFAULT_PREFIX, u64::from(ME)),
            CheckQuestion::Table(TableKey::Default, 5),
        );
        let (h, _) = SaMadHeader::parse(&request).unwrap();
        let mut h = *h;
        h.mad.set_method(h.mad.method().response());
        h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
        let mut mad = BytesMut::from(h.as_bytes());
        for r in records {
            mad.extend_from_slice(r.as_bytes());
        }
        Answer::whole(mad.freeze()).unwrap()
    }

    #[test]
    fn the_sample_spreads_over_the_destinations_and_a_differing_record_is_caught() {
        let mut t = PortTables::new(Instant::now(), PortTables::test_context());
        for d in 3..=42 {
            t.paths.store.insert(path(d, 0), 1);
        }
        let lids = ME..=ME;
        let sample = t.check_sample(4, 0, &lids);
        let dlids: Vec<u16> = sample
            .iter()
            .map(|q| match q {
                CheckQuestion::Table(TableKey::Default, d) => *d,
                q => panic!("{q:?}"),
            })
            .collect();
        assert_eq!(dlids, [3, 13, 23, 33], "spread over the 40 destinations");
        assert_ne!(
            t.check_sample(4, 5, &lids),
            sample,
            "another set from another phase"
        );
        let held = (TableKey::Default, 13);
        assert!(t.agrees_with_master(held, &answer(&[path(13, 0)]), &lids));
        assert!(
            !t.agrees_with_master(held, &answer(&[path(13, 1)]), &lids),
            "another SL"
        );
        assert!(
            !t.agrees_with_master(held, &answer(&[]), &lids),
            "gone at the master"
        );
    }
}
