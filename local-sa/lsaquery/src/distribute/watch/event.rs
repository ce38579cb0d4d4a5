//! One event: read the description again, recompute, check what changed
//! against the master, push each node what changed, and say so.

use std::collections::BTreeMap;
use std::time::Instant;

use local_sa_core::path_engine::Fabric;
use mad_codec::Gid;
use tracing::{info, warn};
use umad::Address;
use umad::port::Sysfs;

use local_sa_distributor::computed::Served;
use local_sa_distributor::fill::partitions::NodePartitions;
use local_sa_distributor::fill::ports::{Endpoints, FabricPort};
use local_sa_distributor::fill::tally::{Computed, Tally};
use local_sa_distributor::fill::{Distribution, Setup};

use super::super::endpoints;
use super::super::summary::Summary;
use super::changed_pairs::changed_pairs;
use super::holdings::{Holding, Plan};
use super::report::EventReport;
use super::{Watch, digests};
use local_sa_distributor::computed::Prepared;

use crate::compute::{self, Reread};
use crate::session::Session;
use crate::stop::Stop;

/// Reads of the description an event makes while the master's answers
/// differ from the computed ones (its sweep may not be done).
const READS: u32 = 3;

impl Watch<'_> {
    /// Looks into a change (`cause`); with `probe`, ports new to the
    /// watch are asked whether they run local-sa even if the description
    /// did not change. A master that does not answer (restarting, or
    /// failing over) ends the event, not the watch: the next one reads
    /// again.
    pub(super) async fn event(
        &mut self,
        session: &mut Session,
        cause: String,
        probe: bool,
    ) -> Result<(), Stop> {
        let started = Instant::now();
        self.follow_master(session);
        self.events += 1;
        let mut report = EventReport {
            number: self.events,
            cause,
            ..EventReport::default()
        };
        let Some(current) = self.current.take() else {
            return Ok(());
        };
        match self.look(session, current, probe, &mut report).await {
            Ok(()) => {}
            Err((current, e)) if e.code == 4 => {
                // No answer from the master: nothing is pushed, nothing
                // is lost.
                self.current = Some(current);
                report
                    .failures
                    .push(format!("the master did not answer: {}", e.message));
            }
            Err((current, e)) => {
                self.current = Some(current);
                return Err(e);
            }
        }
        self.finish(session.json, report, started)
    }

    /// The event's work, from `current`; on a failure before anything is
    /// pushed, `current` comes back with it.
    async fn look(
        &mut self,
        session: &mut Session,
        current: Prepared,
        probe: bool,
        report: &mut EventReport,
    ) -> Result<(), (Prepared, Stop)> {
        let master = session.dest;
        let window = self.distribute.master_window;
        let (new, digests, plan) = loop {
            report.reads += 1;
            let read = compute::reread(session, master, window, &current).await;
            let mut new = match read {
                Err(e) => return Err((current, e)),
                Ok(Reread::Unchanged(served)) => {
                    add(&mut report.read, served);
                    if probe {
                        match self.probe_new(session, &current.fabric).await {
                            Ok(n) => report.new_nodes = n,
                            Err(e) => return Err((current, e)),
                        }
                    }
                    if report.new_nodes == 0 {
                        self.current = Some(current);
                        return Ok(());
                    }
                    // Nothing changed but who runs local-sa: the new nodes
                    // get the current tables.
                    report.description_changed = true;
                    let digests = self.digests.clone();
                    let plan = self.holdings.plan(&digests);
                    report.changed_nodes = plan.push.len();
                    return self
                        .push(session, &plan, current, None, &digests, report)
                        .await
                        .map_err(|e| (self.lost(), e));
                }
                Ok(Reread::Changed(p)) => *p,
            };
            add(&mut report.read, new.description);
            report.description_changed = true;
            report.gone_nodes += self
                .holdings
                .retain_present(|g| new.fabric.endport(g.guid()).is_some());
            match self.probe_new(session, &new.fabric).await {
                Ok(n) => report.new_nodes += n,
                Err(e) => return Err((current, e)),
            }
            let nodes: Vec<Gid> = self.holdings.nodes().map(|(g, _)| g).collect();
            let digests = digests(&new, nodes.iter());
            let plan = self.holdings.plan(&digests);
            report.changed_nodes = plan.push.len();
            if plan.push.is_empty() {
                break (new, digests, plan);
            }
            let changed: Vec<u64> = plan.delta.iter().map(Gid::guid).collect();
            let check = self.options.check;
            let mut pairs =
                changed_pairs(&current.fabric, &new.fabric, &changed, new.at_keys(), check);
            if pairs.is_empty() {
                pairs = new
                    .fabric
                    .sample(check, u64::from(report.reads), new.at_keys());
            }
            let differed =
                match compute::check_pairs(session, master, window, &mut new, &pairs).await {
                    Ok(d) => d,
                    Err(e) => return Err((current, e)),
                };
            report.checked += pairs.len();
            report.differed = differed;
            report.check_records += new.sample.records;
            if report.differed == 0 || report.reads >= READS {
                break (new, digests, plan);
            }
            warn!(
                differ = report.differed,
                "computed PathRecords differ from the master's after a change: its sweep may not be \
                 done; reading the description again"
            );
            smol::Timer::after(self.options.settle).await;
        };
        self.digests = digests.clone();
        if plan.push.is_empty() {
            self.current = Some(new);
            return Ok(());
        }
        self.push(session, &plan, new, Some(current.fabric), &digests, report)
            .await
            .map_err(|e| (self.lost(), e))
    }

    /// After a push that failed for good (the transport is gone): the
    /// fabric it had; the watch ends with the failure.
    fn lost(&mut self) -> Prepared {
        self.current.take().unwrap_or_else(|| {
            unreachable!("a push leaves the fabric it computed from as the current one")
        })
    }

    /// Reads from the port's master SM if it moved (a failover), unless
    /// an SA was named (--sa-lid).
    fn follow_master(&mut self, session: &mut Session) {
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
        }
    }

    /// Pushes their current tables to the nodes whose holding is not
    /// known, without reading anything (they answered again).
    pub(super) async fn event_without_reading(
        &mut self,
        session: &mut Session,
        cause: &str,
    ) -> Result<(), Stop> {
        let started = Instant::now();
        self.events += 1;
        let mut report = EventReport {
            number: self.events,
            cause: cause.into(),
            description_changed: true,
            ..EventReport::default()
        };
        let plan = self.holdings.plan(&self.digests);
        report.changed_nodes = plan.push.len();
        if let Some(current) = self.current.take() {
            let digests = self.digests.clone();
            self.push(session, &plan, current, None, &digests, &mut report)
                .await?;
        }
        self.finish(session.json, report, started)
    }

    /// Asks the ports of `fabric` the watch does not know whether they
    /// run local-sa; keeps those that do (their tables go whole). Returns
    /// how many.
    async fn probe_new(&mut self, session: &mut Session, fabric: &Fabric) -> Result<usize, Stop> {
        let master = session.dest.lid;
        let candidates: Vec<FabricPort> = Endpoints::from_endports(fabric.endports())
            .endpoints
            .into_iter()
            .filter(|e| e.lid != master)
            .filter(|e| !self.holdings.contains(&e.gid) && !self.others.contains(&e.gid))
            .filter(|e| self.distribute.shard.is_none_or(|s| s.owns(e.gid.guid())))
            .collect();
        if candidates.is_empty() {
            return Ok(0);
        }
        let found = endpoints::running_an_sa(
            session,
            &candidates,
            self.distribute.master_window,
            self.distribute.probe_timeout,
        )
        .await?;
        for e in &candidates {
            if found.contains(e) {
                self.holdings.insert(e.gid, e.lid, Holding::Unknown);
            } else {
                self.others.insert(e.gid);
            }
        }
        Ok(found.len())
    }

    /// Pushes `plan`'s nodes their tables computed from `new` (the
    /// differences from `previous`'s to those holding them), under the
    /// lease; `new` becomes the current fabric.
    async fn push(
        &mut self,
        session: &mut Session,
        plan: &Plan,
        new: Prepared,
        previous: Option<Fabric>,
        digests: &BTreeMap<Gid, u64>,
        report: &mut EventReport,
    ) -> Result<(), Stop> {
        let started = Instant::now();
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
        report.fallback = trusted.clone().err();
        let setup = Setup {
            master: session.dest,
            sm_sl: session.port.sm_sl,
            sm_key: session.sm_key,
            window: d.window,
            master_window: d.master_window,
            attempts: d.attempts,
            table_attempts: d.table_attempts,
            dlids: Endpoints::from_endports(new.fabric.endports()).dlids,
            lease: Some(self.options.lease),
            keep_holdings: false,
        };
        let nodes: Vec<FabricPort> = plan
            .push
            .iter()
            .map(|(gid, lid)| FabricPort {
                lid: *lid,
                gid: *gid,
            })
            .collect();
        let tally = Tally {
            computed: Some(Computed::used(&new)),
            ..Tally::default()
        };
        let partitions = NodePartitions::new(&new.pkey_tables, new.qos);
        let mut run = Distribution::new(setup, nodes, tally, None)
            .with_partitions(Some(partitions))
            .with_computed(Some(new));
        if let Some(previous) = previous {
            run = run.holding_previous(previous, &plan.delta);
        }
        super::super::drive(session, &mut run).await?;
        self.current = run.take_computed();
        let summary = Summary::new(
            run.finish(),
            plan.push.len(),
            started.elapsed(),
            session.dest.lid,
        );
        report.pushed = summary.pushed();
        report.nodes = summary.taken().collect();
        report.failures = summary.failures().collect();
        self.holdings
            .pushed(summary.ends(), digests, trusted.is_ok());
        Ok(())
    }

    /// Counts and tells `report` (`json`: as an object).
    fn finish(
        &mut self,
        json: bool,
        mut report: EventReport,
        started: Instant,
    ) -> Result<(), Stop> {
        report.took = started.elapsed();
        self.counters.count(&report);
        if report.description_changed {
            info!(event = report.number, "{}", report.text().trim_end());
        }
        let line = if json {
            report.json()
        } else {
            report.text().trim_end().to_owned()
        };
        outln!("{line}")?;
        self.write_metrics();
        Ok(())
    }
}

/// Adds `served` to `total`.
fn add(total: &mut Served, served: Served) {
    total.queries += served.queries;
    total.records += served.records;
    total.bytes += served.bytes;
}
