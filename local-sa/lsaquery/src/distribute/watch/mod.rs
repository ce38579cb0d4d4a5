//! `--distribute --compute --watch`: a distributor that stays, so that
//! the nodes need not refresh on their own.
//!
//! 1. The fill, as `--distribute --compute`, every push carrying a lease
//!    (`load_flags::LEASE`, `--lease`): while it runs a node refreshes
//!    nothing itself.
//! 2. Then it waits for a change — followed from before the fill's first
//!    read of the description, the master's activity counted just before
//!    it, so that a change in the watch's first seconds is one it hears
//!    of or sees: a notice heard through this node's
//!    local-sa, or where none runs from the master SA itself (trap 128: a
//!    switch port's link went up or down; 64/65: a port came or went;
//!    [`notices`]), after `--settle` for the master's sweep (each later
//!    notice waits again), a heavy sweep its polls of the master's
//!    activity see, or its own `--watch-interval`.
//! 3. An event (the distributor crate's `watch::Watch` decides its
//!    steps; [`effects`] carries them out): the description read again (records
//!    proportional to the fabric; nothing more if it did not change),
//!    every node's tables computed again and compared, by digest, with
//!    what each holds; pairs that changed checked against
//!    the master (`--watch-check`; a difference may be a sweep not done:
//!    read again, up to three times, then the tables come from the master
//!    and the report says why); and each node whose tables changed gets
//!    the differences (a Set of the changed, a Delete of the vanished, as
//!    `--delta`), or its tables whole if what it holds is not known. A
//!    node whose tables did not change gets nothing.
//! 4. Every interval each node's lease is renewed (by the shipped
//!    driver, [`local_sa_distributor::watch::driver`]); a node
//!    that does not answer gets its tables whole once it answers again
//!    (it may have restarted or missed a push).
//!
//! Each event prints a line (with --json an object); the
//! counters go to `--metrics-file`. SIGINT or SIGTERM ends every lease
//! (the nodes keep their own tables again at once) and the watch.

mod activity;
mod effects;
mod metrics_file;
mod notices;
mod standby;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::master_activity::MasterActivity;
use local_sa_distributor::computed::Prepared;
use local_sa_distributor::watch::driver::{DriverSetup, WatchDriver};
use local_sa_distributor::watch::{Holding, Holdings, Watch, WatchSetup};
use mad_codec::{Gid, TrapDetails};
use smol::channel::Receiver;
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;
use tracing::{debug, info, warn};

use async_signal::Signals;

use self::effects::Worker;
use self::metrics_file::MetricsFile;
use self::notices::Heard;
pub(crate) use self::notices::local_sa_reachable;
use self::standby::{Role, Standing, Waiting, sleep_unless_signalled};
use crate::session::Session;
use crate::stop::Stop;

/// The first wait before reading the description again when it could
/// not be read or used at the start, doubled after each failure up to
/// [`LONGEST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LONGEST_RETRY: Duration = Duration::from_secs(60);

/// What `--watch` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct WatchOptions {
    /// Between re-reads and lease renewals.
    pub(crate) interval: Duration,
    /// The master's sweep after a notice.
    pub(crate) settle: Duration,
    /// Between lease renewals (standing by: twice between claims).
    pub(crate) renew: Duration,
    /// The lease every push and renewal gives, in seconds.
    pub(crate) lease: u16,
    /// Changed pairs checked per event.
    pub(crate) check: usize,
    /// Between polls of the master SM's activity (zero: none).
    pub(crate) activity_poll: Duration,
    /// This node's local-sa's local API, for the notices (default: the
    /// port's).
    pub(crate) api_socket: Option<PathBuf>,
    /// Where the counters go.
    pub(crate) metrics_file: Option<PathBuf>,
}

impl WatchOptions {
    /// What standing by needs of them.
    fn waiting(&self) -> Waiting {
        Waiting {
            terms: self.terms(),
            renew: self.renew,
            activity_poll: self.activity_poll,
        }
    }

    /// What every push and renewal says of the lease.
    pub(crate) fn terms(&self) -> LeaseTerms {
        LeaseTerms {
            seconds: self.lease,
            renew_every: u16::try_from(self.renew.as_secs()).unwrap_or(u16::MAX),
        }
    }

    /// The lease by default: three intervals and the settle time, at
    /// least a minute, at most what the field holds.
    pub(crate) fn default_lease(interval: Duration, settle: Duration) -> u16 {
        let secs = (interval * 3 + settle).as_secs().max(60);
        u16::try_from(secs).unwrap_or(u16::MAX)
    }
}

/// Stands by while another watch is active, fills, then keeps every node
/// current until a signal; a watch fenced off (another took over while it
/// was frozen or cut off) stands by again.
///
/// No blind start: the notices are followed, and the master's activity
/// counted, before the description is first read, so that any change
/// after that read is one the watch hears of or sees.
pub(crate) async fn run(
    session: &mut Session,
    distribute: &super::DistributeOptions,
    options: &WatchOptions,
) -> Result<(), Stop> {
    let mut signals = Signals::new([async_signal::Signal::Int, async_signal::Signal::Term])
        .map_err(|e| Stop::new(3, format!("cannot watch signals: {e}")))?;
    let mut notices = follow_notices(session, options).await;
    let subscribed = matches!(notices, Notices::Master);
    let ran = watch_until_stopped(session, distribute, options, &mut notices, &mut signals).await;
    if subscribed {
        notices::unsubscribe_at_master(session).await;
    }
    ran
}

async fn watch_until_stopped(
    session: &mut Session,
    distribute: &super::DistributeOptions,
    options: &WatchOptions,
    notices: &mut Notices,
    signals: &mut Signals,
) -> Result<(), Stop> {
    let mut learnt = MasterActivity::default();
    let mut metrics = MetricsFile::new(options.metrics_file.clone());
    loop {
        let Some(mut prepared) = prepare_until_ready(
            session,
            distribute,
            options,
            (notices, &mut learnt),
            signals,
        )
        .await?
        else {
            return Ok(());
        };
        learnt = learnt.with_switches(prepared.fabric.switch_count());
        let waiting = options.waiting();
        let referee = match standby::until_active(
            session,
            distribute,
            waiting,
            &prepared,
            &mut learnt,
            (signals, &mut metrics),
        )
        .await?
        {
            Standing::Stopped => return Ok(()),
            Standing::Active {
                waited: false,
                referee,
            } => referee,
            Standing::Active {
                waited: true,
                referee,
            } => {
                // The fabric may have changed while another watch kept it.
                match prepare_until_ready(
                    session,
                    distribute,
                    options,
                    (notices, &mut learnt),
                    signals,
                )
                .await?
                {
                    Some(p) => prepared = p,
                    None => return Ok(()),
                }
                referee
            }
        };
        let active = active(
            session,
            distribute,
            options,
            (prepared, learnt.clone(), referee),
            (notices, signals, &mut metrics),
        )
        .await?;
        match active {
            Some(owner) => {
                warn!(
                    active = owner,
                    "fenced off: the distributor at LID active took over this watch's nodes (this one \
                     was frozen or cut off for two renewals); it pushes nothing more and stands by"
                );
                Role::Fenced { active: owner }.say(session.json, &mut metrics)?;
            }
            None => return Ok(()),
        }
    }
}

/// Fills, then keeps every node current until a signal (`None`) or until
/// fenced off (the LID of the distributor that took over).
async fn active(
    session: &mut Session,
    distribute: &super::DistributeOptions,
    options: &WatchOptions,
    (prepared, learnt, referee): (Prepared, MasterActivity, Option<u16>),
    (notices, signals, metrics): (&mut Notices, &mut Signals, &mut MetricsFile),
) -> Result<Option<u16>, Stop> {
    let filled = super::fill(
        session,
        distribute,
        Some(options.terms()),
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
    let digests = current.digests(lids.keys());
    let mut holdings = Holdings::default();
    for (gid, done) in filled.summary.ends() {
        let holding = match (done, digests.get(&gid)) {
            (true, Some(d)) if trusted => Holding::Computed(*d),
            (true, Some(d)) => Holding::FromMaster(*d),
            _ => Holding::Unknown,
        };
        holdings.insert(gid, lids.get(&gid).copied().unwrap_or(0), holding);
    }
    let others: BTreeSet<Gid> = filled
        .endpoints
        .iter()
        .map(|e| e.gid)
        .filter(|g| !lids.contains_key(g))
        .collect();
    let setup = WatchSetup {
        interval: options.interval,
        settle: options.settle,
        lease: options.lease,
        master_lid: session.dest.lid,
        shard: distribute.shard,
        activity_poll: options.activity_poll,
        renew: options.renew,
        referee,
    };
    let watch = Watch::new(setup, holdings, digests, others, Instant::now()).with_activity(learnt);
    let mut driver = WatchDriver::new(
        watch,
        DriverSetup {
            master: session.dest,
            sm_sl: session.port.sm_sl,
            sm_key: session.sm_key,
            window: distribute.window,
            master_window: distribute.master_window,
            probe_timeout: distribute.probe_timeout,
            terms: options.terms(),
        },
    );
    let mut worker = Worker::new(
        distribute,
        (options.check, options.terms(), metrics),
        current,
        session,
    );
    // However the watch ends, on a signal or a failure, the leases end
    // with it: the nodes must not wait them out (unless the transport is
    // gone too).
    let kept = keep_current(
        session,
        options,
        (&mut worker, &mut driver),
        signals,
        notices,
    )
    .await;
    driver.watch_mut().handle_stop();
    let stopped = worker.carry_out(session, &mut driver).await;
    kept.and(stopped)?;
    Ok(driver.watch().fenced_by())
}

/// Reads the description and checks the sample until that works: a
/// master that does not answer yet (starting, failing over, or ignoring
/// a wrong SA key) or a description caught mid-sweep is waited for, with
/// a growing pause, and said so each time; the nodes keep their own
/// tables meanwhile (no lease is given yet). Before each read the
/// notices heard so far are let go (the read sees what they said) and
/// the master's activity is counted into `learnt`: a sweep after the
/// read is a rise the next poll sees. `None`: a signal came.
async fn prepare_until_ready(
    session: &mut Session,
    distribute: &super::DistributeOptions,
    options: &WatchOptions,
    (notices, learnt): (&mut Notices, &mut MasterActivity),
    signals: &mut Signals,
) -> Result<Option<Prepared>, Stop> {
    let Some(compute) = &distribute.compute else {
        return Err(Stop::new(2, "--watch needs --compute"));
    };
    let mut pause = FIRST_RETRY;
    loop {
        let dropped = notices.let_go(session);
        if dropped > 0 {
            debug!(
                dropped,
                "notices before the read: the read sees what they said"
            );
        }
        if !options.activity_poll.is_zero()
            && let Some((sm_lid, count)) = activity::act_count(session).await?
        {
            // What this count closes was before the read: only the rise
            // after it is news.
            learnt.counted(sm_lid, count, Instant::now());
        }
        match crate::compute::prepare(session, session.dest, compute).await {
            Ok(prepared) => return Ok(Some(prepared)),
            Err(e) => {
                warn!(
                    master = session.dest.lid,
                    "the fabric's description could not be read or used: {}; trying again in {} s \
                     (the nodes keep their own tables until the watch fills them)",
                    e.message,
                    pause.as_secs()
                );
                if sleep_unless_signalled(signals, pause).await {
                    return Ok(None);
                }
                pause = (pause * 2).min(LONGEST_RETRY);
            }
        }
    }
}

/// What woke the watch.
enum Wake {
    Heard(Heard),
    /// A MAD for the session's agent that answers nothing asked: a
    /// Report of the master's, where the watch subscribed itself.
    Unsolicited(umad::IncomingMad),
    Timer,
    Stop,
}

/// Where the watch hears the fabric's change notices from.
enum Notices {
    /// This node's local-sa, through its local API.
    LocalSa(Receiver<Heard>),
    /// The master SA itself: the session's agent takes the Reports.
    Master,
    /// Nowhere: the interval's re-reads and the master's activity alone.
    None,
}

impl Notices {
    /// Lets go of the notices heard so far; how many.
    fn let_go(&mut self, session: &mut Session) -> usize {
        match self {
            Self::LocalSa(rx) => std::iter::from_fn(|| rx.try_recv().ok()).count(),
            Self::Master => session.client.drop_unsolicited(),
            Self::None => 0,
        }
    }
}

/// Follows the notices through this node's local-sa, else (none runs
/// here) by subscribing at the master itself, else not at all.
async fn follow_notices(session: &mut Session, options: &WatchOptions) -> Notices {
    let socket = notices::socket(options.api_socket.as_deref(), &session.port);
    let why = match notices::listen(&socket).await {
        Ok(rx) => {
            info!(
                "following fabric change notices (traps 64, 65, 128) through this node's local-sa"
            );
            return Notices::LocalSa(rx);
        }
        Err(e) => e.message,
    };
    if session.client.takes_reports() {
        match notices::subscribe_at_master(session).await {
            Ok(()) => {
                info!(
                    master = session.dest.lid,
                    "following fabric change notices (traps 64, 65, 128) from the master SA itself: \
                     no local-sa on this node ({why})"
                );
                return Notices::Master;
            }
            Err(e) => warn!(
                "the master SA refused this watch's subscriptions ({}): changes are found by the \
                 interval's re-read and the master's activity",
                e.message
            ),
        }
    } else {
        warn!(
            "no fabric change notices ({why}): changes are found by the interval's re-read and \
             the master's activity"
        );
    }
    Notices::None
}

/// Keeps the nodes current until a signal or the watch's end (`Ok`) or a
/// failure: carries out what the watch asks, and tells it of notices and
/// of time passing.
async fn keep_current(
    session: &mut Session,
    options: &WatchOptions,
    (worker, driver): (&mut Worker<'_>, &mut WatchDriver),
    signals: &mut Signals,
    notices: &mut Notices,
) -> Result<(), Stop> {
    worker.write_metrics(driver.watch());
    loop {
        worker.carry_out(session, driver).await?;
        if driver.watch().is_ended() {
            // Fenced off: another watch is active.
            return Ok(());
        }
        let wake_at = driver
            .poll_timeout()
            .unwrap_or_else(|| Instant::now() + options.interval);
        let from_master = matches!(notices, Notices::Master);
        let heard = async {
            match &*notices {
                Notices::LocalSa(rx) => match rx.recv().await {
                    Ok(h) => Wake::Heard(h),
                    Err(_) => Wake::Heard(Heard::Lost("the notice task ended".into())),
                },
                Notices::Master | Notices::None => smol::future::pending().await,
            }
        };
        let reported = async {
            if !from_master {
                return smol::future::pending().await;
            }
            match session.unsolicited().await {
                Ok(m) => Wake::Unsolicited(m),
                Err(e) => Wake::Heard(Heard::Lost(e.message)),
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
        match heard.or(reported).or(timer).or(stop).await {
            Wake::Heard(Heard::Notice(details)) => notice(driver.watch_mut(), &details),
            Wake::Unsolicited(m) => match crate::registration::notice_of(&m) {
                Some(n) => notice(driver.watch_mut(), &n.details()),
                None => debug!(
                    from = m.source.lid,
                    "a MAD for this watch's agent that is no Report of a notice: ignored"
                ),
            },
            Wake::Heard(Heard::Lost(why)) => {
                warn!(
                    "fabric change notices stopped ({why}): changes are found by the interval's re-read alone"
                );
                *notices = Notices::None;
            }
            Wake::Timer => {}
            Wake::Stop => return Ok(()),
        }
    }
}

/// Tells the watch of a notice.
fn notice(watch: &mut Watch, details: &TrapDetails) {
    watch.handle_notice(Instant::now(), *details);
}
