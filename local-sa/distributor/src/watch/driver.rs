//! The watch's driver without I/O: it carries out what the [`Watch`]
//! asks that is only MADs — lease renewals a window at a time, probes of
//! new ports for local-sa, polls of the master's activity, a push through
//! the fill machine, and the batches of queries the program asks of the
//! master — and gives the program, as a [`Task`], what only the program
//! can do: read the fabric (its description, OpenSM's files), compute
//! digests and tables, check, print.
//!
//! It speaks [`Sends`]: the program's transport sends what
//! [`Sends::poll_send`] gives and tells each end with an explicit `now`;
//! lsaquery runs it over umad, the storm simulator over its virtual
//! fabric, so both carry out the watch with the same code.
//!
//! The loop around it: take every [`WatchDriver::poll_task`] and carry
//! it out (a task's outcome goes to [`WatchDriver::watch_mut`]'s
//! `handle_*`, or back to the driver through [`WatchDriver::ask`] and
//! [`WatchDriver::push`]); send what it gives; wait for an end, or for
//! [`WatchDriver::poll_timeout`] when nothing is out.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::master_activity;
use local_sa_core::requester::{Answer, Failure as RequestFailure};
use mad_codec::Gid;
use mad_codec::address::Address;

use super::{Effect, LeaseAnswer, Renewed, Watch, renewal};
use crate::batch::Batch;
use crate::computed::sample_check::End;
use crate::fill::Distribution;
use crate::fill::ports::{FabricPort, sa_probe, sa_probe_attempts, those_running_an_sa};
use crate::sends::{Send, Sends};

/// Where the driver sends, and what its renewals say.
#[derive(Debug, Clone, Copy)]
pub struct DriverSetup {
    /// The master SA: its activity polls and the program's asks go here.
    pub master: Address,
    /// The SL of the path to the master SM: the nodes' renewals go on it.
    pub sm_sl: u8,
    /// The SA key every renewal carries.
    pub sm_key: u64,
    /// Renewals out at once (`--window`).
    pub window: usize,
    /// Queries out at the master at once (`--master-window`): its
    /// probes of ports go as many at once too.
    pub master_window: usize,
    /// A probe's time-out (`--probe-timeout`; it is tried twice).
    pub probe_timeout: Duration,
    /// What every renewal says of the lease (its length is the watch's
    /// word each round: 0 ends it).
    pub terms: LeaseTerms,
}

/// What the program is to do, or to know.
pub enum Task {
    /// An effect only the program carries out (read, digests, check,
    /// push, or an event's or the watch's end to tell); its
    /// outcome goes to the watch's `handle_*`, or to [`WatchDriver::ask`]
    /// and [`WatchDriver::push`] for the MADs it needs.
    Effect(Effect),
    /// A round of renewals ended, and the watch was told: for the log.
    Renewed(Renewed),
    /// Ports were probed, and the watch told: how many, and those found
    /// running local-sa.
    Probed(usize, Vec<FabricPort>),
    /// The master's activity was polled, and the watch told: its LID and
    /// ActCount, if it answered.
    Polled(Option<(u16, u32)>),
    /// The ends of the queries of [`WatchDriver::ask`], in order.
    Answered(Vec<End>),
    /// The push of [`WatchDriver::push`] is over: the fill, for the
    /// program to take what it holds and tell the watch
    /// ([`Watch::handle_pushed`]).
    Pushed(Box<Distribution>),
}

/// The driver carries out something already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the watch's driver carries out another step")
    }
}

impl std::error::Error for Busy {}

/// What the driver carries out.
enum Doing {
    Nothing,
    /// Renewals to these nodes, in the batch's order.
    Renewing(Batch, Vec<Gid>),
    /// Probes of these ports, in the batch's order.
    Probing(Batch, Vec<FabricPort>),
    /// A poll of the master's activity.
    Polling(Batch),
    /// The program's queries at the master.
    Asking(Batch),
    Pushing(Box<Distribution>),
}

/// A [`Watch`] and the carrying out of its MADs.
pub struct WatchDriver {
    watch: Watch,
    setup: DriverSetup,
    doing: Doing,
    tasks: VecDeque<Task>,
    /// The last id a batch's query was given (a push's sends keep the
    /// fill's own: one thing is carried out at a time).
    next_id: u64,
}

impl WatchDriver {
    /// Drives `watch` as `setup` says.
    pub fn new(watch: Watch, setup: DriverSetup) -> Self {
        Self {
            watch,
            setup,
            doing: Doing::Nothing,
            tasks: VecDeque::new(),
            next_id: 0,
        }
    }

    /// The watch driven.
    pub fn watch(&self) -> &Watch {
        &self.watch
    }

    /// The watch driven, to tell it what a task found or what happened
    /// (a notice, the end).
    pub fn watch_mut(&mut self) -> &mut Watch {
        &mut self.watch
    }

    /// The master moved (a failover): polls and asks go to `master`, the
    /// renewals on `sm_sl`, from the next one on.
    pub fn set_master(&mut self, master: Address, sm_sl: u8) {
        self.setup.master = master;
        self.setup.sm_sl = sm_sl;
    }

    /// When [`Self::poll_task`] has something if nothing else comes.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.watch.poll_timeout()
    }

    /// How far the push under way is: its nodes done (filled or failed)
    /// of all; `None` when no push runs.
    pub fn push_progress(&self) -> Option<(u64, u64)> {
        match &self.doing {
            Doing::Pushing(fill) => Some(fill.progress()),
            _ => None,
        }
    }

    /// Whether the driver waits for no end (nothing of its is out).
    pub fn is_idle(&self) -> bool {
        matches!(self.doing, Doing::Nothing)
    }

    /// What the program is to do now, if anything; the MADs the driver
    /// carries out itself start here.
    pub fn poll_task(&mut self, now: Instant) -> Option<Task> {
        loop {
            if let Some(task) = self.tasks.pop_front() {
                return Some(task);
            }
            if !self.is_idle() {
                return None;
            }
            match self.watch.poll_effect(now)? {
                Effect::Renew {
                    nodes,
                    seconds,
                    forget_qos,
                } => {
                    let terms = LeaseTerms {
                        seconds,
                        ..self.setup.terms
                    };
                    let mad = renewal(self.setup.sm_key, terms, forget_qos);
                    let queries = (nodes.iter())
                        .map(|(_, lid)| (Address::gsi(*lid, self.setup.sm_sl), mad.clone()))
                        .collect();
                    let gids = nodes.into_iter().map(|(g, _)| g).collect();
                    self.doing = Doing::Renewing(Batch::new(queries, self.setup.window), gids);
                }
                Effect::Probe(ports) => {
                    let probe = sa_probe();
                    let queries = (ports.iter())
                        .map(|p| (Address::gsi(p.lid, self.setup.sm_sl), probe.clone()))
                        .collect();
                    let attempts = sa_probe_attempts(self.setup.probe_timeout);
                    let batch = Batch::new(queries, self.setup.master_window);
                    self.doing = Doing::Probing(batch.with_attempts(attempts), ports);
                }
                Effect::PollActivity => {
                    let master = self.setup.master;
                    let query = (master, master_activity::request(master.lid));
                    self.doing = Doing::Polling(Batch::new(vec![query], 1));
                }
                other => return Some(Task::Effect(other)),
            }
            // A round of no node is over at once.
            self.settle(now);
        }
    }

    /// Sends `queries` to the master, `master_window` at a time; their
    /// ends come back as [`Task::Answered`].
    pub fn ask(&mut self, now: Instant, queries: Vec<Bytes>) -> Result<(), Busy> {
        if !self.is_idle() {
            return Err(Busy);
        }
        let master = self.setup.master;
        let queries = queries.into_iter().map(|q| (master, q)).collect();
        self.doing = Doing::Asking(Batch::new(queries, self.setup.master_window));
        self.settle(now);
        Ok(())
    }

    /// Carries out `fill` (a watch's push); it comes back as
    /// [`Task::Pushed`] once over.
    pub fn push(&mut self, now: Instant, fill: Distribution) -> Result<(), Busy> {
        if !self.is_idle() {
            return Err(Busy);
        }
        self.doing = Doing::Pushing(Box::new(fill));
        self.settle(now);
        Ok(())
    }

    /// Ends what is over: the watch is told of a renewal round or a
    /// poll, the program given its answers or its fill.
    fn settle(&mut self, now: Instant) {
        let over = match &self.doing {
            Doing::Nothing => false,
            Doing::Renewing(b, _) | Doing::Probing(b, _) | Doing::Polling(b) | Doing::Asking(b) => {
                b.is_done()
            }
            Doing::Pushing(fill) => fill.is_done(),
        };
        if !over {
            return;
        }
        let task = match std::mem::replace(&mut self.doing, Doing::Nothing) {
            Doing::Nothing => return,
            Doing::Renewing(batch, gids) => {
                let mut renewed = Renewed::default();
                for (gid, end) in gids.into_iter().zip(batch.finish()) {
                    renewed.add(gid, LeaseAnswer::of(end.as_ref().ok()));
                }
                self.watch.handle_renewed(now, &renewed);
                Task::Renewed(renewed)
            }
            Doing::Probing(batch, ports) => {
                let asked = ports.len();
                let found = those_running_an_sa(ports, batch.finish());
                self.watch.handle_probed(now, &found);
                Task::Probed(asked, found)
            }
            Doing::Polling(batch) => {
                let lid = self.setup.master.lid;
                let count = (batch.finish().first())
                    .and_then(|end| end.as_ref().ok())
                    .and_then(master_activity::act_count)
                    .map(|n| (lid, n));
                self.watch.handle_activity(now, count);
                Task::Polled(count)
            }
            Doing::Asking(batch) => Task::Answered(batch.finish()),
            Doing::Pushing(fill) => Task::Pushed(fill),
        };
        self.tasks.push_back(task);
    }
}

impl Sends for WatchDriver {
    fn poll_send(&mut self) -> Option<(u64, Send)> {
        let next_id = &mut self.next_id;
        let id = |_| {
            *next_id += 1;
            *next_id
        };
        match &mut self.doing {
            Doing::Nothing => None,
            Doing::Renewing(b, _) | Doing::Probing(b, _) | Doing::Polling(b) | Doing::Asking(b) => {
                b.poll_query(id)
            }
            Doing::Pushing(fill) => fill.poll_send(),
        }
    }

    fn handle_end(&mut self, now: Instant, id: u64, outcome: Result<Answer, RequestFailure>) {
        match &mut self.doing {
            Doing::Nothing => return,
            Doing::Renewing(b, _) | Doing::Probing(b, _) | Doing::Polling(b) | Doing::Asking(b) => {
                b.handle_end(now, id, outcome);
            }
            Doing::Pushing(fill) => fill.handle_end(id, outcome),
        }
        self.settle(now);
    }

    fn handle_unsendable(&mut self, now: Instant, id: u64, why: &str) {
        match &mut self.doing {
            Doing::Nothing => return,
            Doing::Renewing(b, _) | Doing::Probing(b, _) | Doing::Polling(b) | Doing::Asking(b) => {
                b.handle_unsendable(now, id, why);
            }
            Doing::Pushing(fill) => fill.handle_unsendable(id, why),
        }
        self.settle(now);
    }
}

#[cfg(test)]
mod tests {
    //! The driver on a virtual clock against fake nodes and a fake master
    //! that answer each query as soon as it is sent.

    use std::collections::BTreeSet;
    use std::time::Duration;

    use local_sa_core::load_flags::lease_seconds;
    use local_sa_core::requester::Attempts;
    use mad_codec::zerocopy::{FromZeros, IntoBytes};
    use mad_codec::{AttributeId, MadStatus, Method, SaMad, SaMadBuilder, SmInfoRecord};

    use super::*;
    use crate::fill::Setup;
    use crate::fill::tally::Tally;
    use crate::watch::{Holding, Holdings, WatchSetup};

    const MASTER: u16 = 1;
    const KEY: u64 = 0x5eed;
    const LEASE: u16 = 185;
    const INTERVAL: Duration = Duration::from_secs(60);

    fn gid(lid: u16) -> Gid {
        Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + u64::from(lid))
    }

    /// A driver of a watch of `lids`, renewing `window` at a time,
    /// polling the master every `poll` (zero: never), refereed by the
    /// node at `referee`.
    fn driver(now: Instant, lids: &[u16], window: usize, poll: Duration) -> WatchDriver {
        let mut holdings = Holdings::default();
        for lid in lids {
            holdings.insert(gid(*lid), *lid, Holding::Computed(1));
        }
        let digests = lids.iter().map(|l| (gid(*l), 1)).collect();
        let setup = WatchSetup {
            interval: INTERVAL,
            settle: Duration::from_secs(5),
            lease: LEASE,
            master_lid: MASTER,
            shard: None,
            activity_poll: poll,
            renew: INTERVAL,
            referee: Some(lids[0]),
        };
        let watch = Watch::new(setup, holdings, digests, BTreeSet::new(), now);
        WatchDriver::new(
            watch,
            DriverSetup {
                master: Address::gsi(MASTER, 0),
                sm_sl: 0,
                sm_key: KEY,
                window,
                master_window: 2,
                probe_timeout: Duration::from_millis(100),
                terms: LeaseTerms {
                    seconds: LEASE,
                    renew_every: 60,
                },
            },
        )
    }

    /// The answer to `request` with `status`, `modifier` and `record`.
    fn reply(request: &[u8], status: MadStatus, modifier: u32, record: &[u8]) -> Answer {
        let m = SaMad::parse(request).unwrap();
        let mut b = SaMadBuilder::request(
            m.mad().method().response(),
            m.mad().transaction_id(),
            m.mad().attribute_id(),
        );
        b.header_mut().mad.set_status(status);
        b.header_mut().mad.set_attribute_modifier(modifier);
        let mut mad = b.into_bytes().to_vec();
        mad.extend_from_slice(record);
        Answer::whole(mad.into()).unwrap()
    }

    /// What a run saw: each round of sends (those out at once), and the
    /// tasks for the log.
    #[derive(Default)]
    struct Seen {
        rounds: Vec<Vec<(Address, Bytes)>>,
        renewed: Vec<Renewed>,
        polled: Vec<Option<(u16, u32)>>,
    }

    /// Runs `d` from `now` until `until` or the first task for the
    /// program, which it returns; `answer` answers each query as it is
    /// sent (`None`: it goes unanswered).
    fn run(
        d: &mut WatchDriver,
        now: &mut Instant,
        until: Instant,
        seen: &mut Seen,
        mut answer: impl FnMut(Instant, &Address, &[u8]) -> Option<Answer>,
    ) -> Option<Task> {
        loop {
            while let Some(task) = d.poll_task(*now) {
                match task {
                    Task::Renewed(r) => seen.renewed.push(r),
                    Task::Polled(p) => seen.polled.push(p),
                    other => return Some(other),
                }
            }
            let round: Vec<(u64, Send)> = std::iter::from_fn(|| d.poll_send()).collect();
            if round.is_empty() {
                match d.poll_timeout() {
                    Some(t) if t <= until => *now = (*now).max(t),
                    _ => return None,
                }
                continue;
            }
            let mut sent = Vec::new();
            for (id, send) in round {
                let Send::Query { dest, request, .. } = send else {
                    panic!("a driver's own send is a query");
                };
                let end = answer(*now, &dest, &request).ok_or(RequestFailure::Timeout {
                    attempts: 1,
                    per_attempt: Duration::from_secs(1),
                    sm_key: KEY,
                });
                sent.push((dest, request));
                d.handle_end(*now, id, end);
            }
            seen.rounds.push(sent);
        }
    }

    #[test]
    fn renewals_go_a_window_at_a_time_and_the_referee_s_other_owner_ends_every_lease() {
        let start = Instant::now();
        let mut now = start;
        let lids: Vec<u16> = (2..=9).collect();
        let mut d = driver(now, &lids, 3, Duration::ZERO);
        let mut seen = Seen::default();
        // The referee (LID 2) says LID 14 holds its lease.
        let task = run(
            &mut d,
            &mut now,
            start + INTERVAL * 2,
            &mut seen,
            |_, to, mad| {
                let (status, owner) = if to.lid == 2 {
                    (MadStatus::ERR_REQ_DENIED, 14)
                } else {
                    (MadStatus::OK, 0)
                };
                Some(reply(mad, status, owner, &[]))
            },
        );
        let sizes: Vec<usize> = seen.rounds.iter().map(Vec::len).collect();
        assert_eq!(sizes[..3], [3, 3, 2], "{sizes:?}");
        let first: Vec<u16> = (seen.rounds[..3].iter().flatten())
            .map(|(to, _)| to.lid)
            .collect();
        assert_eq!(first, lids);
        for (_, mad) in seen.rounds[..3].iter().flatten() {
            let m = SaMad::parse(mad).unwrap();
            assert_eq!((m.mad().method(), m.sa().sm_key()), (Method::SET, KEY));
            assert_eq!(lease_seconds(m.mad().attribute_modifier()), Some(LEASE));
        }
        assert_eq!(seen.renewed[0].held, [(gid(2), 14)]);
        // Fenced off: every lease ended, then the watch.
        let ended: Vec<(u16, Option<u16>)> = (seen.rounds[3..].iter().flatten())
            .map(|(to, mad)| {
                let modifier = SaMad::parse(mad).unwrap().mad().attribute_modifier();
                (to.lid, lease_seconds(modifier))
            })
            .collect();
        assert_eq!(
            ended,
            lids.iter().map(|l| (*l, Some(0))).collect::<Vec<_>>()
        );
        assert!(matches!(
            task,
            Some(Task::Effect(Effect::Ended {
                fenced_by: Some(14),
                ..
            }))
        ));
    }

    #[test]
    fn new_ports_are_probed_for_local_sa_and_those_that_answer_are_kept() {
        let start = Instant::now();
        let mut now = start;
        let mut d = driver(now, &[2, 3], 8, Duration::ZERO);
        let mut seen = Seen::default();
        let renew = |_: Instant, _: &Address, mad: &[u8]| Some(reply(mad, MadStatus::OK, 0, &[]));
        let task = run(&mut d, &mut now, start + INTERVAL * 2, &mut seen, renew);
        assert!(matches!(task, Some(Task::Effect(Effect::Read { .. }))));
        // The fabric read has three ports more: 10 runs local-sa, 11 is
        // silent, 12 answers that it has no SA agent.
        let ports = [2, 3, 10, 11, 12].map(|lid| FabricPort { lid, gid: gid(lid) });
        let read = super::super::Read {
            changed: true,
            ports: ports.to_vec(),
            served: Default::default(),
            config_changes: Vec::new(),
            from_master: false,
        };
        d.watch_mut().handle_read(now, read);
        seen.rounds.clear();
        let until = now;
        let task = run(&mut d, &mut now, until, &mut seen, |_, to, mad| {
            match to.lid {
                10 => Some(reply(mad, MadStatus::OK, 0, &[])),
                11 => None,
                _ => Some(reply(mad, MadStatus::METHOD_UNSUPPORTED, 0, &[])),
            }
        });
        let Some(Task::Probed(asked, found)) = task else {
            panic!("the probes' end told");
        };
        assert_eq!((asked, found), (3, vec![ports[2]]));
        let probed: Vec<u16> = seen.rounds[0].iter().map(|(to, _)| to.lid).collect();
        assert_eq!(probed, [10, 11], "--master-window probes at once");
        for (_, mad) in seen.rounds.iter().flatten() {
            let m = SaMad::parse(mad).unwrap();
            assert_eq!(
                (m.mad().method(), m.mad().attribute_id()),
                (Method::GET, AttributeId::CLASS_PORT_INFO)
            );
        }
        assert!(d.watch().holdings().contains(&gid(10)));
        assert!(!d.watch().holdings().contains(&gid(11)));
        assert!(!d.watch().holdings().contains(&gid(12)));
    }

    #[test]
    fn a_heavy_sweep_the_polls_see_becomes_a_read_after_a_sweep() {
        let start = Instant::now();
        let mut now = start;
        let mut d = driver(now, &[2, 3, 4], 8, Duration::from_secs(2));
        let mut seen = Seen::default();
        // Five light sweeps every ten seconds; a heavy one after 20 s.
        let count = |at: Instant| {
            let light = (at - start).as_secs() / 10 * 5;
            let heavy = if at - start >= Duration::from_secs(20) {
                170
            } else {
                0
            };
            (1000 + light + heavy) as u32
        };
        let task = run(
            &mut d,
            &mut now,
            start + INTERVAL / 2,
            &mut seen,
            |at, to, mad| {
                let m = SaMad::parse(mad).ok()?;
                assert_eq!(m.mad().attribute_id(), AttributeId::SM_INFO_RECORD);
                assert_eq!(to.lid, MASTER);
                let mut r = SmInfoRecord::new_zeroed();
                r.set_lid(MASTER);
                r.set_act_count(count(at));
                Some(reply(mad, MadStatus::OK, 0, r.as_bytes()))
            },
        );
        assert!(seen.polled.len() >= 10, "{} polls", seen.polled.len());
        assert!(
            seen.polled
                .iter()
                .all(|p| p.is_some_and(|(lid, _)| lid == MASTER))
        );
        assert!(
            matches!(task, Some(Task::Effect(Effect::Read { sweep: true }))),
            "the sweep is looked into"
        );
        assert!(
            now < start + Duration::from_secs(30),
            "within a poll and the settle time"
        );
    }

    #[test]
    fn the_program_s_asks_come_back_in_order_and_a_push_waits_for_them() {
        let start = Instant::now();
        let mut now = start;
        let mut d = driver(now, &[2, 3], 8, Duration::ZERO);
        d.set_master(Address::gsi(7, 3), 3);
        let queries: Vec<Bytes> = (0..5)
            .map(|i| {
                SaMadBuilder::request(Method::GET_TABLE, i, AttributeId::NODE_RECORD).into_bytes()
            })
            .collect();
        d.ask(now, queries).unwrap();
        let empty = Distribution::new(fill_setup(), Vec::new(), Tally::default(), None);
        assert_eq!(d.push(now, empty).err(), Some(Busy), "one step at a time");
        let mut seen = Seen::default();
        let task = run(&mut d, &mut now, start, &mut seen, |_, to, mad| {
            assert_eq!(to.lid, 7, "the master it was told of");
            let tid = SaMad::parse(mad).unwrap().mad().transaction_id();
            // The third goes unanswered.
            (tid != 2).then(|| reply(mad, MadStatus::OK, tid as u32, &[]))
        });
        let sizes: Vec<usize> = seen.rounds.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 2, 1], "the master's window");
        let Some(Task::Answered(ends)) = task else {
            panic!("the ends come back");
        };
        let modifiers: Vec<Option<u32>> = (ends.iter())
            .map(|e| e.as_ref().ok().map(|a| a.header().mad.attribute_modifier()))
            .collect();
        assert_eq!(modifiers, [Some(0), Some(1), None, Some(3), Some(4)]);
    }

    #[test]
    fn a_push_is_over_once_its_transfers_end_and_a_push_of_no_node_at_once() {
        let now = Instant::now();
        let mut d = driver(now, &[2], 8, Duration::ZERO);
        let node = FabricPort {
            lid: 2,
            gid: gid(2),
        };
        let fill =
            Distribution::new(fill_setup(), vec![node], Tally::default(), None).tables_by(|_| {
                crate::sent_tables::SentTables {
                    default: vec![mad_codec::PathRecord::new_zeroed()],
                    partitions: Vec::new(),
                }
            });
        d.push(now, fill).unwrap();
        assert!(d.poll_task(now).is_none(), "not over before its sends");
        let Some((id, Send::Transfer { dest, header, .. })) = d.poll_send() else {
            panic!("the node's table goes over RMPP");
        };
        assert_eq!(dest.lid, 2);
        assert!(d.poll_send().is_none() && d.poll_task(now).is_none());
        assert_eq!(d.push_progress(), Some((0, 1)));
        let answer = reply(header.as_bytes(), MadStatus::OK, 0, &[]);
        d.handle_end(now, id, Ok(answer));
        let Some(Task::Pushed(fill)) = d.poll_task(now) else {
            panic!("the push is over");
        };
        assert_eq!(d.push_progress(), None, "no push runs");
        assert!(fill.finish().0[0].outcome.done, "the node took its table");
        let empty = Distribution::new(fill_setup(), Vec::new(), Tally::default(), None);
        d.push(now, empty).unwrap();
        assert!(d.poll_send().is_none());
        assert!(matches!(d.poll_task(now), Some(Task::Pushed(_))));
        assert!(d.is_idle());
    }

    /// A fill's setup from next to the master.
    fn fill_setup() -> Setup {
        Setup {
            master: Address::gsi(MASTER, 0),
            sm_sl: 0,
            sm_key: KEY,
            window: 8,
            master_window: 2,
            attempts: 2,
            table_attempts: Attempts {
                timeout: Duration::from_secs(1),
                retries: 1,
            },
            dlids: Vec::new(),
            lease: None,
            keep_holdings: false,
        }
    }
}
