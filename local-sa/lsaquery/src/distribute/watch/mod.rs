//! `--distribute --compute --watch`: a distributor that stays, so that
//! the nodes need not refresh on their own.
//!
//! 1. The fill, as `--distribute --compute`, every push carrying a lease
//!    (`load_flags::LEASE`, `--lease`): while it runs a node refreshes
//!    nothing itself.
//! 2. Then it waits for a change: a notice heard through this node's
//!    local-sa (trap 128: a switch port's link went up or down; 64/65: a
//!    port came or went), after `--settle` for the master's sweep (each
//!    later notice waits again), or its own `--watch-interval`.
//! 3. An event ([`event`]): the description read again (records
//!    proportional to the fabric; nothing more if it did not change),
//!    every node's tables computed again and compared, by digest, with
//!    what each holds ([`holdings`]); pairs that changed checked against
//!    the master (`--watch-check`; a difference may be a sweep not done:
//!    read again, up to three times, then the tables come from the master
//!    and the report says why); and each node whose tables changed gets
//!    the differences (a Set of the changed, a Delete of the vanished, as
//!    `--delta`), or its tables whole if what it holds is not known. A
//!    node whose tables did not change gets nothing.
//! 4. Every interval each node's lease is renewed ([`renewals`]); a node
//!    that does not answer gets its tables whole once it answers again
//!    (it may have restarted or missed a push).
//!
//! Each event prints a line (with --json an object, [`report`]); the
//! counters go to `--metrics-file`. SIGINT or SIGTERM ends every lease
//! (the nodes keep their own tables again at once) and the watch.

mod changed_pairs;
mod event;
mod holdings;
mod notices;
mod renewals;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mad_codec::{Gid, TrapDetails};
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;
use tracing::{info, warn};

use self::holdings::{Holding, Holdings};
use self::notices::Heard;
use self::report::WatchCounters;
use local_sa_distributor::computed::compute_tables;

use crate::session::Session;
use crate::stop::Stop;
use local_sa_distributor::computed::Prepared;

/// Intervals between probes of the ports that did not run local-sa (one
/// may have started it since).
const PROBE_EVERY: u64 = 10;

/// The first wait before reading the description again when it could
/// not be read or used at the start, doubled after each failure up to
/// [`LONGEST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LONGEST_RETRY: Duration = Duration::from_secs(60);

/// What `--watch` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Between re-reads and lease renewals.
    pub(crate) interval: Duration,
    /// The master's sweep after a notice.
    pub(crate) settle: Duration,
    /// The lease every push and renewal gives, in seconds.
    pub(crate) lease: u16,
    /// Changed pairs checked per event.
    pub(crate) check: usize,
    /// This node's local-sa's local API, for the notices (default: the
    /// port's).
    pub(crate) api_socket: Option<PathBuf>,
    /// Where the counters go.
    pub(crate) metrics_file: Option<PathBuf>,
}

impl Options {
    /// The lease by default: three intervals and the settle time, at
    /// least a minute, at most what the field holds.
    pub(crate) fn default_lease(interval: Duration, settle: Duration) -> u16 {
        let secs = (interval * 3 + settle).as_secs().max(60);
        u16::try_from(secs).unwrap_or(u16::MAX)
    }
}

/// The watch's state between events.
struct Watch<'o> {
    distribute: &'o super::Options,
    options: &'o Options,
    /// The fabric the nodes were last computed from (taken while an
    /// event pushes).
    current: Option<Prepared>,
    /// Each kept node's tables' digest in `current`.
    digests: BTreeMap<Gid, u64>,
    holdings: Holdings,
    /// Ports probed that did not run local-sa.
    others: BTreeSet<Gid>,
    counters: WatchCounters,
    events: u64,
    /// The SA read is the port's master SM, followed when it moves.
    follows_master: bool,
}

/// Fills, then keeps every node current until a signal.
pub(crate) async fn run(
    session: &mut Session,
    distribute: &super::Options,
    options: &Options,
) -> Result<(), Stop> {
    let prepared = prepare_until_ready(session, distribute).await?;
    let filled = super::fill(
        session,
        distribute,
        Some(options.lease),
        super::Computing::Ready(Box::new(prepared)),
    )
    .await?;
    filled.summary.print(session.json)?;
    let Some(current) = filled.computing else {
        return Err(Stop::new(
            5,
            "--watch keeps the nodes current from the fabric's description, which could not be used \
             (see above); --distribute without --watch fills them from the master",
        ));
    };
    let trusted = current
        .trusted(local_sa_core::path_engine::Table::Default)
        .is_ok();
    let lids: BTreeMap<Gid, u16> = filled.nodes.iter().map(|e| (e.gid, e.lid)).collect();
    let digests = digests(&current, lids.keys());
    let mut holdings = Holdings::default();
    for (gid, done) in filled.summary.ends() {
        let holding = match (done, digests.get(&gid)) {
            (true, Some(d)) if trusted => Holding::Computed(*d),
            (true, Some(d)) => Holding::FromMaster(*d),
            _ => Holding::Unknown,
        };
        holdings.insert(gid, lids.get(&gid).copied().unwrap_or(0), holding);
    }
    let others = filled
        .endpoints
        .iter()
        .map(|e| e.gid)
        .filter(|g| !lids.contains_key(g))
        .collect();
    let mut watch = Watch {
        distribute,
        options,
        current: Some(current),
        digests,
        holdings,
        others,
        counters: WatchCounters::default(),
        events: 0,
        follows_master: session.dest.lid == session.port.sm_lid,
    };
    // However the watch ends, on a signal or a failure, the leases end
    // with it: the nodes must not wait them out (unless the transport is
    // gone too).
    let kept = watch.wait_and_keep(session).await;
    let stopped = watch.stop(session).await;
    kept.and(stopped)
}

/// Reads the description and checks the sample until that works: a
/// master that does not answer yet (starting, failing over, or ignoring
/// a wrong SA key) or a description caught mid-sweep is waited for, with
/// a growing pause, and said so each time; the nodes keep their own
/// tables meanwhile (no lease is given yet).
async fn prepare_until_ready(
    session: &mut Session,
    distribute: &super::Options,
) -> Result<Prepared, Stop> {
    let Some(compute) = &distribute.compute else {
        return Err(Stop::new(2, "--watch needs --compute"));
    };
    let mut pause = FIRST_RETRY;
    loop {
        match crate::compute::prepare(session, session.dest, compute).await {
            Ok(prepared) => return Ok(prepared),
            Err(e) => {
                warn!(
                    master = session.dest.lid,
                    "the fabric's description could not be read or used: {}; trying again in {} s \
                     (the nodes keep their own tables until the watch fills them)",
                    e.message,
                    pause.as_secs()
                );
                smol::Timer::after(pause).await;
                pause = (pause * 2).min(LONGEST_RETRY);
            }
        }
    }
}

/// What woke the watch.
enum Wake {
    Heard(Heard),
    Timer,
    Stop,
}

impl Watch<'_> {
    /// Keeps the nodes current until a signal (`Ok`) or a failure.
    async fn wait_and_keep(&mut self, session: &mut Session) -> Result<(), Stop> {
        let mut signals =
            async_signal::Signals::new([async_signal::Signal::Int, async_signal::Signal::Term])
                .map_err(|e| Stop::new(3, format!("cannot watch signals: {e}")))?;
        let socket = self.options.api_socket.clone().unwrap_or_else(|| {
            crate::local_api::default_socket(&session.port.ca, session.port.port)
        });
        let mut notices = match notices::listen(&socket).await {
            Ok(rx) => {
                info!(
                    "following fabric change notices (traps 64, 65, 128) through this node's local-sa"
                );
                Some(rx)
            }
            Err(e) => {
                warn!(
                    "no fabric change notices ({}): changes are found by the interval's re-read alone",
                    e.message
                );
                None
            }
        };
        self.write_metrics();
        let interval = self.options.interval;
        let mut next_interval = Instant::now() + interval;
        let mut intervals = 0u64;
        // The notices waiting for the master's sweep to settle: when they
        // are looked into, what they said, whether a port came.
        let mut settling: Option<(Instant, Vec<String>, bool)> = None;
        // When the first of them came: a link that flaps for ever does not
        // put the event off for longer than an interval.
        let mut first_notice = Instant::now();
        loop {
            let wake_at = settling
                .as_ref()
                .map_or(next_interval, |(t, ..)| (*t).min(next_interval));
            let heard = async {
                match &notices {
                    Some(rx) => match rx.recv().await {
                        Ok(h) => Wake::Heard(h),
                        Err(_) => Wake::Heard(Heard::Lost("the notice task ended".into())),
                    },
                    None => smol::future::pending().await,
                }
            };
            let timer = async {
                smol::Timer::at(wake_at).await;
                Wake::Timer
            };
            let stop = async {
                signals.next().await;
                Wake::Stop
            };
            match heard.or(timer).or(stop).await {
                Wake::Heard(Heard::Notice(details)) => {
                    self.counters.notices += 1;
                    let now = Instant::now();
                    if settling.is_none() {
                        first_notice = now;
                    }
                    let until = (now + self.options.settle).min(first_notice + interval);
                    let port_came = matches!(details, TrapDetails::GidInService { .. });
                    let cause = notices::describe(&details);
                    let (at, causes, probe) =
                        settling.get_or_insert_with(|| (until, Vec::new(), false));
                    *at = until;
                    *probe |= port_came;
                    causes.push(cause);
                }
                Wake::Heard(Heard::Lost(why)) => {
                    warn!(
                        "fabric change notices stopped ({why}): changes are found by the interval's re-read alone"
                    );
                    notices = None;
                }
                Wake::Timer => {
                    let now = Instant::now();
                    if let Some((_, causes, probe)) = settling.take_if(|(t, ..)| *t <= now) {
                        self.event(session, cause_of(&causes), probe).await?;
                    }
                    if next_interval <= now {
                        intervals += 1;
                        let probe = intervals.is_multiple_of(PROBE_EVERY);
                        self.event(session, "interval".into(), probe).await?;
                        self.renew(session).await?;
                        next_interval = Instant::now() + interval;
                    }
                }
                Wake::Stop => return Ok(()),
            }
        }
    }

    /// Ends every node's lease and says how the watch went.
    async fn stop(&mut self, session: &mut Session) -> Result<(), Stop> {
        let nodes: Vec<(Gid, u16)> = self.holdings.nodes().collect();
        let ended = renewals::renew(session, &nodes, 0, self.distribute.window).await?;
        eprintln!(
            "lsaquery: the watch stopped after {} events; {} of {} nodes took the end of their lease \
             and keep their own tables again",
            self.events,
            ended.taken.len(),
            nodes.len()
        );
        Ok(())
    }

    /// Renews every node's lease; nodes that do not answer are no longer
    /// known to hold their tables; those known to hold nothing that
    /// answered get their tables whole.
    async fn renew(&mut self, session: &mut Session) -> Result<(), Stop> {
        let nodes: Vec<(Gid, u16)> = self.holdings.nodes().collect();
        let renewed =
            renewals::renew(session, &nodes, self.options.lease, self.distribute.window).await?;
        self.counters.renewals += renewed.taken.len() as u64;
        self.counters.renewals_unanswered += renewed.unanswered.len() as u64;
        self.counters.renewals_refused += renewed.refused.len() as u64;
        for gid in &renewed.unanswered {
            self.holdings.unreached(gid);
        }
        for (gid, status) in &renewed.refused {
            warn!(
                node = %gid,
                status = %status.describe(),
                "a node refused its lease renewal (a local-sa that takes no lease refreshes on its own)"
            );
        }
        if self.holdings.unknown() > renewed.unanswered.len() {
            self.event_without_reading(session, "nodes whose tables are not known answer")
                .await?;
        }
        self.write_metrics();
        Ok(())
    }

    /// Writes the counters to `--metrics-file`, if given; a file that
    /// cannot be written is said in the log, and the watch goes on.
    fn write_metrics(&mut self) {
        self.counters.nodes = self.holdings.len() as u64;
        self.counters.nodes_unknown = self.holdings.unknown() as u64;
        if let Some(path) = &self.options.metrics_file
            && let Err(e) = self.counters.write(path)
        {
            warn!("{}", e.message);
        }
    }
}

/// An event's cause: the notices that led to it.
fn cause_of(causes: &[String]) -> String {
    match causes {
        [] => "notices".into(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} and {} more notices", rest.len()),
    }
}

/// The digest of each node's tables computed from `prepared`, for the
/// nodes in its fabric.
fn digests<'g>(prepared: &Prepared, nodes: impl Iterator<Item = &'g Gid>) -> BTreeMap<Gid, u64> {
    let fabric = &prepared.fabric;
    let gids: BTreeMap<u64, Gid> = nodes.map(|g| (g.guid(), *g)).collect();
    let endports: Vec<_> = gids.keys().filter_map(|g| fabric.endport(*g)).collect();
    compute_tables(fabric, &endports, prepared.qos, prepared.at_keys(), false)
        .into_iter()
        .filter_map(|t| Some((*gids.get(&t.guid)?, t.fingerprint)))
        .collect()
}
