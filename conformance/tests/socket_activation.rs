//! local-sa started the way systemd starts a socket-activated service:
//! `systemd-socket-activate` (systemd's own tool) binds an ibacm socket
//! and a local API socket (`--fdname=ibacm.socket:api`, as local-sa's
//! units name them), and launches local-sa with `LISTEN_PID`, `LISTEN_FDS`
//! and `LISTEN_FDNAMES` on the first connection. That connection — ib_acme
//! — is answered with OpenSM's path; the API socket serves lsaquery; and
//! the inherited socket files, which belong to systemd, stay in place when
//! local-sa exits.

use std::process::Command;
use std::time::{Duration, Instant};

use conformance::{SimulatedFabric, Topology};

#[test]
fn inherited_sockets_serve_ib_acme_and_the_local_api() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let local_sa = conformance::program("local-sa").unwrap_or_else(|e| panic!("{e}"));
    let acm = fabric.dir().join("activated.acm.sock");
    let api = fabric.dir().join("activated.api.sock");
    let counters = fabric.dir().join("activated.counters");
    let node = fabric.node("h2").unwrap();
    let mut process = node
        .command("systemd-socket-activate")
        .arg("-l")
        .arg(&acm)
        .arg("-l")
        .arg(&api)
        .arg("--fdname=ibacm.socket:api")
        .args(["-E", "LD_PRELOAD", "-E", "SIM_HOST", "-E", "IBSIM_SOCKNAME"])
        .args(["-E", "RUST_LOG=info"])
        .arg(&local_sa)
        .arg("--stats-file")
        .arg(&counters)
        .arg("--run-dir")
        .arg(fabric.dir().join("activated.run"))
        // This machine's units are not the simulated node's.
        .args(["--sm-unit", "none"])
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run systemd-socket-activate (package systemd): {e}"));
    let start = Instant::now();
    while !(acm.exists() && api.exists()) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "systemd-socket-activate did not bind:\n{}",
            process.stderr()
        );
        assert!(process.try_wait().is_none(), "{}", process.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }

    // The first connection launches local-sa, which answers it.
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let out = Command::new("ib_acme")
        .arg("-S")
        .arg(&acm)
        .args(["-f", "l", "-d", &dest.lid.to_string(), "-v"])
        .output()
        .expect("ib_acme (package ibacm)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", process.stderr());
    assert!(text.contains("SA verification: success"), "{text}");
    assert!(
        text.contains(&format!("dlid: {}", dest.lid)),
        "the path to h9:\n{text}"
    );

    // The local API on the other inherited socket.
    let out = node
        .lsaquery()
        .arg("--api-socket")
        .arg(&api)
        .arg("-I")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "lsaquery through the inherited API socket:\n{}{}",
        out.stdout,
        out.stderr
    );
    let log = process.stderr();
    assert!(
        log.contains("(from systemd)") && log.contains("ibacm protocol listening"),
        "{log}"
    );

    // systemd's sockets are systemd's: local-sa leaves them in place.
    let status = process.stop(Duration::from_secs(5));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert!(acm.exists() && api.exists());
}
