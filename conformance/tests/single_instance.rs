//! One local-sa per port: a second one started on a port already served
//! exits at once with status 3 and a message saying why, before it touches
//! any socket or file; the first one serves on, its sockets intact.
//!
//! The lock is `<run-dir>/<ca>-<port>.lock`, taken before the umad device
//! is opened. (On hardware the kernel would also refuse the second SA agent
//! registration; the simulator gives each process its own device and does
//! not.)

use std::time::Duration;

use conformance::{LocalSa, SimulatedFabric, Topology};

#[test]
fn a_second_local_sa_on_a_served_port_exits_with_a_clear_message() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut first = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let api = fabric.dir().join("second.api.sock");
    let acm = fabric.dir().join("second.acm.sock");
    let counters = fabric.dir().join("second.counters");
    let out = fabric
        .node("h2")
        .unwrap()
        .workspace_program("local-sa")
        .arg("--api-socket")
        .arg(&api)
        .arg("--acm-socket")
        .arg(&acm)
        .arg("--stats-file")
        .arg(&counters)
        .arg("--run-dir")
        .arg(first.run_dir())
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(3), "{}", out.stderr);
    assert!(
        out.stderr.contains("ibsim0 port 1")
            && out.stderr.contains("is already served by another local-sa")
            && out.stderr.contains(&format!("PID {}", first.pid())),
        "{}",
        out.stderr
    );
    assert!(
        !api.exists() && !acm.exists() && !counters.exists(),
        "the second one created nothing"
    );
    // The first still answers, on its own sockets.
    assert!(first.acm_socket().exists());
    let refreshes = first.counter("refreshes");
    first
        .wait_until("still running", Duration::from_secs(2), |c| {
            c.get("refreshes").is_some_and(|r| *r >= refreshes)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, log) = first.stop();
    assert!(status.is_some_and(|s| s.success()), "{log}");
}
