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
        [(64, 1), (65, 1)]
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
        (1, 7, 0, 0),
        "ClassPortInfo, two subscriptions, the canary, the paths, then the names tables"
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
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.answering = false;
    let mut b = Bench::new(master, AgentConfig::default());
    b.advance(Duration::from_secs(30));
    assert!(!b.core.is_ready());
    assert!(b.core.store().is_empty());
    let attempts = b.master.count(AttributeId::PATH_RECORD);
    assert!(
        attempts >= 8,
        "the bulk table was asked for again and again ({attempts})"
    );
    b.master.answering = true;
    b.advance(AgentConfig::default().retry_backoff + AgentConfig::default().upstream_timeout * 4);
    assert!(b.core.is_ready());
    assert_eq!(my_paths(&b), expected_paths(1..=HOSTS));
    assert_eq!(b.master.subscriptions.len(), 2);
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
    assert_eq!(b.master.count(AttributeId::CLASS_PORT_INFO), 1);
    // Subscriptions follow within this port's share of the jitter.
    b.advance(AgentConfig::default().pace.min_window);
    assert_eq!(
        b.master.subscriptions.len(),
        2,
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
