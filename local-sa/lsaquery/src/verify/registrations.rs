//! The registrations part: the subscriptions and multicast memberships
//! local-sa holds for this port (its local API's lists) against what the
//! master holds for the port (InformInfoRecords by SubscriberGID,
//! MCMemberRecords by PortGID).
//!
//! The master's records for the port are everyone's on the node: the
//! kernel joins the IPoIB groups itself, and other agents may subscribe.
//! So what local-sa holds must be at the master (else DIFFERENT), and
//! what the master holds beyond it is listed, not counted against it.

use std::collections::BTreeMap;

use bytes::Bytes;
use mad_codec::attr::inform_info_record::mask as iir;
use mad_codec::attr::mc_member_record::mask as mcm;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    ComponentMask, Gid, InformInfoRecord, InformInfoRepr, JoinState, McMemberRecord, Method,
    Records,
};
use umad::Address;

use super::asking::{Asked, Pace, ask_all};
use super::report::{Part, Verdict};
use crate::client::Client;
use crate::local_api::Connection;
use crate::query::{Kind, Query};
use crate::stop::Stop;
use local_sa_core::request::Request;

/// What local-sa holds for the port, from its local API.
pub(super) struct PortRegistrations {
    pub(super) subscriptions: Vec<InformInfoRecord>,
    pub(super) groups: Vec<McMemberRecord>,
}

impl PortRegistrations {
    pub(super) async fn fetch(conn: &mut Connection) -> Result<Self, Stop> {
        let subscriptions = conn.call(&Request::ListSubscriptions).await?;
        let groups = conn.call(&Request::ListGroups).await?;
        Ok(Self {
            subscriptions: Records::<InformInfoRecord>::with_standard_stride(&subscriptions.body)
                .copied()
                .collect(),
            groups: Records::<McMemberRecord>::with_standard_stride(&groups.body)
                .copied()
                .collect(),
        })
    }
}

/// A subscription as the master keeps it: what it is to, not the QP or
/// the response time (OpenSM hides the QPN from untrusted queries).
fn subscription_key(r: &InformInfoRecord) -> InformInfoRepr {
    InformInfoRepr {
        qpn: 0,
        resp_time_value: 0,
        subscribe: 1,
        ..InformInfoRepr::parse(&r.inform_info())
    }
}

fn describe_subscription(k: &InformInfoRepr) -> String {
    if k.is_generic != 0 {
        format!(
            "trap {} (LIDs {:#x}-{:#x}, type {:#x}, producer {:#x})",
            k.trap_number, k.lid_range_begin, k.lid_range_end, k.notice_type, k.producer_type
        )
    } else {
        format!(
            "vendor {:#x} device {:#x} (LIDs {:#x}-{:#x})",
            k.producer_type, k.trap_number, k.lid_range_begin, k.lid_range_end
        )
    }
}

fn table_query(kind: Kind, mask: ComponentMask, record: &[u8]) -> Bytes {
    Query::selecting(kind, Method::GET_TABLE, mask, record).to_mad(0)
}

/// Runs the registrations part; `held` is `None` when local-sa's lists
/// could not be had (the reason given).
pub(super) async fn check(
    client: &mut Client,
    master: Address,
    me: Gid,
    held: Result<PortRegistrations, String>,
    pace: Pace,
) -> Result<Part, Stop> {
    let held = match held {
        Ok(h) => h,
        Err(why) => {
            return Ok(Part::not_checked(
                "registrations",
                format!("local-sa's lists were not available: {why}"),
            )
            .next("lsaquery --status"));
        }
    };
    let mut sub = InformInfoRecord::new_zeroed();
    sub.set_subscriber_gid(me);
    let mut member = McMemberRecord::new_zeroed();
    member.set_port_gid(me);
    let requests = [
        table_query(Kind::InformInfoRecord, iir::SUBSCRIBER_GID, sub.as_bytes()),
        table_query(Kind::McMemberRecord, mcm::PORT_GID, member.as_bytes()),
    ];
    let answers = ask_all(client, master, &requests, pace, "registrations").await?;
    let (Some(subs), Some(members)) = (answers[0].answer_ok(), answers[1].answer_ok()) else {
        let why = answers
            .iter()
            .find(|o| o.answer_ok().is_none())
            .map_or_else(|| "no answer".to_owned(), Asked::describe);
        return Ok(Part::not_checked(
            "registrations",
            format!("the master SA at LID {} gave no records: {why}", master.lid),
        ));
    };
    let cut = subs.is_cut() || members.is_cut();
    let at_master_subs: Vec<InformInfoRepr> = subs
        .records::<InformInfoRecord>()
        .map(subscription_key)
        .collect();
    let at_master_groups: BTreeMap<Gid, JoinState> = members
        .records::<McMemberRecord>()
        .map(|r| (r.mgid(), r.join_state()))
        .collect();

    let mut details = Vec::new();
    // Differences, and registrations not found among a cut answer's
    // records (they may be in its lost part).
    let (mut differ, mut unverified) = (0, 0);
    for s in &held.subscriptions {
        let k = subscription_key(s);
        if !at_master_subs.contains(&k) {
            if cut {
                unverified += 1;
                details.push(format!(
                    "subscription to {} not among the master's records that arrived whole",
                    describe_subscription(&k)
                ));
            } else {
                differ += 1;
                details.push(format!(
                    "subscription to {}: held by local-sa, not at the master",
                    describe_subscription(&k)
                ));
            }
        }
    }
    for g in &held.groups {
        let mine = g.join_state();
        match at_master_groups.get(&g.mgid()) {
            Some(theirs) if theirs.0 & mine.0 == mine.0 => {}
            Some(theirs) => {
                differ += 1;
                details.push(format!(
                    "group {}: local-sa holds JoinState {mine}, the master has {theirs}",
                    g.mgid()
                ));
            }
            None if cut => {
                unverified += 1;
                details.push(format!(
                    "group {} not among the master's records that arrived whole",
                    g.mgid()
                ));
            }
            None => {
                differ += 1;
                details.push(format!(
                    "group {}: local-sa holds JoinState {mine}, the master has no membership",
                    g.mgid()
                ));
            }
        }
    }
    let mine: Vec<Gid> = held.groups.iter().map(McMemberRecord::mgid).collect();
    for (mgid, state) in &at_master_groups {
        if !mine.contains(mgid) {
            details.push(format!(
                "group {mgid}: the master also has JoinState {state} for this port, not local-sa's \
                 (the kernel's own joins, IPoIB's, or another agent's)"
            ));
        }
    }
    let counts = format!(
        "local-sa holds {} subscriptions and {} groups; the master has {} subscriptions and {} memberships for this port",
        held.subscriptions.len(),
        held.groups.len(),
        at_master_subs.len(),
        at_master_groups.len()
    );
    let mut part = if differ > 0 {
        Part::new(
            "registrations",
            Verdict::Different,
            format!("{differ} registrations differ; {counts}"),
        )
        .next("lsaquery -I; lsaquery -m   and   lsaquery --master -I; lsaquery --master -m")
    } else if unverified > 0 {
        Part::not_checked(
            "registrations",
            format!(
                "{unverified} registrations not found in the master's records, which came cut \
                 (no RMPP on this transport); {counts}"
            ),
        )
    } else if cut {
        Part::new(
            "registrations",
            Verdict::Ok,
            format!(
                "all found in the master's records that arrived whole (its answer came cut); {counts}"
            ),
        )
    } else {
        Part::new("registrations", Verdict::Ok, counts)
    };
    part.details = details;
    Ok(part)
}
