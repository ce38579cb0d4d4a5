//! The package's units under a real systemd (Debian's, as PID 1 of a
//! namespace: [`conformance::systemd`]), on the simulated fabric: the
//! package's files installed where `dpkg -i` puts them (or `rpm -i`, with
//! `LOCAL_SA_SYSTEMD_LAYOUT=rpm`), the options in `/etc/default/local-sa`
//! (`/etc/sysconfig/local-sa`), and one runtime drop-in that gives the unit
//! the simulator's environment; the unit and its sandbox as shipped.

#[allow(dead_code)]
mod api_client;
mod under_systemd;

use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use api_client::Client;
use conformance::acm_client::resolved;
use conformance::opensm_dump::SaDump;
use conformance::rdmacm::{Librdmacm, Reach};
use conformance::sa_compare::opensm_path;
use conformance::systemd::Installed;
use conformance::systemd::Systemd;
use conformance::{SimulatedFabric, eventually};
use mad_codec::Gid;
use mad_codec::zerocopy::IntoBytes;
use under_systemd::{
    NODE, OWN_TRAPS, boot_installed, counter, fabric, main_pid, node_gid, number_in,
    package_with_options, sa_dump,
};

fn boot(fabric: &SimulatedFabric, options: &str) -> Systemd {
    boot_with(fabric, options, "")
}

/// [`boot`], with `service` lines added to the drop-in's `[Service]`.
fn boot_with(fabric: &SimulatedFabric, options: &str, service: &str) -> Systemd {
    boot_installed(fabric, package_with_options(fabric.dir(), options), service)
}

#[test]
fn the_first_ib_acme_and_the_first_librdmacm_connection_start_local_sa() {
    let fabric = fabric();
    let sd = boot(&fabric, "--host-name node-a --address 192.0.2.22");
    sd.systemctl_ok(&["start", "local-sa.socket"]);
    sd.wait_state("local-sa.socket", "active", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "inactive");
    let source = fabric.node(NODE).unwrap();
    let (src, dest) = (
        source.port().unwrap(),
        fabric.node("h9").unwrap().port().unwrap(),
    );
    let out = sd.run(
        "ib_acme",
        &[
            "-f",
            "l",
            "-s",
            &src.lid.to_string(),
            "-d",
            &dest.lid.to_string(),
        ],
    );
    assert!(
        out.status.success() && out.stdout.contains(&format!("dlid: {}", dest.lid)),
        "ib_acme: {}{}",
        out.stdout,
        out.stderr
    );
    // Answered (from the master while its table loads), and started.
    sd.wait_state("local-sa.service", "active", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));

    // Stopped, with the socket still held: librdmacm's first connection
    // (rdma_getaddrinfo to this node's own address) starts it again.
    sd.systemctl_ok(&["stop", "local-sa.service"]);
    assert_eq!(sd.property("local-sa.socket", "ActiveState"), "active");
    let librdmacm = Librdmacm::prepare(fabric.dir())
        .unwrap_or_else(|e| panic!("{e}"))
        .entering(sd.pid1());
    let paths = librdmacm
        .ask(Reach::Present, None, &["192.0.2.22"])
        .unwrap_or_else(|e| panic!("librdmacm: {e}"));
    let expected = opensm_path(&source, src.lid, src.lid);
    assert_eq!(
        paths
            .iter()
            .map(|p| p.record.as_slice())
            .collect::<Vec<_>>(),
        [expected.as_bytes()],
        "{paths:?}"
    );
    // Answered (from the master while its table loads), and started.
    sd.wait_state("local-sa.service", "active", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// librdmacm never reconnects: its connection, and ib_acme's over TCP,
/// made before a restart or a crash are answered after it, through
/// systemd's descriptor store. `--acm-server-mode loop` writes the TCP
/// port to /run/ibacm.port under the unit's hardening, through the
/// package's tmpfiles.d links.
#[test]
fn ibacm_clients_on_unix_and_tcp_are_kept_across_a_restart_and_a_crash() {
    let fabric = fabric();
    let sd = boot(&fabric, "--acm-server-mode loop --acm-server-port 0");
    // What the package's postinst does.
    sd.run_ok("systemd-tmpfiles", &["--create", "local-sa.conf"]);
    sd.systemctl_ok(&["start", "local-sa.socket", "local-sa.service"]);
    let port = number_in(&sd, "/run/ibacm.port").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(number_in(&sd, "/run/ibacm-tcp.port"), Ok(port));
    // Written through the links, into the runtime directory.
    for (link, file) in [
        ("/run/ibacm.port", "/run/local-sa/ibacm.port"),
        ("/run/ibacm-tcp.port", "/run/local-sa/ibacm-tcp.port"),
    ] {
        let through = sd.run("sh", &["-c", &format!("test -L {link} && test -f {file}")]);
        assert!(through.status.success(), "{link} → {file}");
    }

    let dest = fabric.node("h9").unwrap().port().unwrap();
    let timeout = Some(Duration::from_secs(10));
    let unix = UnixStream::connect(sd.inside("/run/ibacm-unix.sock")).unwrap();
    unix.set_read_timeout(timeout).unwrap();
    let mut unix = resolved(unix, dest.lid, 1);
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(timeout).unwrap();
    let mut tcp = resolved(tcp, dest.lid, 1);
    let stored = |count| {
        assert!(
            eventually(Duration::from_secs(20), || counter(&sd, "acm_clients_kept")
                == Some(count)),
            "{count} clients in systemd's store: {:?}",
            counter(&sd, "acm_clients_kept")
        );
    };
    stored(2);

    sd.systemctl_ok(&["restart", "local-sa.service"]);
    resolved(&mut unix, dest.lid, 2);
    resolved(&mut tcp, dest.lid, 2);
    // The new local-sa listens on a port of its own, written again.
    let new_port = number_in(&sd, "/run/ibacm.port").unwrap_or_else(|e| panic!("{e}"));
    drop(resolved(
        TcpStream::connect(("127.0.0.1", new_port)).unwrap(),
        dest.lid,
        1,
    ));
    stored(2);

    sd.systemctl_ok(&["kill", "-s", "KILL", "local-sa.service"]);
    sd.wait_restarts("local-sa.service", 1, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    resolved(&mut unix, dest.lid, 3);
    resolved(&mut tcp, dest.lid, 3);

    // Stopped: the port files lead nowhere, as with ibacm stopped.
    sd.systemctl_ok(&["stop", "local-sa.service"]);
    assert!(number_in(&sd, "/run/ibacm.port").is_err());
}

#[test]
fn notify_reaches_active_with_the_table_and_stop_withdraws_everything_at_opensm() {
    let fabric = fabric();
    let sd = boot(&fabric, "");
    sd.systemctl_ok(&["start", "local-sa.service"]);
    // Type=notify: `start` returns once READY=1 came, with the table.
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "active");
    let status = sd.property("local-sa.service", "StatusText");
    assert!(status.starts_with("serving 1 port(s), "), "{status}");
    let port = node_gid(&fabric);
    let dump = sa_dump(&fabric);
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(30), |d| {
        d.traps_of(port) == OWN_TRAPS
    });
    assert!(
        held,
        "its own subscriptions at OpenSM: {:?}",
        d.traps_of(port)
    );

    sd.systemctl_ok(&["stop", "local-sa.service"]);
    assert_eq!(sd.property("local-sa.service", "Result"), "success");
    let (d, gone) = SaDump::wait_for(&dump, Duration::from_secs(30), |d| {
        d.traps_of(port).is_empty()
    });
    assert!(gone, "withdrawn at OpenSM: {:?}", d.traps_of(port));
}

#[test]
fn a_settings_error_stops_the_unit_without_a_restart_loop() {
    let fabric = fabric();
    let sd = boot(&fabric, "--refresh-interval never");
    let _ = sd.systemctl(&["start", "local-sa.service"]);
    // A restart would be scheduled at the exit ("activating", sub-state
    // auto-restart); "failed" is reached only without one, or once the
    // start limit stops a loop of them (NRestarts then counts them).
    sd.wait_state("local-sa.service", "failed", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sd.property("local-sa.service", "NRestarts"), "0");
    assert_eq!(sd.property("local-sa.service", "ExecMainStatus"), "2");
}

#[test]
fn a_killed_local_sa_is_restarted_and_removes_what_it_left_at_opensm() {
    let fabric = fabric();
    let sd = boot(&fabric, "");
    sd.systemctl_ok(&["start", "local-sa.service"]);
    let port = node_gid(&fabric);
    // A consumer joins a group through the local API.
    let work = fabric.dir().join("consumer");
    std::fs::create_dir_all(&work).unwrap();
    let preload = fabric.preload().display().to_string();
    let env = [
        ("LD_PRELOAD", preload.as_str()),
        ("SIM_HOST", NODE),
        ("IBSIM_SOCKNAME", fabric.sockname()),
    ];
    let mut consumer = sd.spawn(
        "/usr/sbin/lsaquery",
        &["--join", "::", "--json"],
        &env,
        &work,
    );
    // The group OpenSM created and named for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mgid: Gid = loop {
        let out = std::fs::read_to_string(work.join("stdout")).unwrap_or_default();
        if let Some(m) = out
            .split("\"mgid\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|m| m.parse().ok())
        {
            break m;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the consumer did not join: {}",
            std::fs::read_to_string(work.join("stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Another subscribes to multicast group creations (trap 66).
    let subscriber = fabric.dir().join("subscriber");
    std::fs::create_dir_all(&subscriber).unwrap();
    let mut subscription = sd.spawn(
        "/usr/sbin/lsaquery",
        &["--subscribe", "66"],
        &env,
        &subscriber,
    );
    let dump = sa_dump(&fabric);
    let (d, held) = SaDump::wait_for(&dump, Duration::from_secs(30), |d| {
        d.member_state(mgid, port).is_some() && d.traps_of(port).contains(&66)
    });
    assert!(
        held,
        "the consumers' membership and subscription at OpenSM: {:?} {:?}\n{}{}",
        d.member_state(mgid, port),
        d.traps_of(port),
        std::fs::read_to_string(work.join("stderr")).unwrap_or_default(),
        std::fs::read_to_string(subscriber.join("stderr")).unwrap_or_default()
    );

    // SIGKILL: nothing withdrawn; systemd starts it again.
    sd.systemctl_ok(&["kill", "-s", "KILL", "local-sa.service"]);
    let _ = consumer.wait();
    let _ = subscription.wait();
    sd.wait_restarts("local-sa.service", 1, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    // The new one found the dead one's record and removed the group.
    let (d, gone) = SaDump::wait_for(&dump, Duration::from_secs(60), |d| {
        d.member_state(mgid, port).is_none() && d.traps_of(port) == OWN_TRAPS
    });
    assert!(
        gone,
        "left at OpenSM: member {:?}, traps {:?}",
        d.member_state(mgid, port),
        d.traps_of(port)
    );
}

#[test]
fn the_watchdog_is_fed_and_a_daemon_that_stops_feeding_it_is_restarted() {
    let fabric = fabric();
    // A 2 s watchdog instead of the unit's 30 s, so that the test is
    // short; no core file from the SIGABRT systemd ends it with.
    let sd = boot_with(&fabric, "", "WatchdogSec=2\nLimitCORE=0\n");
    sd.systemctl_ok(&["start", "local-sa.service"]);
    let first = main_pid(&sd);
    // Fed: its pings go on past three time-outs from its start, and
    // nothing restarted it on the way.
    let micros = |name: &str| sd.property("local-sa.service", name).parse::<u64>().ok();
    let started = micros("ExecMainStartTimestampMonotonic").expect("a start time");
    assert!(
        eventually(Duration::from_secs(60), || micros(
            "WatchdogTimestampMonotonic"
        )
        .is_some_and(|ping| ping > started + 3 * 2_000_000)),
        "no watchdog ping 6 s after the start: {:?}",
        micros("WatchdogTimestampMonotonic")
    );
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "active");
    assert_eq!(sd.property("local-sa.service", "NRestarts"), "0");
    assert_eq!(main_pid(&sd), first);

    // Stopped (SIGSTOP): it no longer feeds the watchdog.
    sd.systemctl_ok(&["kill", "-s", "STOP", "--kill-who=main", "local-sa.service"]);
    sd.wait_restarts("local-sa.service", 1, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(main_pid(&sd), first, "a new local-sa");
}

#[test]
fn reload_applies_a_changed_setting_and_keeps_the_process() {
    let fabric = fabric();
    // The package's configuration file, as an administrator edits it.
    const CONFIG: &str = "/etc/local-sa/local-sa.toml";
    let mut installed = package_with_options(fabric.dir(), "");
    installed.push(Installed::File(
        CONFIG.into(),
        "max-connections-per-user = 1024\n".into(),
    ));
    let sd = boot_installed(&fabric, installed, "");
    let config = sd.inside(CONFIG);
    sd.systemctl_ok(&["start", "local-sa.service"]);
    let pid = main_pid(&sd);
    // The local API socket, reached through the namespace's root.
    let listed = sd.run("ls", &["/run/local-sa"]);
    let name = listed
        .stdout
        .split_whitespace()
        .find(|n| n.ends_with(".sock"))
        .unwrap_or_else(|| panic!("no API socket in /run/local-sa: {}", listed.stdout))
        .to_owned();
    let api = sd.inside(&format!("/run/local-sa/{name}"));
    // Served: each answers HELLO.
    let mut first = Client::connect(&api);
    let mut second = Client::connect(&api);
    assert!(first.hello() > 0 && second.hello() > 0);

    // One connection per user from now on.
    std::fs::write(&config, "max-connections-per-user = 1\n").unwrap();
    sd.systemctl_ok(&["reload", "local-sa.service"]);
    let log = fabric.dir().join("local-sa.log");
    assert!(
        eventually(Duration::from_secs(20), || std::fs::read_to_string(&log)
            .is_ok_and(|l| l.contains("configuration reloaded"))),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // The two held stay, served; a third is refused.
    let mut third = Client::connect(&api);
    assert!(third.is_closed(), "the new limit");
    assert!(first.hello() > 0 && second.hello() > 0);
    assert_eq!(main_pid(&sd), pid, "reloaded, not restarted");
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "active");
}
