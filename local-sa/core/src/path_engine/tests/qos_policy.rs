//! The engine under OpenSM's QoS policy: levels by port group, P_Key,
//! ServiceID and QoS class, the sample at every key, OpenSM's quirks and
//! the names its policy knows ports by.

use super::*;

/// `spec`'s fabric with the QoS policy `policy` given.
fn with_policy(spec: &FabricSpec, policy: &str) -> Fabric {
    let records = spec.records();
    let mut f = built(&records);
    let policy = crate::opensm_config::QosPolicy::parse(policy).expect("a good policy");
    let levels = QosLevels::resolve(policy, &f, &records, (None, None), None).expect("resolved");
    f.set_qos_levels(levels);
    f
}

#[test]
fn a_qos_level_by_source_or_destination_group_gives_those_paths_its_sl_and_limits() {
    let (spec, _) = small_tree(0);
    let policy = format!(
        "port-groups
            port-group
                name: first
                port-guid: {:#x}
            end-port-group
         end-port-groups
         qos-levels
            qos-level
                name: default
                sl: 0
            end-qos-level
            qos-level
                name: from-first
                sl: 3
                mtu-limit: 2
                rate-limit: 2
                packet-life: 9
            end-qos-level
         end-qos-levels
         qos-match-rules
            qos-match-rule
                source: first
                qos-level-name: from-first
            end-qos-match-rule
         end-qos-match-rules",
        host_guid(0)
    );
    let f = with_policy(&spec, &policy);
    let first = table(&f, host_guid(0), Table::Default);
    let to_others: Vec<&PathRecord> = first.iter().filter(|r| r.packet_life() != 0).collect();
    assert!(!to_others.is_empty());
    for r in &to_others {
        assert_eq!(
            (r.sl(), r.mtu().0, r.rate().0, r.packet_life()),
            (3, 2, 2, 9),
            "{r:?}"
        );
    }
    // A port's path to itself keeps PacketLifeTime 0.
    assert!(first.iter().any(|r| r.packet_life() == 0 && r.sl() == 3));
    // Others' paths, to the first host too, get the default level.
    let other = table(&f, host_guid(1), Table::Default);
    assert!(other.iter().all(|r| r.sl() == 0 && r.mtu().0 > 2));
    // A packet-life past 63 is OpenSM's byte OR'ed with Exactly's bits:
    // 70 is selector 3, 6.
    let f = with_policy(&spec, &policy.replace("packet-life: 9", "packet-life: 70"));
    let first = table(&f, host_guid(0), Table::Default);
    let r = first
        .iter()
        .find(|r| r.dgid().guid() != host_guid(0))
        .unwrap();
    assert_eq!(
        (r.packet_life_selector(), r.packet_life()),
        (mad_codec::Selector::from_bits(3), 6)
    );
}

#[test]
fn a_level_for_a_p_key_applies_to_the_queries_naming_it_only() {
    let (spec, _) = small_tree(0);
    let f = with_policy(
        &spec,
        "qos-levels
            qos-level
                name: default
                sl: 0
            end-qos-level
            qos-level
                name: small
                sl: 1
                mtu-limit: 2
            end-qos-level
         end-qos-levels
         qos-match-rules
            qos-match-rule
                pkey: 0x7fff
                qos-level-name: small
            end-qos-match-rule
         end-qos-match-rules",
    );
    let named = table(&f, host_guid(0), Table::Partition(0xFFFF));
    assert!(!named.is_empty());
    assert!(named.iter().all(|r| r.mtu().0 == 2 && r.sl() == 1));
    let unnamed = table(&f, host_guid(0), Table::Default);
    assert!(unnamed.iter().all(|r| r.mtu().0 > 2 && r.sl() == 0));
}

#[test]
fn a_level_s_p_keys_choose_the_p_key_or_refuse_the_path() {
    let (mut spec, hosts) = small_tree(0);
    for h in &hosts {
        spec.pkeys(*h, &[0xFFFF, 0x8001]);
    }
    let f = with_policy(
        &spec,
        "qos-levels
            qos-level
                name: default
                sl: 0
                pkey: 0x8001
            end-qos-level
         end-qos-levels",
    );
    // To the hosts only (the switches do not hold 0x8001), with the
    // level's P_Key as the level writes it: without the membership bit
    // (osm_qos_level_get_shared_pkey).
    let default = table(&f, host_guid(0), Table::Default);
    assert_eq!(default.len(), hosts.len(), "{default:?}");
    assert!(default.iter().all(|r| r.pkey() == 0x0001), "{default:?}");
    // Asked in a partition the level does not allow: no path.
    assert!(table(&f, host_guid(0), Table::Partition(0xFFFF)).is_empty());
    assert!(!table(&f, host_guid(0), Table::Partition(0x8001)).is_empty());
}

/// A policy whose rules give ServiceID 0x10 and QoS class 3 their own
/// levels, and a level to the paths from `group` (a port GUID).
fn keyed_policy(group: u64) -> String {
    format!(
        "port-groups
            port-group
                name: one
                port-guid: {group:#x}
            end-port-group
         end-port-groups
         qos-levels
            qos-level
                name: default
                sl: 0
            end-qos-level
            qos-level
                name: by-service
                sl: 4
                mtu-limit: 2
            end-qos-level
            qos-level
                name: by-class
                sl: 5
                packet-life: 11
            end-qos-level
            qos-level
                name: from-one
                sl: 6
            end-qos-level
         end-qos-levels
         qos-match-rules
            qos-match-rule
                service-id: 0x10
                qos-level-name: by-service
            end-qos-match-rule
            qos-match-rule
                qos-class: 3
                qos-level-name: by-class
            end-qos-match-rule
            qos-match-rule
                source: one
                qos-level-name: from-one
            end-qos-match-rule
         end-qos-match-rules"
    )
}

#[test]
fn a_level_for_a_service_id_or_qos_class_applies_to_the_tables_at_that_key_only() {
    let (spec, _) = small_tree(0);
    let f = with_policy(&spec, &keyed_policy(host_guid(5)));
    let service = QueryKeys {
        service_id: Some(0x10),
        ..QueryKeys::default()
    };
    let class = QueryKeys {
        qos_class: Some(3),
        ..QueryKeys::default()
    };
    let at_service = Table::at(0x7FFF, service);
    assert_eq!(
        at_service,
        Table::AtKey {
            pkey: 0xFFFF,
            service_id: Some(0x10),
            qos_class: None
        }
    );
    assert_eq!(
        at_service.to_string(),
        "0x7fff ServiceID 0x0000000000000010"
    );
    assert_eq!(
        Table::at(0x7FFF, QueryKeys::default()),
        Table::Partition(0xFFFF)
    );
    let by_service = table(&f, host_guid(0), at_service);
    let plain = table(&f, host_guid(0), Table::Partition(0xFFFF));
    assert_eq!(by_service.len(), plain.len());
    assert!(by_service.iter().all(|r| (r.sl(), r.mtu().0) == (4, 2)));
    assert!(plain.iter().all(|r| r.sl() == 0 && r.mtu().0 > 2));
    // The record names neither the ServiceID nor the class (OpenSM's
    // pr_rcv_build_pr starts from zeros).
    assert!(
        by_service
            .iter()
            .all(|r| r.service_id() == 0 && r.qos_class() == 0)
    );
    let by_class = table(&f, host_guid(0), Table::at(0x7FFF, class));
    assert!(
        by_class
            .iter()
            .all(|r| r.sl() == 5 && (r.packet_life() == 11 || r.dgid().guid() == host_guid(0)))
    );
    // Another ServiceID matches no key rule: the source's group's level.
    let other = Table::at(
        0x7FFF,
        QueryKeys {
            service_id: Some(0x11),
            ..QueryKeys::default()
        },
    );
    assert!(table(&f, host_guid(5), other).iter().all(|r| r.sl() == 6));
}

#[test]
fn the_sample_draws_every_key_s_tables_and_sees_every_port_in_each() {
    let big_spec = FatTree {
        leaves: 8,
        hosts_per_leaf: 10,
        spines: 4,
        lmc: 0,
    }
    .spec()
    .0;
    let keys = [
        QueryKeys {
            service_id: Some(0x10),
            ..QueryKeys::default()
        },
        QueryKeys {
            qos_class: Some(3),
            ..QueryKeys::default()
        },
    ];
    // A policy whose level is for one port: a small sample sees it as a
    // source and as a destination in every table all the same.
    let plain = fabric(&big_spec);
    let one = plain.endports()[17].guid;
    let f = with_policy(&big_spec, &keyed_policy(one));
    let sample = f.sample(20, 3, &keys);
    for table in [
        Table::Default,
        Table::Partition(0xFFFF),
        Table::at(0x7FFF, keys[0]),
        Table::at(0x7FFF, keys[1]),
    ] {
        let drawn: Vec<PairCheck> = sample
            .iter()
            .filter(|p| p.table == table)
            .copied()
            .collect();
        assert_sees_every_port(&f, &drawn, &table.to_string());
    }
}

#[test]
fn the_check_s_sample_grows_with_the_fabric_not_its_square() {
    // 10,000 hosts behind 250 leaves: every endport a source and a
    // destination in each table (the default one, the partition every
    // port holds, each key's), and nothing near N² pairs.
    let sizes: Vec<(usize, usize)> = [(25, 40), (250, 40)]
        .into_iter()
        .map(|(leaves, hosts_per_leaf)| {
            let f = fabric(
                &FatTree {
                    leaves,
                    hosts_per_leaf,
                    spines: 4,
                    lmc: 0,
                }
                .spec()
                .0,
            );
            let keys = [
                QueryKeys {
                    service_id: Some(0x0106_0001),
                    ..QueryKeys::default()
                },
                QueryKeys {
                    service_id: Some(0x0106_0002),
                    ..QueryKeys::default()
                },
                QueryKeys {
                    qos_class: Some(3),
                    ..QueryKeys::default()
                },
            ];
            let n = f.endports().len();
            let plain = f.sample(1000, 1, &[]).len();
            let at_keys = f.sample(1000, 1, &keys).len();
            eprintln!("sample at {n} ports: {plain} pairs, {at_keys} with three keys");
            assert!(
                at_keys <= plain + 250 + 3 * n,
                "the keys share a quarter, and each sees every port"
            );
            (n, plain)
        })
        .collect();
    let [(small_n, small), (big_n, big)] = sizes[..] else {
        unreachable!()
    };
    eprintln!("sample: {small} pairs at {small_n} ports, {big} at {big_n}");
    // 1,000 default pairs and 250 in the partition, plus at most a pair
    // an endport in each table for those the draw missed.
    assert!(
        (big_n..=1000 + 250 + 2 * big_n).contains(&big),
        "{big} pairs at {big_n} ports"
    );
    assert!(big > small, "more ports, more pairs");
}

#[test]
fn with_opensm_s_quirks_a_path_with_a_tavor_end_gets_mtu_1024_at_most() {
    let (spec, _) = small_tree(0);
    let mut records = spec.records();
    let tavor = host_guid(0);
    for n in records.nodes.iter_mut().filter(|n| n.port_guid() == tavor) {
        n.set_vendor_id(0x0002C9);
        n.set_device_id(23108);
    }
    let mut f = built(&records);
    let mtus = |f: &Fabric, from: u64, to: u64| -> Vec<u8> {
        let mut out = Vec::new();
        f.pair(from, to, Table::Default, &mut out).unwrap();
        out.iter().map(|r| r.mtu().0).collect()
    };
    let without = mtus(&f, host_guid(1), tavor);
    assert!(without.iter().all(|m| *m > 3), "{without:?}");
    f.set_tavor_quirk(true);
    assert!(mtus(&f, host_guid(1), tavor).iter().all(|m| *m == 3));
    assert!(mtus(&f, tavor, host_guid(1)).iter().all(|m| *m == 3));
    assert_eq!(
        mtus(&f, host_guid(1), host_guid(2)),
        without,
        "no Tavor end"
    );
}

#[test]
fn port_names_are_looked_up_as_opensm_knows_the_nodes_and_some_policies_it_drops_at_the_fabric() {
    use crate::opensm_config::NodeNameMap;
    use crate::path_engine::ResolveError;

    let (spec, _) = small_tree(0);
    let mut records = spec.records();
    // Two adapters of one description: OpenSM's table keeps the first by
    // node GUID in network byte order read as an x86 integer.
    let hosts: Vec<(u64, u64)> = (records.nodes.iter())
        .filter(|n| n.node_type() == mad_codec::codes::NodeType::CA)
        .map(|n| (n.node_guid(), n.port_guid()))
        .take(3)
        .collect();
    for n in records.nodes.iter_mut() {
        if n.node_guid() == hosts[0].0 || n.node_guid() == hosts[1].0 {
            n.set_description("twin HCA-1");
        }
    }
    let first = *hosts[..2]
        .iter()
        .min_by_key(|(g, _)| g.swap_bytes())
        .unwrap();
    let f = built(&records);
    let map = NodeNameMap::parse(&format!("{:#x} \"mapped\"\n", hosts[2].0)).unwrap();
    let resolve = |ports: &str, ulps: &str| {
        let policy = crate::opensm_config::QosPolicy::parse(&format!(
            "port-groups\nport-group\nname: g\nport-name: {ports}\nend-port-group\nend-port-groups\n\
             qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n{ulps}"
        ))
        .expect("a policy OpenSM parses");
        QosLevels::resolve(policy, &f, &records, (None, Some(&map)), None)
    };
    let levels = resolve("\"twin HCA-1\"/P1, mapped/P1", "").expect("resolved");
    let members = |l: &QosLevels| -> Vec<u64> {
        use crate::opensm_config::qos_policy::PortMembership;
        let mut v: Vec<u64> = (f.endports().iter())
            .map(|e| e.guid)
            .filter(|g| l.in_group(*g, 0))
            .collect();
        v.sort_unstable();
        v
    };
    let mut expected = vec![first.1, hosts[2].1];
    expected.sort_unstable();
    assert_eq!(
        members(&levels),
        expected,
        "the first twin, and the mapped node"
    );
    // Unquoted, OpenSM's lexer drops the blank: no such node, no port.
    let levels = resolve("twin HCA-1/P1", "").expect("resolved");
    assert!(members(&levels).is_empty());
    // A port past the node's: OpenSM drops the whole policy.
    let e = resolve("\"twin HCA-1\"/P9", "").map(|_| ()).unwrap_err();
    assert!(
        matches!(&e, ResolveError::Dropped(why) if why.contains("out of range")),
        "{e}"
    );
    assert!(e.to_string().contains("AC03"));
    // An IPoIB rule whose partition OpenSM did not make: the same.
    let ipoib = |pkey: &str| {
        resolve(
            "mapped/P1",
            &format!("qos-ulps\nipoib{pkey} : 1\nend-qos-ulps\n"),
        )
    };
    let e = ipoib(", pkey 0x0005").map(|_| ()).unwrap_err();
    assert!(
        matches!(&e, ResolveError::Dropped(why) if why.contains("doesn't exist")),
        "{e}"
    );
    assert!(
        ipoib("").is_ok(),
        "the default partition, every port a full member"
    );
}
