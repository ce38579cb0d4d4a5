//! `--warm HOSTS`: fills this node's local-sa for a job's peers before the
//! job starts, so that its ranks' path queries — every P_Key, each
//! ServiceID the job uses — are answered from the cache, not by the
//! master, however many ranks ask at once.
//!
//! 1. Each host becomes a port GID: a GID as given; a LID through a
//!    PathRecord query to local-sa; a name or IP address through its
//!    ibacm socket (its naming layer), as `--resolve` does.
//! 2. For every peer × P_Key (the port's, or `--pkey`) × ServiceID (none,
//!    and each `--service-id`), one PathRecord Get to local-sa through the
//!    local API, `--window` at a time. Those local-sa can answer from its
//!    tables cost nothing; the others fill its QoS cache, one master query
//!    per port pair and QoS key however many ask for it.
//! 3. A summary: how the queries were answered, and where local-sa found
//!    the answers (its counters before and after).
//!
//! No umad device is needed: anyone the local API socket lets in may warm.

mod plan;
mod summary;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use local_sa_core::doors::api::{self, kind};
use local_sa_core::names::hosts::HostAddress;
use local_sa_core::request::{Lookup, PathQuery, Request, StatusReport};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{Gid, MadStatus, Method, PathRecord, Records};

use self::plan::Plan;
use self::summary::{Answers, Sources, Unresolved, WarmSummary};
use crate::cli::Cli;
use crate::local_api::{Connection, default_socket};
use crate::progress::ProgressBar;
use crate::resolve::{AcmConnection, DEFAULT_SOCKET, meaning};
use crate::stop::Stop;

/// Runs `--warm` and prints its summary; exit status 1 if a host could
/// not be resolved or a query was not answered.
pub(crate) fn run(cli: &Cli, hosts_arg: &str) -> Result<(), Stop> {
    let usage = |e: String| Stop::new(2, e);
    let hosts = plan::hosts(hosts_arg).map_err(usage)?;
    let sysfs = umad::port::Sysfs::default();
    let port = sysfs.select(cli.ca.as_deref(), cli.port);
    let socket = match (&cli.api_socket, &port) {
        (Some(p), _) => p.clone(),
        (None, Ok(port)) => default_socket(&port.ca, port.port),
        (None, Err(e)) => return Err(Stop::new(3, e.to_string())),
    };
    let pkeys = match (cli.pkey, &port) {
        (Some(p), _) => vec![p],
        (None, Ok(port)) => sysfs.endpoint_facts(port).pkeys,
        (None, Err(e)) => {
            return Err(Stop::new(
                3,
                format!("{e}; without the port's P_Key table, name the P_Key with --pkey"),
            ));
        }
    };
    let acm_socket = cli
        .acm_socket
        .clone()
        .unwrap_or_else(|| DEFAULT_SOCKET.into());
    let timeout = Duration::from_millis(cli.timeout_ms.max(1));
    smol::block_on(async {
        let started = Instant::now();
        let mut conn = Connection::open(&socket, false)?;
        let hello = conn.call(&Request::Hello).await?;
        let me = api::decode_hello(&hello.body)
            .ok_or_else(|| Stop::new(4, "local-sa's HELLO answer is malformed"))?;
        let mut unresolved = Vec::new();
        let mut acm = None;
        let mut peers = Vec::new();
        for host in &hosts {
            match peer_gid(&mut conn, &mut acm, &acm_socket, timeout, me.gid, host).await? {
                Ok(gid) => peers.push(gid),
                Err(why) => unresolved.push(Unresolved {
                    host: host.clone(),
                    why,
                }),
            }
        }
        let plan = Plan::new(me.gid, peers, &pkeys, &cli.service_ids).map_err(usage)?;
        let before = status(&mut conn).await?;
        let answers = ask_all(&mut conn, &plan, cli.window.max(1)).await?;
        let after = status(&mut conn).await?;
        let summary = WarmSummary {
            hosts: hosts.len(),
            peers: plan.peers.len(),
            pkeys: plan.pkeys.clone(),
            service_ids: plan.service_ids.len(),
            queries: plan.len(),
            answers,
            sources: Sources::between(&before, &after),
            unresolved,
            took: started.elapsed(),
        };
        if cli.json {
            outln!("{}", summary.json())?;
        } else {
            out!("{}", summary.text())?;
        }
        if summary.complete() {
            Ok(())
        } else {
            Err(Stop::new(1, String::new()))
        }
    })
}

/// `host`'s port GID, or why it has none. Names and IP addresses go
/// through the ibacm socket, opened on the first.
async fn peer_gid(
    conn: &mut Connection,
    acm: &mut Option<Result<AcmConnection, String>>,
    acm_socket: &std::path::Path,
    timeout: Duration,
    me: Gid,
    host: &str,
) -> Result<Result<Gid, String>, Stop> {
    let address = match crate::resolve::parse(host, None) {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    match address {
        HostAddress::Gid(gid) => Ok(Ok(gid)),
        HostAddress::Lid(lid) => {
            let mut t = PathRecord::new_zeroed();
            t.set_sgid(me);
            t.set_dlid(lid);
            let query = PathQuery {
                method: Method::GET,
                mask: pr::SGID | pr::DLID,
                template: t,
            };
            let id = conn.send(&path_query(query)).await?;
            let f = answer_to(conn, id).await?;
            Ok(match first_record(&f) {
                Some(r) => Ok(r.dgid()),
                None => Err(format!("no path to LID {lid} ({})", outcome_name(&f))),
            })
        }
        HostAddress::Name(_) | HostAddress::Ip(_) => {
            let acm = acm.get_or_insert_with(|| {
                AcmConnection::open(acm_socket, timeout).map_err(|f| f.message)
            });
            let acm = match acm {
                Ok(a) => a,
                Err(why) => return Ok(Err(why.clone())),
            };
            Ok(match acm.resolve(&address, None, false)? {
                Ok(entries) => entries
                    .iter()
                    .find_map(|e| e.path_record())
                    .map(|r| r.dgid())
                    .ok_or_else(|| "the ibacm answer holds no path".to_owned()),
                Err(status) => Err(format!("{status} ({})", meaning(status))),
            })
        }
    }
}

/// Asks every query of `plan`, `window` at a time.
async fn ask_all(conn: &mut Connection, plan: &Plan, window: usize) -> Result<Answers, Stop> {
    let mut answers = Answers::default();
    let mut queries = plan.queries();
    let mut out: VecDeque<u32> = VecDeque::new();
    let mut bar = ProgressBar::on_terminal(plan.len() > 1_000);
    let mut done = 0;
    loop {
        while out.len() < window {
            let Some(q) = queries.next() else { break };
            out.push_back(conn.send(&path_query(q)).await?);
        }
        if out.is_empty() {
            bar.finish();
            return Ok(answers);
        }
        let f = conn.next_answer().await?;
        let Some(at) = out.iter().position(|id| *id == f.request) else {
            continue;
        };
        out.remove(at);
        done += 1;
        bar.show(done, plan.len(), "queries");
        if f.kind != kind::ERROR && api::status(&f) == MadStatus::OK {
            answers.answered += 1;
        } else if f.kind != kind::ERROR && api::status(&f) == MadStatus::ERR_NO_RECORDS {
            answers.no_path += 1;
        } else {
            *answers.failed.entry(outcome_name(&f)).or_default() += 1;
        }
    }
}

fn path_query(query: PathQuery) -> Request {
    Request::PathQuery {
        query,
        lookup: Lookup::Anywhere,
    }
}

/// The answer to request `id`.
async fn answer_to(conn: &mut Connection, id: u32) -> Result<api::Frame, Stop> {
    loop {
        let f = conn.next_answer().await?;
        if f.request == id {
            return Ok(f);
        }
    }
}

fn first_record(f: &api::Frame) -> Option<PathRecord> {
    if f.kind == kind::ERROR || api::status(f) != MadStatus::OK {
        return None;
    }
    Records::<PathRecord>::with_standard_stride(&f.body)
        .next()
        .copied()
}

/// How an answer ended, in a word: the MAD status's name, or the local
/// API's refusal.
fn outcome_name(f: &api::Frame) -> String {
    if f.kind == kind::ERROR {
        api::describe_error(f.status).to_owned()
    } else {
        api::status(f).names().to_string()
    }
}

async fn status(conn: &mut Connection) -> Result<StatusReport, Stop> {
    let f = conn.call(&Request::Status).await?;
    Ok(StatusReport::from_text(&String::from_utf8_lossy(&f.body)))
}
