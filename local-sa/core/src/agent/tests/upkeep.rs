//! Who keeps the port's tables fresh: the port itself (a refresh after a
//! fabric change once the master has rerouted; a periodic one whose
//! interval grows with the fabric) or a distributor's lease (no refresh
//! while it runs, a few paths checked against the master now and then,
//! the tables taken back when the distributor falls silent).

use std::time::Duration;

use bytes::Bytes;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, Rate, SaMadBuilder, TrapDetails};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, padded, status};
use super::fake_master::{FakeMaster, path};
use super::loads::{KEY, LOADER, load_header, push, push_from};
use crate::agent::AgentConfig;
use crate::config::SmKey;
use crate::load_flags::{LEASE, RENEW_ONLY, REPLACE_SOURCES, with_lease};
use crate::pacing::MasterPace;

/// The destinations the checks asked the master about, in order.
fn checked_dlids(b: &Bench) -> Vec<u16> {
    b.master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD && s.mask.contains(pr::DLID))
        .map(|s| s.template.dlid())
        .collect()
}

/// The whole tables the agent fetched from the master (GetTables of
/// the port's paths, not of a pair as the checks ask).
fn whole_tables(b: &Bench) -> usize {
    b.master
        .requests
        .iter()
        .filter(|s| s.attribute == AttributeId::PATH_RECORD && s.method == Method::GET_TABLE)
        .filter(|s| !s.mask.contains(pr::DLID))
        .count()
}

/// The record the agent serves for (MY_LID, `dlid`).
fn served(b: &Bench, dlid: u16) -> PathRecord {
    *b.core.store().get(MY_LID, dlid).expect("a record")
}

/// A switch's link changed (trap 128).
pub(super) fn link_changed(b: &mut Bench) {
    b.master.report(TrapDetails::LinkStateChange { lid: 200 });
    b.pump();
}

/// The master's record for (MY_LID, `dlid`) gets another rate, as after
/// a reroute over a slower link.
pub(super) fn reroute(master: &mut FakeMaster, dlid: u16) {
    let r = master
        .paths
        .iter_mut()
        .find(|r| r.slid() == MY_LID && r.dlid() == dlid)
        .expect("the pair");
    r.set_rate(Rate::GBPS_2_5);
}

pub(super) fn keyed(config: AgentConfig) -> Bench {
    let config = AgentConfig {
        sm_key: Some(SmKey::new(KEY)),
        ..config
    };
    Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config)
}

/// The port's whole table, as the master has it, loaded by a distributor
/// with a lease of `seconds`.
pub(super) fn load_under_lease(b: &mut Bench, seconds: u16) {
    let mine: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    let flags = with_lease(REPLACE_SOURCES, seconds);
    let answer = push(b, load_header(Method::SET, 9, KEY, flags), &mine);
    assert_eq!(status(&answer), MadStatus::OK);
}

/// A lease renewal (a Set with LEASE and RENEW_ONLY) carrying `key`.
pub(super) fn renewal(key: u64, modifier: u32) -> Bytes {
    let mut b = SaMadBuilder::request(Method::SET, 0x77, AttributeId::PATH_RECORD)
        .record(&PathRecord::new_zeroed());
    b.header_mut().sa.set_sm_key(key);
    b.header_mut().mad.set_attribute_modifier(modifier);
    padded(&b.into_bytes())
}

fn renew(b: &mut Bench, seconds: u16) -> MadStatus {
    let answer = b.ask(
        client(LOADER),
        &renewal(KEY, with_lease(RENEW_ONLY, seconds)),
    );
    assert_eq!(answer.len(), 1, "one answer");
    status(&answer[0])
}

#[test]
fn a_link_change_refreshes_once_the_master_has_rerouted() {
    let mut b = Bench::started();
    let settle = AgentConfig::default().change_settle;
    let before = b.master.path_tables();
    reroute(&mut b.master, 5);
    link_changed(&mut b);
    assert_eq!(b.core.counters().change_notices, 1);
    b.advance(settle - Duration::from_millis(100));
    assert_eq!(
        b.master.path_tables(),
        before,
        "not while the master sweeps"
    );
    assert_ne!(served(&b, 5).rate(), Rate::GBPS_2_5);
    // The settle time, then the port's phase of the (shortest) window.
    b.advance(Duration::from_millis(100) + AgentConfig::default().pace.min_window);
    assert_eq!(b.master.path_tables(), before + 1, "one refresh");
    assert_eq!(served(&b, 5).rate(), Rate::GBPS_2_5, "the new route's rate");
    assert_eq!(b.core.counters().change_refreshes, 1);
}

#[test]
fn notices_in_a_row_cost_one_refresh_after_the_last() {
    let mut b = Bench::started();
    let before = b.master.path_tables();
    for _ in 0..3 {
        link_changed(&mut b);
        b.advance(Duration::from_secs(2));
    }
    assert_eq!(b.master.path_tables(), before, "the sweep is still going");
    b.advance(Duration::from_secs(10));
    assert_eq!(b.master.path_tables(), before + 1);
    assert_eq!(b.core.counters().change_notices, 3);
    assert_eq!(b.core.counters().change_refreshes, 1);
}

#[test]
fn a_fabric_too_large_for_the_interval_refreshes_within_the_masters_share() {
    // 12 ports: 3 × 144 records (paths and names) at 0.5 s each is 216
    // s of the master's time per round; at 5 % that is a round every
    // 4,320 s, not every 600.
    let config = AgentConfig {
        pace: MasterPace {
            path_cost: Duration::from_millis(500),
            ..MasterPace::default()
        },
        ..AgentConfig::default()
    };
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    let status = b.core.status(b.now);
    assert_eq!(status.get("refresh_interval_s"), Some("4320"));
    assert_eq!(status.get("worst_staleness_s"), Some("5400"));
    let before = b.master.path_tables();
    b.advance(Duration::from_secs(3_239));
    assert_eq!(
        b.master.path_tables(),
        before,
        "no refresh before 3/4 of 4,320 s"
    );
    b.advance(Duration::from_secs(2_162));
    assert_eq!(b.master.path_tables(), before + 1);
}

#[test]
fn a_lease_holds_off_every_refresh_while_the_distributor_renews_it() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 180);
    let before = b.master.path_tables();
    let status = b.core.status(b.now);
    assert_eq!(status.get("kept_by"), Some("distributor lid=50"));
    for _ in 0..30 {
        b.advance(Duration::from_secs(60));
        assert_eq!(renew(&mut b, 180), MadStatus::OK);
    }
    link_changed(&mut b);
    b.advance(Duration::from_secs(60));
    assert_eq!(
        b.master.path_tables(),
        before,
        "30 minutes, three refresh intervals and a link change: nothing asked"
    );
    let c = b.core.counters();
    assert_eq!((c.lease_renewals, c.change_refreshes), (31, 0));
}

#[test]
fn a_silent_distributor_hands_the_tables_back_after_its_lease() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 120);
    let before = whole_tables(&b);
    reroute(&mut b.master, 7);
    b.advance(Duration::from_secs(119));
    assert_eq!(whole_tables(&b), before, "the lease runs");
    b.advance(Duration::from_secs(1) + AgentConfig::default().pace.min_window);
    assert_eq!(whole_tables(&b), before + 1, "its own table, once");
    assert_eq!(served(&b, 7).rate(), Rate::GBPS_2_5);
    assert_eq!(b.core.counters().leases_lapsed, 1);
    assert_eq!(
        b.core.status(b.now).get("kept_by"),
        Some("this port"),
        "it keeps its own tables from now on"
    );
    // And a change notice is its own again.
    link_changed(&mut b);
    b.advance(Duration::from_secs(10));
    assert_eq!(whole_tables(&b), before + 2);
}

/// A renewal from the distributor at `lid`: its status, and the
/// answer's AttributeModifier (the lease's owner when refused).
fn renew_from(b: &mut Bench, lid: u16, seconds: u16) -> (MadStatus, u32) {
    let answer = b.ask(client(lid), &renewal(KEY, with_lease(RENEW_ONLY, seconds)));
    assert_eq!(answer.len(), 1, "one answer");
    let header = mad_codec::SaMadHeader::parse(&answer[0]).unwrap().0;
    (header.mad.status(), header.mad.attribute_modifier())
}

#[test]
fn while_the_owner_renews_another_distributor_is_refused_and_told_who_owns_the_lease() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 180);
    let other = LOADER + 1;
    for _ in 0..5 {
        b.advance(Duration::from_secs(8));
        assert_eq!(renew(&mut b, 180), MadStatus::OK);
        assert_eq!(
            renew_from(&mut b, other, 180),
            (MadStatus::ERR_REQ_DENIED, u32::from(LOADER)),
            "the owner renews every 8 s: the lease is its"
        );
    }
    // Its tables cannot be replaced by the other either.
    let records = b.core.store().len();
    let theirs = [path(MY_LID, 3)];
    let refused = push_from(
        &mut b,
        other,
        load_header(Method::SET, 11, KEY, with_lease(REPLACE_SOURCES, 180)),
        &theirs,
    );
    assert_eq!(status(&refused), MadStatus::ERR_REQ_DENIED);
    assert_eq!(
        b.core.store().len(),
        records,
        "nothing of the other's stored"
    );
    assert_eq!(b.core.counters().loads_fenced, 6);
    assert_eq!(
        b.core.status(b.now).get("kept_by"),
        Some("distributor lid=50")
    );
    assert_eq!(
        b.core.status(b.now).get("lease_renewed_every_ms"),
        Some("8000")
    );
}

#[test]
fn an_owner_silent_for_two_renewals_is_gone_the_port_checks_at_once_and_another_takes_over() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 600);
    for _ in 0..3 {
        b.advance(Duration::from_secs(8));
        assert_eq!(renew(&mut b, 600), MadStatus::OK);
    }
    // The owner dies; the master reroutes a path no notice announces.
    reroute(&mut b.master, 7);
    let before = whole_tables(&b);
    b.advance(Duration::from_secs(15));
    assert_eq!(
        b.core.counters().leases_lapsed,
        0,
        "one interval late: not yet"
    );
    assert!(checked_dlids(&b).is_empty());
    b.advance(Duration::from_secs(2));
    assert_eq!(b.core.counters().leases_lapsed, 1, "two: gone, 583 s early");
    b.advance(Duration::from_secs(6));
    assert!(!checked_dlids(&b).is_empty(), "its paths checked at once");
    assert_eq!(whole_tables(&b), before + 1, "the check differed");
    assert_eq!(served(&b, 7).rate(), Rate::GBPS_2_5, "right 23 s after");
    assert_eq!(b.core.status(b.now).get("kept_by"), Some("this port"));
    // A standby distributor takes the lease; the old owner is fenced off.
    let standby = LOADER + 1;
    assert_eq!(renew_from(&mut b, standby, 600), (MadStatus::OK, 0));
    assert_eq!(
        renew_from(&mut b, LOADER, 600),
        (MadStatus::ERR_REQ_DENIED, u32::from(standby)),
        "the old owner, back, is refused"
    );
    assert_eq!(
        b.core.status(b.now).get("kept_by"),
        Some("distributor lid=51")
    );
}

#[test]
fn a_lease_of_zero_ends_it_and_the_periodic_refresh_resumes() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 180);
    assert_eq!(renew(&mut b, 0), MadStatus::OK);
    let before = b.master.path_tables();
    assert_eq!(b.core.status(b.now).get("kept_by"), Some("this port"));
    let interval = AgentConfig::default().refresh_interval;
    b.advance(interval * 5 / 4);
    assert_eq!(b.master.path_tables(), before + 1, "the interval's refresh");
}

#[test]
fn a_renewal_needs_the_key_and_a_lease_and_changes_nothing_else() {
    let mut b = keyed(AgentConfig::default());
    let records = b.core.store().len();
    let denied = b.ask(client(LOADER), &renewal(0x1234, with_lease(RENEW_ONLY, 60)));
    assert_eq!(status(&denied[0]), MadStatus::ERR_REQ_DENIED);
    let invalid = b.ask(client(LOADER), &renewal(KEY, RENEW_ONLY));
    assert_eq!(status(&invalid[0]), MadStatus::ERR_REQ_INVALID);
    assert_eq!(b.core.counters().lease_renewals, 0);
    assert_eq!(b.core.status(b.now).get("kept_by"), Some("this port"));
    assert_eq!(renew(&mut b, 60), MadStatus::OK);
    assert_eq!(b.core.store().len(), records, "a renewal stores nothing");
    assert_eq!(b.core.counters().lease_renewals, 1);
}

#[test]
fn a_check_finds_a_distributors_wrong_record_and_the_master_wins() {
    let config = AgentConfig {
        check_interval: Duration::from_secs(600),
        check_sample: usize::from(HOSTS),
        ..AgentConfig::default()
    };
    let mut b = keyed(config);
    load_under_lease(&mut b, 3_600);
    let before = b.master.path_tables();
    // The distributor missed a reroute.
    reroute(&mut b.master, 9);
    b.advance(Duration::from_secs(600));
    let c = b.core.counters();
    assert_eq!((c.checks_passed, c.checks_failed), (0, 1));
    assert!(
        b.master.path_tables() > before + 1,
        "the check's Gets, then the table"
    );
    assert_eq!(served(&b, 9).rate(), Rate::GBPS_2_5, "the master's record");
}

#[test]
fn a_check_of_a_right_table_costs_the_master_only_its_sample() {
    let config = AgentConfig {
        check_interval: Duration::from_secs(600),
        ..AgentConfig::default()
    };
    let mut b = keyed(config);
    load_under_lease(&mut b, 3_600);
    let before = b.master.path_tables();
    b.advance(Duration::from_secs(600));
    assert_eq!(b.core.counters().checks_passed, 1);
    assert_eq!(
        b.master.path_tables(),
        before + config.check_sample,
        "one per destination checked, no table"
    );
    let asked = checked_dlids(&b);
    b.advance(Duration::from_secs(600));
    let again = checked_dlids(&b)[config.check_sample..].to_vec();
    assert_ne!(asked, again, "another sample each time");
    assert!(asked.iter().all(|d| *d != MY_LID && *d >= 1 && *d <= HOSTS));
}

#[test]
fn a_load_without_a_lease_keeps_the_periodic_refresh() {
    let mut b = keyed(AgentConfig::default());
    let mine: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    push(
        &mut b,
        load_header(Method::SET, 9, KEY, REPLACE_SOURCES),
        &mine,
    );
    assert_eq!(LEASE & REPLACE_SOURCES, 0);
    assert_eq!(b.core.status(b.now).get("kept_by"), Some("this port"));
    let before = b.master.path_tables();
    b.advance(AgentConfig::default().refresh_interval * 5 / 4);
    assert_eq!(b.master.path_tables(), before + 1);
}

/// The master's light sweeps for `span`: every 10 s its SM sends an SMP
/// to each of its five switches.
pub(super) fn light_sweeps(b: &mut Bench, span: Duration) {
    for _ in 0..span.as_secs() / 10 {
        b.master.act_count += 5;
        b.advance(Duration::from_secs(10));
    }
}

/// The master's heavy sweep after a link went down, its trap 128 lost on
/// the way to this port: discovery and forwarding tables, some 170 SMPs.
pub(super) fn heavy_sweep_unannounced(b: &mut Bench) {
    b.master.act_count += 170;
}

#[test]
fn a_heavy_sweep_in_the_first_seconds_after_start_is_seen_and_refreshes() {
    // The master's activity is counted before the first table: a SIGHUP's
    // sweep right after it (no notice: the sweep moves nothing but a QoS
    // level) is seen once the first light sweeps tell the usual.
    let mut b = Bench::started();
    let poll = AgentConfig::default().sweep_poll;
    assert_eq!(b.core.counters().sweep_polls, 1, "counted at start");
    reroute(&mut b.master, 5);
    heavy_sweep_unannounced(&mut b);
    light_sweeps(&mut b, poll * 3 + Duration::from_secs(60));
    let c = b.core.counters();
    assert_eq!((c.sweeps_seen, c.change_notices), (1, 0));
    assert_eq!(b.master.path_tables(), 2, "refreshed once");
    assert_eq!(served(&b, 5).rate(), Rate::GBPS_2_5, "the new route's rate");
}

#[test]
fn a_heavy_sweep_whose_notice_was_lost_is_seen_by_the_poll_and_refreshes() {
    let mut b = Bench::started();
    let poll = AgentConfig::default().sweep_poll;
    light_sweeps(&mut b, poll * 4);
    let before = b.master.path_tables();
    assert_eq!(before, 1, "light sweeps refresh nothing");
    assert!(b.core.counters().sweep_polls >= 3);
    reroute(&mut b.master, 5);
    heavy_sweep_unannounced(&mut b);
    // A poll interval to see it, then the settle time and the port's
    // phase of the (shortest) window, as after a notice.
    light_sweeps(&mut b, poll + Duration::from_secs(60));
    assert_eq!(b.master.path_tables(), before + 1, "one refresh");
    assert_eq!(served(&b, 5).rate(), Rate::GBPS_2_5, "the new route's rate");
    let c = b.core.counters();
    assert_eq!((c.sweeps_seen, c.change_notices), (1, 0));
    light_sweeps(&mut b, poll * 4);
    assert_eq!(b.master.path_tables(), before + 1, "quiet again");
}

#[test]
fn a_heavy_sweep_a_notice_announced_refreshes_once() {
    let mut b = Bench::started();
    let poll = AgentConfig::default().sweep_poll;
    light_sweeps(&mut b, poll * 4);
    let before = b.master.path_tables();
    link_changed(&mut b);
    heavy_sweep_unannounced(&mut b);
    light_sweeps(&mut b, poll * 4);
    assert_eq!(
        b.master.path_tables(),
        before + 1,
        "the notice's refresh only"
    );
    assert_eq!(b.core.counters().sweeps_seen, 0);
}

#[test]
fn under_a_lease_the_distributor_watches_and_nothing_is_polled() {
    let mut b = keyed(AgentConfig::default());
    load_under_lease(&mut b, 600);
    let polls = b.core.counters().sweep_polls;
    let poll = AgentConfig::default().sweep_poll;
    light_sweeps(&mut b, poll * 2);
    heavy_sweep_unannounced(&mut b);
    light_sweeps(&mut b, poll * 4);
    assert_eq!(
        b.core.counters().sweep_polls,
        polls,
        "no poll under the lease"
    );
    assert_eq!(b.core.counters().sweeps_seen, 0);
}

#[test]
fn no_poll_when_it_is_off() {
    let config = AgentConfig {
        sweep_poll: Duration::ZERO,
        ..AgentConfig::default()
    };
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    light_sweeps(&mut b, Duration::from_secs(600));
    assert_eq!(b.core.counters().sweep_polls, 0);
}

#[test]
fn a_reloaded_shorter_refresh_interval_takes_effect_at_once_and_a_longer_one_waits() {
    let mut b = Bench::started();
    let before = b.master.path_tables();
    let reloaded = |interval: u64| AgentConfig {
        refresh_interval: Duration::from_secs(interval),
        ..AgentConfig::default()
    };
    // Longer: the refresh already scheduled (within 600 s) stays.
    b.core.reconfigure(b.now, reloaded(3_600));
    b.advance(Duration::from_secs(600));
    assert_eq!(b.master.path_tables(), before + 1, "the one scheduled");
    // Shorter: the next comes within the new interval, not the old one.
    let before = b.master.path_tables();
    b.core.reconfigure(b.now, reloaded(60));
    b.advance(Duration::from_secs(59));
    assert_eq!(b.master.path_tables(), before);
    b.advance(Duration::from_secs(2));
    assert_eq!(b.master.path_tables(), before + 1, "by the new interval");
}
