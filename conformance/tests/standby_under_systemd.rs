//! Two watches, one owner, as an operator runs them: the package's
//! `local-sa-distributor.service` under a real systemd (Debian's, as PID 1
//! of a namespace: [`conformance::systemd`]) on two nodes of the
//! simulated fabric, the master's SA key in `/etc/local-sa/distributor.conf`
//! as shipped, one runtime drop-in giving each unit the simulator's
//! environment. The first started fills the nodes; the second stands by;
//! the first frozen (`systemctl kill --signal=SIGSTOP`), the second takes
//! over; continued, the first is fenced off and stands by, its unit still
//! active.

mod under_systemd;
mod watching;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use conformance::SimulatedFabric;
use conformance::path_answers::{KEY, start, waiting_nodes};
use conformance::systemd::{Installed, Systemd, package};

use self::under_systemd::{layout, options_file};
use self::watching::{NODES, slow_spine_tree};

const UNIT: &str = "local-sa-distributor.service";

/// Where the unit on `node` writes its output (opened by systemd).
fn log(fabric: &SimulatedFabric, node: &str) -> PathBuf {
    fabric.dir().join(format!("distributor-{node}.log"))
}

/// systemd on `node` with the package installed, the SA key in
/// distributor.conf, the options in its options file, and the simulator's
/// environment for the distributor's unit (the simulator's preload writes
/// its port files in the working directory: a state directory).
fn boot(fabric: &SimulatedFabric, node: &str) -> Systemd {
    let dir = fabric.dir().join(format!("systemd-{node}"));
    let tree = package(&dir, "0.0.0+test", layout()).unwrap_or_else(|e| panic!("{e}"));
    let installed = vec![
        Installed::Package(tree),
        Installed::File(
            "/etc/local-sa/distributor.conf".into(),
            format!("sa_key={KEY}\n"),
        ),
        Installed::File(
            options_file("local-sa-distributor"),
            "LSAQUERY_OPTIONS=\"--watch-interval 300 --settle 3 --json\"\n".into(),
        ),
    ];
    let out = log(fabric, node);
    let dropin = format!(
        "[Service]\n\
         Environment=LD_PRELOAD={} SIM_HOST={node} IBSIM_SOCKNAME={}\n\
         StateDirectory=local-sa-simulator\n\
         WorkingDirectory=/var/lib/local-sa-simulator\n\
         StandardOutput=append:{}\n\
         StandardError=append:{}\n",
        fabric.preload().display(),
        fabric.sockname(),
        out.display(),
        out.display(),
    );
    let units = [("local-sa-distributor.service.d/simulator.conf", dropin)];
    Systemd::boot(&dir, &installed, &units, &[fabric.dir()]).unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until the unit on `node` has written `text`; how long it took.
fn wait_for(fabric: &SimulatedFabric, node: &str, text: &str, within: Duration) -> Duration {
    let since = Instant::now();
    loop {
        let out = std::fs::read_to_string(log(fabric, node)).unwrap_or_default();
        if out.contains(text) {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < within,
            "the distributor on {node} never wrote {text:?}:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn two_distributor_units_one_owner_the_standby_takes_over_from_a_frozen_one() {
    let fabric = start(slow_spine_tree(), &[], &[]);
    let mut nodes = waiting_nodes(&fabric, &NODES, &[]);
    let (first_at, second_at) = ("h3", "h7");
    let first = boot(&fabric, first_at);
    first.systemctl_ok(&["start", UNIT]);
    wait_for(&fabric, first_at, "\"filled\"", Duration::from_secs(120));
    for sa in &mut nodes {
        sa.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
    }
    let second = boot(&fabric, second_at);
    second.systemctl_ok(&["start", UNIT]);
    wait_for(
        &fabric,
        second_at,
        "\"role\":\"standby\"",
        Duration::from_secs(60),
    );

    first.systemctl_ok(&["kill", "--signal=SIGSTOP", UNIT]);
    let took = wait_for(&fabric, second_at, "\"filled\"", Duration::from_secs(60));
    eprintln!(
        "under systemd, the standby unit filled every node {took:?} after the active one froze"
    );
    assert!(took < Duration::from_secs(30), "within 30 s ({took:?})");

    first.systemctl_ok(&["kill", "--signal=SIGCONT", UNIT]);
    wait_for(
        &fabric,
        first_at,
        "\"role\":\"fenced\"",
        Duration::from_secs(60),
    );
    wait_for(
        &fabric,
        first_at,
        "\"role\":\"standby\"",
        Duration::from_secs(60),
    );
    for sd in [&first, &second] {
        sd.wait_state(UNIT, "active", Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for sa in &nodes {
        // At most once, between its lease's end and the standby's fill.
        assert!(sa.counter("refreshes") <= 1, "a node refreshed again");
    }
    // Stopped, the active unit ends every lease it holds.
    second.systemctl_ok(&["stop", UNIT]);
    first.systemctl_ok(&["stop", UNIT]);
}
