//! The Debian package installed, upgraded and purged with dpkg under a
//! real systemd, as an administrator replacing ibacm lives it: systemd
//! runs chrooted in an overlay of the host's root
//! ([`Systemd::boot`]), so that dpkg writes only into the test's
//! directory. The package's units run as installed, with a runtime
//! drop-in that gives them the simulator's environment only.

mod under_systemd;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use conformance::acm_client::resolved;
use conformance::eventually;
use conformance::opensm_dump::SaDump;
use conformance::systemd::{PackageForm, Systemd, package};
use under_systemd::{
    OWN_TRAPS, counter, fabric, main_pid, node_gid, sa_dump, simulator_environment,
};

/// The package's units.
const UNITS: [&str; 4] = [
    "local-sa.socket",
    "local-sa-netlink.socket",
    "local-sa.service",
    "local-sa-distributor.service",
];

#[test]
fn install_upgrade_and_purge_as_debian_does() {
    let fabric = fabric();
    let debs = fabric.dir().join("debs");
    let deb = |version, dir| {
        package(&debs.join(dir), version, PackageForm::Archive).unwrap_or_else(|e| panic!("{e}"))
    };
    let first = deb("0.1.0+test1", "1");
    let second = deb("0.1.0+test2", "2");
    let units = [(
        "local-sa.service.d/simulator.conf",
        simulator_environment(&fabric),
    )];
    let sd = Systemd::boot(&fabric.dir().join("systemd"), &[], &units, &[fabric.dir()])
        .unwrap_or_else(|e| panic!("{e}"));
    // A container's policy-rc.d forbids starting anything during package
    // installs; a host's has none.
    let _ = sd.run("rm", &["-f", "/usr/sbin/policy-rc.d"]);

    // What the host already has of it (an install of its own, an earlier
    // run's crash), not this package's to take away.
    let before = leavings(&sd);

    // Install: the sockets enabled and listening, the service enabled;
    // the first ibacm client starts it.
    sd.run_ok("dpkg", &["-i", &first.display().to_string()]);
    for unit in ["local-sa.socket", "local-sa.service"] {
        assert_eq!(
            sd.systemctl(&["is-enabled", unit]).stdout.trim(),
            "enabled",
            "{unit}"
        );
    }
    assert_eq!(sd.property("local-sa.socket", "ActiveState"), "active");
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let client = UnixStream::connect(sd.inside("/run/ibacm-unix.sock")).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut client = resolved(client, dest.lid, 1);
    sd.wait_state("local-sa.service", "active", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    let port = node_gid(&fabric);
    let dump = sa_dump(&fabric);
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(30), |d| {
        d.traps_of(port) == OWN_TRAPS
    });
    assert!(held, "its subscriptions at OpenSM: {:?}", d.traps_of(port));
    assert!(
        eventually(Duration::from_secs(20), || counter(&sd, "acm_clients_kept")
            == Some(1)),
        "the client in systemd's store"
    );

    // Upgrade: the new binary runs, and the old connection is answered.
    let old_pid = main_pid(&sd);
    sd.run_ok("dpkg", &["-i", &second.display().to_string()]);
    let version = sd.run("dpkg-query", &["-W", "-f", "${Version}", "local-sa"]);
    assert_eq!(version.stdout, "0.1.0+test2");
    let new_pid = main_pid(&sd);
    assert_ne!(new_pid, old_pid, "restarted by the upgrade");
    let inode = |path: &str| sd.run("stat", &["-L", "-c", "%i", path]).stdout;
    assert_eq!(
        inode(&format!("/proc/{new_pid}/exe")),
        inode("/usr/sbin/local-sa"),
        "the upgrade's /usr/sbin/local-sa runs"
    );
    resolved(&mut client, dest.lid, 2);

    // Purge: nothing left — units, sockets, files, registrations.
    sd.run_ok("dpkg", &["--purge", "local-sa"]);
    for unit in UNITS {
        assert_eq!(sd.property(unit, "LoadState"), "not-found", "{unit}");
        assert_eq!(sd.property(unit, "ActiveState"), "inactive", "{unit}");
    }
    let left: Vec<String> = leavings(&sd)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let (d, gone) = SaDump::wait_for(&dump, Duration::from_secs(30), |d| {
        d.traps_of(port).is_empty()
    });
    assert!(gone, "left at OpenSM: {:?}", d.traps_of(port));
    // The kept client's connection went with the store.
    let mut end = [0u8; 1];
    assert_eq!(client.read(&mut end).unwrap_or(0), 0, "the client closed");
}

/// What of the package's files, sockets, port files and enablement the
/// namespace holds.
fn leavings(sd: &Systemd) -> Vec<String> {
    let mut found: Vec<String> = [
        "/usr/sbin/local-sa",
        "/usr/sbin/lsaquery",
        "/etc/local-sa",
        "/etc/default/local-sa",
        "/run/local-sa",
        "/run/ibacm-unix.sock",
        "/run/ibacm.sock",
        "/run/ibacm.port",
        "/run/ibacm-tcp.port",
        "/usr/lib/tmpfiles.d/local-sa.conf",
    ]
    .into_iter()
    .filter(|path| {
        !sd.run("test", &["!", "-e", path, "-a", "!", "-L", path])
            .status
            .success()
    })
    .map(str::to_owned)
    .collect();
    let enablement = sd.run(
        "find",
        &[
            "/etc/systemd/system",
            "/var/lib/systemd/deb-systemd-helper-enabled",
            "-name",
            "*local-sa*",
        ],
    );
    found.extend(enablement.stdout.lines().map(str::to_owned));
    found
}
