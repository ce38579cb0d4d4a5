//! The watch's program: the shipped driver
//! ([`local_sa_distributor::watch::driver`]) carries out the renewals,
//! the polls of the master's activity, the pushes and the program's
//! queries of the master; what only the program can do it gives as tasks,
//! carried out here — the fabric read again
//! ([`local_sa_distributor::computed::fabric_read`]) and the check of
//! changed pairs ([`SampleCheck`]), each a step machine whose batches go
//! through the driver's `ask`; the probes of nodes; building each push;
//! telling each event.

use local_sa_core::load_flags::LeaseTerms;

use std::time::Instant;

use local_sa_core::path_engine::PairCheck;
use local_sa_distributor::computed::fabric_read::{FabricRead, FabricReadEnd};
use local_sa_distributor::computed::sample_check::{End, SampleCheck};
use local_sa_distributor::computed::{Prepared, Untrusted};
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

use super::metrics_file::MetricsFile;
use crate::carrier::Carrier;
use crate::compute::fabric;
use crate::json::JSON_SCHEMA;
use crate::progress::ProgressBar;
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
    /// The step whose queries the driver asks of the master.
    asked: Option<Asked>,
    /// The push's progress on a terminal, while one runs.
    bar: Option<ProgressBar>,
    /// The driver's sends out.
    carrier: Carrier,
}

/// A step of the program's whose batch of queries is out at the master.
enum Asked {
    /// The fabric read again.
    Read(Box<FabricRead>),
    /// The check of changed pairs: of the newest fabric read (`newest`),
    /// or of the current one.
    Check {
        run: Box<SampleCheck>,
        pairs: usize,
        newest: bool,
        /// The event's read it checks (the first [`READS`] - 1 may find
        /// a sweep not yet done).
        read: u32,
        started: Instant,
    },
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
            asked: None,
            bar: None,
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
                self.task(session, driver, task)?;
                continue;
            }
            self.carrier.send(session, driver);
            if let (Some(bar), Some((done, all))) = (&mut self.bar, driver.push_progress()) {
                bar.show(done, all, "local-sa nodes pushed");
            }
            if !self.carrier.is_waiting() {
                return Ok(());
            }
            self.carrier.next_end(session, driver).await?;
        }
    }

    /// Carries out one task of the driver's.
    fn task(
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
            Task::Probed(asked, found) => {
                debug!(
                    asked,
                    found = found.len(),
                    "ports new to the watch probed for local-sa"
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
                if let Some(mut bar) = self.bar.take() {
                    bar.finish();
                }
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
            Task::Answered(ends) => return self.answered(session, driver, ends),
        };
        match effect {
            Effect::Read { sweep } => {
                self.follow_master(session, driver);
                let current = self.current.as_ref().ok_or_else(fabric_lost)?;
                let master = session.dest.lid;
                let read = FabricRead::again(
                    Instant::now(),
                    (session.sm_key, session.port.lid.max(master), master),
                    current,
                    sweep,
                );
                self.ask(session, driver, Asked::Read(Box::new(read)))?;
            }
            Effect::Digests(nodes) => {
                let digests = self.newest()?.digests(&nodes);
                driver.watch_mut().handle_digests(Instant::now(), digests);
            }
            Effect::Check { nodes, read } => self.check(session, driver, &nodes, read)?,
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
            Effect::PollActivity | Effect::Renew { .. } | Effect::Probe(_) => {}
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

    /// Asks the master `step`'s next batch through the driver; a step
    /// with none left is over.
    fn ask(
        &mut self,
        session: &Session,
        driver: &mut WatchDriver,
        mut step: Asked,
    ) -> Result<(), Stop> {
        let batch = match &mut step {
            Asked::Read(read) => read.poll_batch(),
            Asked::Check { run, newest, .. } => {
                let fabric = &self.checked(*newest)?.fabric;
                run.poll_batch(fabric)
            }
        };
        let Some(batch) = batch else {
            return self.over(session, driver.watch_mut(), step);
        };
        self.asked = Some(step);
        driver
            .ask(Instant::now(), batch)
            .map_err(|e| Stop::new(3, format!("the watch's queries of the master: {e}")))
    }

    /// The master's ends of the step's batch.
    fn answered(
        &mut self,
        session: &Session,
        driver: &mut WatchDriver,
        ends: Vec<End>,
    ) -> Result<(), Stop> {
        let Some(mut step) = self.asked.take() else {
            return Ok(());
        };
        let handled = match &mut step {
            Asked::Read(read) => {
                (read.handle_batch(Instant::now(), ends)).map_err(|e| fabric::failed(session, e))
            }
            Asked::Check { run, newest, .. } => {
                let fabric = &self.checked(*newest)?.fabric;
                (run.handle_batch(fabric, ends)).map_err(|why| Stop::new(4, why.to_string()))
            }
        };
        match handled {
            Ok(()) => self.ask(session, driver, step),
            Err(e) => {
                let why = event_failure(e)?;
                self.failed(driver.watch_mut(), &why);
                Ok(())
            }
        }
    }

    /// A step is over: what it found goes to the watch.
    fn over(&mut self, session: &Session, watch: &mut Watch, step: Asked) -> Result<(), Stop> {
        let now = Instant::now();
        match step {
            Asked::Read(mut read) => {
                let current = self.current.as_ref().ok_or_else(fabric_lost)?;
                match read.finish() {
                    Some(FabricReadEnd::Unchanged(served)) => {
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
                    Some(FabricReadEnd::Read(new, config_changes)) => {
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
                    None => {
                        let why = format!(
                            "the read of the fabric from the master at LID {} stopped without a result",
                            session.dest.lid
                        );
                        self.failed(watch, &why);
                    }
                }
            }
            Asked::Check {
                run,
                pairs,
                newest,
                read,
                started,
            } => {
                let (found, cost) = run.finish();
                let differed = found.mismatches.len() + found.uncomputable.len();
                let checked = self.checked_mut(newest)?;
                checked.check_time += started.elapsed();
                checked.sample.add(cost);
                checked.checked.add(found);
                if differed > 0 && read < READS {
                    warn!(
                        differ = differed,
                        "computed PathRecords differ from the master's after its sweep: the sweep may not \
                         be done; reading the description again"
                    );
                }
                let outcome = CheckOutcome {
                    pairs,
                    differed,
                    records: cost.records,
                };
                watch.handle_checked(now, outcome);
            }
        }
        Ok(())
    }

    /// The fabric a check is of: the newest read, or the current one.
    fn checked(&self, newest: bool) -> Result<&Prepared, Stop> {
        if newest {
            self.newest.as_ref()
        } else {
            self.current.as_ref()
        }
        .ok_or_else(fabric_lost)
    }

    /// [`Self::checked`], to add what the check found.
    fn checked_mut(&mut self, newest: bool) -> Result<&mut Prepared, Stop> {
        if newest {
            self.newest.as_mut()
        } else {
            self.current.as_mut()
        }
        .ok_or_else(fabric_lost)
    }

    /// Checks against the master pairs that changed from the current
    /// fabric to the newest (from `nodes`, at most `--watch-check`) and
    /// every endport as a source and a destination; with no newest fabric
    /// (a sweep that changed nothing local-sa reads), every endport of
    /// the current one. What differs is kept with the fabric checked: its
    /// kind of table then comes from the master.
    fn check(
        &mut self,
        session: &Session,
        driver: &mut WatchDriver,
        nodes: &[u64],
        read: u32,
    ) -> Result<(), Stop> {
        let limit = self.check;
        let pairs = match (&self.current, &self.newest) {
            (Some(current), Some(new)) => {
                let mut pairs =
                    changed_pairs(&current.fabric, &new.fabric, nodes, new.at_keys(), limit);
                pairs.extend(every_port(new, read, &pairs));
                pairs
            }
            (Some(current), None) => every_port(current, read, &[]),
            (None, _) => return Err(fabric_lost()),
        };
        let step = Asked::Check {
            pairs: pairs.len(),
            run: Box::new(SampleCheck::new(pairs)),
            newest: self.newest.is_some(),
            read,
            started: Instant::now(),
        };
        self.ask(session, driver, step)
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
        self.bar = Some(ProgressBar::on_terminal(plan.push.len() > 1));
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

/// Why a step failed, if it ends the event and not the watch: the master
/// did not answer, or its description could not be used (read
/// mid-sweep); any other failure ends the watch.
fn event_failure(e: Stop) -> Result<String, Stop> {
    match e.code {
        4 => Ok(format!("the master did not answer: {}", e.message)),
        5 => Ok(format!(
            "the description read could not be used ({}); the next event reads it again",
            e.message
        )),
        _ => Err(e),
    }
}
