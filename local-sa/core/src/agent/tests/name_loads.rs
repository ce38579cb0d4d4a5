//! Names tables pushed by a distributor (docs/wire-contract.md): they
//! stand for the names fetch from the master, need the SM_Key, and a Set
//! of NodeRecords or ServiceRecords without the names flag is still not
//! local-sa's to take.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use mad_codec::codes::NodeType;
use mad_codec::header::SaMadHeader;
use mad_codec::records::{SaRecord, put_record};
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, MadStatus, Method, NodeRecord, PathRecord, SaMadBuilder, ServiceRecord,
};

use super::bench::{Bench, HOSTS, MASTER_LID, MY_LID, client, status};
use super::fake_master::{FakeMaster, gid, guid, path};
use super::loads::{KEY, LOADER, load_header, modifier, push, push_bytes, waiting_for_a_load};
use crate::agent::AgentConfig;
use crate::load_flags::{NAMES_TABLE, REPLACE_SOURCES};
use crate::names::directory::Publication;
use crate::names::hosts::{HostAddress, NameSource};

fn name(n: &str) -> HostAddress {
    HostAddress::Name(n.to_owned())
}

/// A names load's headers: `attribute`, the stride of `R`, `key`.
fn names_header<R: SaRecord>(tid: u64, key: u64, modifier: u32) -> SaMadHeader {
    let mut b = SaMadBuilder::request(Method::SET, tid, R::ATTRIBUTE_ID);
    let h = b.header_mut();
    h.sa.set_sm_key(key);
    h.sa.set_attribute_offset(R::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(modifier);
    *h
}

fn table<R: SaRecord>(records: &[R]) -> Bytes {
    let mut data = BytesMut::new();
    for r in records {
        put_record(&mut data, r);
    }
    data.freeze()
}

/// NodeRecords of the fabric: channel adapters at 3..=HOSTS described
/// `node<LID> mlx5_0`, and a switch (not a host: skipped).
fn node_records() -> Vec<NodeRecord> {
    let mut records: Vec<NodeRecord> = (3..=HOSTS)
        .map(|lid| {
            let mut r = NodeRecord::new_zeroed();
            r.set_lid(lid);
            r.set_node_type(NodeType::CA);
            r.set_port_guid(guid(lid));
            r.set_description(&format!("node{lid} mlx5_0"));
            r
        })
        .collect();
    let mut switch = NodeRecord::new_zeroed();
    switch.set_lid(2);
    switch.set_node_type(NodeType::SWITCH);
    switch.set_description("spine1");
    records.push(switch);
    records
}

/// The directory: host 5 published `compute-5` and an address.
fn directory_records() -> Vec<ServiceRecord> {
    let p = Publication::new("compute-5", vec!["10.0.0.5".parse().unwrap()]).unwrap();
    vec![p.record(gid(5), 600)]
}

/// Pushes both names tables; returns the two answers.
fn push_names(b: &mut Bench, key: u64) -> (Bytes, Bytes) {
    let nodes = push_bytes(
        b,
        LOADER,
        names_header::<NodeRecord>(20, key, NAMES_TABLE),
        table(&node_records()),
    );
    let directory = push_bytes(
        b,
        LOADER,
        names_header::<ServiceRecord>(21, key, NAMES_TABLE),
        table(&directory_records()),
    );
    (nodes, directory)
}

/// How many GetTables of `attribute` the master was asked.
fn tables_asked(b: &Bench, attribute: AttributeId) -> usize {
    b.master
        .requests
        .iter()
        .filter(|r| r.attribute == attribute && r.method == Method::GET_TABLE)
        .count()
}

/// Where a distributor fills the nodes, it pushes the names with the
/// paths: the node then asks the master for neither table at start, and
/// resolves the names as if it had fetched them.
#[test]
fn a_distributors_names_tables_stand_for_the_start_s_names_fetch() {
    let config = waiting_for_a_load();
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), config);
    let (nodes, directory) = push_names(&mut b, KEY);
    assert_eq!(status(&nodes), MadStatus::OK);
    assert_eq!(
        modifier(&nodes),
        u32::from(HOSTS - 2),
        "the adapters taken, not the switch"
    );
    assert_eq!(status(&directory), MadStatus::OK);
    assert_eq!(modifier(&directory), 1);
    let mine: Vec<PathRecord> = (1..=HOSTS).map(|d| path(MY_LID, d)).collect();
    let paths = push(
        &mut b,
        load_header(Method::SET, 22, KEY, REPLACE_SOURCES),
        &mine,
    );
    assert_eq!(status(&paths), MadStatus::OK);
    // Well past when the start's names fetch would have gone out.
    b.advance(config.pace.max_window + Duration::from_secs(60));
    assert_eq!(tables_asked(&b, AttributeId::NODE_RECORD), 0);
    assert_eq!(tables_asked(&b, AttributeId::SERVICE_RECORD), 0);
    let names = b.core.names();
    assert_eq!(
        names.lookup(&name("node7")),
        Some((gid(7), NameSource::NodeDescription))
    );
    assert_eq!(
        names.lookup(&name("compute-5")),
        Some((gid(5), NameSource::Directory))
    );
    assert_eq!(
        names.resolve(&HostAddress::Ip("10.0.0.5".parse().unwrap())),
        Some(gid(5))
    );
    assert_eq!(names.resolve(&name("spine1")), None, "a switch is no host");
    let counters = b.core.counters();
    assert_eq!(counters.name_tables_loaded, 2);
    assert_eq!(counters.name_fetches, 0);
}

/// Loaded names replace those fetched from the master at once (both
/// tables in); after the next refresh from the master, the master's are
/// fetched again.
#[test]
fn loaded_names_replace_the_fetched_ones_until_the_master_s_next_refresh() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.descriptions.insert(9, "old-name mlx5_0".into());
    let config = AgentConfig {
        sm_key: Some(crate::config::SmKey::new(KEY)),
        ..AgentConfig::default()
    };
    let mut b = Bench::new(master, config);
    b.advance(config.pace.max_window + Duration::from_secs(60));
    assert_eq!(b.core.names().resolve(&name("old-name")), Some(gid(9)));
    let generation = b.core.names_generation();
    let fetches = b.core.counters().name_fetches;
    push_names(&mut b, KEY);
    assert_eq!(b.core.names().resolve(&name("old-name")), None);
    assert_eq!(b.core.names().resolve(&name("node9")), Some(gid(9)));
    assert_eq!(b.core.names_generation(), generation + 1);
    b.advance(config.refresh_interval * 5 / 4 + Duration::from_secs(60));
    assert_eq!(b.core.names().resolve(&name("old-name")), Some(gid(9)));
    assert!(b.core.counters().name_fetches > fetches);
}

/// Without the SM_Key a names load is denied and changes nothing; a Set
/// of NodeRecords or ServiceRecords without the names flag (a service
/// registration, say) is refused as before: local-sa does not take it.
#[test]
fn names_loads_need_the_key_and_the_flag() {
    let mut b = Bench::new(FakeMaster::new(MASTER_LID, HOSTS), waiting_for_a_load());
    let (nodes, directory) = push_names(&mut b, KEY + 1);
    assert_eq!(status(&nodes), MadStatus::ERR_REQ_DENIED);
    assert_eq!(status(&directory), MadStatus::ERR_REQ_DENIED);
    assert!(b.core.names().is_empty());
    let unflagged = set_one(&mut b, AttributeId::NODE_RECORD, &node_records()[0], 0);
    assert_eq!(status(&unflagged), MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert!(b.core.names().is_empty());
    assert_eq!(b.core.counters().name_tables_loaded, 0);
    // One record in one MAD (no RMPP) is a names load too.
    let one = set_one(
        &mut b,
        AttributeId::SERVICE_RECORD,
        &directory_records()[0],
        NAMES_TABLE,
    );
    assert_eq!(status(&one), MadStatus::OK);
    assert_eq!(modifier(&one), 1);
    assert_eq!(b.core.counters().name_tables_loaded, 1);
}

/// Sends `record` in one Set MAD with [`KEY`] and `modifier`; returns the
/// agent's answer.
fn set_one<R: SaRecord>(b: &mut Bench, attribute: AttributeId, record: &R, modifier: u32) -> Bytes {
    let mut one = SaMadBuilder::request(Method::SET, 24, attribute).record(record);
    let h = one.header_mut();
    h.sa.set_sm_key(KEY);
    h.sa.set_attribute_offset(R::ATTRIBUTE_OFFSET);
    h.mad.set_attribute_modifier(modifier);
    b.deliver(client(LOADER), &one.into_bytes());
    b.pump();
    let mut answers = b.take_sent(LOADER);
    assert_eq!(answers.len(), 1, "one answer");
    answers.remove(0)
}
