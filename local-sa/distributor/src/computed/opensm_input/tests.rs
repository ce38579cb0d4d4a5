//! OpenSM's files read as OpenSM reads them, from a file system in
//! memory: its default names, a policy it drops, and what a second read
//! at a heavy sweep takes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::*;

/// Files by path.
#[derive(Default)]
struct Files(HashMap<PathBuf, String>);

impl Files {
    fn with(mut self, path: &str, text: &str) -> Self {
        self.0.insert(path.into(), text.to_owned());
        self
    }

    fn set(&mut self, path: &str, text: &str) {
        self.0.insert(path.into(), text.to_owned());
    }

    fn read(&self) -> impl Fn(&Path) -> std::io::Result<Option<String>> + '_ {
        |p| Ok(self.0.get(p).cloned())
    }
}

const POLICY: &str = "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\n \
                      qos-level\n  name: FAST\n  sl: 1\n end-qos-level\nend-qos-levels\n";

const CONF: &str = "/etc/opensm/opensm.conf";

fn load(files: &Files) -> OpenSmInput {
    OpenSmInput::load_with(Path::new(CONF), &files.read()).unwrap()
}

fn changed(r: Reread) -> Vec<String> {
    match r {
        Reread::Changed(_, what) => what,
        Reread::Same => Vec::new(),
    }
}

#[test]
fn without_names_opensm_s_default_files_are_read_and_their_absence_is_none() {
    let files = Files::default()
        .with(CONF, "qos TRUE\n")
        .with(DEFAULT_POLICY_FILE, POLICY)
        .with(DEFAULT_PARTITIONS_FILE, "P1=0x8001, sl=2 : ALL=full ;\n");
    let input = load(&files);
    let (policy_path, policy) = input.policy.as_ref().expect("the default policy");
    assert_eq!(policy_path, Path::new(DEFAULT_POLICY_FILE));
    assert_eq!(policy.levels.len(), 2);
    let (_, partitions) = input.partitions.as_ref().expect("the default partitions");
    assert_eq!(partitions.by_pkey(0x0001).map(|p| p.sl), Some(2));
    assert_eq!(input.policy_dropped, None);
    // Neither file there: none, and nothing said (OpenSM says nothing).
    let bare = load(&Files::default().with(CONF, "qos TRUE\n"));
    assert!(bare.policy.is_none() && bare.partitions.is_none());
    assert_eq!(bare.policy_dropped, None);
    // Named but missing: OpenSM's ERR AC01, no policy, said.
    let named = load(&Files::default().with(CONF, "qos TRUE\nqos_policy_file /x.conf\n"));
    assert!(named.policy.is_none());
    assert!(named.policy_dropped.as_deref().unwrap().contains("AC01"));
}

#[test]
fn a_policy_opensm_refuses_is_dropped_whole_and_said() {
    let files = Files::default()
        .with(CONF, "qos TRUE\nqos_policy_file policy.conf\n")
        .with(
            "/etc/opensm/policy.conf",
            "qos-levels\n qos-level\n  name: FAST\n  sl: 1\n end-qos-level\nend-qos-levels\n",
        );
    let input = load(&files);
    assert!(input.policy.is_none(), "OpenSM runs without it");
    let why = input.policy_dropped.as_deref().unwrap();
    assert!(
        why.contains("AC10") && why.contains("drops the whole policy"),
        "{why}"
    );
    assert!(input.describe().contains("no QoS policy"));
}

#[test]
fn a_second_read_says_what_opensm_takes_and_nothing_else() {
    let mut files = Files::default()
        .with(
            CONF,
            "qos TRUE\nqos_policy_file policy.conf\npartition_config_file parts.conf\n",
        )
        .with("/etc/opensm/policy.conf", POLICY)
        .with(
            "/etc/opensm/parts.conf",
            "Default=0x7fff : ALL=full ;\nP2=0x8002, sl=3 : ALL=full ;\n",
        );
    let input = load(&files);
    assert!(matches!(
        input.reread_with(&files.read()).unwrap(),
        Reread::Same
    ));
    // A comment, and an option OpenSM reads only when it starts: none.
    files.set(
        CONF,
        "# edited\nqos TRUE\nqos_policy_file policy.conf\npartition_config_file parts.conf\n\
         allow_both_pkeys TRUE\n",
    );
    assert!(matches!(
        input.reread_with(&files.read()).unwrap(),
        Reread::Same
    ));
    // The default level limited, a partition's SL moved, subnet_timeout.
    files.set(
        "/etc/opensm/policy.conf",
        &POLICY.replace("sl: 0\n", "sl: 0\n  mtu-limit: 2\n"),
    );
    files.set(
        "/etc/opensm/parts.conf",
        "Default=0x7fff : ALL=full ;\nP2=0x8002, sl=4 : ALL=full ;\n",
    );
    files.set(
        CONF,
        "qos TRUE\nqos_policy_file policy.conf\npartition_config_file parts.conf\n\
         subnet_timeout 16\n",
    );
    let Reread::Changed(now, what) = input.reread_with(&files.read()).unwrap() else {
        panic!("a change");
    };
    assert_eq!(
        what,
        [
            "option subnet_timeout: 18 -> 16",
            "partition P2 (0x0002): sl 3 -> 4",
            "QoS level DEFAULT: mtu-limit none -> 2",
        ]
    );
    assert_eq!(now.options.subnet_timeout, 16);
    assert!(!now.options.allow_both_pkeys, "not while OpenSM runs");
    // A rule added, a level gone, a partition added: each said.
    files.set(
        "/etc/opensm/policy.conf",
        "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\n\
         qos-match-rules\n qos-match-rule\n  service-id: 0x10\n  qos-level-name: DEFAULT\n \
         end-qos-match-rule\nend-qos-match-rules\n",
    );
    files.set(
        "/etc/opensm/parts.conf",
        "Default=0x7fff : ALL=full ;\nP2=0x8002, sl=4 : ALL=full ;\nP3=0x8003 : ALL=full ;\n",
    );
    let what = changed(now.reread_with(&files.read()).unwrap());
    assert_eq!(
        what,
        [
            "partition P3 (0x0003) added (sl 0)",
            "QoS level DEFAULT: mtu-limit 2 -> none",
            "QoS level FAST removed",
            "QoS match rules: 0 -> 1",
        ]
    );
}

#[test]
fn qos_turned_off_in_the_file_drops_the_policy_and_a_policy_opensm_refuses_now_is_said() {
    let mut files = Files::default()
        .with(CONF, "qos TRUE\nqos_policy_file policy.conf\n")
        .with("/etc/opensm/policy.conf", POLICY);
    let input = load(&files);
    files.set("/etc/opensm/policy.conf", "qos-levels\n");
    let what = changed(input.reread_with(&files.read()).unwrap());
    assert_eq!(what.len(), 1, "{what:?}");
    assert!(what[0].starts_with("QoS policy dropped:"), "{what:?}");
    files.set("/etc/opensm/policy.conf", POLICY);
    files.set(CONF, "qos FALSE\nqos_policy_file policy.conf\n");
    let what = changed(input.reread_with(&files.read()).unwrap());
    assert_eq!(what, ["option qos: TRUE -> FALSE", "QoS policy: none now"]);
}

#[test]
fn a_partition_the_master_made_from_another_file_says_the_configuration_is_not_its() {
    use local_sa_core::path_engine::Fabric;
    use local_sa_core::path_engine::synthetic::FatTree;

    let (mut spec, hosts) = FatTree {
        leaves: 2,
        hosts_per_leaf: 2,
        spines: 1,
        lmc: 0,
    }
    .spec();
    for h in &hosts {
        spec.pkeys(*h, &[0xFFFF, 0x8001]);
    }
    let records = spec.records();
    let apply = |files: &Files| {
        let input = load(files);
        let mut fabric = Fabric::build(&records, false).unwrap();
        input.apply(&mut fabric, &records, false, 1)
    };
    let named = Files::default()
        .with(CONF, "partition_config_file parts.conf\n")
        .with(
            "/etc/opensm/parts.conf",
            "Default=0x7fff : ALL=full ;\nP1=0x8001 : ALL=full ;\n",
        );
    assert!(apply(&named).is_ok());
    let other = Files::default()
        .with(CONF, "partition_config_file parts.conf\n")
        .with("/etc/opensm/parts.conf", "Default=0x7fff : ALL=full ;\n");
    let e = apply(&other).unwrap_err();
    assert!(
        e.message().contains("0x0001") && e.message().contains("does not name"),
        "{e:?}"
    );
    let none = Files::default().with(CONF, "qos FALSE\n");
    let e = apply(&none).unwrap_err();
    assert!(e.message().contains("-P"), "{e:?}");
}
