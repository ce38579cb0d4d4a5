//! The doors part: the destinations of the paths part asked again through
//! the ibacm socket, by GID, by LID and by host name (a channel adapter's
//! NodeDescription's first word, as local-sa names hosts), each primary
//! path compared with
//! the master's answer to the Get ibacm itself would send (SGID, the
//! destination, the P_Key, reversible, one path); and what can be said of
//! the kernel's door without driving the kernel.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use local_sa_core::naming::{self, Address as AcmAddress};
use local_sa_core::path_flags;
use local_sa_core::request::StatusReport;
use mad_codec::attr::node_record::mask as nr;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::codes::NodeType;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{Gid, Method, NodeRecord, PathRecord};
use umad::Address;

use super::asking::{Pace, ask_all};
use super::paths::{Destination, field_differences, path_query};
use super::report::{Part, Verdict};
use crate::client::Client;
use crate::failure::Failure;
use crate::query::{Kind, Query};
use crate::resolve::{AcmConnection, meaning};

/// One path the ibacm socket gave.
struct AcmPath {
    label: String,
    asked: AcmAddress,
    /// The destination's GID, as the paths part found it.
    destination: Gid,
    path: Result<PathRecord, String>,
}

/// Runs the doors part for `destinations`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn check(
    client: &mut Client,
    master: Address,
    me: Gid,
    destinations: &[Destination],
    acm_socket: &Path,
    timeout: Duration,
    status: Option<&StatusReport>,
    pace: Pace,
) -> Result<Part, Failure> {
    let kernel = kernel_door(status);
    if destinations.is_empty() {
        return Ok(Part::not_checked(
            "doors",
            format!("no destination to ask about (the paths part found none); {kernel}"),
        ));
    }
    let mut acm = match AcmConnection::open(acm_socket, timeout) {
        Ok(c) => c,
        Err(f) => {
            return Ok(
                Part::not_checked("doors", format!("{}; {kernel}", f.message))
                    .next("lsaquery --verify --acm-socket PATH   (local-sa's --acm-socket)"),
            );
        }
    };
    let names = host_names(client, master, destinations, pace).await?;
    let mut asked = Vec::new();
    for (d, name) in destinations.iter().zip(&names) {
        let by_name = name
            .as_ref()
            .map(|n| (format!("name {n}"), AcmAddress::Name(n.clone())));
        for (label, address) in [
            (format!("GID {}", d.gid), AcmAddress::Gid(d.gid)),
            (format!("LID {}", d.lid), AcmAddress::Lid(d.lid)),
        ]
        .into_iter()
        .chain(by_name)
        {
            let path = match acm.resolve(&address, None, false)? {
                Ok(entries) => entries
                    .iter()
                    .filter(|e| e.flags & path_flags::PRIMARY != 0)
                    .find_map(|e| e.path_record())
                    .ok_or_else(|| "the answer holds no primary path".to_owned()),
                Err(status) => Err(format!("{status} ({})", meaning(status))),
            };
            asked.push(AcmPath {
                label,
                asked: address,
                destination: d.gid,
                path,
            });
        }
    }
    // The master is asked what ibacm would ask it, in the P_Key the
    // socket's answer is in.
    let requests: Vec<Bytes> = asked
        .iter()
        .map(|a| {
            let pkey = a.path.as_ref().map_or(0xffff, PathRecord::pkey);
            let mut t = PathRecord::new_zeroed();
            t.set_sgid(me);
            t.set_pkey(pkey);
            t.set_reversible(true);
            t.set_numb_path(1);
            let mut mask = pr::SGID | pr::PKEY | pr::REVERSIBLE | pr::NUMB_PATH;
            match a.asked {
                AcmAddress::Lid(lid) => {
                    t.set_dlid(lid);
                    mask |= pr::DLID;
                }
                AcmAddress::Gid(gid) => {
                    t.set_dgid(gid);
                    mask |= pr::DGID;
                }
                // A name stands for the GID the socket found for it (two
                // hosts may share a NodeDescription's first word): the
                // path to that GID is what is compared; where the socket
                // found none, the master's path to the destination shows
                // what was missed.
                _ => {
                    let dgid = a.path.as_ref().map_or(a.destination, PathRecord::dgid);
                    t.set_dgid(dgid);
                    mask |= pr::DGID;
                }
            }
            path_query(Method::GET, mask, &t)
        })
        .collect();
    let from_master = ask_all(client, master, &requests, pace, "paths asked of the master").await?;
    let (mut equal, mut unchecked) = (0usize, 0usize);
    let mut details = Vec::new();
    for (a, m) in asked.iter().zip(&from_master) {
        let master_path = m
            .answer_ok()
            .and_then(|m| m.records::<PathRecord>().next().copied());
        match (&a.path, master_path, m.answer()) {
            (_, _, None) => unchecked += 1,
            (Ok(l), Some(m), _) if *l == m => equal += 1,
            (Ok(l), Some(m), _) => details.push(format!(
                "ibacm socket, {}: {}",
                a.label,
                field_differences(l, &m).join("; ")
            )),
            (Err(why), Some(_), _) => details.push(format!(
                "ibacm socket, {}: no path ({why}); the master has one",
                a.label
            )),
            (Ok(_), None, Some(m)) => details.push(format!(
                "ibacm socket, {}: a path, where the master answers {}",
                a.label,
                m.status().names()
            )),
            (Err(_), None, Some(_)) => equal += 1,
        }
    }
    let n = asked.len();
    let named = names.iter().flatten().count();
    let socket = acm_socket.display();
    let mut part = if !details.is_empty() {
        Part::new(
            "doors",
            Verdict::Different,
            format!(
                "{} of {n} paths through the ibacm socket {socket} differ from the master's; {kernel}",
                details.len()
            ),
        )
        .next(format!(
            "lsaquery --resolve DEST --acm-socket {socket}   (one path through the socket)"
        ))
    } else if unchecked > 0 {
        Part::not_checked(
            "doors",
            format!(
                "{equal} of {n} paths through the ibacm socket {socket} equal, {unchecked} not compared: the master SA at LID {} did not answer; {kernel}",
                master.lid
            ),
        )
    } else {
        Part::new(
            "doors",
            Verdict::Ok,
            format!(
                "{n} paths through the ibacm socket {socket} (by GID, by LID and by {named} host names) equal to the master's; {kernel}"
            ),
        )
    };
    part.details = details;
    Ok(part)
}

/// Each destination's host name as local-sa's naming layer takes it from
/// the master (its NodeDescription's first word), for channel adapters;
/// `None` where there is none or the master did not say.
async fn host_names(
    client: &mut Client,
    master: Address,
    destinations: &[Destination],
    pace: Pace,
) -> Result<Vec<Option<String>>, Failure> {
    let requests: Vec<Bytes> = destinations
        .iter()
        .map(|d| {
            let mut r = NodeRecord::new_zeroed();
            r.set_lid(d.lid);
            Query::selecting(Kind::NodeRecord, Method::GET, nr::LID, r.as_bytes()).to_mad(0)
        })
        .collect();
    let answers = ask_all(client, master, &requests, pace, "node names").await?;
    Ok(answers
        .iter()
        .map(|a| {
            let r = a.answer_ok()?.records::<NodeRecord>().next()?;
            if r.node_type() != NodeType::CA {
                return None;
            }
            naming::host_name(&r.description()).map(str::to_owned)
        })
        .collect())
}

/// What is known of the kernel's door: it cannot be driven from here
/// (a RESOLVE comes only from the kernel), so its state and counters.
fn kernel_door(status: Option<&StatusReport>) -> String {
    let Some(s) = status else {
        return "kernel door not checked (local-sa's status was not available)".to_owned();
    };
    match s.get("kernel_door") {
        Some("open") => format!(
            "kernel door open, not checked from here ({} RESOLVEs so far, {} answered, {} from the cache, {} failed: \
             rdma_cm applications' routes go through it)",
            s.get("netlink_resolves").unwrap_or("?"),
            s.get("netlink_answered").unwrap_or("?"),
            s.get("netlink_from_cache").unwrap_or("?"),
            s.get("netlink_failed").unwrap_or("?"),
        ),
        Some(_) => {
            "kernel door closed, not checked (this kernel gives local-sa no NETLINK_RDMA socket)"
                .to_owned()
        }
        None => "kernel door not checked (local-sa does not report it)".to_owned(),
    }
}
