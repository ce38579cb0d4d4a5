//! The distribution without I/O, against a fake master and fake nodes:
//! what is asked and sent, in which order, how many at once, and what
//! happens when a node is busy, silent or refuses.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use local_sa_core::load_flags::{KNOWN_ABSENT, REPLACE_SOURCES};
use local_sa_core::path_engine::Fabric;
use local_sa_core::path_engine::synthetic::FatTree;
use local_sa_core::requester::Failure as RequestFailure;
use mad_codec::attr::path_record::mask as pr;
use mad_codec::records::Records;
use mad_codec::zerocopy::{FromBytes, FromZeros, IntoBytes};
use mad_codec::{AttributeId, Gid, Method, NodeRecord, SaRecord};

use super::names::NamesLoad;
use super::*;
use crate::computed::{Checked, Served};

const MASTER: u16 = 1;
const KEY: u64 = 0x5eed;

fn gid(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_PREFIX, 0x0002_c903_0000_0000 + u64::from(lid))
}

fn endpoint(lid: u16) -> FabricPort {
    FabricPort { lid, gid: gid(lid) }
}

/// The master's path from `s` to `d` (`version` stands for a reroute).
fn path(s: u16, d: u16, version: u8) -> PathRecord {
    let mut r = PathRecord::new_zeroed();
    r.set_sgid(gid(s));
    r.set_dgid(gid(d));
    r.set_slid(s);
    r.set_dlid(d);
    r.set_pkey(0xFFFF);
    r.set_sl(version & 0xF);
    r
}

fn setup(window: usize, master_window: usize, dlids: &[u16]) -> Setup {
    Setup {
        master: Address::gsi(MASTER, 0),
        sm_sl: 0,
        sm_key: KEY,
        window,
        master_window,
        attempts: 3,
        table_attempts: Attempts {
            timeout: Duration::from_secs(12),
            retries: 3,
        },
        dlids: dlids.to_vec(),
        lease: None,
        keep_holdings: true,
    }
}

/// What a fake answered.
fn answer(request: &SaMadHeader, status: MadStatus, modifier: u32, records: &[u8]) -> Answer {
    let mut h = *request;
    h.mad.set_method(request.mad.method().response());
    h.mad.set_status(status);
    h.mad.set_attribute_modifier(modifier);
    h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
    let mut mad = BytesMut::from(h.as_bytes());
    mad.extend_from_slice(records);
    Answer::whole(mad.freeze()).expect("a whole answer")
}

/// A load or delete a node took.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Taken {
    node: u16,
    method: Method,
    attribute: AttributeId,
    modifier: u32,
    records: Vec<PathRecord>,
}

/// The fake fabric: a master that answers every port's paths (the
/// `version` of each pair), nodes that take loads unless told otherwise.
#[derive(Default)]
struct Fake {
    lids: Vec<u16>,
    version: HashMap<(u16, u16), u8>,
    /// The master's multi-MAD answers come cut.
    cut: bool,
    /// Nodes that answer their loads with this status, the first `n`
    /// times (`u32::MAX`: always).
    refusing: HashMap<u16, (MadStatus, u32)>,
    /// Nodes that never answer.
    silent: HashSet<u16>,
    taken: Vec<Taken>,
    /// Queries the master answered, and the most it had at once.
    asked: usize,
    most_at_master: usize,
    most_nodes_at_once: usize,
}

impl Fake {
    fn of(lids: &[u16]) -> Self {
        Self {
            lids: lids.to_vec(),
            ..Self::default()
        }
    }

    /// Runs `d` to its end, answering in the order asked.
    fn run(&mut self, d: &mut Distribution) {
        let mut in_flight: Vec<(u64, Send)> = Vec::new();
        for _ in 0..100_000 {
            while let Some(s) = d.poll_send() {
                in_flight.push(s);
            }
            let at_master = in_flight
                .iter()
                .filter(|(_, s)| matches!(s, Send::Query { .. }))
                .count();
            self.most_at_master = self.most_at_master.max(at_master);
            let nodes: HashSet<u16> = in_flight
                .iter()
                .filter_map(|(_, s)| match s {
                    Send::Transfer { dest, .. } => Some(dest.lid),
                    Send::Query { request, .. } => {
                        let (_, data) = SaMadHeader::parse(request).ok()?;
                        Some(PathRecord::read_from_prefix(data).ok()?.0.sgid().guid() as u16)
                    }
                })
                .collect();
            self.most_nodes_at_once = self.most_nodes_at_once.max(nodes.len());
            if in_flight.is_empty() {
                assert!(d.is_done());
                return;
            }
            let (id, send) = in_flight.remove(0);
            let end = self.answer(send);
            d.handle_end(id, end);
        }
        panic!("the distribution never ended");
    }

    fn answer(&mut self, send: Send) -> Result<Answer, RequestFailure> {
        match send {
            Send::Query { request, dest, .. } => {
                assert_eq!(dest.lid, MASTER);
                self.asked += 1;
                let (h, data) = SaMadHeader::parse(&request).expect("a request");
                let t = PathRecord::read_from_prefix(data).expect("a template").0;
                let mask = h.sa.component_mask();
                let s = t.sgid().guid() as u16;
                let dests: Vec<u16> = if mask.contains(pr::DLID) {
                    self.lids
                        .iter()
                        .copied()
                        .filter(|d| *d == t.dlid())
                        .collect()
                } else {
                    self.lids.clone()
                };
                let records: Vec<u8> = dests
                    .iter()
                    .flat_map(|d| {
                        let v = self.version.get(&(s, *d)).copied().unwrap_or(0);
                        path(s, *d, v).as_bytes().to_vec()
                    })
                    .collect();
                if records.is_empty() {
                    return Ok(answer(h, MadStatus::ERR_NO_RECORDS, 0, &[]));
                }
                let a = answer(h, MadStatus::OK, 0, &records);
                if self.cut && records.len() > 2 * PathRecord::LEN {
                    return Ok(Answer::cut(
                        a.mad().clone(),
                        SaMadHeader::LEN + 2 * PathRecord::LEN,
                    )
                    .expect("a cut answer"));
                }
                Ok(a)
            }
            Send::Transfer { dest, header, data } => {
                let node = dest.lid;
                if self.silent.contains(&node) {
                    return Err(RequestFailure::Timeout {
                        attempts: 4,
                        per_attempt: Duration::from_secs(1),
                        sm_key: KEY,
                    });
                }
                if let Some((status, left)) = self.refusing.get_mut(&node)
                    && *left > 0
                {
                    *left = left.saturating_sub(1);
                    return Ok(answer(&header, *status, 0, &[]));
                }
                let attribute = header.mad.attribute_id();
                let records: Vec<PathRecord> = if attribute == AttributeId::PATH_RECORD {
                    Records::<PathRecord>::new(&data, header.sa.attribute_offset())
                        .expect("records")
                        .copied()
                        .collect()
                } else {
                    Vec::new()
                };
                self.taken.push(Taken {
                    node,
                    method: header.mad.method(),
                    attribute,
                    modifier: header.mad.attribute_modifier(),
                    records: records.clone(),
                });
                Ok(answer(&header, MadStatus::OK, records.len() as u32, &[]))
            }
        }
    }

    /// What node `lid` took, in order.
    fn taken_by(&self, lid: u16) -> Vec<&Taken> {
        self.taken.iter().filter(|t| t.node == lid).collect()
    }
}

fn names() -> NamesTables {
    let load = |attribute: AttributeId, records: usize| {
        let b = mad_codec::SaMadBuilder::request(Method::SET, 0, attribute);
        NamesLoad {
            header: *b.clone().header_mut(),
            data: Bytes::from(vec![0; 8]),
            records,
        }
    };
    NamesTables {
        nodes: load(AttributeId::NODE_RECORD, 1),
        directory: load(AttributeId::SERVICE_RECORD, 0),
    }
}

#[test]
fn every_node_gets_the_names_then_its_whole_table_from_the_master() {
    let lids = [2, 3, 4, 5];
    let mut fake = Fake::of(&lids);
    let mut d = Distribution::new(
        setup(2, 4, &lids),
        lids.iter().map(|l| endpoint(*l)).collect(),
        Tally::default(),
        Some(names()),
    );
    fake.run(&mut d);
    for lid in lids {
        let taken = fake.taken_by(lid);
        let what: Vec<(Method, AttributeId)> =
            taken.iter().map(|t| (t.method, t.attribute)).collect();
        assert_eq!(
            what,
            [
                (Method::SET, AttributeId::NODE_RECORD),
                (Method::SET, AttributeId::SERVICE_RECORD),
                (Method::SET, AttributeId::PATH_RECORD)
            ],
            "LID {lid}: the names tables first"
        );
        let load = taken[2];
        assert_eq!(load.modifier, REPLACE_SOURCES, "its whole table");
        let expected: Vec<PathRecord> = lids.iter().map(|d| path(lid, *d, 0)).collect();
        assert_eq!(load.records, expected);
    }
    assert_eq!(fake.asked, lids.len(), "one GetTable per node");
    assert!(fake.most_nodes_at_once <= 2, "{}", fake.most_nodes_at_once);
    let (reports, tally) = d.finish();
    assert!(
        reports
            .iter()
            .all(|r| r.outcome.done && r.failure.is_none())
    );
    assert_eq!(tally.tables, 4);
    assert_eq!(tally.names_pushed, 8);
}

#[test]
fn a_dump_gives_each_node_its_tables_at_its_turn_and_none_are_asked_of_the_master() {
    let lids = [2, 3, 4, 5, 6, 7];
    let mut fake = Fake::of(&lids);
    let dump = SentTables {
        default: lids
            .iter()
            .flat_map(|s| lids.iter().map(|d| path(*s, *d, 1)))
            .collect(),
        partitions: Vec::new(),
    };
    let asked = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let by_node = {
        let asked = asked.clone();
        let mut held = dump.clone();
        move |gid: Gid| {
            asked.borrow_mut().push(gid.guid() as u16);
            let (mine, rest) = held.default.drain(..).partition(|r| r.sgid() == gid);
            held.default = rest;
            SentTables {
                default: mine,
                partitions: Vec::new(),
            }
        }
    };
    let mut d = Distribution::new(
        setup(2, 4, &lids),
        lids.iter().map(|l| endpoint(*l)).collect(),
        Tally::default(),
        None,
    )
    .tables_by(by_node);
    // Before any end, only the window's nodes have had their tables.
    let mut first = Vec::new();
    while let Some(s) = d.poll_send() {
        first.push(s);
    }
    assert_eq!(asked.borrow().len(), 2, "{:?}", asked.borrow());
    for (id, send) in first {
        let Send::Transfer { header, .. } = send else {
            panic!("nothing asked of the master");
        };
        d.handle_end(id, Ok(answer(&header, MadStatus::OK, 0, &[])));
    }
    fake.run(&mut d);
    assert_eq!(fake.asked, 0, "nothing asked of the master");
    assert_eq!(
        *asked.borrow(),
        lids,
        "each node's tables asked once, in turn"
    );
    for lid in lids {
        let expected: Vec<PathRecord> = lids.iter().map(|d| path(lid, *d, 1)).collect();
        match fake.taken_by(lid)[..] {
            [] => assert!(lid <= 3, "LID {lid} filled by the first ends"),
            [load] => assert_eq!(load.records, expected, "LID {lid}"),
            ref more => panic!("LID {lid} took {more:?}"),
        }
    }
    // The same dump, whole.
    let mut fake = Fake::of(&lids);
    let mut d = Distribution::new(
        setup(2, 4, &lids),
        lids.iter().map(|l| endpoint(*l)).collect(),
        Tally::default(),
        None,
    )
    .tables_from(dump);
    fake.run(&mut d);
    assert_eq!(fake.asked, 0);
    for lid in lids {
        let expected: Vec<PathRecord> = lids.iter().map(|d| path(lid, *d, 1)).collect();
        assert_eq!(fake.taken_by(lid)[0].records, expected, "LID {lid}");
    }
    let (reports, _) = d.finish();
    assert!(reports.iter().all(|r| r.outcome.done));
}

#[test]
fn cut_answers_are_asked_again_per_destination_within_the_master_window() {
    let lids: Vec<u16> = (2..=9).collect();
    let mut fake = Fake::of(&lids);
    fake.cut = true;
    let mut d = Distribution::new(
        setup(3, 4, &lids),
        lids.iter().map(|l| endpoint(*l)).collect(),
        Tally::default(),
        None,
    );
    fake.run(&mut d);
    assert!(fake.most_at_master <= 4, "{}", fake.most_at_master);
    for lid in &lids {
        let load = fake.taken_by(*lid)[0];
        assert_eq!(load.records.len(), lids.len(), "every destination of {lid}");
    }
    let (_, tally) = d.finish();
    assert!(tally.cut);
    // The first node's whole table came cut; every table after is asked per
    // destination from the start.
    assert_eq!(
        tally.tables,
        1 + 2,
        "those asked whole before the first cut came back"
    );
    assert_eq!(tally.per_destination as usize, fake.asked - 3);
}

#[test]
fn a_busy_or_silent_node_is_tried_again_and_a_refusal_is_final() {
    let lids = [2, 3, 4, 5];
    let mut fake = Fake::of(&lids);
    fake.refusing.insert(3, (MadStatus::BUSY, 1));
    fake.refusing
        .insert(4, (MadStatus::ERR_REQ_DENIED, u32::MAX));
    fake.silent.insert(5);
    let mut d = Distribution::new(
        setup(4, 4, &lids),
        lids.iter().map(|l| endpoint(*l)).collect(),
        Tally::default(),
        None,
    );
    fake.run(&mut d);
    let (reports, tally) = d.finish();
    let by_lid: BTreeMap<u16, &NodeReport> = reports.iter().map(|r| (r.lid, r)).collect();
    assert!(by_lid[&2].outcome.done);
    assert!(
        by_lid[&3].outcome.done,
        "busy once, filled on its next turn"
    );
    let denied = by_lid[&4].failure.as_deref().expect("refused");
    assert!(
        denied.contains("0x0700") || denied.to_lowercase().contains("denied"),
        "{denied}"
    );
    assert_eq!(
        fake.taken_by(4).len(),
        0,
        "a refusal is not tried again: {:?}",
        fake.taken_by(4)
    );
    assert!(by_lid[&5].failure.is_some(), "silent for all its attempts");
    assert_eq!(tally.retried, 1 + 2, "busy once; silent twice more");
    assert_eq!(
        fake.asked,
        lids.len(),
        "a push tried again sends the table fetched before, not asked again"
    );
    assert_eq!(fake.taken_by(3).len(), 1, "taken on its second attempt");
}

#[test]
fn a_delta_sends_each_node_only_what_changed() {
    // What the nodes hold: a snapshot given whole, or asked node by node.
    for by_node in [false, true] {
        let lids = [2, 3, 4];
        let mut fake = Fake::of(&lids);
        let old: Vec<PathRecord> = lids
            .iter()
            .flat_map(|s| lids.iter().map(move |d| path(*s, *d, 0)))
            .chain([path(2, 40, 0)])
            .collect();
        // A reroute: one of node 2's paths changed, its path to LID 40 is
        // gone.
        fake.version.insert((2, 3), 1);
        let mut d = Distribution::new(
            setup(4, 4, &lids),
            lids.iter().map(|l| endpoint(*l)).collect(),
            Tally::default(),
            None,
        );
        if by_node {
            d = d.holding_by(move |gid| {
                Some(SentTables {
                    default: old.iter().filter(|r| r.sgid() == gid).copied().collect(),
                    partitions: Vec::new(),
                })
            });
        } else {
            d.old_tables(&SentTables {
                default: old,
                partitions: Vec::new(),
            });
        }
        fake.run(&mut d);
        let taken = fake.taken_by(2);
        assert_eq!(taken.len(), 2, "{taken:?}");
        assert_eq!((taken[0].method, taken[0].modifier), (Method::SET, 0));
        assert_eq!(taken[0].records, [path(2, 3, 1)]);
        assert_eq!(
            (taken[1].method, taken[1].modifier),
            (Method::DELETE, KNOWN_ABSENT)
        );
        assert_eq!(taken[1].records.len(), 1);
        assert_eq!(taken[1].records[0].dlid(), 40);
        assert!(fake.taken_by(3).is_empty() && fake.taken_by(4).is_empty());
        let (reports, _) = d.finish();
        assert_eq!(reports.iter().filter(|r| r.outcome.unchanged).count(), 2);
    }
}

/// A computed fabric (a small fat tree) and its check's outcome.
fn computed(differences: bool) -> (Prepared, Vec<FabricPort>) {
    let tree = FatTree {
        leaves: 2,
        hosts_per_leaf: 3,
        spines: 2,
        lmc: 0,
    };
    computed_from(tree.records(), differences)
}

/// A small fat tree whose links to its first spine are 1x, with the
/// first leaf's link to it unplugged if `unplugged` (a reroute).
fn slow_spine(unplugged: bool) -> local_sa_core::path_engine::FabricRecords {
    let tree = FatTree {
        leaves: 2,
        hosts_per_leaf: 3,
        spines: 2,
        lmc: 0,
    };
    tree.slow_first_spine(unplugged).records()
}

/// The fabric of `records`, computed, and its check's outcome.
fn computed_from(
    records: local_sa_core::path_engine::FabricRecords,
    differences: bool,
) -> (Prepared, Vec<FabricPort>) {
    let mut fabric = Fabric::build(&records, false).expect("built");
    fabric.set_partition_sl(0x7FFF, 0);
    let mut checked = Checked::default();
    if differences {
        let pair = fabric.sample(1, 1, &[])[0];
        checked.mismatches.push(crate::computed::Mismatch {
            pair,
            lids: (1, 2),
            difference: local_sa_core::path_engine::Difference {
                field: "sl",
                ours: "0".into(),
                theirs: "1".into(),
            },
            varies: false,
        });
    }
    let hosts: Vec<FabricPort> = fabric
        .endports()
        .iter()
        .filter(|e| !e.is_switch)
        .map(|e| FabricPort {
            lid: e.lid,
            gid: Gid::new(e.prefix, e.guid),
        })
        .collect();
    let prepared = Prepared {
        opensm: None,
        opensm_unfit: None,
        policy_dropped: None,
        asked_keys: Vec::new(),
        fabric,
        qos: false,
        pkey_tables: records.pkeys.clone(),
        adapters: records
            .nodes
            .iter()
            .filter(|n: &&NodeRecord| n.node_type() == mad_codec::codes::NodeType::CA)
            .copied()
            .collect(),
        records: std::sync::Arc::new(records.clone()),
        description: Served::default(),
        cut: false,
        unknown_sls: Vec::new(),
        sample: Served::default(),
        checked,
        read_time: Duration::ZERO,
        check_time: Duration::ZERO,
    };
    (prepared, hosts)
}

#[test]
fn computed_tables_are_pushed_and_the_master_is_asked_for_none() {
    let (prepared, hosts) = computed(false);
    let expected: HashMap<u16, Vec<PathRecord>> = hosts
        .iter()
        .map(|h| {
            let mut out = Vec::new();
            prepared
                .fabric
                .table(h.gid.guid(), Table::Default, &mut out)
                .expect("a table");
            (h.lid, out)
        })
        .collect();
    let mut fake = Fake::of(&[]);
    let mut d = Distribution::new(setup(4, 4, &[]), hosts.clone(), Tally::default(), None)
        .with_computed(Some(prepared));
    fake.run(&mut d);
    assert_eq!(fake.asked, 0, "no query at the master");
    for h in &hosts {
        let taken = fake.taken_by(h.lid);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].modifier, REPLACE_SOURCES);
        assert_eq!(taken[0].records, expected[&h.lid], "LID {}", h.lid);
    }
    let (_, tally) = d.finish();
    let c = tally.computed.expect("counted");
    assert_eq!(c.tables, hosts.len() as u64);
    assert_eq!(
        c.records,
        expected.values().map(|r| r.len() as u64).sum::<u64>()
    );
}

#[test]
fn a_watch_sends_the_differences_from_the_previous_fabric_under_a_lease() {
    let (before, _) = computed_from(slow_spine(false), false);
    let (after, hosts) = computed_from(slow_spine(true), false);
    let table = |p: &Prepared, guid: u64| {
        let mut out = Vec::new();
        p.fabric
            .table(guid, Table::Default, &mut out)
            .expect("a table");
        out
    };
    let mut fake = Fake::of(&[]);
    let setup = Setup {
        lease: Some(LeaseTerms {
            seconds: 180,
            renew_every: 8,
        }),
        ..setup(4, 4, &[])
    };
    // The last host's holding is not known: it gets its table whole.
    let (known, unknown) = hosts.split_at(hosts.len() - 1);
    let expected_after: HashMap<u16, Vec<PathRecord>> = hosts
        .iter()
        .map(|h| (h.lid, table(&after, h.gid.guid())))
        .collect();
    let changed: Vec<u16> = known
        .iter()
        .filter(|h| table(&before, h.gid.guid()) != expected_after[&h.lid])
        .map(|h| h.lid)
        .collect();
    assert!(!changed.is_empty(), "the reroute changes tables");
    let mut d = Distribution::new(setup, hosts.clone(), Tally::default(), None)
        .with_computed(Some(after))
        .holding_previous(before.fabric, &known.iter().map(|h| h.gid).collect());
    fake.run(&mut d);
    assert_eq!(fake.asked, 0, "nothing asked of the master");
    for t in &fake.taken {
        assert_eq!(
            local_sa_core::load_flags::lease_seconds(t.modifier),
            Some(180),
            "every push carries the lease"
        );
        assert_eq!(
            local_sa_core::load_flags::renewal_interval(t.modifier),
            Some(8),
            "and says how often it is renewed"
        );
    }
    for h in known {
        let taken = fake.taken_by(h.lid);
        if !changed.contains(&h.lid) {
            assert!(taken.is_empty(), "LID {}: unchanged, nothing sent", h.lid);
            continue;
        }
        assert!(!taken.is_empty());
        assert!(
            taken.iter().all(|t| t.modifier & REPLACE_SOURCES == 0),
            "LID {}: only the differences",
            h.lid
        );
        let after = &expected_after[&h.lid];
        for r in taken.iter().flat_map(|t| &t.records) {
            assert!(
                after.contains(r),
                "LID {}: a record of the new table",
                h.lid
            );
        }
    }
    let whole = fake.taken_by(unknown[0].lid);
    assert_eq!(whole.len(), 1);
    assert_ne!(whole[0].modifier & REPLACE_SOURCES, 0, "its table whole");
    assert_eq!(whole[0].records, expected_after[&unknown[0].lid]);
}

#[test]
fn when_the_check_found_a_difference_every_table_comes_from_the_master() {
    let (prepared, hosts) = computed(true);
    assert!(prepared.trusted(Table::Default).is_err());
    let lids: Vec<u16> = hosts.iter().map(|h| h.lid).collect();
    let mut fake = Fake::of(&lids);
    // The fake master's GIDs are its own: answer by the nodes' SGIDs.
    let mut d = Distribution::new(setup(4, 4, &lids), hosts.clone(), Tally::default(), None)
        .with_computed(Some(prepared));
    fake.run(&mut d);
    assert_eq!(fake.asked, hosts.len(), "every table from the master");
    let (reports, tally) = d.finish();
    assert!(reports.iter().all(|r| r.outcome.done));
    assert_eq!(tally.computed.map_or(0, |c| c.tables), 0);
}

#[test]
fn tables_at_keys_are_computed_with_the_master_s_policy_and_a_kind_that_differs_is_fetched_alone() {
    use local_sa_core::opensm_config::qos_policy::QueryKeys;
    use local_sa_core::path_query::QosKey;

    let (mut prepared, hosts) = computed(false);
    let by_service = QueryKeys {
        service_id: Some(0x10),
        ..QueryKeys::default()
    };
    let by_class = QueryKeys {
        qos_class: Some(3),
        ..QueryKeys::default()
    };
    // A master with QoS whose configuration is known (a policy-less one:
    // its tables at keys are its partition's), each kind drawn by the
    // check, the class's found to differ.
    prepared.qos = true;
    let conf = |p: &std::path::Path| {
        Ok((p == std::path::Path::new("opensm.conf")).then(|| "qos TRUE\n".to_owned()))
    };
    prepared.opensm = Some(std::sync::Arc::new(
        crate::computed::opensm_input::OpenSmInput::load_with("opensm.conf".as_ref(), &conf)
            .unwrap(),
    ));
    prepared.asked_keys = vec![by_service, by_class];
    let (at_service, at_class) = (Table::at(0x7FFF, by_service), Table::at(0x7FFF, by_class));
    prepared.checked.drawn = vec![(at_service, 3), (at_class, 3)];
    let source = hosts[0].gid.guid();
    prepared.checked.mismatches.push(crate::computed::Mismatch {
        pair: local_sa_core::path_engine::PairCheck {
            source,
            dest: source,
            table: at_class,
        },
        lids: (1, 1),
        difference: local_sa_core::path_engine::Difference {
            field: "sl",
            ours: "0".into(),
            theirs: "3".into(),
        },
        varies: false,
    });
    assert!(prepared.trusted(at_service).is_ok());
    assert!(prepared.trusted(Table::Partition(0xFFFF)).is_ok());
    assert!(prepared.trusted(at_class).is_err());
    let expected = |guid: u64, table| {
        let mut out = Vec::new();
        prepared
            .fabric
            .table(guid, table, &mut out)
            .expect("a table");
        out
    };
    let expected: HashMap<u16, Vec<PathRecord>> = hosts
        .iter()
        .map(|h| (h.lid, expected(h.gid.guid(), at_service)))
        .collect();
    let partitions = NodePartitions::new(&prepared.pkey_tables, true);
    let keys = [
        QosKey {
            service_id: Some(0x10),
            ..QosKey::default()
        },
        QosKey {
            qos_class: Some(3),
            ..QosKey::default()
        },
    ];
    let lids: Vec<u16> = hosts.iter().map(|h| h.lid).collect();
    let mut fake = Fake::of(&lids);
    let mut d = Distribution::new(setup(4, 4, &lids), hosts.clone(), Tally::default(), None)
        .with_qos(qos::QosPlan::new(&keys, Some(&partitions), false))
        .with_partitions(Some(partitions))
        .with_computed(Some(prepared));
    fake.run(&mut d);
    assert_eq!(
        fake.asked,
        hosts.len(),
        "the class's table of each node, and nothing else"
    );
    for h in &hosts {
        let at_keys: Vec<&Taken> = fake
            .taken_by(h.lid)
            .into_iter()
            .filter(|t| {
                t.records
                    .first()
                    .is_some_and(|k| k.service_id() != 0 || k.qos_class() != 0)
            })
            .collect();
        assert_eq!(at_keys.len(), 2, "LID {}: a table at each key", h.lid);
        let service = at_keys
            .iter()
            .find(|t| t.records[0].service_id() == 0x10)
            .expect("the ServiceID's table");
        assert_eq!(
            service.records[1..],
            expected[&h.lid][..],
            "LID {}: computed",
            h.lid
        );
    }
    let (_, tally) = d.finish();
    let c = tally.computed.expect("counted");
    assert_eq!(c.from_master, hosts.len() as u64);
    // Each node: its default, partition and ServiceID tables computed.
    assert_eq!(c.tables, 3 * hosts.len() as u64);
}
