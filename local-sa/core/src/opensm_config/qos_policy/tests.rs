//! The policy language as OpenSM's own documentation writes it
//! (`QoS_management_in_OpenSM.txt`), its refusals, and the matching of
//! queries to levels.

use std::collections::HashMap;

use super::*;

/// OpenSM's documented example of every keyword, trimmed of `qos-setup`'s
/// contents (parsed and ignored).
const EXAMPLE: &str = "
    # See the comments in the following example.
    port-groups
        port-group # using port GUIDs
            name: Storage
            use: SRP Targets
            port-guid: 0x10000000000001, 0x10000000000005-0x1000000000FFFA
            port-guid: 0x1000000000FFFF
        end-port-group
        port-group
            name: Virtual Servers
            port-name: vs1 HCA-1/P1, vs2 HCA-1/P1
        end-port-group
        port-group
            name: Partitions
            partition: Part1
            pkey: 0x1234
        end-port-group
        port-group
            name: CAs and SM
            node-type: CA, SELF
        end-port-group
    end-port-groups
    qos-setup
        sl2vl-tables
            sl2vl-scope
                group: CAs and SM
                sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
            end-sl2vl-scope
        end-sl2vl-tables
    end-qos-setup
    qos-levels
        qos-level
            name: DEFAULT
            use: default QoS Level
            sl: 0
        end-qos-level
        qos-level
            name: WholeSet
            sl: 1
            mtu-limit: 4
            rate-limit: 5
            pkey: 0x1234
            packet-life: 8
        end-qos-level
    end-qos-levels
    qos-match-rules
        qos-match-rule
            use: by QoS class
            qos-class: 7-9,11
            qos-level-name: WholeSet
        end-qos-match-rule
        qos-match-rule
            use: Storage targets
            destination: Storage
            service-id: 0x10000000000001, 0x10000000000008-0x10000000000FFF
            qos-level-name: WholeSet
        end-qos-match-rule
        qos-match-rule
            source: Storage
            use: match by source group only
            qos-level-name: DEFAULT
        end-qos-match-rule
        qos-match-rule
            use: match by all parameters
            qos-class: 7-9,11
            source: Virtual Servers
            destination: Storage
            service-id: 0x0000000000010000-0x000000000001FFFF
            pkey: 0x0F00-0x0FFF
            qos-level-name: WholeSet
        end-qos-match-rule
    end-qos-match-rules
";

/// Group membership by name, for the tests.
struct Members(HashMap<&'static str, Vec<u64>>, Vec<String>);

impl PortMembership for Members {
    fn in_group(&self, port: u64, group: usize) -> bool {
        self.0
            .get(self.1[group].as_str())
            .is_some_and(|ports| ports.contains(&port))
    }
}

fn members(policy: &QosPolicy, of: &[(&'static str, &[u64])]) -> Members {
    Members(
        of.iter().map(|(n, p)| (*n, p.to_vec())).collect(),
        policy.port_groups.iter().map(|g| g.name.clone()).collect(),
    )
}

#[test]
fn opensm_s_own_example_parses_with_every_field() {
    let p = QosPolicy::parse(EXAMPLE).expect("OpenSM's example");
    assert_eq!(p.port_groups.len(), 4);
    let storage = &p.port_groups[0];
    assert_eq!(
        storage.guids,
        [
            (0x10000000000001, 0x10000000000001),
            (0x10000000000005, 0x1000000000FFFA),
            (0x1000000000FFFF, 0x1000000000FFFF)
        ]
    );
    // OpenSM's lexer drops the blanks: its own example names nodes
    // `vs1HCA-1` (and the group `VirtualServers`).
    assert_eq!(p.port_groups[1].name, "VirtualServers");
    assert_eq!(
        p.port_groups[1].port_names,
        [("vs1HCA-1".to_owned(), 1), ("vs2HCA-1".to_owned(), 1)]
    );
    assert_eq!(p.port_groups[2].partitions, ["Part1"]);
    assert_eq!(p.port_groups[2].pkeys, [(0x1234, 0x1234)]);
    assert!(p.port_groups[3].node_types.ca && p.port_groups[3].node_types.self_);
    let whole = &p.levels[1];
    assert_eq!(
        (
            whole.sl,
            whole.mtu_limit,
            whole.rate_limit,
            whole.packet_life
        ),
        (Some(1), Some(4), Some(5), Some(8))
    );
    assert_eq!(p.levels[p.default_level].name, "DEFAULT");
    assert_eq!(p.rules.len(), 4);
    assert_eq!(p.rules[0].qos_classes, [(7, 9), (11, 11)]);
    assert_eq!(p.rules[3].pkeys, [(0x0F00, 0x0FFF)]);
}

#[test]
fn a_query_gets_the_level_of_the_first_rule_it_matches_all_criteria_of() {
    let p = QosPolicy::parse(EXAMPLE).unwrap();
    let m = members(&p, &[("Storage", &[0xA]), ("Virtual Servers", &[0xB])]);
    let level = |s, d, keys| p.level(&m, s, d, keys).name.as_str();
    let none = QueryKeys::default();
    assert_eq!(level(0xC, 0xD, none), "DEFAULT", "no rule matches");
    let class = |c| QueryKeys {
        qos_class: Some(c),
        ..none
    };
    assert_eq!(level(0xC, 0xD, class(8)), "WholeSet", "by QoS class alone");
    assert_eq!(level(0xC, 0xD, class(10)), "DEFAULT");
    // A rule with a ServiceID needs the query to name one.
    assert_eq!(level(0xC, 0xA, none), "DEFAULT");
    let sid = QueryKeys {
        service_id: Some(0x10000000000008),
        ..none
    };
    assert_eq!(level(0xC, 0xA, sid), "WholeSet");
}

#[test]
fn the_simplified_policy_s_rules_come_after_the_full_ones_each_with_its_sl() {
    let p = QosPolicy::parse(
        "qos-ulps
            default : 0
            sdp, port-num 30000 : 2
            sdp : 1
            rds : 3
            iser, port-num 900 : 4
            ipoib, pkey 0x8001 : 5
            ipoib : 6
            any, service-id 0x6234 : 7
            any, target-port-guid 0x1234-0x1235 : 8
            srp, target-port-guid 0x9 : 9
         end-qos-ulps
         qos-levels
            qos-level
                name: ten
                sl: 10
            end-qos-level
         end-qos-levels
         qos-match-rules
            qos-match-rule
                qos-class: 1
                qos-level-name: ten
            end-qos-match-rule
         end-qos-match-rules",
    )
    .expect("a simplified policy");
    let m = members(&p, &[]);
    let sl = |dest: u64, keys: QueryKeys| p.level(&m, 1, dest, keys).sl;
    let sid = |s: u64| QueryKeys {
        service_id: Some(s),
        ..QueryKeys::default()
    };
    let pkey = |k: u16| QueryKeys {
        pkey: Some(k),
        ..QueryKeys::default()
    };
    assert_eq!(sl(5, QueryKeys::default()), Some(0), "the ULP default");
    assert_eq!(sl(5, sid(0x10000 + 30000)), Some(2));
    assert_eq!(sl(5, sid(0x10000 + 31)), Some(1));
    assert_eq!(sl(5, sid(0x1060000 + 0x48CA)), Some(3));
    assert_eq!(sl(5, sid(0x1060000 + 900)), Some(4));
    assert_eq!(
        sl(5, pkey(0x0001)),
        Some(5),
        "P_Keys compare by their low 15 bits"
    );
    assert_eq!(sl(5, pkey(0xFFFF)), Some(6));
    assert_eq!(sl(5, sid(0x6234)), Some(7));
    assert_eq!(sl(0x1235, QueryKeys::default()), Some(8));
    assert_eq!(sl(0x9, QueryKeys::default()), Some(9));
    // The full rule, last in the file, is tried first.
    let both = QueryKeys {
        qos_class: Some(1),
        service_id: Some(0x6234),
        ..QueryKeys::default()
    };
    assert_eq!(sl(5, both), Some(10));
}

#[test]
fn a_file_opensm_refuses_is_refused_with_its_message() {
    for (text, reason) in [
        (
            "qos-levels\n qos-level\n  name: x\n  sl: 1\n end-qos-level\nend-qos-levels\n",
            "Default qos-level (default) not defined",
        ),
        (
            "qos-levels\n qos-level\n  name: default\n  sl: 16\n end-qos-level\nend-qos-levels\n",
            "illegal SL value",
        ),
        (
            "qos-levels\n qos-level\n  name: default\n end-qos-level\nend-qos-levels\n",
            "no 'sl' specified",
        ),
        (
            "qos-levels\n qos-level\n  name: default\n  sl: 0\n  mtu-limit: 7\n end-qos-level\nend-qos-levels\n",
            "mtu limit is out of range, value: 7",
        ),
        (
            "qos-ulps\n default : 0\nend-qos-ulps\nqos-match-rules\n qos-match-rule\n  qos-level-name: nowhere\n end-qos-match-rule\nend-qos-match-rules\n",
            "qos-level 'nowhere' not found",
        ),
        // The ULPs' default SL is no level a rule can name.
        (
            "qos-ulps\n default : 0\nend-qos-ulps\nqos-match-rules\n qos-match-rule\n  qos-level-name: default\n end-qos-match-rule\nend-qos-match-rules\n",
            "qos-level 'default' not found",
        ),
        (
            "qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\nend-qos-levels\nqos-match-rules\n qos-match-rule\n  source: Nobody\n  qos-level-name: default\n end-qos-match-rule\nend-qos-match-rules\n",
            "source port-group 'Nobody' not found",
        ),
        (
            "port-groups\n port-group\n  port-name: node/X1\n end-port-group\nend-port-groups\n",
            "illegal port name",
        ),
        (
            "qos-ulps\n default : 0\n sdp, port-num 70000 : 1\nend-qos-ulps\n",
            "SDP port number out of range",
        ),
        ("qos-levels\n", "a section is not closed"),
        (
            "qos-levels\n qos-level\n  colour: blue\n",
            "syntax error near 'colour'",
        ),
    ] {
        let e = QosPolicy::parse(text).expect_err(text);
        assert!(e.reason.contains(reason), "{text}: {}", e.reason);
    }
}

#[test]
fn a_level_s_p_keys_are_what_it_allows() {
    let p = QosPolicy::parse(
        "qos-levels\n qos-level\n  name: default\n  sl: 0\n  pkey: 0x8001-0x8003\n end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    let l = &p.levels[p.default_level];
    assert!(l.allows_pkey(0x8002) && l.allows_pkey(0x0003));
    assert!(!l.allows_pkey(0xFFFF));
}

#[test]
fn strings_are_read_as_opensm_s_lexer_reads_them() {
    let p = QosPolicy::parse(
        "port-groups
            port-group
                name: Virtual Servers # a comment
                port-name: vs1 HCA-1/P1, \"vs2 HCA-1\"/P1, \"odd, #5\"/p2x
            end-port-group
        end-port-groups
        qos-levels
            qos-level
                name: DEFAULT
                sl: 0
                packet-life: 70
            end-qos-level
            qos-level
                name: far
                sl: 1
                packet-life: 300
            end-qos-level
        end-qos-levels
        qos-match-rules
            qos-match-rule
                source: Virtual Servers
                qos-level-name: far
            end-qos-match-rule
        end-qos-match-rules",
    )
    .expect("a policy OpenSM takes");
    let g = &p.port_groups[0];
    assert_eq!(g.name, "VirtualServers");
    assert_eq!(
        g.port_names,
        [
            ("vs1HCA-1".to_owned(), 1),
            ("vs2 HCA-1".to_owned(), 1),
            ("odd, #5".to_owned(), 2)
        ],
        "blanks dropped outside quotes; strtoul's port number"
    );
    assert!(
        matches!(&p.rules[0].sources, Some(Ports::Groups(g)) if g == &["VirtualServers"]),
        "the rule names the group as the lexer leaves it: {:?}",
        p.rules[0].sources
    );
    assert_eq!(
        (p.levels[0].packet_life, p.levels[1].packet_life),
        (Some(70), Some(44)),
        "a byte: 300 wraps to 44"
    );
    for bad in ["node/P0", "node/P", "node/Px", "node"] {
        let text = format!(
            "port-groups\nport-group\nname: g\nport-name: {bad}\nend-port-group\nend-port-groups\n\
             qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n"
        );
        let e = QosPolicy::parse(&text).expect_err(bad);
        assert!(e.reason.contains("illegal port"), "{bad}: {e}");
    }
}
