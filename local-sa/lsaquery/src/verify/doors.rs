//! The doors part: the destinations of the paths part asked again through
//! the ibacm socket, by GID, by LID, by host name (a channel adapter's
//! NodeDescription's first word, as local-sa names hosts) and by the
//! names and IP addresses other local-sa nodes published in the directory
//! at the master, each primary path compared with the master's answer to
//! the Get ibacm itself would send (SGID, the destination, the P_Key,
//! reversible, one path); and what can be said of the kernel's door
//! without driving the kernel: its counters before and after.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use local_sa_core::names::directory::{self, Publication};
use local_sa_core::names::hosts::{self, HostAddress};
use local_sa_core::path_flags;
use local_sa_core::request::StatusReport;
use mad_codec::attr::node_record::mask as nr;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::codes::NodeType;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{Gid, Method, NodeRecord, PathRecord, ServiceRecord};
use umad::Address;

use super::asking::{Pace, ask_all};
use super::local::status_of;
use super::paths::{Destination, Found, VARIES, field_differences, only_sl_differs, path_query};
use super::report::{Part, Verdict};
use crate::client::Client;
use crate::query::{Kind, Query};
use crate::resolve::{AcmConnection, meaning};
use crate::stop::Stop;

/// Where this node's local-sa is, as the doors part needs it.
pub(super) struct Local<'a> {
    /// Its ibacm socket.
    pub(super) acm_socket: &'a Path,
    /// Its local API, for its status after the check.
    pub(super) api_socket: &'a Path,
    /// How long an answer through the ibacm socket may take.
    pub(super) timeout: Duration,
    /// Its status before the check.
    pub(super) status: Option<&'a StatusReport>,
}

/// One path the ibacm socket gave.
struct AcmPath {
    label: String,
    asked: HostAddress,
    /// The destination's GID, as the paths part found it.
    destination: Gid,
    path: Result<PathRecord, String>,
}

/// The ways one destination is asked for beyond its GID and LID.
#[derive(Default)]
struct OtherNames {
    /// Its NodeDescription's first word, then its directory name if that
    /// is another.
    names: Vec<String>,
    /// The IP addresses it published in the directory.
    ips: Vec<std::net::IpAddr>,
}

/// Runs the doors part for the destinations the paths part `found`; where
/// it found the master's answers vary from ask to ask, a path that differs
/// from the master's in the SL alone is that, not a difference.
pub(super) async fn check(
    client: &mut Client,
    master: Address,
    me: Gid,
    found: &Found,
    local: &Local<'_>,
    pace: Pace,
) -> Result<Part, Stop> {
    let destinations = &found.destinations[..];
    if destinations.is_empty() {
        let kernel = kernel_door(local.status, None);
        return Ok(Part::not_checked(
            "doors",
            format!("no destination to ask about (the paths part found none); {kernel}"),
        ));
    }
    let mut acm = match AcmConnection::open(local.acm_socket, local.timeout) {
        Ok(c) => c,
        Err(f) => {
            let kernel = kernel_door(local.status, None);
            return Ok(
                Part::not_checked("doors", format!("{}; {kernel}", f.message))
                    .next("lsaquery --verify --acm-socket PATH   (local-sa's --acm-socket)"),
            );
        }
    };
    let others = other_names(client, master, destinations, pace).await?;
    let mut asked = Vec::new();
    for (d, other) in destinations.iter().zip(&others) {
        let by_name = other
            .names
            .iter()
            .map(|n| (format!("name {n}"), HostAddress::Name(n.clone())));
        let by_ip = other
            .ips
            .iter()
            .map(|ip| (format!("IP {ip}"), HostAddress::Ip(*ip)));
        for (label, address) in [
            (format!("GID {}", d.gid), HostAddress::Gid(d.gid)),
            (format!("LID {}", d.lid), HostAddress::Lid(d.lid)),
        ]
        .into_iter()
        .chain(by_name)
        .chain(by_ip)
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
                HostAddress::Lid(lid) => {
                    t.set_dlid(lid);
                    mask |= pr::DLID;
                }
                HostAddress::Gid(gid) => {
                    t.set_dgid(gid);
                    mask |= pr::DGID;
                }
                // A name or IP stands for the GID the socket found for it
                // (two hosts may share a NodeDescription's first word):
                // the path to that GID is what is compared; where the
                // socket found none, the master's path to the destination
                // shows what was missed.
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
    let (mut equal, mut unchecked, mut varying) = (0usize, 0usize, 0usize);
    let mut details = Vec::new();
    for (a, m) in asked.iter().zip(&from_master) {
        let master_path = m
            .answer_ok()
            .and_then(|m| m.records::<PathRecord>().next().copied());
        match (&a.path, master_path, m.answer()) {
            (_, _, None) => unchecked += 1,
            (Ok(l), Some(m), _) if *l == m => equal += 1,
            (Ok(l), Some(m), _) if found.master_varies && only_sl_differs(l, &m) => varying += 1,
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
    let after = status_of(local.api_socket).await.ok();
    let kernel = kernel_door(local.status, after.as_ref());
    let n = asked.len();
    let named = others.iter().map(|o| o.names.len()).sum::<usize>();
    let ips = others.iter().map(|o| o.ips.len()).sum::<usize>();
    let socket = local.acm_socket.display();
    let mut part = if details.is_empty() && varying > 0 {
        Part::not_checked(
            "doors",
            format!(
                "{varying} of {n} paths through the ibacm socket {socket} differ from the master's in the SL \
                 alone, where {VARIES}; {equal} equal; {kernel}"
            ),
        )
    } else if !details.is_empty() {
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
                "{n} paths through the ibacm socket {socket} (by GID, by LID, by {named} host names and by {ips} IP addresses) equal to the master's; {kernel}"
            ),
        )
    };
    part.details = details;
    Ok(part)
}

/// Each destination's other names: for channel adapters, the host name
/// local-sa's naming layer takes from the master (its NodeDescription's
/// first word), and the name and addresses a local-sa on it published in
/// the directory at the master. Empty where there are none or the master
/// did not say.
async fn other_names(
    client: &mut Client,
    master: Address,
    destinations: &[Destination],
    pace: Pace,
) -> Result<Vec<OtherNames>, Stop> {
    let adapters = adapters(client, master, destinations, pace).await?;
    // Only a channel adapter's port runs a local-sa that publishes.
    let hosts: Vec<Gid> = destinations
        .iter()
        .zip(&adapters)
        .filter(|(_, a)| a.is_some())
        .map(|(d, _)| d.gid)
        .collect();
    let published = directory(client, master, &hosts, pace).await?;
    Ok(destinations
        .iter()
        .zip(adapters)
        .map(|(d, adapter)| {
            let mut other = OtherNames::default();
            other.names.extend(adapter.flatten());
            if let Some(p) = published.get(&d.gid) {
                if !other.names.iter().any(|n| n == p.host_name()) {
                    other.names.push(p.host_name().to_owned());
                }
                other.ips.extend_from_slice(p.addresses());
            }
            other
        })
        .collect())
}

/// What a local-sa on each of `ports` published in the directory at the
/// master, asked one Get per port (as local-sa's naming layer does when a
/// table comes back cut): absent where nothing was published or the
/// master did not answer.
async fn directory(
    client: &mut Client,
    master: Address,
    ports: &[Gid],
    pace: Pace,
) -> Result<HashMap<Gid, Publication>, Stop> {
    let requests: Vec<Bytes> = ports
        .iter()
        .map(|gid| {
            let (mask, r) = directory::record_of(*gid);
            Query::selecting(Kind::ServiceRecord, Method::GET, mask, r.as_bytes()).to_mad(0)
        })
        .collect();
    let answers = ask_all(client, master, &requests, pace, "the directory").await?;
    // A Get's one record is taken whole, as local-sa's naming layer takes
    // it: OpenSM frames even a one-MAD answer as RMPP, which the simulator
    // transport marks as cut, but the answer is that one MAD.
    Ok(answers
        .iter()
        .filter_map(|a| Publication::from_record(&a.answer_ok()?.record::<ServiceRecord>()))
        .collect())
}

/// For each destination that is a channel adapter's port, its host name
/// as local-sa's naming layer takes it from the master (its
/// NodeDescription's first word, `None` if it has none); `None` for a
/// switch's port or where the master did not say.
async fn adapters(
    client: &mut Client,
    master: Address,
    destinations: &[Destination],
    pace: Pace,
) -> Result<Vec<Option<Option<String>>>, Stop> {
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
            Some(hosts::host_name(&r.description()).map(str::to_owned))
        })
        .collect())
}

/// What is known of the kernel's door: it cannot be driven from here (a
/// RESOLVE comes only from the kernel), so its state and its counters,
/// before the check and after it when there is an after.
fn kernel_door(before: Option<&StatusReport>, after: Option<&StatusReport>) -> String {
    let Some(now) = after.or(before) else {
        return "kernel door not checked (local-sa's status was not available)".to_owned();
    };
    let count = |s: &StatusReport, name: &str| s.get(name).and_then(|v| v.parse::<u64>().ok());
    match now.get("kernel_door") {
        Some("open") => {
            let during = match (before, after) {
                (Some(b), Some(a)) => {
                    match (count(b, "netlink_resolves"), count(a, "netlink_resolves")) {
                        (Some(x), Some(y)) => format!(
                            "{} RESOLVEs during the check ({x} before, {y} after); ",
                            y.saturating_sub(x)
                        ),
                        _ => String::new(),
                    }
                }
                _ => String::new(),
            };
            let v = |name: &str| count(now, name).map_or("?".to_owned(), |n| n.to_string());
            format!(
                "kernel door open, not driven from here (only the kernel sends it RESOLVEs: rdma_cm applications' routes): {during}since start {} RESOLVEs, {} answered, {} from the cache, {} failed",
                v("netlink_resolves"),
                v("netlink_answered"),
                v("netlink_from_cache"),
                v("netlink_failed"),
            )
        }
        Some(_) => {
            "kernel door closed, not checked (this kernel gives local-sa no NETLINK_RDMA socket)"
                .to_owned()
        }
        None => "kernel door not checked (local-sa does not report it)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(resolves: u64) -> StatusReport {
        StatusReport::from_text(&format!(
            "kernel_door open\nnetlink_resolves {resolves}\nnetlink_answered {resolves}\n\
             netlink_from_cache 2\nnetlink_failed 0\n"
        ))
    }

    #[test]
    fn the_kernel_door_is_reported_by_its_counters_before_and_after() {
        let said = kernel_door(Some(&status(5)), Some(&status(9)));
        assert!(
            said.starts_with("kernel door open, not driven from here"),
            "{said}"
        );
        assert!(
            said.contains(
                "4 RESOLVEs during the check (5 before, 9 after); since start 9 RESOLVEs"
            ),
            "{said}"
        );
        // Without an after, only what was so before.
        let said = kernel_door(Some(&status(5)), None);
        assert!(!said.contains("during the check"), "{said}");
        assert!(said.contains("since start 5 RESOLVEs"), "{said}");
        let closed = StatusReport::from_text("kernel_door closed\n");
        assert!(kernel_door(Some(&closed), None).starts_with("kernel door closed, not checked"));
        assert!(kernel_door(None, None).contains("status was not available"));
    }
}
