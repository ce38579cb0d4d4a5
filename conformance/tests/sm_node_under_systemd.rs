//! One image on every node, SM nodes included: under a real systemd, on a
//! node where OpenSM's unit is enabled or runs, the package's local-sa
//! (its unit as shipped) leaves the port's SA class to the subnet manager
//! — an SA request at the node's LID is answered as the kernel answers
//! where no agent serves it — says so once, and serves its other doors
//! from the cache it fetches as the master's client; with the unit
//! disabled and stopped, it takes the class within seconds.
//!
//! The simulator never sets a port's IsSM capability and lets two
//! processes bind the SA class on one port; on hardware the kernel refuses
//! the second. The core's tests show the capability and the refusal.

mod under_systemd;

use std::os::unix::net::UnixStream;
use std::time::Duration;

use conformance::acm_client::resolved;
use conformance::saquery::printed_answer;
use conformance::systemd::{Installed, Systemd};
use conformance::{SimulatedFabric, eventually};
use mad_codec::MadStatus;
use under_systemd::{NODE, boot_installed, counter, fabric, node_gid, package_with_options};

/// A stand-in for the opensm package's unit: what matters is that it is
/// enabled, or runs.
const OPENSM_UNIT: &str = "\
[Unit]
Description=stand-in for OpenSM's unit

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
";

/// The MAD status of an SA PathRecord Get (the node's path to itself)
/// sent from another node to local-sa's LID (`Err`: no answer, what
/// lsaquery said).
fn sa_answer_at_node(fabric: &SimulatedFabric) -> Result<MadStatus, String> {
    let lid = fabric.node(NODE).unwrap().port().unwrap().lid.to_string();
    let gid = node_gid(fabric).to_string();
    let out = fabric
        .node("h1")
        .unwrap()
        .lsaquery()
        .args(["--sa-lid", &lid, "-p", "--method", "get"])
        .args(["--sgid", &gid, "--dgid", &gid])
        .args(["-d", "--timeout", "500", "--retries", "1"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some((status, _)) = printed_answer(&out.stdout) {
        return Ok(status);
    }
    // An error status is said on stderr: "... (...; status 0x000c)".
    out.stderr
        .split("status 0x")
        .nth(1)
        .and_then(|hex| u16::from_str_radix(hex.get(..4)?, 16).ok())
        .map(MadStatus)
        .ok_or_else(|| format!("{}{}", out.stdout, out.stderr))
}

fn log(fabric: &SimulatedFabric) -> String {
    std::fs::read_to_string(fabric.dir().join("local-sa.log")).unwrap_or_default()
}

/// `lsaquery --verify` on the SM node: the paths at its LID are not
/// local-sa's to answer there, and it says so rather than compare the SM's
/// answers with themselves; its other doors are checked as anywhere.
fn verify_on_the_sm_node(sd: &Systemd, fabric: &SimulatedFabric) {
    let api = sd.inside("/run/local-sa/ibsim0-1.sock");
    let acm = sd.inside("/run/ibacm-unix.sock");
    let out = fabric
        .node(NODE)
        .unwrap()
        .lsaquery()
        .args(["--verify", "--sample", "4", "--json"])
        .args(["--api-socket", api.to_str().unwrap()])
        .args(["--acm-socket", acm.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(5), "{}{}", out.stdout, out.stderr);
    let report: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let part = |name: &str| {
        report["parts"]
            .as_array()
            .and_then(|parts| parts.iter().find(|p| p["part"] == name).cloned())
            .unwrap_or_else(|| panic!("no part {name}: {report}"))
    };
    let paths = part("paths");
    assert_eq!(paths["verdict"], "NOT CHECKED", "{paths}");
    assert!(paths.to_string().contains("SA class"), "{paths}");
    assert_eq!(part("doors")["verdict"], "OK", "{report}");
}

/// What local-sa says when it leaves the class.
const LEAVES: &str = "local-sa leaves the SA class to it";

/// ibacm's socket answers a path from this node to `h9`.
fn acm_resolves(sd: &Systemd, fabric: &SimulatedFabric) {
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let socket = UnixStream::connect(sd.inside("/run/ibacm-unix.sock"))
        .unwrap_or_else(|e| panic!("the ibacm socket: {e}"));
    resolved(socket, dest.lid, 7);
}

#[test]
fn on_a_node_set_to_run_opensm_local_sa_leaves_it_the_sa_class_and_serves_its_other_doors() {
    let fabric = fabric();
    let mut installed = package_with_options(fabric.dir(), "");
    installed.push(Installed::File(
        "/etc/systemd/system/opensm.service".into(),
        OPENSM_UNIT.into(),
    ));
    // SA requests to the node reach it: ibsim hands unsolicited requests
    // only to a process marked as the node's SM port (one per node, so
    // the other tests under systemd, which restart local-sa, leave it
    // out).
    let sd = boot_installed(&fabric, installed, "Environment=SIM_SET_ISSM=1\n");
    sd.systemctl_ok(&["enable", "opensm.service"]);

    // Ready as a client of the master: its table fetched, its doors open.
    sd.systemctl_ok(&["start", "local-sa.service"]);
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "active");
    let said = log(&fabric);
    assert_eq!(
        said.matches(LEAVES).count(),
        1,
        "said once, with why:\n{said}"
    );
    assert!(
        said.contains("opensm.service is enabled on this node"),
        "{said}"
    );
    // The counters file, written every second.
    assert!(eventually(Duration::from_secs(10), || counter(
        &sd,
        "sa_class_held"
    )
    .is_some()));
    assert_eq!(counter(&sd, "sa_class_held"), Some(0));
    assert_eq!(
        sa_answer_at_node(&fabric),
        Ok(MadStatus::METHOD_ATTR_UNSUPPORTED),
        "no SA agent at the node's LID: the kernel's answer"
    );
    acm_resolves(&sd, &fabric);
    verify_on_the_sm_node(&sd, &fabric);

    // OpenSM's unit disabled: local-sa answers the SA's requests here.
    sd.systemctl_ok(&["disable", "opensm.service"]);
    assert!(
        eventually(Duration::from_secs(20), || counter(&sd, "sa_class_held")
            == Some(1)),
        "{}",
        log(&fabric)
    );
    assert_eq!(sa_answer_at_node(&fabric), Ok(MadStatus::OK));

    // Started by hand without being enabled: left to it again, at once.
    sd.systemctl_ok(&["start", "opensm.service"]);
    assert!(
        eventually(Duration::from_secs(20), || counter(&sd, "sa_class_held")
            == Some(0)),
        "{}",
        log(&fabric)
    );
    assert!(log(&fabric).contains("opensm.service is active on this node"));
    assert_eq!(
        sa_answer_at_node(&fabric),
        Ok(MadStatus::METHOD_ATTR_UNSUPPORTED)
    );
    acm_resolves(&sd, &fabric);
    // Holding, leaving and holding the class again is one process's life:
    // nothing on the way brought it down for systemd to restart.
    assert_eq!(
        sd.property("local-sa.service", "NRestarts"),
        "0",
        "{}",
        log(&fabric)
    );
}
