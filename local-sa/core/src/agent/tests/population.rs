//! Filling the store from the master: at start, by per-destination walk
//! when the bulk table comes back cut, on refresh, on SM change, and what
//! happens while the master is silent.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, my_port, pr_request, status};
use super::fake_master::{Delivery, FakeMaster, gid, path};
use crate::agent::{AgentConfig, PortIdentity};
use crate::pacing::MasterPace;

fn my_paths(b: &Bench) -> Vec<PathRecord> {
    let mut v: Vec<PathRecord> = b.core.store().from_lid(MY_LID).copied().collect();
    v.sort_by_key(PathRecord::dlid);
    v
}

fn expected_paths(dlids: impl IntoIterator<Item = u16>) -> Vec<PathRecord> {
    dlids.into_iter().map(|d| path(MY_LID, d)).collect()
}

#[test]
fn start_registers_and_fetches_this_ports_paths() {
    let b = Bench::started();
    let seen = &b.master.requests;
    assert_eq!(b.master.count(AttributeId::CLASS_PORT_INFO), 1);
    // One subscription per trap, held at QPN 1 so that the exact
    // unsubscribe can be sent later.
    assert_eq!(
        b.master.subscriptions.iter().copied().collect::<Vec<_>>(),
        [(64, 1), (65, 1), (128, 1)]
    );
    let bulk: Vec<_> = seen
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD)
        .collect();
    assert_eq!(bulk.len(), 1, "one bulk GetTable");
    assert_eq!(
        (bulk[0].method, bulk[0].mask),
        (Method::GET_TABLE, pr::SGID)
    );
    assert_eq!(bulk[0].template.sgid(), gid(MY_LID));
    // Byte for byte what the master holds, and nothing else.
    assert_eq!(my_paths(&b), expected_paths(1..=HOSTS));
    assert_eq!(b.core.store().len(), usize::from(HOSTS));
    // The canary ServiceRecord that tells a restarted master.
    assert_eq!(b.master.services.len(), 1);
    let c = b.core.counters();
    assert_eq!(
        (
            c.refreshes,
            c.upstream_queries,
            c.upstream_in_flight,
            c.transfers_active
        ),
        (1, 9, 0, 0),
        "the master's activity, ClassPortInfo, three subscriptions, the canary, the paths, then \
         the names tables"
    );
    assert_eq!(
        b.master.requests[0].attribute,
        AttributeId::SM_INFO_RECORD,
        "the master's activity counted before the table: a sweep while it is fetched is seen"
    );
}

#[test]
fn a_cut_bulk_answer_falls_back_to_per_destination_queries() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.delivery = Delivery::Cut;
    let config = AgentConfig::default();
    let b = Bench::new(master, config);
    assert!(b.core.is_ready());
    // The first 168 bytes of the cut answer hold whole records; what
    // follows them is not a record and must not be stored.
    assert_eq!(my_paths(&b), expected_paths(1..=HOSTS));
    let walk: Vec<u16> = b
        .master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD && s.mask == pr::SGID | pr::DLID)
        .map(|s| s.template.dlid())
        .collect();
    // One query per LID, up to `walk_gap` past the highest that answered.
    let last = HOSTS + config.walk_gap;
    assert_eq!(walk, (1..=last).collect::<Vec<_>>());
}

#[test]
fn a_refresh_sweeps_what_the_master_dropped_and_adds_what_it_gained() {
    let mut b = Bench::started();
    b.master.paths.retain(|p| p.dlid() != 7);
    b.master.paths.push(path(MY_LID, 40));
    // The next refresh comes between 3/4 and 5/4 of the interval.
    let interval = AgentConfig::default().refresh_interval;
    b.advance(interval * 3 / 4 - Duration::from_secs(1));
    assert!(
        b.core.store().get(MY_LID, 7).is_some(),
        "nothing changes before the refresh is due"
    );
    b.advance(interval / 2 + Duration::from_secs(1));
    assert!(b.core.store().get(MY_LID, 7).is_none());
    assert_eq!(
        b.core
            .store()
            .get(MY_LID, 40)
            .map(|p| p.as_bytes().to_vec()),
        Some(path(MY_LID, 40).as_bytes().to_vec())
    );
    assert_eq!(b.core.counters().refreshes, 2);
}

#[test]
fn while_the_master_is_silent_cached_answers_flow_and_misses_fail_after_the_timeout() {
    let mut b = Bench::started();
    b.master.answering = false;
    let before = b.master.requests.len();
    let hit = pr_request(Method::GET, 1, pr::SLID | pr::DLID, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(5);
    });
    let answer = b.ask(client(30), &hit);
    assert_eq!(answer.len(), 1);
    assert_eq!(status(&answer[0]), MadStatus::OK);
    assert_eq!(
        b.master.requests.len(),
        before,
        "a hit costs the master nothing"
    );

    // A path from another port is not cached: it goes upstream, is tried
    // 1 + retries times, and then the asker hears BUSY.
    let config = AgentConfig::default();
    let miss = pr_request(Method::GET, 2, pr::SLID | pr::DLID, |t| {
        t.set_slid(3);
        t.set_dlid(4);
    });
    assert!(b.ask(client(30), &miss).is_empty());
    let total = config.upstream_timeout * (config.upstream_retries + 1);
    b.advance(total - Duration::from_millis(1));
    assert!(
        b.take_sent(30).is_empty(),
        "no answer before the last attempt times out"
    );
    b.advance(Duration::from_millis(1));
    let failed = b.take_sent(30);
    assert_eq!(failed.len(), 1);
    assert_eq!(status(&failed[0]), MadStatus::BUSY);
    let forwarded = b.master.requests[before..]
        .iter()
        .filter(|s| s.template.slid() == 3)
        .count();
    assert_eq!(forwarded, 1 + config.upstream_retries as usize);
    let c = b.core.counters();
    assert_eq!(
        (c.upstream_failures, c.queries_waiting, c.upstream_in_flight),
        (1, 0, 0)
    );
}

#[test]
fn an_agent_started_without_a_master_keeps_trying_and_fills_once_it_answers() {
    let config = AgentConfig::default();
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.answering = false;
    let mut b = Bench::new(master, config);
    // Until its first refresh has ended, the agent asks for nothing but
    // the table, the master's ClassPortInfo and its activity, and not for
    // the table twice within the table time-out: a master that has it
    // queued is not made to compute it twice.
    b.advance(config.table_timeout - Duration::from_millis(1));
    assert_eq!(path_tables(&b.master), 1, "the table, once");
    assert_eq!(
        b.master.requests.len(),
        1 + b.master.count(AttributeId::CLASS_PORT_INFO)
            + b.master.count(AttributeId::SM_INFO_RECORD),
        "nothing else"
    );
    b.advance(Duration::from_secs(300));
    assert!(!b.core.is_ready());
    assert!(b.core.store().is_empty());
    let attempts = path_tables(&b.master);
    assert!(
        (6..=20).contains(&attempts),
        "the table again and again, less and less often ({attempts})"
    );
    assert!(
        !b.master.subscriptions.is_empty() || b.master.count(AttributeId::INFORM_INFO) > 0,
        "registered once the first refresh failed"
    );
    b.master.answering = true;
    b.advance(config.retry_backoff + config.pace.max_window + config.table_timeout);
    assert!(b.core.is_ready());
    assert_eq!(my_paths(&b), expected_paths(1..=HOSTS));
    assert_eq!(b.master.subscriptions.len(), 3);
}

/// A table the master leaves unanswered is asked for again after the
/// port's own time-out (the table time-out and its phase of half as long
/// again), and a refresh that failed is tried again after the back-off and
/// the port's phase of a window that doubles with each failure: ports
/// turned away together come back spread.
#[test]
fn failed_refreshes_come_back_later_each_time() {
    let config = AgentConfig::default();
    let attempts = 1 + config.upstream_retries as usize;
    let asked = |lid: u16| -> Vec<Duration> {
        let mut master = FakeMaster::new(MASTER_LID, HOSTS);
        master.answering = false;
        let mut b = Bench::for_port(master, lid);
        assert_eq!(path_tables(&b.master), 1);
        let mut asked = vec![Duration::ZERO];
        let step = Duration::from_millis(250);
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(900) {
            let before = path_tables(&b.master);
            b.advance(step);
            t += step;
            if path_tables(&b.master) > before {
                asked.push(t);
            }
        }
        asked
    };
    let slack = Duration::from_millis(250);
    let (mut spacings, mut fifth) = (Vec::new(), Vec::new());
    for lid in [2, 3, 4, 5] {
        let asked = asked(lid);
        let rounds: Vec<&[Duration]> = asked.chunks_exact(attempts).collect();
        assert!(rounds.len() >= 6, "{asked:?}");
        // Within a refresh, the attempts are the port's time-out apart.
        let spacing = rounds[0][1] - rounds[0][0];
        assert!(
            spacing + slack >= config.table_timeout
                && spacing <= config.table_timeout * 3 / 2 + slack,
            "{asked:?}"
        );
        for round in &rounds {
            for w in round.windows(2) {
                assert!((w[1] - w[0]).abs_diff(spacing) <= slack, "{asked:?}");
            }
        }
        // From the last attempt's time-out to the next refresh.
        let waits: Vec<Duration> = rounds
            .windows(2)
            .map(|r| r[1][0] - r[0][attempts - 1] - spacing)
            .collect();
        assert!(waits[0] + slack >= config.retry_backoff, "{waits:?}");
        assert!(
            waits.windows(2).all(|w| w[1] + slack >= w[0]),
            "each wait at least the one before: {waits:?}"
        );
        assert!(
            waits
                .iter()
                .all(|w| *w <= config.retry_backoff + config.pace.max_window + slack),
            "{waits:?}"
        );
        spacings.push(spacing);
        fifth.push(waits[4]);
    }
    // Four ports, four phases: their attempts and their refreshes apart.
    for phases in [&mut spacings, &mut fifth] {
        phases.sort();
        phases.dedup_by(|a, b| a.abs_diff(*b) < Duration::from_millis(500));
        assert!(phases.len() >= 3, "{phases:?}");
    }
}

#[test]
fn a_new_master_gets_the_registrations_and_the_refresh() {
    let mut b = Bench::started();
    // The SM moves to LID 3: a master that knows nothing of this agent.
    let mut fresh = FakeMaster::new(3, HOSTS);
    fresh.paths.retain(|p| p.dlid() != 9);
    b.master = fresh;
    let moved = PortIdentity {
        sm_lid: 3,
        ..my_port()
    };
    b.core.handle_port_change(b.now, moved);
    b.pump();
    assert!(b.master.requests.is_empty(), "nothing at once");
    // ClassPortInfo and subscriptions follow within this port's share of
    // the jitter.
    b.advance(AgentConfig::default().pace.min_window);
    assert_eq!(b.master.count(AttributeId::CLASS_PORT_INFO), 1);
    assert_eq!(
        b.master.subscriptions.len(),
        3,
        "subscribed again at the new master"
    );
    assert_eq!(
        b.master.count(AttributeId::PATH_RECORD),
        1,
        "and fetched the paths from it"
    );
    assert!(
        b.core.store().get(MY_LID, 9).is_none(),
        "the new master's view replaced the old"
    );
    assert_eq!(b.core.store().len(), usize::from(HOSTS) - 1);
}

#[test]
fn shutdown_withdraws_the_subscriptions() {
    let mut b = Bench::started();
    // Traps 64, 65 and 128 held at the master before.
    assert_eq!(b.master.subscriptions.len(), 3);
    b.core.begin_shutdown(b.now);
    b.pump();
    assert!(b.master.subscriptions.is_empty());
    assert!(b.core.is_idle());
    let before = b.master.requests.len();
    b.advance(AgentConfig::default().refresh_interval * 2);
    assert_eq!(
        b.master.requests.len(),
        before,
        "no refresh after shutdown began"
    );
}

#[test]
fn ports_started_together_audit_at_their_own_phase() {
    use mad_codec::Method;
    let interval = AgentConfig::default().audit_interval;
    let audited = |lid: u16| -> Duration {
        let mut b = Bench::for_port(FakeMaster::new(MASTER_LID, HOSTS), lid);
        let canary_gets = |b: &Bench| {
            b.master
                .requests
                .iter()
                .filter(|s| s.attribute == AttributeId::SERVICE_RECORD && s.method == Method::GET)
                .count()
        };
        let mut waited = Duration::ZERO;
        while canary_gets(&b) == 0 {
            assert!(waited <= interval, "no audit within one interval");
            b.advance(Duration::from_secs(1));
            waited += Duration::from_secs(1);
        }
        waited
    };
    let phases: Vec<Duration> = [2, 3, 4, 5].into_iter().map(audited).collect();
    for p in &phases {
        assert!(*p >= interval / 2 && *p <= interval, "{phases:?}");
    }
    let mut distinct = phases.clone();
    distinct.dedup();
    assert!(distinct.len() > 1, "not all at once: {phases:?}");
}

/// How long after `start` the first request matching `asked` went to the
/// master, looking once a second up to `limit`.
fn waited_for(b: &mut Bench, limit: Duration, asked: impl Fn(&FakeMaster) -> bool) -> Duration {
    let mut waited = Duration::ZERO;
    while !asked(&b.master) {
        assert!(waited <= limit, "nothing within {limit:?}");
        b.advance(Duration::from_secs(1));
        waited += Duration::from_secs(1);
    }
    waited
}

fn path_tables(m: &FakeMaster) -> usize {
    m.count(AttributeId::PATH_RECORD)
}

#[test]
fn ports_started_together_refresh_at_their_own_phase() {
    let interval = AgentConfig::default().refresh_interval;
    let refreshed = |lid: u16| -> Duration {
        let mut b = Bench::for_port(FakeMaster::new(MASTER_LID, HOSTS), lid);
        let first = path_tables(&b.master);
        waited_for(&mut b, interval * 2, |m| path_tables(m) > first)
    };
    let phases: Vec<Duration> = [2, 3, 4, 5, 6].into_iter().map(refreshed).collect();
    for p in &phases {
        assert!(
            *p >= interval * 3 / 4 && *p <= interval * 5 / 4,
            "{phases:?}"
        );
    }
    let mut distinct = phases.clone();
    distinct.dedup();
    assert!(distinct.len() > 1, "not all at once: {phases:?}");
}

/// After a new master, the refresh waits this port's share of a window of
/// N² paths at the configured rate: in a fabric twice as large, four times
/// as long; cached answers flow meanwhile.
#[test]
fn after_a_new_master_the_refresh_waits_longer_in_a_larger_fabric() {
    let config = AgentConfig {
        pace: MasterPace {
            paths_per_second: 1,
            max_window: Duration::from_secs(100_000),
            ..MasterPace::default()
        },
        ..AgentConfig::default()
    };
    let delay = |hosts: u16| -> Duration {
        let mut b = Bench::new(FakeMaster::new(MASTER_LID, hosts), config);
        assert!(b.core.is_ready());
        let moved = PortIdentity {
            sm_lid: 3,
            ..my_port()
        };
        b.master = FakeMaster::new(3, hosts);
        b.core.handle_port_change(b.now, moved);
        b.pump();
        assert_eq!(path_tables(&b.master), 0, "not at once");
        let get = pr_request(Method::GET, 1, pr::SLID | pr::DLID, |t| {
            t.set_slid(MY_LID);
            t.set_dlid(6);
        });
        let answer = b.query(client(5), &get);
        assert_eq!(status(&answer), MadStatus::OK, "served from the cache");
        let window = Duration::from_secs(u64::from(hosts) * u64::from(hosts));
        waited_for(&mut b, window, |m| path_tables(m) > 0)
    };
    let (small, large) = (delay(20), delay(40));
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(
        small > Duration::from_secs(1) && (3.8..4.2).contains(&ratio),
        "{small:?} then {large:?}"
    );
}

/// Re-registration with a new master waits this port's share of a window
/// of N × (its registrations) requests at the configured rate.
#[test]
fn after_a_new_master_registrations_spread_over_a_window_growing_with_the_fabric() {
    let config = AgentConfig {
        pace: MasterPace {
            registrations_per_second: 1,
            max_window: Duration::from_secs(100_000),
            ..MasterPace::default()
        },
        ..AgentConfig::default()
    };
    let delay = |hosts: u16| -> Duration {
        let mut b = Bench::new(FakeMaster::new(MASTER_LID, hosts), config);
        // The start's registrations are paced too; wait for them.
        let limit = Duration::from_secs(u64::from(hosts) * 10);
        waited_for(&mut b, limit, |m| !m.subscriptions.is_empty());
        b.master = FakeMaster::new(3, hosts);
        let moved = PortIdentity {
            sm_lid: 3,
            ..my_port()
        };
        b.core.handle_port_change(b.now, moved);
        b.pump();
        let limit = Duration::from_secs(u64::from(hosts) * 10);
        waited_for(&mut b, limit, |m| !m.subscriptions.is_empty())
    };
    let (small, large) = (delay(20), delay(40));
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(
        small > Duration::from_secs(1) && (1.9..2.1).contains(&ratio),
        "{small:?} then {large:?}"
    );
}

#[test]
fn a_query_naming_a_pkey_is_answered_from_the_cache_as_soon_as_the_table_is_in() {
    // Registrations far off: only what the first table brings happens.
    let mut config = AgentConfig::default();
    config.pace.min_window = Duration::from_secs(3600);
    config.pace.max_window = Duration::from_secs(3600);
    let now = std::time::Instant::now();
    let mut b = Bench {
        core: crate::SaCore::new(config, my_port(), now, 7),
        master: FakeMaster::new(MASTER_LID, HOSTS),
        now,
        sent: std::collections::VecDeque::new(),
    };
    b.pump();
    assert!(b.core.is_ready());
    assert!(b.master.subscriptions.is_empty(), "not registered yet");
    // As the ibacm and kernel doors ask: with the P_Key.
    let asked = b.master.requests.len();
    let answer = b.query(
        client(30),
        &pr_request(Method::GET, 0x61, pr::SLID | pr::DLID | pr::PKEY, |t| {
            t.set_slid(MY_LID);
            t.set_dlid(5);
            t.set_pkey(0xFFFF);
        }),
    );
    assert_eq!(status(&answer), MadStatus::OK);
    assert_eq!(
        b.master.requests.len(),
        asked,
        "answered from the cache: the master's ClassPortInfo came with the table"
    );
}

#[test]
fn while_the_masters_class_port_info_is_asked_a_query_naming_a_pkey_waits_for_it() {
    let now = std::time::Instant::now();
    let mut b = Bench {
        core: crate::SaCore::new(AgentConfig::default(), my_port(), now, 7),
        master: FakeMaster::new(MASTER_LID, HOSTS),
        now,
        sent: std::collections::VecDeque::new(),
    };
    // At start: the master's activity and ClassPortInfo, then the table.
    // The master answers the table first.
    let sent: Vec<_> = std::iter::from_fn(|| b.core.poll_transmit()).collect();
    assert_eq!(sent.len(), 3, "the activity, ClassPortInfo and the table");
    b.master.handle(b.now, &sent[2].mad);
    b.pump();
    assert!(b.core.is_ready());
    let pkey_query = pr_request(Method::GET, 0x62, pr::SLID | pr::DLID | pr::PKEY, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(5);
        t.set_pkey(0xFFFF);
    });
    b.deliver(client(30), &pkey_query);
    let out: Vec<_> = std::iter::from_fn(|| b.core.poll_transmit()).collect();
    assert!(out.is_empty(), "neither answered nor forwarded: {out:?}");
    // The ClassPortInfo's answer releases it, answered from the cache.
    b.master.handle(b.now, &sent[1].mad);
    b.pump();
    let answers = b.take_sent(30);
    assert_eq!(answers.len(), 1);
    assert_eq!(status(&answers[0]), MadStatus::OK);
    assert_eq!(
        b.master.count(AttributeId::PATH_RECORD),
        1,
        "only the table"
    );
    assert_eq!(b.core.counters().coalesced, 1);
}
