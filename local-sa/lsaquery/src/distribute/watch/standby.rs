//! Standing by until this watch is the active one: the claim of
//! `local_sa_distributor::watch::claim` carried out. The nodes running
//! local-sa are found once; then the lowest-LID node's lease is claimed
//! with a renewal, and claimed again every half renewal interval while
//! another watch holds it, the master's activity polled with each claim
//! (to know its light sweeps on taking over). Standard output says who is
//! active, once per owner.

use std::time::{Duration, Instant};

use serde::Serialize;

use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::master_activity::MasterActivity;
use local_sa_distributor::computed::Prepared;
use local_sa_distributor::fill::ports::Endpoints;
use local_sa_distributor::watch::claim::{Claim, Claimed};
use local_sa_distributor::watch::{LeaseAnswer, WatchRole, renewal};
use tracing::warn;
use umad::Address;

use async_signal::Signals;
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;

use super::activity;
use super::metrics_file::MetricsFile;
use crate::compute::ask::each_to;
use crate::distribute::{DistributeOptions, candidates, endpoints};
use crate::json::{self, JSON_SCHEMA};
use crate::session::Session;
use crate::stop::Stop;

/// How standing by ended.
pub(super) enum Standing {
    /// This watch is the active one; `waited`: another was active for a
    /// while (the fabric is read again before the fill); `referee`: the
    /// node whose lease said so (none if no node answered).
    Active { waited: bool, referee: Option<u16> },
    /// A signal came while standing by.
    Stopped,
}

/// What standing by needs of the watch's options.
pub(super) struct Waiting {
    /// What a claim says of the lease.
    pub(super) terms: LeaseTerms,
    /// The watch's renewal interval: claims come twice as often.
    pub(super) renew: Duration,
    /// Between polls of the master's activity (zero: none).
    pub(super) activity_poll: Duration,
}

/// Claims the referee node's lease until this watch gets it, counting
/// the master's activity into `learnt` while standing by.
pub(super) async fn until_active(
    session: &mut Session,
    distribute: &DistributeOptions,
    options: Waiting,
    prepared: &Prepared,
    learnt: &mut MasterActivity,
    (signals, metrics): (&mut Signals, &mut MetricsFile),
) -> Result<Standing, Stop> {
    let fabric = Endpoints::from_endports(prepared.fabric.endports());
    let ports = candidates(&fabric.endpoints, session.dest.lid, distribute);
    let nodes = endpoints::running_an_sa(
        session,
        &ports,
        distribute.master_window,
        distribute.probe_timeout,
    )
    .await?;
    let nodes: Vec<_> = nodes.iter().map(|p| (p.gid, p.lid)).collect();
    let mut waited = false;
    let mut said = None;
    let pause = (options.renew / 2).max(Duration::from_secs(1));
    loop {
        let mut claim = Claim::new(nodes.clone());
        let claimed = loop {
            let Some((_, lid)) = claim.node() else {
                break Claimed::Active(None);
            };
            let answer = ask_for_lease(session, lid, options.terms).await?;
            if let Some(c) = claim.handle(answer) {
                break c;
            }
        };
        match claimed {
            Claimed::Active(referee) => {
                if referee.is_none() {
                    warn!(
                        nodes = nodes.len(),
                        "no node took a lease to referee between watches: this watch goes ahead \
                         (a second watch could not know of it)"
                    );
                }
                Role::Active { referee }.say(session.json, metrics)?;
                return Ok(Standing::Active { waited, referee });
            }
            Claimed::StandBy { owner, referee } => {
                if said != Some(owner) {
                    Role::StandingBy {
                        active: owner,
                        referee,
                    }
                    .say(session.json, metrics)?;
                    said = Some(owner);
                }
                waited = true;
                if !options.activity_poll.is_zero() {
                    // What the master's light sweeps cost, learnt before
                    // taking over: a heavy sweep right after is seen.
                    if let Some((sm_lid, count)) = activity::act_count(session).await? {
                        learnt.counted(sm_lid, count, Instant::now());
                    }
                }
                if sleep_unless_signalled(signals, pause).await {
                    return Ok(Standing::Stopped);
                }
            }
        }
    }
}

/// Sleeps `pause`: true if a signal came first.
pub(super) async fn sleep_unless_signalled(signals: &mut Signals, pause: Duration) -> bool {
    let signal = async {
        signals.next().await;
        true
    };
    let timer = async {
        smol::Timer::after(pause).await;
        false
    };
    signal.or(timer).await
}

/// What this watch is now, said on standard output (a line of text, or
/// with --json an object: docs/json.md).
pub(super) enum Role {
    /// It fills and keeps the nodes; `referee`: the node whose lease said
    /// so (none if no node answered).
    Active { referee: Option<u16> },
    /// The watch at `active` is active, as the node at `referee` said.
    StandingBy { active: u16, referee: u16 },
    /// The watch at `active` took over while this one was frozen or cut
    /// off: it pushes nothing more.
    Fenced { active: u16 },
}

/// [`Role`] as JSON.
#[derive(Serialize)]
struct RoleLine {
    schema: u32,
    role: &'static str,
    active: Option<u16>,
    referee: Option<u16>,
}

impl Role {
    /// Prints it, and writes it to the metrics file.
    pub(super) fn say(&self, as_json: bool, metrics: &mut MetricsFile) -> Result<(), Stop> {
        let (role, active, referee) = match *self {
            Self::Active { referee } => (WatchRole::Active, None, referee),
            Self::StandingBy { active, referee } => {
                (WatchRole::Standby, Some(active), Some(referee))
            }
            Self::Fenced { active } => (WatchRole::Fenced, Some(active), None),
        };
        metrics.role(role);
        let role = role.name();
        let line = if as_json {
            json::line(&RoleLine {
                schema: JSON_SCHEMA,
                role,
                active,
                referee,
            })
        } else {
            self.text()
        };
        outln!("{line}")
    }

    fn text(&self) -> String {
        match *self {
            Self::Active {
                referee: Some(referee),
            } => format!(
                "active: this watch fills and keeps every node (the node at LID {referee}, the referee, \
                 took its lease)"
            ),
            Self::Active { referee: None } => {
                "active: this watch fills and keeps every node (no node referees: none took a lease)"
                    .to_owned()
            }
            Self::StandingBy { active, referee } => format!(
                "standing by: the watch at LID {active} is active (it holds the lease of the node at LID \
                 {referee}); this one takes over once the nodes find it silent for two renewals"
            ),
            Self::Fenced { active } => format!(
                "fenced off: the watch at LID {active} took over while this one was frozen or cut off; \
                 this one pushes nothing more and stands by"
            ),
        }
    }
}

/// Renews (or claims) the lease of the node at `lid` alone: how it
/// answered.
async fn ask_for_lease(
    session: &mut Session,
    lid: u16,
    terms: LeaseTerms,
) -> Result<LeaseAnswer, Stop> {
    let request = (
        Address::gsi(lid, session.port.sm_sl),
        renewal(session.sm_key, terms, false),
    );
    let ends = each_to(session, 1, std::slice::from_ref(&request)).await?;
    Ok(LeaseAnswer::of(ends.first().and_then(|e| e.as_ref().ok())))
}
