//! Tables kept across a restart: taken back at start instead of asked of
//! the master when they are this port's, from the same master, recent (or
//! under a lease still running) and not awaiting a change's refresh;
//! checked against the master soon after; refused otherwise, and the
//! port then fetches its own as ever.

use std::time::Duration;

use mad_codec::{AttributeId, Method, Rate, TrapDetails};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, my_port};
use super::fake_master::{FakeMaster, path};
use super::loads::{KEY, load_header, push};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::kept_tables::{Kept, NotTaken};
use crate::load_flags::{REPLACE_SOURCES, with_lease};

/// Unix time when the predecessor kept its tables.
const KEPT_AT: u64 = 1_800_000_000;

/// A predecessor's tables, kept at [`KEPT_AT`].
fn kept() -> Kept {
    let b = Bench::started();
    b.core.keep_tables(b.now, KEPT_AT).expect("complete tables")
}

#[test]
fn kept_tables_are_answered_at_once_and_only_a_few_paths_asked_of_the_master() {
    let (mut b, taken) = Bench::restored(
        FakeMaster::new(MASTER_LID, HOSTS),
        AgentConfig::default(),
        kept(),
        KEPT_AT + 30,
    );
    assert_eq!(taken, Ok(usize::from(HOSTS)));
    assert!(b.core.is_ready(), "ready before the master said anything");
    assert_eq!(b.master.path_tables(), 0, "no table asked");
    assert_eq!(b.core.counters().refreshes_kept, 1);
    b.advance(Duration::from_secs(5));
    let config = AgentConfig::default();
    assert_eq!(
        b.master.path_tables(),
        config.check_sample,
        "the check's few paths"
    );
    assert_eq!(b.core.counters().checks_passed, 1);
    assert_eq!(b.core.store().get(MY_LID, 7), Some(&path(MY_LID, 7)));
}

#[test]
fn kept_tables_are_served_while_the_master_does_not_answer() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.answering = false;
    let (mut b, taken) = Bench::restored(master, AgentConfig::default(), kept(), KEPT_AT + 30);
    assert!(taken.is_ok());
    b.advance(Duration::from_secs(60));
    assert!(b.core.is_ready());
    assert_eq!(b.core.store().len(), usize::from(HOSTS), "nothing dropped");
    let c = b.core.counters();
    assert_eq!(
        (c.checks_passed, c.checks_failed),
        (0, 0),
        "checked once it answers"
    );
}

#[test]
fn a_check_that_finds_a_reroute_fetches_the_port_s_own_tables() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    for r in master.paths.iter_mut().filter(|r| r.slid() == MY_LID) {
        r.set_rate(Rate::GBPS_2_5);
    }
    let config = AgentConfig {
        check_sample: usize::from(HOSTS),
        ..AgentConfig::default()
    };
    let (mut b, _) = Bench::restored(master, config, kept(), KEPT_AT + 30);
    b.advance(Duration::from_secs(30));
    assert_eq!(b.core.counters().checks_failed, 1);
    // A Get for each other port, then the table.
    assert_eq!(
        b.master.path_tables(),
        usize::from(HOSTS - 1) + 1,
        "the check, then the table"
    );
    assert_eq!(
        b.core.store().get(MY_LID, 7).map(|r| r.rate()),
        Some(Rate::GBPS_2_5)
    );
}

#[test]
fn tables_of_another_port_master_or_age_are_refused_and_fetched_as_ever() {
    let config = AgentConfig::default();
    let stale = KEPT_AT + config.refresh_interval.as_secs() + 1;
    let is_other_port: fn(&NotTaken) -> bool = |n| matches!(n, NotTaken::OtherPort { .. });
    let is_other_master: fn(&NotTaken) -> bool =
        |n| matches!(n, NotTaken::OtherMaster { kept: 7, .. });
    let is_too_old: fn(&NotTaken) -> bool = |n| matches!(n, NotTaken::TooOld { .. });
    let cases = [
        (Kept { lid: 9, ..kept() }, KEPT_AT, "LID 9", is_other_port),
        (
            Kept {
                sm_lid: 7,
                ..kept()
            },
            KEPT_AT,
            "master at LID 7",
            is_other_master,
        ),
        (
            kept(),
            stale,
            "longer than the refresh interval",
            is_too_old,
        ),
    ];
    for (k, wall, why, is) in cases {
        let (b, taken) = Bench::restored(FakeMaster::new(MASTER_LID, HOSTS), config, k, wall);
        let refusal = taken.expect_err(why);
        assert!(is(&refusal), "{refusal:?}");
        assert!(refusal.to_string().contains(why), "{refusal}");
        assert_eq!(
            b.master.path_tables(),
            1,
            "{why}: its own table, as at any start"
        );
        assert_eq!(b.core.counters().refreshes_kept, 0);
    }
}

#[test]
fn tables_awaiting_a_change_s_refresh_are_not_kept() {
    let mut b = Bench::started();
    b.master.report(TrapDetails::LinkStateChange { lid: 200 });
    b.pump();
    assert!(
        b.core.keep_tables(b.now, KEPT_AT).is_none(),
        "a change is pending"
    );
    b.advance(Duration::from_secs(10));
    assert!(
        b.core.keep_tables(b.now, KEPT_AT).is_some(),
        "refreshed since"
    );
}

#[test]
fn a_lease_kept_with_the_tables_still_holds_off_refreshes() {
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..AgentConfig::default()
    };
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    let mine: Vec<_> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    push(
        &mut b,
        load_header(Method::SET, 9, KEY, with_lease(REPLACE_SOURCES, 3_000)),
        &mine,
    );
    let k = b.core.keep_tables(b.now, KEPT_AT).expect("kept");
    assert_eq!(
        k.lease.map(|(lid, _, length)| (lid, length)),
        Some((50, 3_000))
    );
    // Kept an hour ago: too old for a table of its own, but the lease
    // runs for 3,000 s from then.
    let (mut b, taken) = Bench::restored(
        FakeMaster::new(MASTER_LID, HOSTS),
        config,
        k.clone(),
        KEPT_AT + 1_000,
    );
    assert!(taken.is_ok());
    assert_eq!(
        b.core.status(b.now).get("kept_by"),
        Some("distributor lid=50")
    );
    b.advance(Duration::from_secs(1_900));
    assert_eq!(
        b.master.path_tables(),
        config.check_sample,
        "only the check"
    );
    let gone = KEPT_AT + 4_000;
    let (_, taken) = Bench::restored(FakeMaster::new(MASTER_LID, HOSTS), config, k, gone);
    assert!(taken.is_err(), "the lease has ended");
    assert_eq!(my_port().lid, MY_LID);
}

#[test]
fn the_host_names_are_kept_too_and_not_fetched_again() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    for lid in 1..=HOSTS {
        master.descriptions.insert(lid, format!("node{lid} mlx5_0"));
    }
    let mut b = Bench::new(master, AgentConfig::default());
    b.advance(Duration::from_secs(5));
    let k = b.core.keep_tables(b.now, KEPT_AT).expect("kept");
    assert_eq!(
        k.names.as_ref().map(Vec::len),
        Some(usize::from(HOSTS)),
        "every host's name"
    );
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    for lid in 1..=HOSTS {
        master.descriptions.insert(lid, format!("node{lid} mlx5_0"));
    }
    let (mut b, taken) = Bench::restored(master, AgentConfig::default(), k, KEPT_AT + 30);
    assert!(taken.is_ok());
    b.advance(Duration::from_secs(60));
    assert_eq!(b.core.counters().names, u64::from(HOSTS));
    assert_eq!(
        b.master.count(AttributeId::NODE_RECORD),
        0,
        "no names table asked"
    );
}
