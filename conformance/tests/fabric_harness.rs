//! The fabric harness itself: it brings up real fabrics, controls them, and
//! leaves nothing behind.

use std::path::Path;
use std::time::Duration;

use conformance::saquery::parse_printed_records;
use conformance::{FabricError, SimulatedFabric, Topology, eventually};

fn alive(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie would still show "Z".
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

fn start(t: Topology) -> SimulatedFabric {
    SimulatedFabric::builder(t)
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_hundred_host_fat_tree_comes_up_with_opensm() {
    let fabric = start(Topology::fat_tree(10, 10, 4));
    assert_eq!(fabric.topology().hcas().len(), 100);
    assert_eq!(fabric.opensm_node(), "h1");
    let sm = fabric.node("h1").unwrap().port().unwrap();
    let far = fabric.node("h100").unwrap().port().unwrap();
    assert_eq!(far.sm_lid, sm.lid, "every port knows the SM");
    assert_ne!(far.lid, 0);
    let out = fabric.node("h100").unwrap().saquery(["-c"]).unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stdout.contains("Capability mask"));
}

#[test]
fn teardown_stops_every_process_and_removes_the_directory() {
    let fabric = start(Topology::fat_tree(2, 3, 1));
    let dir = fabric.dir().to_owned();
    let ibsim = fabric.ibsim_pid();
    let opensm = fabric.opensm_pid().unwrap();
    let sleeper = fabric
        .node("h4")
        .unwrap()
        .command("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let sleeper_pid = sleeper.pid();
    for pid in [ibsim, opensm, sleeper_pid] {
        assert!(alive(pid), "{pid} should run");
    }
    drop(sleeper);
    assert!(!alive(sleeper_pid), "a dropped node process is stopped");
    drop(fabric);
    assert!(
        !alive(ibsim) && !alive(opensm),
        "ibsim and OpenSM are stopped"
    );
    assert!(!dir.exists(), "{} is removed", dir.display());
}

#[test]
fn a_panicking_test_leaves_no_process_but_keeps_the_logs() {
    let mut pids = Vec::new();
    let mut dir = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let fabric = start(Topology::fat_tree(2, 2, 1));
        pids.push(fabric.ibsim_pid());
        pids.extend(fabric.opensm_pid());
        dir = Some(fabric.dir().to_owned());
        let p = fabric
            .node("h3")
            .unwrap()
            .command("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        pids.push(p.pid());
        panic!("test failure inside a fabric");
    }));
    assert!(result.is_err());
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(!alive(pid), "{pid} still runs after the panic");
    }
    let dir = dir.unwrap();
    assert!(
        dir.join("opensm/opensm.log").exists(),
        "logs are kept for a failed test"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn opensm_stops_and_restarts() {
    let fabric = start(Topology::fat_tree(2, 3, 1));
    let node = fabric.node("h5").unwrap();
    fabric.stop_opensm();
    assert_eq!(fabric.opensm_pid(), None);
    let out = node.saquery(["-c", "-t", "200"]).unwrap();
    assert!(!out.status.success(), "no SA while OpenSM is down");
    fabric.start_opensm().unwrap();
    assert!(node.saquery(["-c"]).unwrap().status.success());
    let before = fabric.opensm_pid();
    fabric.restart_opensm().unwrap();
    assert_ne!(fabric.opensm_pid(), before);
    assert!(node.saquery(["-c"]).unwrap().status.success());
}

#[test]
fn console_takes_links_down_and_up() {
    let fabric = start(Topology::fat_tree(2, 3, 1));
    let here = fabric.node("h2").unwrap();
    let pair = format!(
        "{}:{}",
        here.port().unwrap().lid,
        fabric.node("h5").unwrap().port().unwrap().lid
    );
    // Paths OpenSM answers from h2 to h5; None if the query itself failed.
    let paths_to_target = || {
        let out = here.saquery(["--src-to-dst", &pair]).unwrap();
        out.status
            .success()
            .then(|| parse_printed_records(&out.stdout).len())
    };
    assert_eq!(paths_to_target(), Some(1));
    fabric.unlink("h5", 1).unwrap();
    assert!(
        eventually(Duration::from_secs(60), || paths_to_target() == Some(0)),
        "OpenSM still has paths to an unplugged host"
    );
    fabric.relink("h5", 1).unwrap();
    assert!(
        eventually(Duration::from_secs(60), || paths_to_target() == Some(1)),
        "the host never came back"
    );
}

#[test]
fn a_port_can_drop_everything() {
    let fabric = start(Topology::fat_tree(2, 3, 1));
    let node = fabric.node("h6").unwrap();
    fabric.set_drop_rate("h6", 1, 100).unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !node
            .saquery(["-c", "-t", "200"])
            .unwrap()
            .status
            .success()),
        "queries through a port that drops everything still succeed"
    );
    fabric.set_drop_rate("h6", 1, 0).unwrap();
    assert!(eventually(Duration::from_secs(10), || node
        .saquery(["-c"])
        .unwrap()
        .status
        .success()));
}

#[test]
fn fabrics_run_side_by_side() {
    let a = start(Topology::fat_tree(2, 2, 1));
    let b = start(Topology::fat_tree(3, 2, 1));
    assert_ne!(a.sockname(), b.sockname());
    assert_ne!(a.dir(), b.dir());
    // Each answers for its own topology: b has a host a does not.
    assert!(a.node("h6").is_err());
    let out = b.node("h6").unwrap().saquery(["-c"]).unwrap();
    assert!(out.status.success());
    assert!(
        a.node("h4")
            .unwrap()
            .saquery(["-c"])
            .unwrap()
            .status
            .success()
    );
}

#[test]
fn unknown_nodes_and_bad_topologies_are_explained() {
    let fabric = start(Topology::fat_tree(2, 2, 1));
    let err = fabric.node("h99").unwrap_err();
    assert!(matches!(err, FabricError::UnknownNode { .. }));
    let text = err.to_string();
    assert!(text.contains("h99") && text.contains("h1, h2"), "{text}");
    let err = SimulatedFabric::builder(Topology::fat_tree(2, 2, 1))
        .opensm_on("leaf1")
        .start()
        .unwrap_err();
    assert!(
        err.to_string().contains("leaf1"),
        "a switch cannot run OpenSM: {err}"
    );
}

#[test]
fn debian_example_topologies_load() {
    let dir = Path::new(conformance::topology::DEBIAN_EXAMPLES);
    let mut loaded = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("net") {
            continue;
        }
        let t = Topology::debian_example(&name).unwrap();
        assert!(!t.hcas().is_empty(), "{name} has channel adapters");
        loaded += 1;
    }
    assert!(loaded >= 4, "only {loaded} examples");
    let fabric = start(Topology::debian_example("net.2sw2path4hca").unwrap());
    assert!(
        fabric
            .node("Hca2")
            .unwrap()
            .saquery(["-c"])
            .unwrap()
            .status
            .success()
    );
}
