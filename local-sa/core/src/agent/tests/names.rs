//! Host names from the master: NodeDescriptions and the local-sa
//! directory, fetched in bulk after each refresh (port by port when the
//! answer comes back cut), and this port's own directory record.

use std::net::IpAddr;
use std::time::Duration;

use mad_codec::AttributeId;

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID};
use super::fake_master::{Delivery, FakeMaster, gid};
use crate::agent::AgentConfig;
use crate::names::directory::{self, Publication};
use crate::names::hosts::{HostAddress, NameSource};

fn name(n: &str) -> HostAddress {
    HostAddress::Name(n.to_owned())
}

fn ip(s: &str) -> HostAddress {
    HostAddress::Ip(s.parse().unwrap())
}

/// A master whose hosts 3..=HOSTS are described `node<LID> mlx5_0`, and
/// where hosts 5 and 6 published directory records (two: more than one
/// MAD carries, so that the simulator's transport cuts the table).
fn master(delivery: Delivery) -> FakeMaster {
    let mut m = FakeMaster::new(MASTER_LID, HOSTS);
    m.delivery = delivery;
    for lid in 3..=HOSTS {
        m.descriptions.insert(lid, format!("node{lid} mlx5_0"));
    }
    let p = Publication::new(
        "compute-5",
        vec!["10.0.0.5".parse().unwrap(), "fd00::5".parse().unwrap()],
    )
    .unwrap();
    m.services
        .insert((directory::SERVICE_ID, gid(5)), p.record(gid(5), 600));
    let p = Publication::new("compute-6", vec![]).unwrap();
    m.services
        .insert((directory::SERVICE_ID, gid(6)), p.record(gid(6), 600));
    m
}

#[test]
fn names_come_from_node_descriptions_and_the_directory() {
    for delivery in [Delivery::Rmpp, Delivery::Cut] {
        let b = Bench::new(master(delivery), AgentConfig::default());
        let names = b.core.names();
        assert_eq!(
            names.lookup(&name("node7")),
            Some((gid(7), NameSource::NodeDescription)),
            "{delivery:?}"
        );
        assert_eq!(
            names.lookup(&name("compute-5")),
            Some((gid(5), NameSource::Directory))
        );
        assert_eq!(names.resolve(&ip("10.0.0.5")), Some(gid(5)));
        assert_eq!(names.resolve(&ip("fd00::5")), Some(gid(5)));
        assert_eq!(names.resolve(&name("node2")), None, "no description");
        assert_eq!(names.resolve(&name("compute-6")), Some(gid(6)));
        // 10 described hosts + two names and two addresses from the
        // directory.
        assert_eq!(names.len(), 14, "{delivery:?}");
        assert_eq!(b.core.names_generation(), 1);
    }
}

#[test]
fn a_bulk_answer_costs_two_queries_and_a_cut_one_a_query_per_port() {
    let b = Bench::new(master(Delivery::Rmpp), AgentConfig::default());
    assert_eq!(b.master.count(AttributeId::NODE_RECORD), 1);
    assert_eq!(
        b.master.count(AttributeId::SERVICE_RECORD),
        2,
        "canary + table"
    );
    let b = Bench::new(master(Delivery::Cut), AgentConfig::default());
    // A bulk try and one query per port the paths show, per table.
    let ports = usize::from(HOSTS);
    assert_eq!(b.master.count(AttributeId::NODE_RECORD), 1 + ports);
    assert_eq!(b.master.count(AttributeId::SERVICE_RECORD), 2 + ports);
}

#[test]
fn names_follow_the_master_at_each_refresh() {
    let mut b = Bench::new(master(Delivery::Rmpp), AgentConfig::default());
    b.master.descriptions.remove(&7);
    b.master.descriptions.insert(8, "renamed mlx5_0".into());
    b.advance(AgentConfig::default().refresh_interval);
    let names = b.core.names();
    assert_eq!(names.resolve(&name("node7")), None, "gone from the fabric");
    assert_eq!(names.resolve(&name("node8")), None);
    assert_eq!(names.resolve(&name("renamed")), Some(gid(8)));
    assert_eq!(b.core.names_generation(), 2);
    // Nothing changed: the generation stays.
    b.advance(AgentConfig::default().refresh_interval);
    assert_eq!(b.core.names_generation(), 2);
}

#[test]
fn a_silent_master_leaves_the_names_known() {
    let mut b = Bench::new(master(Delivery::Rmpp), AgentConfig::default());
    b.master.answering = false;
    b.advance(AgentConfig::default().refresh_interval + Duration::from_secs(30));
    assert_eq!(b.core.names().resolve(&name("node7")), Some(gid(7)));
}

#[test]
fn this_port_publishes_renews_and_withdraws_its_record() {
    let config = AgentConfig::default();
    let mut b = Bench::new(master(Delivery::Rmpp), config);
    let addrs: Vec<IpAddr> = vec!["10.0.0.2".parse().unwrap()];
    let p = Publication::new("me", addrs).unwrap();
    b.core.publish(b.now, Some(p.clone()));
    b.pump();
    let key = (directory::SERVICE_ID, gid(MY_LID));
    let held = b.master.services.get(&key).copied().expect("registered");
    assert_eq!(Publication::from_record(&held), Some((gid(MY_LID), p)));
    assert_eq!(
        u64::from(held.service_lease()),
        3 * config.refresh_interval.as_secs()
    );
    // The next refresh renews it (the master would let it lapse), and
    // the record is then among the names like any other.
    let sets = b.master.count(AttributeId::SERVICE_RECORD);
    b.advance(config.refresh_interval);
    assert!(b.master.count(AttributeId::SERVICE_RECORD) >= sets + 2);
    assert_eq!(b.core.names().resolve(&name("me")), Some(gid(MY_LID)));
    // A clean exit withdraws it.
    b.core.begin_shutdown(b.now);
    b.pump();
    assert!(!b.master.services.contains_key(&key));
}

#[test]
fn a_master_that_lost_its_records_gets_the_publication_again() {
    let mut b = Bench::new(master(Delivery::Rmpp), AgentConfig::default());
    b.core
        .publish(b.now, Some(Publication::new("me", vec![]).unwrap()));
    b.pump();
    // The master restarts: every ServiceRecord is gone; the canary audit
    // notices and the agent registers again.
    b.master.services.clear();
    b.advance(AgentConfig::default().audit_interval * 2);
    assert!(
        b.master
            .services
            .contains_key(&(directory::SERVICE_ID, gid(MY_LID)))
    );
}

#[test]
fn after_a_new_master_the_names_held_stand_until_the_next_periodic_refresh() {
    let mut b = Bench::new(master(Delivery::Rmpp), AgentConfig::default());
    let asked = b.master.count(AttributeId::NODE_RECORD);
    // The SM moves; the new master (same fabric) has no directory yet.
    let mut fresh = master(Delivery::Rmpp);
    fresh.lid = 3;
    fresh
        .services
        .retain(|(id, _), _| *id != directory::SERVICE_ID);
    b.master = fresh;
    let moved = crate::PortIdentity {
        sm_lid: 3,
        ..super::bench::my_port()
    };
    b.core.handle_port_change(b.now, moved);
    b.advance(AgentConfig::default().pace.max_window);
    assert!(b.master.count(AttributeId::PATH_RECORD) > 0, "refreshed");
    assert_eq!(
        b.master.count(AttributeId::NODE_RECORD),
        0,
        "no names fetched after the port change's refresh (before it: {asked})"
    );
    assert_eq!(
        b.core.names().resolve(&name("compute-5")),
        Some(gid(5)),
        "the directory's names kept"
    );
    // The next periodic refresh fetches them again.
    b.advance(AgentConfig::default().refresh_interval);
    assert_eq!(b.master.count(AttributeId::NODE_RECORD), 1);
}
