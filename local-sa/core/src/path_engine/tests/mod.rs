//! The engine against made-up fabrics: each rule of OpenSM's PathRecord
//! computation that a user of the tables would notice. Byte equality with
//! OpenSM itself is shown on simulated fabrics (conformance's
//! `path_engine` tests). The rules of OpenSM's QoS policy, partitions
//! and node names are in `qos_policy`.

use mad_codec::{Gid, PathRecord};

use super::synthetic::{FabricSpec, FatTree, NodeId, PREFIX};
use super::*;
use crate::opensm_config::qos_policy::QueryKeys;

/// A fabric built from `spec`, every partition's SL 0.
fn fabric(spec: &FabricSpec) -> Fabric {
    built(&spec.records())
}

fn table(f: &Fabric, guid: u64, t: Table) -> Vec<PathRecord> {
    let mut out = Vec::new();
    f.table(guid, t, &mut out).expect("the table");
    out
}

fn small_tree(lmc: u8) -> (FabricSpec, Vec<NodeId>) {
    FatTree {
        leaves: 3,
        hosts_per_leaf: 2,
        spines: 2,
        lmc,
    }
    .spec()
}

/// Port GUID of host `i` of a [`FatTree`].
fn host_guid(i: u64) -> u64 {
    0x0001_0000_0000 + i * 16 + 1
}

fn find(records: &[PathRecord], dlid: u16) -> PathRecord {
    *records
        .iter()
        .find(|r| r.dlid() == dlid)
        .unwrap_or_else(|| panic!("no record to LID {dlid}"))
}

#[test]
fn a_host_s_table_has_one_record_per_endport_in_opensm_s_order() {
    let (spec, _) = small_tree(0);
    let f = fabric(&spec);
    let records = table(&f, host_guid(0), Table::Default);
    // 6 hosts and 5 switches, itself included.
    assert_eq!(records.len(), 11);
    let order: Vec<u64> = records
        .iter()
        .map(|r| r.dgid().guid().swap_bytes())
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "destinations in byte-swapped GUID order"
    );
    for r in &records {
        assert_eq!(r.sgid(), Gid::new(PREFIX, host_guid(0)));
        assert_eq!(r.slid(), 6, "the first host's LID, after the 5 switches'");
        assert_eq!(r.pkey(), 0xFFFF);
        assert_eq!(r.sl(), 0);
        assert!(r.reversible());
        assert_eq!(r.preference(), 0);
        assert_eq!(r.rate().0, 7, "4x QDR: 40 Gb/s");
        assert_eq!(r.service_id(), 0);
        assert_eq!(r.hop_limit(), 0);
    }
    let to_host = find(&records, 9);
    assert_eq!(to_host.mtu().0, 4, "2048 between hosts");
    assert_eq!(to_host.packet_life(), 18, "SubnetTimeOut");
    let to_spine = find(&records, 1);
    assert_eq!(to_spine.mtu().0, 3, "a switch's port 0 has MTUCap 1024");
    let to_self = find(&records, 6);
    assert_eq!(to_self.packet_life(), 0, "a port's path to itself");
    let bytes = mad_codec::zerocopy::IntoBytes::as_bytes(&to_host);
    assert_eq!(
        &bytes[54..58],
        &[0x84, 0x87, 0x92, 0x00],
        "selectors 'exactly'"
    );
    assert_eq!(bytes[49], 0x80, "Reversible, NumbPath 0");
}

#[test]
fn lmc_pairs_come_equal_offsets_first_then_the_rest_source_first() {
    let (spec, _) = small_tree(1);
    let f = fabric(&spec);
    let records = table(&f, host_guid(0), Table::Default);
    let me = f.endport(host_guid(0)).expect("host 0");
    let peer = f.endport(host_guid(3)).expect("host 3");
    let to_peer: Vec<(u16, u16, u8)> = records
        .iter()
        .filter(|r| r.dgid().guid() == peer.guid)
        .map(|r| (r.slid(), r.dlid(), r.preference()))
        .collect();
    let (s, d) = (me.lid, peer.lid);
    assert_eq!(
        to_peer,
        [(s, d, 0), (s + 1, d + 1, 0), (s, d + 1, 2), (s + 1, d, 2)]
    );
    let spine = f.endport_at(1).expect("spine 1");
    let to_spine: Vec<(u16, u16, u8)> = records
        .iter()
        .filter(|r| r.dgid().guid() == spine.guid)
        .map(|r| (r.slid(), r.dlid(), r.preference()))
        .collect();
    assert_eq!(to_spine, [(s, 1, 0), (s + 1, 1, 2)], "a switch has one LID");
}

#[test]
fn the_least_mtu_and_rate_of_every_port_counted_on_the_way() {
    let (mut spec, hosts) = small_tree(0);
    let f = fabric(&spec);
    let before = table(&f, host_guid(0), Table::Default);
    let peer = f.endport(host_guid(2)).expect("host on leaf 2").lid;
    // The way from leaf 1 to host 2 goes up through one of the spines:
    // give that spine's port down to leaf 2 MTU 256 and a 1x link.
    let leaf1 = f.endport_at(3).expect("leaf1");
    let up = f.switches[leaf1.switch as usize].route(peer);
    let spine = NodeId(usize::from(up - 3)); // leaf ports 3.. go to spines 0..
    spec.port_mut(spine, 2).mtu = 1;
    spec.port_mut(spine, 2).width = 1;
    let f = fabric(&spec);
    let after = table(&f, host_guid(0), Table::Default);
    assert_eq!(find(&before, peer).mtu().0, 4);
    assert_eq!(find(&after, peer).mtu().0, 1, "MTU 256 on the way");
    assert_eq!(find(&after, peer).rate().0, 3, "1x QDR: 10 Gb/s");
    let other_leaf_host = f.endport(host_guid(1)).expect("host 1").lid;
    assert_eq!(
        find(&after, other_leaf_host).mtu().0,
        4,
        "a path that does not pass it keeps 2048"
    );
    assert_eq!(hosts.len(), 6);
}

#[test]
fn a_switch_s_own_egress_port_is_not_counted_on_its_paths() {
    let (mut spec, _) = small_tree(0);
    // Leaf 1 (node 2) port 1 leads to host 0; make it 1x SDR with MTU
    // 256. A host's path into it counts it, the leaf's own path out of it
    // does not (OpenSM starts a switch's walk at the far end).
    let leaf1 = NodeId(2);
    let p = spec.port_mut(leaf1, 1);
    p.mtu = 1;
    p.width = 1;
    p.speed = 1;
    let f = fabric(&spec);
    let leaf_guid = f.endport_at(3).expect("leaf1").guid;
    let from_leaf = table(&f, leaf_guid, Table::Default);
    let host0 = f.endport(host_guid(0)).expect("host 0").lid;
    let r = find(&from_leaf, host0);
    assert_eq!(r.mtu().0, 3, "port 0's 1024, not 256");
    assert_eq!(r.rate().0, 7, "still 40 Gb/s");
    let to_leaf = table(&f, host_guid(0), Table::Default);
    let back = find(&to_leaf, 3);
    assert_eq!(back.mtu().0, 1, "into the leaf through port 1");
    assert_eq!(back.rate().0, 2);
}

#[test]
fn extended_speeds_count_where_the_capability_mask_says_so() {
    let (mut spec, hosts) = small_tree(0);
    // Host 0 and its leaf port at FDR: 4x FDR is 56 Gb/s, but the rest of
    // the way is QDR.
    for (node, port) in [(hosts[0], 1), (NodeId(2), 1)] {
        spec.port_mut(node, port).speed_ext = 1;
    }
    let f = fabric(&spec);
    let records = table(&f, host_guid(0), Table::Default);
    let host1 = f.endport(host_guid(1)).expect("host 1").lid;
    assert_eq!(find(&records, host1).rate().0, 7, "least: 40");
    // Its path to itself has only its own port: 56.
    assert_eq!(
        find(&records, f.endport(host_guid(0)).expect("me").lid)
            .rate()
            .0,
        12
    );
    // Without IsExtendedSpeedsSupported in the leaf's port 0, the leaf's
    // ports count their classic speed.
    spec.port_mut(hosts[1], 1).speed_ext = 1;
    spec.port_mut(NodeId(2), 2).speed_ext = 1;
    let f = fabric(&spec);
    let r = find(&table(&f, host_guid(0), Table::Default), host1);
    assert_eq!(r.rate().0, 12, "FDR all the way through leaf 1");
    spec.port_mut(NodeId(2), 0).cap_mask = 0;
    let f = fabric(&spec);
    let r = find(&table(&f, host_guid(0), Table::Default), host1);
    assert_eq!(
        r.rate().0,
        7,
        "the leaf's hops rated without extended speeds"
    );
}

#[test]
fn a_2x_rate_is_lowered_when_an_end_does_not_support_2x() {
    let mut spec = FabricSpec::new();
    let a = spec.host(0x100, 1, 0, "a");
    let b = spec.host(0x200, 2, 0, "b");
    spec.link((a, 1), (b, 1));
    for n in [a, b] {
        let p = spec.port_mut(n, 1);
        p.width = 16; // 2x
        p.speed_ext = 1; // FDR: 28 Gb/s
    }
    let f = fabric(&spec);
    let r = find(&table(&f, 0x101, Table::Default), 2);
    assert_eq!(
        r.rate().0,
        15,
        "28 Gb/s lowered to 25 (no CapabilityMask2 2x bit)"
    );
    spec.port_mut(a, 1).cap_mask2 = rate::CAP2_WIDTH_2X;
    let f = fabric(&spec);
    assert_eq!(
        find(&table(&f, 0x101, Table::Default), 2).rate().0,
        15,
        "the destination must support it too (the path is reversible)"
    );
    spec.port_mut(b, 1).cap_mask2 = rate::CAP2_WIDTH_2X;
    let f = fabric(&spec);
    assert_eq!(find(&table(&f, 0x101, Table::Default), 2).rate().0, 19);
    assert_eq!(
        find(&table(&f, 0x101, Table::Default), 2).hop_limit(),
        0,
        "back to back: no switch"
    );
}

#[test]
fn partitions_pick_the_common_key_and_its_sl() {
    let (mut spec, hosts) = small_tree(0);
    // Hosts 0 and 1 are full members of 0x0001 (a lower key in OpenSM's
    // order than 0x7FFF), host 2 a limited one, host 3 not at all.
    spec.pkeys(hosts[0], &[0xFFFF, 0x8001]);
    spec.pkeys(hosts[1], &[0xFFFF, 0x8001]);
    spec.pkeys(hosts[2], &[0xFFFF, 0x0001]);
    spec.pkeys(hosts[3], &[0x7FFF]);
    let mut f = Fabric::build(&spec.records(), false).expect("built");
    f.set_partition_sl(0x7FFF, 0);
    let mut out = Vec::new();
    assert_eq!(
        f.table(host_guid(0), Table::Default, &mut out),
        Err(TableError::NoPartitionSl { pkey: 1 }),
        "partition 1's SL is not published; it must be given"
    );
    f.set_partition_sl(0x8001, 3);
    let records = table(&f, host_guid(0), Table::Default);
    let lid = |i| f.endport(host_guid(i)).expect("host").lid;
    let r1 = find(&records, lid(1));
    assert_eq!((r1.pkey(), r1.sl()), (0x8001, 3));
    let r2 = find(&records, lid(2));
    assert_eq!((r2.pkey(), r2.sl()), (0x8001, 3), "full with limited");
    let r3 = find(&records, lid(3));
    assert_eq!((r3.pkey(), r3.sl()), (0xFFFF, 0), "only the default one");
    // Host 3 is a limited member of the default partition only: it shares
    // nothing with host 2's limited 0x0001... but host 2 is full in 0x7FFF.
    let from3 = table(&f, host_guid(3), Table::Default);
    assert_eq!(
        find(&from3, lid(2)).pkey(),
        0x7FFF,
        "the source's membership bit"
    );
    // The partition table of 0x0001: only those sharing it with a full
    // member; the key echoed as asked.
    let p1 = table(&f, host_guid(2), Table::Partition(0x8001));
    let dests: Vec<u16> = p1.iter().map(|r| r.dlid()).collect();
    assert_eq!(dests.len(), 2, "hosts 0 and 1: {dests:?}");
    assert!(p1.iter().all(|r| r.pkey() == 0x8001 && r.sl() == 3));
}

#[test]
fn ports_sharing_no_partition_have_no_paths() {
    let (mut spec, hosts) = small_tree(0);
    spec.pkeys(hosts[0], &[0x8005]);
    spec.pkeys(hosts[1], &[0x8006]);
    let f = fabric(&spec);
    let records = table(&f, host_guid(0), Table::Default);
    // Every other port holds another partition: only its path to
    // itself, in its own.
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].dgid().guid(), host_guid(0));
    assert_eq!(records[0].pkey(), 0x8005);
}

#[test]
fn alias_guids_are_destinations_too() {
    let (mut spec, hosts) = small_tree(0);
    let alias = 0x0200_0000_0000_0001;
    spec.alias(hosts[1], alias);
    let f = fabric(&spec);
    let records = table(&f, host_guid(0), Table::Default);
    assert_eq!(records.len(), 12);
    let lid1 = f.endport(host_guid(1)).expect("host 1").lid;
    let to_host1: Vec<u64> = records
        .iter()
        .filter(|r| r.dlid() == lid1)
        .map(|r| r.dgid().guid())
        .collect();
    assert_eq!(to_host1.len(), 2);
    assert!(to_host1.contains(&alias) && to_host1.contains(&host_guid(1)));
    let mut pair = Vec::new();
    f.pair(host_guid(0), alias, Table::Default, &mut pair)
        .expect("pair");
    assert_eq!(pair.len(), 1);
    assert_eq!(pair[0].dgid(), Gid::new(PREFIX, alias));
}

#[test]
fn a_route_that_does_not_come_back_is_not_reversible() {
    let (mut spec, _) = small_tree(0);
    let f = fabric(&spec);
    let me = f.endport(host_guid(0)).expect("host 0").lid;
    let peer = f.endport(host_guid(2)).expect("host 2").lid;
    // Leaf 2 (node 3) loses its route back to host 0.
    spec.route(NodeId(3), me, 0xFF);
    let f = fabric(&spec);
    let r = find(&table(&f, host_guid(0), Table::Default), peer);
    assert!(!r.reversible());
    assert!(
        table(&f, host_guid(2), Table::Default)
            .iter()
            .all(|r| r.dlid() != me),
        "and the way back has no record"
    );
}

#[test]
fn more_than_64_switches_is_no_path() {
    for (switches, reachable) in [(64u16, true), (65, false)] {
        let mut spec = FabricSpec::new();
        let a = spec.host(0x100, 1, 0, "a");
        let b = spec.host(0x200, 2, 0, "b");
        let chain: Vec<NodeId> = (0..switches)
            .map(|i| spec.switch(0x1000 + u64::from(i), 10 + i, 2, "s"))
            .collect();
        spec.link((a, 1), (chain[0], 1));
        for w in chain.windows(2) {
            spec.link((w[0], 2), (w[1], 1));
        }
        spec.link((*chain.last().expect("a switch"), 2), (b, 1));
        spec.route_min_hop();
        let f = fabric(&spec);
        let records = table(&f, 0x101, Table::Default);
        assert_eq!(
            records.iter().any(|r| r.dlid() == 2),
            reachable,
            "{switches}"
        );
    }
}

#[test]
fn with_qos_an_sl_some_hop_drops_to_vl15_has_no_path() {
    let (mut spec, _) = small_tree(0);
    let mut vls = [0u8; 16];
    vls[0] = 15;
    spec.sl2vl(vls);
    let records = spec.records();
    let mut f = Fabric::build(&records, true).expect("built");
    f.set_partition_sl(0x7FFF, 0);
    let mut out = Vec::new();
    f.table(host_guid(0), Table::Default, &mut out)
        .expect("table");
    assert!(out.is_empty(), "SL 0 goes to VL15 everywhere");
    f.set_partition_sl(0x7FFF, 1);
    f.table(host_guid(0), Table::Default, &mut out)
        .expect("table");
    assert_eq!(out.len(), 11);
    let mut without = records.clone();
    without.sl2vl.retain(|r| r.lid() != 3);
    assert!(
        matches!(
            Fabric::build(&without, true),
            Err(DescriptionError::Route(routes::RouteError::NoSl2Vl {
                lid: 3,
                ..
            }))
        ),
        "a QoS description without a switch's SL to VL tables is refused"
    );
    assert!(
        Fabric::build(&without, false).is_ok(),
        "without QoS none are read"
    );
}

#[test]
fn descriptions_that_do_not_hold_together_are_refused_with_the_record_named() {
    let (spec, _) = small_tree(0);
    let good = spec.records();
    let refused = |change: &dyn Fn(&mut FabricRecords)| {
        let mut r = good.clone();
        change(&mut r);
        let e = Fabric::build(&r, false).expect_err("refused");
        (e.clone(), e.to_string())
    };
    let (e, text) = refused(&|r| r.lfts.retain(|l| l.lid() != 4));
    assert_eq!(e, DescriptionError::NoForwardingTable { lid: 4 });
    assert!(
        text.contains("LFTRecords") && text.contains("LID 4"),
        "{text}"
    );
    let (e, _) = refused(&|r| r.ports.retain(|p| (p.lid(), p.port()) != (3, 2)));
    assert_eq!(e, DescriptionError::NoPortInfo { lid: 3, port: 2 });
    // Leaf 1's link to spine 1 (LID 1, its port 1).
    let (e, text) = refused(&|r| r.links.retain(|l| l.from_lid() != 1 && l.to_lid() != 1));
    assert_eq!(e, DescriptionError::NoLink { lid: 1, port: 1 });
    assert!(text.contains("active"), "{text}");
    let (e, _) = refused(&|r| {
        let mut l = r.lfts[0];
        l.set_block(800);
        r.lfts.push(l);
    });
    assert_eq!(e, DescriptionError::BlockOutOfRange { lid: 1, block: 800 });
    let (e, _) = refused(&|r| r.nodes[0].set_lid(0xC000));
    assert!(matches!(
        e,
        DescriptionError::LidOutOfRange { lid: 0xC000, .. }
    ));
    let (e, _) = refused(&|r| {
        let lid = r.nodes[1].lid();
        r.nodes[0].set_lid(lid);
    });
    assert!(matches!(e, DescriptionError::DuplicateLid { .. }));
}

/// Each switch's table with `lid` forwarded to `port` at the switches of
/// `at`.
fn forwarding(good: &FabricRecords, lid: u16, at: &[(u16, u8)]) -> FabricRecords {
    let mut r = good.clone();
    for l in &mut r.lfts {
        if let Some((_, port)) = at.iter().find(|(sw, _)| *sw == l.lid()) {
            let mut ports = l.ports();
            ports[usize::from(lid)] = *port;
            l.set_ports(ports);
        }
    }
    r
}

#[test]
fn a_way_that_leads_nowhere_costs_the_paths_that_take_it_not_the_fabric() {
    let (spec, _) = small_tree(0);
    let good = spec.records();
    let sources = |f: &Fabric, dlid: u16| {
        f.endports()
            .iter()
            .filter(|e| {
                table(f, e.guid, Table::Default)
                    .iter()
                    .any(|r| r.dlid() == dlid)
            })
            .count()
    };
    let whole = fabric(&spec);
    assert_eq!(whole.route_faults().1, 0);
    assert_eq!(sources(&whole, 10), 11, "every port has a path to LID 10");
    for (broken, kind) in [
        // The switches at LIDs 1 and 3 forward host 2's LID to each other.
        (forwarding(&good, 10, &[(1, 1), (3, 3)]), "forwarding loop"),
        // The switch at LID 3 forwards it to a port it does not have.
        (forwarding(&good, 10, &[(3, 40)]), "port 40"),
    ] {
        let f = built(&broken);
        let (faults, count) = f.route_faults();
        assert!(count >= 1 && !faults.is_empty(), "{kind}");
        let text = faults[0].to_string();
        assert!(text.contains(kind), "{text}");
        let (switch, lid) = faults[0].way().expect("a way");
        assert_eq!(lid, 10, "{text}");
        // The switch's own table has every destination but that LID.
        let at_switch = f.endport_at(switch).expect("the switch").guid;
        let records = table(&f, at_switch, Table::Default);
        assert_eq!(records.len(), 10, "{kind}");
        assert!(records.iter().all(|r| r.dlid() != 10), "{kind}");
        // Ports whose way does not take it keep their path.
        let reach = sources(&f, 10);
        assert!(
            (1..11).contains(&reach),
            "{kind}: {reach} ports reach LID 10"
        );
        // The check asks the master about it.
        let dest = f.endport_at(10).expect("host 2").guid;
        assert!(
            f.sample(1000, 1, &[])
                .iter()
                .any(|p| (p.source, p.dest) == (at_switch, dest)),
            "{kind}"
        );
    }
}

#[test]
fn an_adapter_link_opensm_hides_is_where_its_switch_forwards_its_lid() {
    // OpenSM gives no LinkRecord for a port that is only a limited member
    // of its partitions: the leaf port its LID is forwarded through
    // stands for it.
    let (mut spec, hosts) = small_tree(0);
    spec.pkeys(hosts[2], &[0x7FFF]);
    let full = spec.records();
    let mut hidden = full.clone();
    let lid = 8;
    hidden
        .links
        .retain(|l| l.from_lid() != lid && l.to_lid() != lid);
    assert!(hidden.links.len() < full.links.len());
    let (a, b) = (built(&full), built(&hidden));
    for e in a.endports() {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.table(e.guid, Table::Default, &mut x).expect("table");
        b.table(e.guid, Table::Default, &mut y).expect("table");
        assert_eq!(x, y, "from LID {}", e.lid);
    }
    // Two hosts hidden behind one leaf port each are told apart by where
    // the leaf forwards each one's LID; a link between switches is not
    // deduced.
    let mut no_uplink = full.clone();
    no_uplink
        .links
        .retain(|l| l.from_lid() != 1 && l.to_lid() != 1);
    assert!(Fabric::build(&no_uplink, false).is_err());
}

/// A fabric built from `records`, every partition's SL 0.
fn built(records: &FabricRecords) -> Fabric {
    let mut f = Fabric::build(records, false).expect("a consistent description");
    for p in f.partitions() {
        f.set_partition_sl(p, 0);
    }
    f
}

#[test]
fn a_route_to_a_port_without_a_link_costs_the_paths_through_it() {
    let (mut spec, _) = small_tree(0);
    // Leaf 1's link to spine 1 goes down, but the tables still use it.
    let f = fabric(&spec);
    let leaf1 = f.endport_at(3).expect("leaf 1");
    let sw = &f.switches[leaf1.switch as usize];
    let (lid, port) = (10u16..=13)
        .map(|l| (l, sw.route(l)))
        .find(|(_, p)| *p >= 3)
        .expect("a LID routed up");
    spec.unlink(NodeId(2), port);
    let f = built(&spec.records());
    let (faults, _) = f.route_faults();
    assert!(
        faults.contains(&routes::RouteError::DeadEnd {
            switch: 3,
            lid,
            port
        }),
        "{faults:?} (LID {lid} was routed through port {port})"
    );
    let leaf1 = f.endport_at(3).expect("leaf 1").guid;
    assert!(
        table(&f, leaf1, Table::Default)
            .iter()
            .all(|r| r.dlid() != lid),
        "no path from leaf 1 to LID {lid}"
    );
    // Rerouted, every way leads somewhere again.
    spec.route_min_hop();
    assert_eq!(built(&spec.records()).route_faults().1, 0);
}

#[test]
fn every_pair_is_sampled_on_a_small_fabric_every_node_on_a_large_one() {
    let in_table = |sample: &[PairCheck], t: Table| -> Vec<PairCheck> {
        sample.iter().filter(|p| p.table == t).copied().collect()
    };
    let all_members = Table::Partition(0xFFFF);
    let (spec, _) = small_tree(0);
    let f = fabric(&spec);
    let sample = f.sample(1000, 1, &[]);
    assert_eq!(in_table(&sample, Table::Default).len(), 11 * 11);
    // The partition every port holds is checked in its own table too: a
    // master with QoS answers it apart.
    assert_eq!(in_table(&sample, all_members).len(), 11 * 11);
    assert_eq!(sample.len(), 2 * 11 * 11);
    let big = fabric(
        &FatTree {
            leaves: 8,
            hosts_per_leaf: 10,
            spines: 4,
            lmc: 0,
        }
        .spec()
        .0,
    );
    let sample = big.sample(500, 7, &[]);
    let default = in_table(&sample, Table::Default);
    let n = big.endports().len();
    assert!(
        (500..=500 + n).contains(&default.len()),
        "500 drawn, and at most a pair an endport for those they missed: {}",
        default.len()
    );
    let partition = in_table(&sample, all_members);
    assert!((125..=125 + n).contains(&partition.len()));
    let leaf_of = |guid: u64| {
        let e = big.endport(guid)?;
        (!e.is_switch).then(|| big.ports[big.ports[e.port as usize].remote as usize].switch)
    };
    let leaves: std::collections::HashSet<u32> =
        default.iter().filter_map(|p| leaf_of(p.dest)).collect();
    assert_eq!(leaves.len(), 8, "destinations on every leaf");
    assert_eq!(
        big.sample(500, 7, &[]),
        sample,
        "the same seed, the same sample"
    );
    // Whatever the count, every endport a source and a destination in
    // every table.
    for count in [500, 20, 0] {
        let drawn = big.sample(count, 3, &[]);
        for t in [Table::Default, all_members] {
            assert_sees_every_port(&big, &in_table(&drawn, t), &format!("{t:?}, {count}"));
        }
    }
}

/// Asserts every endport of `f` is a source and a destination of `pairs`.
fn assert_sees_every_port(f: &Fabric, pairs: &[PairCheck], what: &str) {
    let sources: std::collections::HashSet<u64> = pairs.iter().map(|p| p.source).collect();
    let dests: std::collections::HashSet<u64> = pairs.iter().map(|p| p.dest).collect();
    for e in f.endports() {
        assert!(sources.contains(&e.guid), "{what}: {:#x} a source", e.guid);
        assert!(
            dests.contains(&e.guid),
            "{what}: {:#x} a destination",
            e.guid
        );
    }
}

#[test]
fn a_partition_probe_is_a_pair_that_shares_it() {
    let (mut spec, hosts) = small_tree(0);
    spec.pkeys(hosts[4], &[0xFFFF, 0x0009]);
    spec.pkeys(hosts[5], &[0xFFFF, 0x8009]);
    let f = fabric(&spec);
    let p = f.partition_probe(0x0009).expect("a probe");
    let guids = [host_guid(4), host_guid(5)];
    assert!(guids.contains(&p.source) && guids.contains(&p.dest) && p.source != p.dest);
    assert_eq!(p.table, Table::Partition(0x8009));
    assert_eq!(f.partition_probe(0x0042), None);
}

#[test]
fn differences_name_the_first_field_that_differs() {
    let (spec, _) = small_tree(0);
    let f = fabric(&spec);
    let ours = table(&f, host_guid(0), Table::Default);
    assert_eq!(compare_pair(&ours, &ours), None);
    let mut theirs = ours.clone();
    theirs[3].set_sl(2);
    let d = compare_pair(&ours, &theirs).expect("differs");
    assert_eq!(
        (d.field, d.ours.as_str(), d.theirs.as_str()),
        ("sl", "0", "2")
    );
    assert_eq!(
        compare_pair(&ours[..1], &[]).expect("differs").field,
        "records"
    );
}

#[test]
fn a_fabric_is_shared_by_threads() {
    fn shared<T: Sync + Send>() {}
    shared::<Fabric>();
}

mod qos_policy;
