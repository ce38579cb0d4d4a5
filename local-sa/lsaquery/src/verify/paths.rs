//! The paths part: the same PathRecord Get asked of local-sa and of the
//! master, for a sample of the fabric's destinations × each P_Key of the
//! port × no ServiceID and each one given; and this port's table
//! (GetTable by SGID) from both, compared as sets.

use std::collections::BTreeSet;

use bytes::Bytes;
use local_sa_core::requester::Answer;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::records::SaRecord as _;
use mad_codec::zerocopy::{FromBytes as _, FromZeros, IntoBytes};
use mad_codec::{ComponentMask, Gid, MadStatus, Method, PathRecord};
use umad::Address;

use super::asking::{Asked, Pace, ask_all};
use super::report::{Part, Verdict};
use crate::client::Client;
use crate::query::{Kind, Query};
use crate::stop::Stop;

/// What the paths part asks about.
pub(super) struct Scope {
    pub(super) me: Gid,
    pub(super) my_lid: u16,
    pub(super) pkeys: Vec<u16>,
    pub(super) service_ids: Vec<u64>,
    /// Destinations to ask about; `None`: all.
    pub(super) sample: Option<usize>,
}

/// A destination the paths part found: for the doors part to ask again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Destination {
    pub(super) lid: u16,
    pub(super) gid: Gid,
}

/// One Get: the destination LID, the P_Key, the ServiceID if any.
#[derive(Debug, Clone, Copy)]
struct Pair {
    dlid: u16,
    pkey: u16,
    service_id: Option<u64>,
}

impl Pair {
    fn template(&self, me: Gid) -> (ComponentMask, PathRecord) {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(me);
        t.set_dlid(self.dlid);
        t.set_pkey(self.pkey);
        let mut mask = pr::SGID | pr::DLID | pr::PKEY;
        if let Some(id) = self.service_id {
            t.set_service_id(id);
            mask |= pr::SERVICE_ID;
        }
        (mask, t)
    }

    /// The two commands that show this pair's answers side by side.
    fn commands(&self, my_lid: u16) -> String {
        let service = self
            .service_id
            .map_or_else(String::new, |s| format!(" --service_id {s:#x}"));
        let q = format!(
            "-p --method get --slid {my_lid} --dlid {} --pkey {:#06x}{service}",
            self.dlid, self.pkey
        );
        format!("lsaquery {q}   and   lsaquery --master {q}")
    }

    fn label(&self) -> String {
        let service = self.service_id.map_or_else(
            || "no ServiceID".to_owned(),
            |s| format!("ServiceID {s:#x}"),
        );
        format!("LID {} P_Key {:#06x} {service}", self.dlid, self.pkey)
    }
}

/// A PathRecord query's MAD.
pub(super) fn path_query(method: Method, mask: ComponentMask, template: &PathRecord) -> Bytes {
    Query::selecting(Kind::PathRecord, method, mask, template.as_bytes()).to_mad(0)
}

/// This port's table (GetTable by SGID) from the SA at `sa`, or the
/// part that says `who` did not give it and what to run `next`.
async fn port_table(
    client: &mut Client,
    sa: Address,
    me: Gid,
    who: &str,
    next: String,
    pace: Pace,
) -> Result<Result<Answer, Part>, Stop> {
    let mut t = PathRecord::new_zeroed();
    t.set_sgid(me);
    let request = [path_query(Method::GET_TABLE, pr::SGID, &t)];
    let outcome = ask_all(client, sa, &request, pace, "tables")
        .await?
        .swap_remove(0);
    Ok(match outcome {
        Asked::Answered(a) if a.status() == MadStatus::OK => Ok(a),
        other => Err(Part::not_checked(
            "paths",
            format!(
                "{who} at LID {} did not give this port's table: {}",
                sa.lid,
                other.describe()
            ),
        )
        .next(next)),
    })
}

/// What the paths part found beside its part: the destinations it asked
/// about (for the doors part to ask again), and whether the master's
/// answers vary from ask to ask.
pub(super) struct Found {
    pub(super) destinations: Vec<Destination>,
    pub(super) master_varies: bool,
}

/// Runs the paths part.
pub(super) async fn check(
    client: &mut Client,
    local: Address,
    master: Address,
    scope: &Scope,
    pace: Pace,
) -> Result<(Part, Found), Stop> {
    let ask_master = format!(
        "lsaquery --master -c   (is the master SA at LID {} answering?)",
        master.lid
    );
    let local_table = match port_table(
        client,
        local,
        scope.me,
        "local-sa",
        "lsaquery --status".into(),
        pace,
    )
    .await?
    {
        Ok(t) => t,
        Err(part) => return Ok((part, Found::none())),
    };
    let master_table = match port_table(
        client,
        master,
        scope.me,
        "the master SA",
        ask_master.clone(),
        pace,
    )
    .await?
    {
        Ok(t) => t,
        Err(part) => return Ok((part, Found::none())),
    };
    let local_records: BTreeSet<[u8; PathRecord::LEN]> =
        local_table.records::<PathRecord>().map(bytes_of).collect();
    let master_records: BTreeSet<[u8; PathRecord::LEN]> =
        master_table.records::<PathRecord>().map(bytes_of).collect();
    let lids: BTreeSet<u16> = local_table
        .records::<PathRecord>()
        .chain(master_table.records::<PathRecord>())
        .map(PathRecord::dlid)
        .collect();
    let lids = sample(&lids.into_iter().collect::<Vec<_>>(), scope.sample);

    let mut pairs = Vec::new();
    for &dlid in &lids {
        for &pkey in &scope.pkeys {
            pairs.push(Pair {
                dlid,
                pkey,
                service_id: None,
            });
            for &id in &scope.service_ids {
                pairs.push(Pair {
                    dlid,
                    pkey,
                    service_id: Some(id),
                });
            }
        }
    }
    let requests: Vec<Bytes> = pairs
        .iter()
        .map(|p| {
            let (mask, t) = p.template(scope.me);
            path_query(Method::GET, mask, &t)
        })
        .collect();
    let from_local = ask_all(client, local, &requests, pace, "paths asked of local-sa").await?;
    let from_master = ask_all(client, master, &requests, pace, "paths asked of the master").await?;

    // A pair whose answers differ is asked of the master once more: one
    // it answers otherwise then varies from ask to ask.
    let differing: Vec<usize> = (0..pairs.len())
        .filter(
            |&i| match (from_local[i].answer(), from_master[i].answer()) {
                (Some(l), Some(m)) => compare_answers(l, m).is_some(),
                _ => false,
            },
        )
        .collect();
    let again_requests: Vec<Bytes> = differing.iter().map(|&i| requests[i].clone()).collect();
    let again = ask_all(
        client,
        master,
        &again_requests,
        pace,
        "differing paths asked of the master again",
    )
    .await?;
    let mut varies: BTreeSet<usize> = (differing.iter().zip(&again))
        .filter(|(i, a)| {
            let first = from_master[**i].answer();
            matches!((first, a.answer()), (Some(m), Some(m2)) if compare_answers(m, m2).is_some())
        })
        .map(|(i, _)| *i)
        .collect();
    // Once the master is seen to draw its answers anew, a pair it
    // happened to answer alike twice that differs from local-sa's in the
    // SL alone is the same drawing.
    if !varies.is_empty() {
        varies.extend(differing.iter().copied().filter(|&i| {
            let (l, m) = (from_local[i].answer(), from_master[i].answer());
            matches!((l.and_then(first_record), m.and_then(first_record)), (Some(l), Some(m)) if only_sl_differs(&l, &m))
        }));
    }

    let mut details = Vec::new();
    let mut first_different = None;
    let (mut equal, mut different, mut unchecked) = (0usize, 0usize, 0usize);
    let mut destinations = Vec::new();
    for (i, ((pair, l), m)) in pairs.iter().zip(&from_local).zip(&from_master).enumerate() {
        let Some(m) = m.answer() else {
            unchecked += 1;
            continue;
        };
        if pair.service_id.is_none()
            && pair.pkey == scope.pkeys[0]
            && let Some(r) = first_record(m)
        {
            destinations.push(Destination {
                lid: pair.dlid,
                gid: r.dgid(),
            });
        }
        let difference = match l.answer() {
            None => Some(format!(
                "local-sa did not answer ({}); the master did",
                l.describe()
            )),
            Some(l) => compare_answers(l, m),
        };
        match difference {
            None => equal += 1,
            Some(d) if varies.contains(&i) => details.push(format!(
                "{}: {d} — the master answered otherwise when asked again: {VARIES}",
                pair.label()
            )),
            Some(d) => {
                different += 1;
                first_different.get_or_insert(*pair);
                details.push(format!("{}: {d}", pair.label()));
            }
        }
    }
    let mut table_details = Vec::new();
    let mut table_note = compare_tables(
        &local_records,
        &master_records,
        master_table.is_cut(),
        &mut table_details,
    );
    let mut tables_agree = table_details.is_empty();
    if !tables_agree {
        // The master's table asked once more: one unlike the first
        // varies from ask to ask, and is no difference of local-sa's.
        let again = port_table(
            client,
            master,
            scope.me,
            "the master SA",
            ask_master.clone(),
            pace,
        )
        .await?
        .ok();
        let varies = again.is_some_and(|a| {
            let second: BTreeSet<[u8; PathRecord::LEN]> =
                a.records::<PathRecord>().map(bytes_of).collect();
            second != master_records
        });
        if varies {
            table_note = format!("table: the master's varies from ask to ask: {VARIES}");
            tables_agree = true;
            table_details.clear();
        }
    }
    details.extend(table_details);
    let asked = pairs.len();
    let what = format!(
        "{} destinations × P_Key {} × ServiceID none, {}",
        lids.len(),
        list(&scope.pkeys, |p| format!("{p:#06x}")),
        list(&scope.service_ids, |s| format!("{s:#x}"))
    );
    let mut part = if different == 0 && !varies.is_empty() && tables_agree {
        Part::not_checked(
            "paths",
            format!(
                "{} of {asked} answers the master gives otherwise each time it is asked: its answers vary \
                 from ask to ask, and equality with it is not defined there; {equal} equal ({what}); \
                 {table_note}",
                varies.len()
            ),
        )
        .next("lsaquery --compute   (which kind of table the master's answers vary in)")
    } else if different > 0 || !details.is_empty() {
        Part::new(
            "paths",
            Verdict::Different,
            format!(
                "{different} of {asked} answers differ from the master's ({what}); {table_note}"
            ),
        )
        .next(first_different.map_or_else(
            || "lsaquery --dump   (the table local-sa holds)".to_owned(),
            |p| p.commands(scope.my_lid),
        ))
    } else if unchecked == asked {
        Part::not_checked(
            "paths",
            format!(
                "the master SA at LID {} answered none of {asked} queries",
                master.lid
            ),
        )
        .next(ask_master)
    } else if unchecked > 0 {
        Part::not_checked(
            "paths",
            format!(
                "{equal} of {asked} answers equal, {unchecked} not compared: the master SA at LID {} stopped answering",
                master.lid
            ),
        )
        .next("lsaquery --verify again when the master answers")
    } else {
        Part::new(
            "paths",
            Verdict::Ok,
            format!("{asked} answers equal to the master's ({what}); {table_note}"),
        )
    };
    part.details = details;
    let master_varies = !varies.is_empty();
    Ok((
        part,
        Found {
            destinations,
            master_varies,
        },
    ))
}

impl Found {
    fn none() -> Self {
        Self {
            destinations: Vec::new(),
            master_varies: false,
        }
    }
}

/// Whether `a` and `b` differ in their SL alone.
pub(super) fn only_sl_differs(a: &PathRecord, b: &PathRecord) -> bool {
    let mut a = *a;
    a.set_sl(b.sl());
    bytes_of(&a) == bytes_of(b)
}

/// `items` as `a, b, c`.
fn list<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    items.iter().map(show).collect::<Vec<_>>().join(", ")
}

fn bytes_of(r: &PathRecord) -> [u8; PathRecord::LEN] {
    let mut b = [0; PathRecord::LEN];
    b.copy_from_slice(r.as_bytes());
    b
}

fn first_record(a: &Answer) -> Option<PathRecord> {
    (a.status() == MadStatus::OK)
        .then(|| a.records::<PathRecord>().next().copied())
        .flatten()
}

/// `None` if local-sa's answer `l` equals the master's `m` (status, and
/// the record when there is one); otherwise what differs.
fn compare_answers(l: &Answer, m: &Answer) -> Option<String> {
    if l.status() != m.status() {
        return Some(format!(
            "status {} from local-sa, {} from the master",
            l.status().names(),
            m.status().names()
        ));
    }
    match (first_record(l), first_record(m)) {
        (Some(a), Some(b)) if a != b => Some(field_differences(&a, &b).join("; ")),
        _ => None,
    }
}

/// Each field that differs, `name local-sa's (local-sa) ≠ master's
/// (master)`, named as saquery prints them.
pub(super) fn field_differences(local: &PathRecord, master: &PathRecord) -> Vec<String> {
    let fields = |r: &PathRecord| -> Vec<(String, String)> {
        crate::print::path_record(r)
            .to_text()
            .lines()
            .filter_map(|l| {
                let l = l.trim_start_matches('\t');
                let dots = l.find('.')?;
                let (name, value) = l.split_at(dots);
                Some((name.to_owned(), value.trim_start_matches('.').to_owned()))
            })
            .collect()
    };
    fields(local)
        .into_iter()
        .zip(fields(master))
        .filter(|(a, b)| a.1 != b.1)
        .map(|((name, a), (_, b))| format!("{name} {a} (local-sa) ≠ {b} (master)"))
        .collect()
}

/// What makes the master's answers vary from ask to ask.
pub(super) const VARIES: &str = "its answers vary from ask to ask (a routing engine that draws each path's SL at \
     random, as DFSSSP does), not a difference of local-sa's";

/// Compares this port's tables as sets; differences go to `details`.
/// Returns a note on the comparison for the part's reason.
fn compare_tables(
    local: &BTreeSet<[u8; PathRecord::LEN]>,
    master: &BTreeSet<[u8; PathRecord::LEN]>,
    master_cut: bool,
    details: &mut Vec<String>,
) -> String {
    let record = |b: &[u8; PathRecord::LEN]| {
        let r = PathRecord::read_from_bytes(b).unwrap_or_else(|_| PathRecord::new_zeroed());
        format!("DLID {} DGID {} SL {}", r.dlid(), r.dgid(), r.sl())
    };
    let missing: Vec<_> = master.difference(local).collect();
    for b in &missing {
        details.push(format!(
            "table: the master's record {} is not in local-sa's",
            record(b)
        ));
    }
    if master_cut {
        return format!(
            "table: the master's came cut (no RMPP on this transport), so its {} whole records were looked for in local-sa's {}",
            master.len(),
            local.len()
        );
    }
    let extra: Vec<_> = local.difference(master).collect();
    for b in &extra {
        details.push(format!(
            "table: local-sa's record {} is not in the master's",
            record(b)
        ));
    }
    if missing.is_empty() && extra.is_empty() {
        format!("table: the same {} records", local.len())
    } else {
        format!(
            "table: {} records missing, {} extra",
            missing.len(),
            extra.len()
        )
    }
}

/// Up to `n` of `lids` spread evenly over them (all with `None`).
pub(super) fn sample(lids: &[u16], n: Option<usize>) -> Vec<u16> {
    match n {
        Some(n) if n < lids.len() => (0..n).map(|i| lids[i * lids.len() / n]).collect(),
        _ => lids.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_spread_over_every_lid() {
        let lids: Vec<u16> = (1..=100).collect();
        assert_eq!(sample(&lids, Some(4)), [1, 26, 51, 76]);
        assert_eq!(sample(&lids, None).len(), 100);
        assert_eq!(sample(&lids, Some(500)).len(), 100);
        assert_eq!(sample(&lids, Some(0)), Vec::<u16>::new());
    }

    #[test]
    fn differences_are_named_field_by_field() {
        let mut a = PathRecord::new_zeroed();
        a.set_dlid(7);
        a.set_sl(1);
        let mut b = a;
        b.set_sl(0);
        b.set_pkey(0xffff);
        assert_eq!(
            field_differences(&a, &b),
            [
                "pkey 0x0 (local-sa) ≠ 0xFFFF (master)",
                "sl 0x1 (local-sa) ≠ 0x0 (master)"
            ]
        );
        assert!(field_differences(&a, &a).is_empty());
    }

    #[test]
    fn a_cut_master_table_is_only_looked_for_in_local_sas() {
        let mut r = PathRecord::new_zeroed();
        r.set_dlid(3);
        let one = BTreeSet::from([bytes_of(&r)]);
        r.set_dlid(4);
        let two: BTreeSet<_> = one.iter().copied().chain([bytes_of(&r)]).collect();
        let mut details = Vec::new();
        let note = compare_tables(&two, &one, true, &mut details);
        assert!(details.is_empty(), "{details:?}");
        assert!(note.contains("came cut"), "{note}");
        let note = compare_tables(&two, &one, false, &mut details);
        assert_eq!(note, "table: 0 records missing, 1 extra");
        assert_eq!(details.len(), 1);
        assert!(details[0].contains("DLID 4"), "{details:?}");
    }
}
