//! Tables in doubt: between the master's sweep after a change and the
//! refresh that follows it — hours away on a fabric whose refreshes the
//! master's share spaces out — the port does not answer from tables that
//! may not show the new routes. Each pair asked goes to the master once
//! and is kept; the refresh ends the doubt.

use std::time::Duration;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, Rate};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, path_records, pr_request, status};
use super::fake_master::FakeMaster;
use super::upkeep::{
    heavy_sweep_unannounced, keyed, light_sweeps, link_changed, load_under_lease, reroute,
};
use crate::agent::AgentConfig;
use crate::pacing::MasterPace;

/// A port whose refreshes the master's share spaces 4,320 s apart (12
/// ports at 0.5 s a record), as at 10,000 ports with the defaults.
fn far_refreshes() -> Bench {
    let config = AgentConfig {
        pace: MasterPace {
            path_cost: Duration::from_millis(500),
            ..MasterPace::default()
        },
        ..AgentConfig::default()
    };
    Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config)
}

/// A client's Get of this port's path to `dlid`: the one record.
fn get(b: &mut Bench, dlid: u16) -> PathRecord {
    let request = pr_request(Method::GET, u64::from(dlid), pr::SLID | pr::DLID, |t| {
        t.set_slid(MY_LID);
        t.set_dlid(dlid);
    });
    let answer = b.query(client(9), &request);
    assert_eq!(status(&answer), MadStatus::OK);
    path_records(&answer)[0]
}

/// PathRecord queries the master got.
fn master_path_queries(b: &Bench) -> usize {
    b.master.count(AttributeId::PATH_RECORD)
}

fn in_doubt(b: &Bench) -> bool {
    b.core.status(b.now).get("tables_in_doubt") == Some("yes")
}

#[test]
fn after_a_change_each_pair_is_asked_of_the_master_once_until_the_refresh() {
    let mut b = far_refreshes();
    let settle = AgentConfig::default().change_settle;
    let held = get(&mut b, 5);
    reroute(&mut b.master, 5);
    link_changed(&mut b);
    let asked = master_path_queries(&b);
    assert_eq!(get(&mut b, 5), held, "while the master sweeps: the tables");
    assert!(!in_doubt(&b));
    b.advance(settle);
    assert!(in_doubt(&b), "settled: the tables may not show it");
    assert_eq!(
        get(&mut b, 5).rate(),
        Rate::GBPS_2_5,
        "the master's new route"
    );
    assert_eq!(master_path_queries(&b), asked + 1, "one pair asked");
    assert_eq!(get(&mut b, 5).rate(), Rate::GBPS_2_5);
    assert_eq!(master_path_queries(&b), asked + 1, "and kept");
    assert_eq!(get(&mut b, 7), held_like(7), "a pair the change left alone");
    assert_eq!(master_path_queries(&b), asked + 2);
    let c = b.core.counters();
    assert_eq!((c.doubts, c.doubt_queries), (1, 3));
    assert_eq!(c.change_refreshes, 0, "no refresh: the master's share");

    // A second change: what the master said before its sweep is asked
    // again once that sweep has settled.
    b.master
        .paths
        .iter_mut()
        .find(|r| r.slid() == MY_LID && r.dlid() == 5)
        .unwrap()
        .set_rate(Rate::GBPS_5);
    link_changed(&mut b);
    b.advance(settle);
    assert_eq!(get(&mut b, 5).rate(), Rate::GBPS_5);
    assert_eq!(master_path_queries(&b), asked + 3);

    // The refresh the changes asked for (no sooner than the share allows
    // after the last one) ends the doubt: the tables answer again.
    let tables = b.master.path_tables();
    b.advance(Duration::from_secs(4_400));
    assert_eq!(b.master.path_tables(), tables + 1, "one refresh");
    assert!(!in_doubt(&b));
    let asked = master_path_queries(&b);
    assert_eq!(get(&mut b, 5).rate(), Rate::GBPS_5);
    assert_eq!(get(&mut b, 7), held_like(7));
    assert_eq!(master_path_queries(&b), asked, "from the tables");
}

/// The master's record to `dlid` as the fake master holds it.
fn held_like(dlid: u16) -> PathRecord {
    super::fake_master::path(MY_LID, dlid)
}

#[test]
fn a_heavy_sweep_no_notice_announced_puts_the_tables_in_doubt_too() {
    let mut b = far_refreshes();
    let poll = AgentConfig::default().sweep_poll;
    light_sweeps(&mut b, poll * 4);
    reroute(&mut b.master, 5);
    heavy_sweep_unannounced(&mut b);
    light_sweeps(&mut b, poll + AgentConfig::default().change_settle);
    assert!(in_doubt(&b));
    assert_eq!(get(&mut b, 5).rate(), Rate::GBPS_2_5);
    let c = b.core.counters();
    assert_eq!((c.sweeps_seen, c.doubts, c.change_refreshes), (1, 1, 0));
}

#[test]
fn a_lease_that_lapses_leaves_the_tables_in_doubt_until_the_port_refreshes() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 120);
    reroute(&mut b.master, 7);
    b.advance(Duration::from_secs(119));
    assert!(!in_doubt(&b), "the distributor keeps them");
    assert_ne!(get(&mut b, 7).rate(), Rate::GBPS_2_5);
    b.advance(Duration::from_secs(1));
    assert!(in_doubt(&b), "its owner silent past the lease");
    assert_eq!(get(&mut b, 7).rate(), Rate::GBPS_2_5, "the master's");
    b.advance(AgentConfig::default().pace.min_window);
    assert!(!in_doubt(&b), "its own table fetched");
}

#[test]
fn where_the_refresh_follows_the_settle_it_ends_the_doubt_at_once() {
    let mut b = Bench::started();
    let settle = AgentConfig::default().change_settle;
    reroute(&mut b.master, 5);
    link_changed(&mut b);
    b.advance(settle + AgentConfig::default().pace.min_window);
    assert!(!in_doubt(&b), "refreshed");
    let asked = master_path_queries(&b);
    assert_eq!(get(&mut b, 5).rate(), Rate::GBPS_2_5);
    assert_eq!(master_path_queries(&b), asked, "from the tables");
    let c = b.core.counters();
    assert_eq!((c.doubts, c.change_refreshes, c.doubt_queries), (1, 1, 0));
}

#[test]
fn a_job_asking_every_peer_in_doubt_costs_the_master_a_few_pairs_and_one_table() {
    let mut b = far_refreshes();
    reroute(&mut b.master, 5);
    link_changed(&mut b);
    b.advance(AgentConfig::default().change_settle);
    let asked = master_path_queries(&b);
    for dlid in 1..=HOSTS {
        let master = *b
            .master
            .paths
            .iter()
            .find(|r| r.slid() == MY_LID && r.dlid() == dlid)
            .unwrap();
        assert_eq!(get(&mut b, dlid), master, "to {dlid}: the master's");
    }
    // The pairs asked on their own before the port's whole table, as the
    // QoS cache asks a key's (one GetTable instead of a query a peer).
    let pairs = usize::from(crate::agent::answers::qos_tables::PAIRS_BEFORE_TABLE);
    assert_eq!(master_path_queries(&b), asked + pairs + 1);
    let c = b.core.counters();
    assert_eq!((c.qos_cache_tables, c.doubt_queries), (1, u64::from(HOSTS)));
    assert!(in_doubt(&b), "the refresh is still the share's");
}
