//! The watch's program: the shipped driver
//! ([`local_sa_distributor::watch::driver`]) carries out the renewals,
//! the polls of the master's activity and the pushes; what only the
//! program can do it gives as tasks, carried out here over the session —
//! reads of the description and of OpenSM's files, probes, the check of
//! changed pairs, building each push, telling each event.

use local_sa_core::load_flags::LeaseTerms;

use std::time::Instant;

use local_sa_core::path_engine::PairCheck;
use local_sa_distributor::computed::Prepared;
use local_sa_distributor::computed::Untrusted;
use local_sa_distributor::fill::partitions::NodePartitions;
use local_sa_distributor::fill::ports::Endpoints;
use local_sa_distributor::fill::tally::{Computed, Tally};
use local_sa_distributor::fill::{Distribution, Setup};
use local_sa_distributor::watch::driver::{Task, WatchDriver};
use local_sa_distributor::watch::{
    CheckOutcome, Effect, EventReport, Plan, READS, Read, Watch, changed_pairs,
};
use tracing::{debug, info, warn};
use umad::Address;
use umad::port::Sysfs;

use super::super::endpoints;
use super::super::sends::Carrier;
use super::metrics_file::MetricsFile;
use crate::compute::{self, Reread};
use crate::json::JSON_SCHEMA;
use crate::session::Session;
use crate::stop::Stop;

/// What the watch's program holds between tasks: the fabric the nodes
/// were computed from, and the newest one read while an event is under
/// way.
pub(super) struct Worker<'o> {
    distribute: &'o super::super::DistributeOptions,
    /// Changed pairs checked per event (`--watch-check`).
    check: usize,
    /// What every push and renewal says of the lease.
    lease: LeaseTerms,
    /// Where the role and counters go.
    metrics: &'o mut MetricsFile,
    /// The current fabric (taken while a push runs).
    current: Option<Prepared>,
    /// The newest fabric read, if it differs from the current one: the
    /// current one once the event is told.
    newest: Option<Prepared>,
    /// The SA read is the port's master SM, followed when it moves.
    follows_master: bool,
    /// The push under way: when it began, its nodes, and whether its
    /// tables are trusted.
    pushing: Option<(Instant, usize, Result<(), Untrusted>)>,
    /// The driver's sends out.
    carrier: Carrier,
}

impl<'o> Worker<'o> {
    pub(super) fn new(
        distribute: &'o super::super::DistributeOptions,
        (check, lease, metrics): (usize, LeaseTerms, &'o mut MetricsFile),
        current: Prepared,
        session: &Session,
    ) -> Self {
        Self {
            distribute,
            check,
            lease,
            metrics,
            current: Some(current),
            newest: None,
            follows_master: session.dest.lid == session.port.sm_lid,
            pushing: None,
            carrier: Carrier::default(),
        }
    }

    /// Carries out what the watch asks through `driver` until it waits
    /// for a notice or time; an error only when the watch cannot go on
    /// (the transport is gone, or `--no-fallback` refuses tables from the
    /// master).
    pub(super) async fn carry_out(
        &mut self,
        session: &mut Session,
        driver: &mut WatchDriver,
    ) -> Result<(), Stop> {
        self.follow_master(session, driver);
        loop {
            if let Some(task) = driver.poll_task(Instant::now()) {
                self.task(session, driver, task).await?;
                continue;
            }
            self.carrier.send(session, driver);
            if !self.carrier.is_waiting() {
                return Ok(());
            }
            self.carrier.next_end(session, driver).await?;
        }
    }

    /// Carries out one task of the driver's.
    async fn task(
        &mut self,
        session: &mut Session,
        driver: &mut WatchDriver,
        task: Task,
    ) -> Result<(), Stop> {
        let effect = match task {
            Task::Effect(effect) => effect,
            Task::Polled(count) => {
                let watch = driver.watch();
                debug!(
                    master = session.dest.lid,
                    act_count = ?count.map(|(_, n)| n),
                    sweeps_seen = watch.counters().sweeps_seen,
                    quiet_rises = ?watch.activity().quiet_rises().collect::<Vec<_>>(),
                    "the master's activity polled"
                );
                return Ok(());
            }
            Task::Renewed(renewed) => {
                if let Some((gid, owner)) = renewed.held.first() {
                    warn!(
                        node = %gid,
                        active = owner,
                        nodes = renewed.held.len(),
                        "nodes refused their lease renewal: another distributor (at LID active, for the \
                         first) holds their lease"
                    );
                }
                for (gid, status) in &renewed.refused {
                    warn!(
                        node = %gid,
                        status = %status.describe(),
                        "a node refused its lease renewal (a local-sa that takes no lease refreshes on its own)"
                    );
                }
                self.write_metrics(driver.watch());
                return Ok(());
            }
            Task::Pushed(mut run) => {
                self.current = run.take_computed();
                let (started, nodes, trusted) = self.pushing.take().ok_or_else(fabric_lost)?;
                info!(
                    nodes,
                    seconds = started.elapsed().as_secs_f64(),
                    "pushed the changed tables"
                );
                (driver.watch_mut()).handle_pushed(Instant::now(), run.finish(), trusted);
                return Ok(());
            }
            // This program asks the master over the session itself.
            Task::Answered(_) => return Ok(()),
        };
        match effect {
            Effect::Read { sweep } => {
                self.follow_master(session, driver);
                self.read(session, driver.watch_mut(), sweep).await?;
            }
            Effect::Probe(asked) => {
                let found = endpoints::running_an_sa(
                    session,
                    &asked,
                    self.distribute.master_window,
                    self.distribute.probe_timeout,
                )
                .await;
                match unanswered(found)? {
                    Ok(found) => driver.watch_mut().handle_probed(Instant::now(), &found),
                    Err(why) => self.failed(driver.watch_mut(), &why),
                }
            }
            Effect::Digests(nodes) => {
                let digests = self.newest()?.digests(&nodes);
                driver.watch_mut().handle_digests(Instant::now(), digests);
            }
            Effect::Check { nodes, read } => {
                self.check(session, driver.watch_mut(), &nodes, read)
                    .await?
            }
            Effect::Push(plan) => self.push(session, driver, &plan)?,
            Effect::Told(report) => self.tell(session.json, driver.watch(), &report)?,
            Effect::Ended {
                events,
                released,
                nodes,
                fenced_by,
            } => eprintln!(
                "lsaquery: the watch stopped after {events} events{}; {released} of {nodes} nodes took the end \
                 of their lease and keep their own tables again",
                fenced_by.map_or_else(String::new, |o| format!(
                    ", fenced off by the distributor at LID {o}"
                ))
            ),
            // The driver carries these out itself.
            Effect::PollActivity | Effect::Renew { .. } => {}
        }
        Ok(())
    }

    /// The newest fabric read, or the current one.
    fn newest(&self) -> Result<&Prepared, Stop> {
        self.newest
            .as_ref()
            .or(self.current.as_ref())
            .ok_or_else(fabric_lost)
    }

    /// Reads the description again, from the port's master SM if it
    /// moved; after a sweep of the master (`sweep`), OpenSM's files too.
    async fn read(
        &mut self,
        session: &mut Session,
        watch: &mut Watch,
        sweep: bool,
    ) -> Result<(), Stop> {
        let Some(current) = &self.current else {
            return Err(fabric_lost());
        };
        let read = compute::reread(
            session,
            session.dest,
            self.distribute.master_window,
            (current, sweep),
        )
        .await;
        let now = Instant::now();
        match unanswered(read)? {
            Ok(Reread::Unchanged(served)) => {
                self.newest = None;
                let read = Read {
                    changed: false,
                    ports: current.ports(),
                    served,
                    config_changes: Vec::new(),
                    from_master: current.unproven().is_some(),
                };
                watch.handle_read(now, read);
            }
            Ok(Reread::Changed(new, config_changes)) => {
                let read = Read {
                    changed: true,
                    ports: new.ports(),
                    served: new.description,
                    config_changes,
                    from_master: new.unproven().is_some(),
                };
                self.newest = Some(*new);
                watch.handle_read(now, read);
            }
            Err(why) => self.failed(watch, &why),
        }
        Ok(())
    }

    /// Checks against the master pairs that changed from the current
    /// fabric to the newest (from `nodes`, at most `--watch-check`) and
    /// every endport as a source and a destination; with no newest fabric
    /// (a sweep that changed nothing local-sa reads), every endport of
    /// the current one. What differs is kept with the fabric checked: its
    /// kind of table then comes from the master.
    async fn check(
        &mut self,
        session: &mut Session,
        watch: &mut Watch,
        nodes: &[u64],
        read: u32,
    ) -> Result<(), Stop> {
        let limit = self.check;
        let (checked, pairs) = match (&self.current, &mut self.newest) {
            (Some(current), Some(new)) => {
                let mut pairs =
                    changed_pairs(&current.fabric, &new.fabric, nodes, new.at_keys(), limit);
                pairs.extend(every_port(new, read, &pairs));
                (new, pairs)
            }
            (_, None) => {
                let Some(current) = &mut self.current else {
                    return Err(fabric_lost());
                };
                let pairs = every_port(current, read, &[]);
                (current, pairs)
            }
            (None, Some(_)) => {
                return Err(Stop::new(3, "the watch checks a change without its fabric"));
            }
        };
        let window = self.distribute.master_window;
        let records_before = checked.sample.records;
        let found = compute::check_pairs(session, session.dest, window, checked, &pairs).await;
        let records = checked.sample.records - records_before;
        match unanswered(found)? {
            Ok(differed) => {
                if differed > 0 && read < READS {
                    warn!(
                        differ = differed,
                        "computed PathRecords differ from the master's after its sweep: the sweep may not \
                         be done; reading the description again"
                    );
                }
                let outcome = CheckOutcome {
                    pairs: pairs.len(),
                    differed,
                    records,
                };
                watch.handle_checked(Instant::now(), outcome);
            }
            Err(why) => self.failed(watch, &why),
        }
        Ok(())
    }

    /// Starts the driver pushing `plan`'s nodes their tables computed
    /// from the newest fabric (the differences from the current fabric's
    /// to those holding them), under the lease; the newest fabric becomes
    /// the current one once it is over ([`Task::Pushed`]).
    fn push(
        &mut self,
        session: &Session,
        driver: &mut WatchDriver,
        plan: &Plan,
    ) -> Result<(), Stop> {
        let started = Instant::now();
        let (new, previous) = match self.newest.take() {
            Some(new) => (new, self.current.take().map(|c| c.fabric)),
            None => match self.current.take() {
                Some(current) => (current, None),
                None => return Err(fabric_lost()),
            },
        };
        let d = self.distribute;
        if d.no_fallback
            && let Some(why) = new.unproven()
        {
            self.current = Some(new);
            return Err(Stop::new(
                5,
                format!(
                    "the tables computed after the change are not proven ({why}); --no-fallback: \
                     the watch ends rather than take them from the master"
                ),
            ));
        }
        let trusted = new.trusted(local_sa_core::path_engine::Table::Default);
        let setup = Setup {
            master: session.dest,
            sm_sl: session.port.sm_sl,
            sm_key: session.sm_key,
            window: d.window,
            master_window: d.master_window,
            attempts: d.attempts,
            table_attempts: d.table_attempts,
            dlids: Endpoints::from_endports(new.fabric.endports()).dlids,
            lease: Some(self.lease),
            keep_holdings: false,
        };
        let tally = Tally {
            computed: Some(Computed::used(&new)),
            ..Tally::default()
        };
        let partitions = NodePartitions::new(&new.pkey_tables, new.qos);
        let mut run = Distribution::new(setup, plan.ports(), tally, None)
            .with_partitions(Some(partitions))
            .with_computed(Some(new));
        if let Some(previous) = previous {
            run = run.holding_previous(previous, &plan.delta);
        }
        self.pushing = Some((started, plan.push.len(), trusted));
        driver
            .push(Instant::now(), run)
            .map_err(|e| Stop::new(3, format!("the watch's push: {e}")))
    }

    /// A step found no answer from the master: the event ends, and the
    /// newest fabric read is forgotten.
    fn failed(&mut self, watch: &mut Watch, why: &str) {
        self.newest = None;
        watch.handle_failed(Instant::now(), why);
    }

    /// Tells an event: a line (or an object with --json), the log if
    /// something changed, the counters. The newest fabric read is the
    /// current one from now on.
    fn tell(&mut self, json: bool, watch: &Watch, report: &EventReport) -> Result<(), Stop> {
        if let Some(new) = self.newest.take() {
            self.current = Some(new);
        }
        if report.description_changed {
            info!(event = report.number, "{}", report.text().trim_end());
        }
        let line = if json {
            report.json(JSON_SCHEMA)
        } else {
            report.text().trim_end().to_owned()
        };
        outln!("{line}")?;
        self.write_metrics(watch);
        Ok(())
    }

    /// Writes the counters to `--metrics-file`, if given.
    pub(super) fn write_metrics(&mut self, watch: &Watch) {
        self.metrics.counters(watch.counters());
    }

    /// Reads from (and polls) the port's master SM if it moved (a
    /// failover), unless an SA was named (--sa-lid).
    fn follow_master(&mut self, session: &mut Session, driver: &mut WatchDriver) {
        if !self.follows_master {
            return;
        }
        let Ok(port) = Sysfs::default().select(Some(&session.port.ca), Some(session.port.port))
        else {
            return;
        };
        if port.sm_lid != 0 && port.sm_lid != session.dest.lid {
            info!(
                from = session.dest.lid,
                to = port.sm_lid,
                "the master SM moved: the watch reads from the new one"
            );
            session.dest = Address::gsi(port.sm_lid, port.sm_sl);
            session.port = port;
            driver.set_master(session.dest, session.port.sm_sl);
        }
    }
}

/// The pairs that make every endport of `prepared`'s fabric a source and
/// a destination in each of its tables, beside `drawn` (read `read` of an
/// event draws anew).
fn every_port(prepared: &Prepared, read: u32, drawn: &[PairCheck]) -> Vec<PairCheck> {
    let all = prepared
        .fabric
        .sample(0, u64::from(read), prepared.at_keys());
    all.into_iter().filter(|p| !drawn.contains(p)).collect()
}

/// The watch has no fabric to work from: only after a push that failed
/// for good, which ends the watch.
fn fabric_lost() -> Stop {
    Stop::new(3, "the watch lost its fabric after a failed push")
}

/// A step's end: its value, or (inner `Err`) why the master did not
/// answer or its description could not be used (read mid-sweep), which
/// ends the event and not the watch; any other failure ends the watch.
fn unanswered<T>(r: Result<T, Stop>) -> Result<Result<T, String>, Stop> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.code == 4 => Ok(Err(format!("the master did not answer: {}", e.message))),
        Err(e) if e.code == 5 => Ok(Err(format!(
            "the description read could not be used ({}); the next event reads it again",
            e.message
        ))),
        Err(e) => Err(e),
    }
}
